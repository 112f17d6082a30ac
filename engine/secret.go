package engine

import (
	"bytes"
	"strings"
)

// SecretScanLimit is the most of a file LooksSecret judges. A caller
// reads at most this many bytes from the start of the file; a file that
// fills the whole buffer may hold more than was seen, so LooksSecret
// calls it secret. Certificate bundles (certifi's cacert.pem is about
// 300 KB) fit well within it.
const SecretScanLimit = 1 << 20

// LooksSecret reports whether a file's content looks like secret
// material. path names the file (its last component chooses the format
// the content is read as); head is the file's content from offset 0, at
// most SecretScanLimit bytes. It is pure, never panics, and runs in time
// linear in len(head).
//
// It errs towards "secret": anything it cannot positively read as public
// is secret. By format (the file name, case-insensitively):
//
//   - any file: private key material anywhere in head, in any of the
//     forms FindPrivateKey knows (PEM, PGP, OpenSSH, PuTTY and age keys,
//     `openssl -text` dumps of private keys, private JWKs, DER private
//     keys raw or in base64), is secret, and so is a buffer of
//     SecretScanLimit bytes or more. A marker without a key after it
//     (a comment naming "-----BEGIN RSA PRIVATE KEY-----") is not;
//   - key material (`*.pem`, `*.key`, `*.crt`, `*.cer`, `*.der`, `*.pub`,
//     `*.csr`, `*.ppk`, `*.asc`, `*.gpg`, `id_*`, `ssh_host_*`): public
//     only when empty, or text made of PEM blocks of public kinds
//     (certificates, CRLs, requests, public keys, parameters) with at
//     most comments around them, or of OpenSSH public key lines;
//     anything else (a DER key, a raw hex key such as Rails' master.key,
//     an unknown block) is secret;
//   - environment files (`.env`, `.env.*`, `*.env`): secret unless every
//     line is blank, a comment, or an assignment of an empty value;
//   - files whose name says credentials (`credentials`, `credentials.*`,
//     `secrets`, `secrets.*`, `*.secret`, `*.secrets`, `.netrc`,
//     `.pgpass`, `.git-credentials`, `.vault-token`): secret unless blank;
//   - any other name (`.npmrc`, `.yarnrc.yml`, JSON, YAML, TOML, INI,
//     XML): secret when it holds binary data, an assignment to a
//     credential-named key (auth, token, secret, password, credential,
//     api key, private, access key) with a literal value (`${VAR}`
//     references, booleans and empty values are not secret), or a URL
//     with a password (`https://user:pass@host`).
func LooksSecret(path string, head []byte) bool {
	if len(head) >= SecretScanLimit {
		return true
	}
	if _, ok := FindPrivateKey(head); ok {
		return true
	}
	switch secretFormat(asciiLower(lastComponent(path))) {
	case formatKeyMaterial:
		return !publicKeyMaterial(head)
	case formatDotenv:
		return !dotenvSetsNothing(head)
	case formatOpaque:
		return len(bytes.TrimSpace(head)) > 0
	}
	return bytes.IndexByte(head, 0) >= 0 || credentialAssignment(head)
}

type secretFormatKind uint8

const (
	formatConfig secretFormatKind = iota
	formatKeyMaterial
	formatDotenv
	formatOpaque
)

func secretFormat(base string) secretFormatKind {
	switch {
	case base == ".env" || strings.HasPrefix(base, ".env.") || strings.HasSuffix(base, ".env"):
		return formatDotenv
	case strings.HasPrefix(base, "id_") || strings.HasPrefix(base, "ssh_host_"):
		return formatKeyMaterial
	case base == "credentials" || strings.HasPrefix(base, "credentials.") ||
		base == "secrets" || strings.HasPrefix(base, "secrets.") ||
		strings.HasSuffix(base, ".secret") || strings.HasSuffix(base, ".secrets"):
		return formatOpaque
	}
	switch base {
	case ".netrc", "_netrc", ".pgpass", ".git-credentials", ".vault-token":
		return formatOpaque
	}
	if i := strings.LastIndexByte(base, '.'); i >= 0 {
		switch base[i:] {
		case ".pem", ".key", ".crt", ".cer", ".der", ".pub", ".csr", ".ppk", ".asc", ".gpg":
			return formatKeyMaterial
		}
	}
	return formatConfig
}

// publicPEMLabels are the PEM block kinds that hold no secret.
var publicPEMLabels = map[string]bool{
	"CERTIFICATE": true, "TRUSTED CERTIFICATE": true, "X509 CERTIFICATE": true,
	"X509 CRL": true, "CERTIFICATE REQUEST": true, "NEW CERTIFICATE REQUEST": true,
	"ATTRIBUTE CERTIFICATE": true, "PKCS7": true, "CMS": true,
	"PUBLIC KEY": true, "RSA PUBLIC KEY": true, "DSA PUBLIC KEY": true, "EC PUBLIC KEY": true,
	"DH PARAMETERS": true, "X9.42 DH PARAMETERS": true, "EC PARAMETERS": true, "DSA PARAMETERS": true,
	"PGP PUBLIC KEY BLOCK": true, "PGP SIGNATURE": true, "SSH2 PUBLIC KEY": true,
}

// publicKeyMaterial reports whether b is positively public key material:
// empty, or text whose PEM blocks are all of public kinds (at least one),
// or OpenSSH public key lines. Text outside blocks is allowed (bundles
// carry comments, `openssl x509 -text` dumps carry the decoded fields)
// as long as no line of it is a bare run of key-like characters.
func publicKeyMaterial(b []byte) bool {
	if len(bytes.TrimSpace(b)) == 0 {
		return true
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return false // binary: a DER key, a PKCS#12 bundle, an encrypted file
	}
	inBlock := ""
	seen := false
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		t := string(bytes.TrimSpace(line))
		if label, begin, ok := pemBoundary(t); ok {
			switch {
			case begin && inBlock == "":
				if !publicPEMLabels[label] {
					return false
				}
				inBlock, seen = label, true
			case !begin && inBlock == label:
				inBlock = ""
			default:
				return false // a boundary out of place: not something we can read
			}
			continue
		}
		if inBlock != "" {
			continue
		}
		if sshPublicKeyLine(t) {
			seen = true
			continue
		}
		if keyLikeLine(t) {
			return false
		}
	}
	return seen && inBlock == ""
}

// pemBoundary recognises `-----BEGIN X-----`, `-----END X-----` and the
// RFC 4716 `---- BEGIN SSH2 PUBLIC KEY ----` forms.
func pemBoundary(t string) (label string, begin, ok bool) {
	var body string
	switch {
	case strings.HasPrefix(t, "-----") && strings.HasSuffix(t, "-----") && len(t) >= 10:
		body = t[5 : len(t)-5]
	case strings.HasPrefix(t, "---- ") && strings.HasSuffix(t, " ----") && len(t) >= 10:
		body = t[5 : len(t)-5]
	default:
		return "", false, false
	}
	switch {
	case strings.HasPrefix(body, "BEGIN "):
		return body[6:], true, true
	case strings.HasPrefix(body, "END "):
		return body[4:], false, true
	}
	return "", false, false
}

// sshPublicKeyLine recognises an OpenSSH public key as written in
// `id_*.pub`, authorized_keys (options first) and known_hosts (hosts
// first): a key type followed by base64 starting "AAAA".
func sshPublicKeyLine(t string) bool {
	f := strings.Fields(t)
	for i := 0; i+1 < len(f); i++ {
		k := f[i]
		if (strings.HasPrefix(k, "ssh-") || strings.HasPrefix(k, "ecdsa-sha2-") || strings.HasPrefix(k, "sk-")) &&
			strings.HasPrefix(f[i+1], "AAAA") {
			return true
		}
	}
	return false
}

// keyLikeLine reports a line that is one run of 32 or more base64,
// base64url or hex characters: a raw key or token on a line of its own.
// Text dumps of certificates (`openssl x509 -text`) have spaces and
// colons on every such line and do not count.
func keyLikeLine(t string) bool {
	if len(t) < 32 {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func nextLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// dotenvSetsNothing reports whether an environment file assigns no value:
// every line is blank, a comment, or `[export ]NAME=` with an empty
// (possibly quoted, possibly commented) value. Anything it cannot read
// that way counts as setting something.
func dotenvSetsNothing(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		t := strings.TrimSpace(string(line))
		if t == "" || t[0] == '#' {
			continue
		}
		t = strings.TrimPrefix(t, "export ")
		eq := strings.IndexByte(t, '=')
		if eq <= 0 || !envName(strings.TrimSpace(t[:eq])) {
			return false
		}
		v := strings.TrimSpace(t[eq+1:])
		switch {
		case v == "", v == `""`, v == "''", v[0] == '#':
		default:
			if (strings.HasPrefix(v, `""`) || strings.HasPrefix(v, "''")) && strings.HasPrefix(strings.TrimSpace(v[2:]), "#") {
				continue
			}
			return false
		}
	}
	return true
}

func envName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '.' || c == '-')) {
			return false
		}
	}
	return true
}

// credentialWords name keys that hold credentials. "auth" does not count
// when it starts "author".
var credentialWords = []string{"auth", "token", "secret", "passw", "pwd", "credential", "apikey", "api_key", "api-key", "private", "access_key", "accesskey"}

// credentialAssignment reports an assignment to a credential-named key
// with a literal value, in any of the `key=value`, `key = value`,
// `key: value` and `"key": "value"` shapes, or a URL with a password.
func credentialAssignment(b []byte) bool {
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		t := strings.TrimSpace(string(line))
		if t == "" || t[0] == '#' || t[0] == ';' || strings.HasPrefix(t, "//") && !strings.Contains(t, ":_") {
			// `//registry/:_authToken=…` is npm's per-registry key, not a comment.
			continue
		}
		if urlWithPassword(t) {
			return true
		}
		lower := asciiLower(t) // byte for byte, so offsets stay valid in t
		for _, w := range credentialWords {
			for off := 0; ; {
				i := strings.Index(lower[off:], w)
				if i < 0 {
					break
				}
				i += off
				off = i + len(w)
				if w == "auth" && strings.HasPrefix(lower[off:], "or") {
					continue
				}
				if v, ok := assignedValue(t, off); ok && literalValue(v) {
					return true
				}
			}
		}
	}
	return false
}

// assignedValue finds the value assigned to the key that continues at
// t[i:]: the rest of the key's characters, optional quotes and spaces,
// then '=' or ':' (the value is the rest of the line), or '>' of an XML
// element (the value runs to the next '<').
func assignedValue(t string, i int) (string, bool) {
	for i < len(t) && keyChar(t[i]) {
		i++
	}
	for i < len(t) && (t[i] == '"' || t[i] == '\'' || t[i] == ' ' || t[i] == '\t') {
		i++
	}
	if i >= len(t) {
		return "", false
	}
	switch t[i] {
	case '=', ':':
		return t[i+1:], true
	case '>':
		v := t[i+1:]
		if j := strings.IndexByte(v, '<'); j >= 0 {
			v = v[:j]
		}
		return v, true
	}
	return "", false
}

func keyChar(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// literalValue reports whether v (the text after '=' or ':') holds a
// value of its own: not empty, not a reference to the environment, not
// a boolean, null or the start of a nested structure.
func literalValue(v string) bool {
	v = strings.TrimSpace(v)
	v = strings.TrimSuffix(v, ",")
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		v = v[1 : len(v)-1]
	}
	switch strings.ToLower(v) {
	case "", "true", "false", "null", "nil", "none", "yes", "no", "~", "{", "[", "{}", "[]", "=":
		return false
	}
	if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") && strings.Count(v, "}") == 1 {
		return false
	}
	if v[0] == '$' && len(v) > 1 && envName(v[1:]) {
		return false
	}
	return true
}

// urlWithPassword finds `scheme://user:password@host` in t.
func urlWithPassword(t string) bool {
	for off := 0; ; {
		i := strings.Index(t[off:], "://")
		if i < 0 {
			return false
		}
		rest := t[off+i+3:]
		off += i + 3
		end := strings.IndexAny(rest, "/ \t\"'?#")
		if end < 0 {
			end = len(rest)
		}
		auth := rest[:end]
		at := strings.LastIndexByte(auth, '@')
		if at < 0 {
			continue
		}
		if c := strings.IndexByte(auth[:at], ':'); c >= 0 && c+1 < at {
			pw := auth[c+1 : at]
			if !(strings.HasPrefix(pw, "${") && strings.HasSuffix(pw, "}")) && !(pw[0] == '$' && envName(pw[1:])) {
				return true
			}
		}
	}
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
