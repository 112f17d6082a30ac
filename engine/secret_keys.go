package engine

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Private key material, recognised by what the bytes are rather than by
// the file's name. FindPrivateKey looks through the whole buffer it is
// given, in time linear in its length: every finder below makes one
// pass, and a candidate it decodes (a base64 blob, a DER structure) is
// not decoded again from inside.
//
// The forms, each needing a body, not only its marker (a comment that
// names "-----BEGIN RSA PRIVATE KEY-----" is not a key; a string literal
// holding a key's base64 lines is):
//   - PEM and RFC 4716 blocks of private kinds (label with PRIVATE KEY or
//     SECRET KEY: PKCS#1/8, SEC1, DSA, ENCRYPTED, OPENSSH, PGP, SSH2
//     ENCRYPTED; OpenVPN static keys) with 40 or more base64 characters
//     of body;
//   - PuTTY key files (a PuTTY-User-Key-File- header, then Private-Lines:
//     with base64 after it) and age identities (AGE-SECRET-KEY-1 and at
//     least 50 bech32 characters);
//   - `openssl … -text` dumps: a private field (privateExponent:, prime1:,
//     prime2:, exponent1:, exponent2:, coefficient:, priv:, private-key:)
//     followed by colon-hex lines of 16 bytes or more. Public dumps
//     (Modulus:, pub:, public-key:) do not count;
//   - JWK: an object with "kty" and a non-empty private member (d, p, q,
//     dp, dq, qi, or k of an oct key). A buffer that starts as JSON is
//     read with encoding/json (escaped names count, and every string
//     value is searched for the forms here in turn); any text is also
//     searched for a quoted private member with a base64url value of 16
//     or more characters in a buffer that says "kty";
//   - DER private keys, raw anywhere in the buffer or base64 encoded
//     (standard or URL alphabet, across line breaks and `\n` escapes):
//     PKCS#1 RSAPrivateKey, PKCS#8 PrivateKeyInfo and OneAsymmetricKey,
//     EncryptedPrivateKeyInfo (PBES1/PBES2/PKCS#12 PBE), SEC1
//     ECPrivateKey, OpenSSL's DSA key and PKCS#12 bundles; also base64 of
//     a PEM private key block (Kubernetes secrets) and of an OpenSSH key
//     without its armour.
//
// DER is recognised by its ASN.1 shape (derPrivateKey), not by
// crypto/x509's parsers: those reject what Go does not implement (DSA
// and X448 in PKCS#8, every EncryptedPrivateKeyInfo) and check the
// numbers, so a key with a damaged or altered value would be public;
// the shape costs a few header reads whatever the key's size.

// KeyFinding says what private key material was found, and where.
type KeyFinding struct {
	What string // e.g. "an RSA private key (openssl -text dump)"
	Line int    // 1-based line of the buffer where it starts
}

func (f KeyFinding) String() string {
	return f.What + " at line " + strconv.Itoa(f.Line)
}

// FindPrivateKey reports the first private key material found in b, in
// any of the forms above. It is pure, never panics and runs in time
// linear in len(b).
func FindPrivateKey(b []byte) (KeyFinding, bool) {
	off, what, ok := findKey(b, true)
	if !ok {
		return KeyFinding{}, false
	}
	if off < 0 || off > len(b) {
		off = 0
	}
	return KeyFinding{What: what, Line: 1 + bytes.Count(b[:off], []byte{'\n'})}, true
}

// findKey runs every finder over b; json says whether a buffer that
// starts as JSON is parsed (not again inside one of its strings).
func findKey(b []byte, json bool) (int, string, bool) {
	for _, f := range []func([]byte) (int, string, bool){findPEMKey, findPuTTYKey, findAgeKey, findTextDumpKey, findJWKText, findBase64Key, findRawDERKey} {
		if off, what, ok := f(b); ok {
			return off, what, true
		}
	}
	// Without an escape or "kty", every string of a JSON file is in b as
	// it is, and the finders above have seen it: the reader is not run.
	if json && startsJSON(b) && (bytes.IndexByte(b, '\\') >= 0 || bytes.Contains(b, []byte("kty"))) {
		return findJSONKey(b)
	}
	return 0, "", false
}

// maxKeyBody bounds how far past a marker a body is looked for, and the
// largest DER structure decoded (an RSA-16384 PKCS#1 key is about 9 KiB).
const maxKeyBody = 64 << 10

var (
	pemOpen     = []byte("-----BEGIN ")
	rfc4716Open = []byte("---- BEGIN ")
	dashes      = []byte("----")
)

func findPEMKey(b []byte) (int, string, bool) {
	for _, open := range [][]byte{pemOpen, rfc4716Open} {
		for off := 0; off < len(b); {
			i := bytes.Index(b[off:], open)
			if i < 0 {
				break
			}
			i += off
			ls := i + len(open)
			lab := b[ls:min(len(b), ls+80)]
			e := bytes.Index(lab, dashes)
			if e < 0 || bytes.IndexByte(lab[:e], '\n') >= 0 {
				off = ls
				continue
			}
			label := string(bytes.TrimSpace(lab[:e]))
			body := ls + e
			for body < len(b) && b[body] == '-' {
				body++
			}
			off = body
			if !privatePEMLabel(label) {
				continue
			}
			end := bytes.Index(b[body:], dashes)
			if end < 0 {
				end = len(b) - body
			}
			if pemBody(b[body : body+min(end, maxKeyBody)]) {
				return i, "a private key (PEM block " + strconv.Quote(label) + ")", true
			}
		}
	}
	return 0, "", false
}

func privatePEMLabel(l string) bool {
	return strings.Contains(l, "PRIVATE KEY") || strings.Contains(l, "SECRET KEY") ||
		strings.HasPrefix(l, "OpenVPN Static key")
}

// pemBody reports a block body with 40 or more characters on lines made
// of nothing but standard base64 (16 or more characters each), once
// quotes, `\n` escapes and a string concatenation's ` +` are taken off
// a line: a key's lines, as a file, a YAML block or a string literal
// holds them. Headers (Proc-Type, DEK-Info, Comment) and prose, which
// have spaces and punctuation, do not count. The smallest PKCS#8 key,
// an Ed25519 one, is 64 characters.
func pemBody(b []byte) bool {
	total := 0
	for len(b) > 0 {
		var line []byte
		line, b = nextLine(b)
		for len(line) > 0 {
			part := line
			if i := bytes.Index(line, []byte(`\n`)); i >= 0 {
				part, line = line[:i], line[i+2:]
			} else {
				line = nil
			}
			part = bytes.TrimRight(bytes.TrimSpace(part), "\r")
			part = bytes.TrimSuffix(part, []byte(" +"))
			part = bytes.Trim(part, "\"'`,;\\ \t\r")
			if len(part) >= 16 && stdBase64(part) {
				total += len(part)
				if total >= 40 {
					return true
				}
			}
		}
	}
	return false
}

func stdBase64(b []byte) bool {
	for _, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

func b64Char(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

var (
	puttyMarker = []byte("PuTTY-User-Key-File-")
	puttyLines  = []byte("Private-Lines:")
)

func findPuTTYKey(b []byte) (int, string, bool) {
	pl := -1
	for off := 0; off < len(b); {
		m := bytes.Index(b[off:], puttyMarker)
		if m < 0 {
			return 0, "", false
		}
		m += off
		off = m + len(puttyMarker)
		if pl < m {
			j := bytes.Index(b[m:], puttyLines)
			if j < 0 {
				return 0, "", false
			}
			pl = m + j
		}
		if pl-m <= maxKeyBody && pemBody(b[pl+len(puttyLines):min(len(b), pl+len(puttyLines)+200)]) {
			return m, "a PuTTY private key", true
		}
	}
	return 0, "", false
}

var ageMarker = []byte("AGE-SECRET-KEY-1")

func findAgeKey(b []byte) (int, string, bool) {
	for off := 0; off < len(b); {
		i := bytes.Index(b[off:], ageMarker)
		if i < 0 {
			break
		}
		i += off
		j := i + len(ageMarker)
		for j < len(b) && bech32Char(b[j]) {
			j++
		}
		if j-i-len(ageMarker) >= 50 {
			return i, "an age identity", true
		}
		off = j
	}
	return 0, "", false
}

func bech32Char(c byte) bool {
	if c >= 'a' && c <= 'z' {
		c -= 'a' - 'A'
	}
	return c >= 'A' && c <= 'Z' && c != 'B' && c != 'I' && c != 'O' || c >= '0' && c <= '9' && c != '1'
}

// privateDumpFields are the labels `openssl pkey|rsa|ec|dsa|dh -text`
// print before a private number; the public ones (modulus:, pub:,
// public-key:, P:, Q:, G:) are left out.
var privateDumpFields = map[string]bool{
	"privateExponent:": true, "prime1:": true, "prime2:": true, "exponent1:": true,
	"exponent2:": true, "coefficient:": true, "priv:": true, "private-key:": true,
}

func findTextDumpKey(b []byte) (int, string, bool) {
	kind := ""
	for off := 0; off < len(b); {
		line, rest := nextLine(b[off:])
		lineOff := off
		off = len(b) - len(rest)
		t := bytes.TrimSpace(line)
		if bytes.Contains(t, []byte("Private-Key:")) {
			kind = dumpKind(t)
		}
		if !privateDumpFields[string(t)] {
			continue
		}
		n := 0
		for off < len(b) {
			l, r := nextLine(b[off:])
			k, ok := colonHex(bytes.TrimSpace(l))
			if !ok {
				break
			}
			n += k
			off = len(b) - len(r)
		}
		if n >= 16 {
			return lineOff, kind + " private key (openssl -text dump)", true
		}
	}
	return 0, "", false
}

func dumpKind(t []byte) string {
	for _, k := range []string{"RSA", "ED25519", "ED448", "X25519", "X448", "DH", "DSA", "EC"} {
		if bytes.HasPrefix(t, []byte(k+" ")) {
			return "an " + k
		}
	}
	return "a"
}

// colonHex reads a line of hex pairs separated by colons
// ("00:c3:5a:" or a last "d5") and reports how many bytes it holds.
func colonHex(t []byte) (int, bool) {
	if len(t) < 2 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(t); {
		if i+1 >= len(t) || !hexDigit(t[i]) || !hexDigit(t[i+1]) {
			return 0, false
		}
		n++
		i += 2
		if i < len(t) {
			if t[i] != ':' {
				return 0, false
			}
			i++
		}
	}
	return n, true
}

func hexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// jwkPrivate are the JWK members only a private key has (RFC 7518 §6).
func jwkPrivate(name string) bool {
	switch name {
	case "d", "p", "q", "dp", "dq", "qi", "k":
		return true
	}
	return false
}

// findJWKText finds `"d": "…"` (either quote) with a base64url value of
// 16 or more characters, in a buffer that names "kty": a JWK written
// into code, YAML flow or broken JSON.
func findJWKText(b []byte) (int, string, bool) {
	if !bytes.Contains(b, []byte("kty")) {
		return 0, "", false
	}
	for i := 0; i < len(b); i++ {
		q := b[i]
		if q != '"' && q != '\'' {
			continue
		}
		j := i + 1
		for j < len(b) && j-i-1 < 3 && b[j] >= 'a' && b[j] <= 'z' {
			j++
		}
		if j >= len(b) || b[j] != q || !jwkPrivate(string(b[i+1:j])) {
			continue
		}
		k := j + 1
		for k < len(b) && (b[k] == ' ' || b[k] == '\t') {
			k++
		}
		if k >= len(b) || b[k] != ':' {
			continue
		}
		k++
		for k < len(b) && (b[k] == ' ' || b[k] == '\t') {
			k++
		}
		if k >= len(b) || b[k] != '"' && b[k] != '\'' {
			continue
		}
		v := k + 1
		for v < len(b) && b64Char(b[v]) {
			v++
		}
		if v-k-1 >= 16 {
			return i, "a private JWK", true
		}
	}
	return 0, "", false
}

func startsJSON(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n\ufeff")
	t = bytes.TrimPrefix(t, []byte("\xef\xbb\xbf"))
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

type jsonFrame struct {
	object, wantKey, kty, private bool
	key                           string
	off                           int64
}

// findJSONKey reads b as a stream of JSON values with encoding/json, up
// to the first syntax error (so text appended to a JSON file hides
// nothing before it): an object with "kty" and a private member is a
// private JWK; every string value is searched for the other forms.
func findJSONKey(b []byte) (int, string, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var stack []jsonFrame
	value := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	for {
		start := d.InputOffset()
		tok, err := d.Token()
		if err != nil {
			// The end, or text that is not JSON: an object left open
			// still counts.
			for _, f := range stack {
				if f.kty && f.private {
					return int(f.off), "a private JWK", true
				}
			}
			return 0, "", false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				value()
				stack = append(stack, jsonFrame{object: t == '{', wantKey: t == '{', off: start})
			default:
				if n := len(stack); n > 0 {
					f := stack[n-1]
					stack = stack[:n-1]
					if f.kty && f.private {
						return int(f.off), "a private JWK", true
					}
				}
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = t, false
				continue
			}
			if n := len(stack); n > 0 && stack[n-1].object {
				f := &stack[n-1]
				switch {
				case f.key == "kty":
					f.kty = true
				case jwkPrivate(f.key) && t != "":
					f.private = true
				}
			}
			value()
			if len(t) >= 32 {
				if _, what, ok := findKey([]byte(t), false); ok {
					return int(start), what + " (in a JSON string)", true
				}
			}
		default:
			value()
		}
	}
}

// findBase64Key looks at the start of every run of base64 characters
// that could begin a key: 'M' (DER: a SEQUENCE, 0x30), "LS0tLS1CRUdJTi"
// (a PEM block) or "b3BlbnNzaC1rZXktdjE" (an OpenSSH key).
func findBase64Key(b []byte) (int, string, bool) {
	var buf []byte
	for i := 0; i < len(b); {
		if !b64Char(b[i]) {
			i++
			continue
		}
		start := i
		var end int
		var what string
		switch {
		case b[i] == 'M':
			end, what = base64DER(b, i, &buf)
		case bytes.HasPrefix(b[i:], []byte("LS0tLS1CRUdJTi")):
			var out []byte
			out, end = decodeBlob(b, i, 16<<10, buf[:0])
			buf = out
			if _, _, ok := findPEMKey(out); ok {
				what = "a private key (base64 of a PEM block)"
			}
		case bytes.HasPrefix(b[i:], []byte("b3BlbnNzaC1rZXktdjE")):
			var out []byte
			out, end = decodeBlob(b, i, 128, buf[:0])
			buf = out
			if len(out) >= 64 && bytes.HasPrefix(out, []byte("openssh-key-v1\x00")) {
				what = "an OpenSSH private key (base64, no armour)"
			}
		}
		if what != "" {
			return start, what, true
		}
		i = max(end, i+1)
		for i < len(b) && b64Char(b[i]) {
			i++
		}
	}
	return 0, "", false
}

// base64DER decodes the blob at b[i:] as far as its DER header says,
// when the header is that of a private key's outer SEQUENCE.
func base64DER(b []byte, i int, buf *[]byte) (int, string) {
	out, _ := decodeBlob(b, i, 8, (*buf)[:0])
	n, ok := derCandidate(out)
	if !ok {
		return i, ""
	}
	out, end := decodeBlob(b, i, n, out[:0])
	*buf = out
	if len(out) < n {
		return end, ""
	}
	if kind, ok := derPrivateKey(out[:n]); ok {
		return end, kind + " (base64 DER)"
	}
	return end, ""
}

// decodeBlob decodes base64 (standard or URL alphabet) from b[i:] into
// buf, at most max bytes. A blob continues over a line break (or a `\n`,
// `\r` escape, spaces, tabs, quotes) only after a line of 16 or more
// characters (ssh-keygen wraps at 70, so not only at multiples of 4);
// it ends at padding or any other character. It returns the bytes and where it stopped in b.
func decodeBlob(b []byte, i, max int, buf []byte) ([]byte, int) {
	var acc uint32
	n, line := 0, 0
	for i < len(b) && len(buf) < max {
		c := b[i]
		if v, ok := b64Value(c); ok {
			acc = acc<<6 | uint32(v)
			n++
			line++
			i++
			if n == 4 {
				buf = append(buf, byte(acc>>16), byte(acc>>8), byte(acc))
				acc, n = 0, 0
			}
			continue
		}
		if line < 16 {
			break
		}
		j := i
		nl := false
		for j < len(b) {
			switch {
			case b[j] == '\n' || b[j] == '\r':
				nl = true
				j++
				continue
			case b[j] == ' ' || b[j] == '\t' || b[j] == '"' || b[j] == '\'':
				j++
				continue
			case b[j] == '\\' && j+1 < len(b) && (b[j+1] == 'n' || b[j+1] == 'r'):
				nl = true
				j += 2
				continue
			}
			break
		}
		if !nl || j >= len(b) {
			break
		}
		if _, ok := b64Value(b[j]); !ok {
			break
		}
		i, line = j, 0
	}
	switch n {
	case 2:
		buf = append(buf, byte(acc>>4))
	case 3:
		buf = append(buf, byte(acc>>10), byte(acc>>2))
	}
	return buf, i
}

func b64Value(c byte) (byte, bool) {
	switch {
	case c >= 'A' && c <= 'Z':
		return c - 'A', true
	case c >= 'a' && c <= 'z':
		return c - 'a' + 26, true
	case c >= '0' && c <= '9':
		return c - '0' + 52, true
	case c == '+' || c == '-':
		return 62, true
	case c == '/' || c == '_':
		return 63, true
	}
	return 0, false
}

// findRawDERKey looks for a DER private key at every 0x30 byte: the
// header check is a few bytes, the shape check a few headers more.
func findRawDERKey(b []byte) (int, string, bool) {
	for off := 0; off < len(b); {
		i := bytes.IndexByte(b[off:], 0x30)
		if i < 0 {
			break
		}
		i += off
		off = i + 1
		n, ok := derCandidate(b[i:])
		if !ok || n > len(b)-i {
			continue
		}
		if kind, ok := derPrivateKey(b[i : i+n]); ok {
			return i, kind + " (DER)", true
		}
	}
	return 0, "", false
}

// derElem reads one DER element: its tag, content and total length.
// Only definite lengths of up to three bytes are read (at most 16 MiB).
func derElem(b []byte) (tag byte, content []byte, total int, ok bool) {
	if len(b) < 2 {
		return 0, nil, 0, false
	}
	tag = b[0]
	l, h := int(b[1]), 2
	if l >= 0x80 {
		k := l & 0x7f
		if k == 0 || k > 3 || len(b) < 2+k {
			return 0, nil, 0, false
		}
		l = 0
		for _, c := range b[2 : 2+k] {
			l = l<<8 | int(c)
		}
		h += k
	}
	if l > len(b)-h {
		return 0, nil, 0, false
	}
	return tag, b[h : h+l], h + l, true
}

// derCandidate reads the header of a SEQUENCE whose first element is an
// INTEGER or a SEQUENCE, as every private key structure's is, and
// returns its whole length (at most maxKeyBody); b may be cut short
// after the first element's tag.
func derCandidate(b []byte) (int, bool) {
	if len(b) < 3 || b[0] != 0x30 {
		return 0, false
	}
	l, h := int(b[1]), 2
	if l >= 0x80 {
		k := l & 0x7f
		if k == 0 || k > 3 || len(b) < 3+k {
			return 0, false
		}
		l = 0
		for _, c := range b[2 : 2+k] {
			l = l<<8 | int(c)
		}
		h += k
	}
	if l < 8 || h+l > maxKeyBody || b[h] != 0x02 && b[h] != 0x30 {
		return 0, false
	}
	return h + l, true
}

type derChild struct {
	tag     byte
	content []byte
}

var (
	oidPKCS5  = []byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05}       // 1.2.840.113549.1.5: PBES1, PBES2
	oidPKCS12 = []byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x01} // 1.2.840.113549.1.12.1: PKCS#12 PBE
	oidPKCS7  = []byte{0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07}       // 1.2.840.113549.1.7: PKCS#7 content types
)

// derPrivateKey recognises the ASN.1 shape of a private key in der, which
// must be exactly one SEQUENCE. It reads at most 16 element headers.
func derPrivateKey(der []byte) (string, bool) {
	tag, content, total, ok := derElem(der)
	if !ok || tag != 0x30 || total != len(der) {
		return "", false
	}
	var kids [16]derChild
	n := 0
	for rest := content; len(rest) > 0; {
		if n == len(kids) {
			break
		}
		t, c, l, ok := derElem(rest)
		if !ok {
			return "", false
		}
		kids[n] = derChild{t, c}
		n++
		rest = rest[l:]
	}
	k := kids[:n]
	isInt := func(i int) bool { return i < n && k[i].tag == 0x02 && len(k[i].content) > 0 }
	version := func(vs ...byte) bool {
		if !isInt(0) || len(k[0].content) != 1 {
			return false
		}
		for _, v := range vs {
			if k[0].content[0] == v {
				return true
			}
		}
		return false
	}
	firstOID := func(c []byte, prefix []byte) bool {
		t, oid, _, ok := derElem(c)
		return ok && t == 0x06 && bytes.HasPrefix(oid, prefix)
	}
	switch {
	case n >= 9 && version(0, 1) && allInts(k[:9]) && len(k[1].content) >= 8:
		return "an RSA private key", true
	case n == 6 && version(0) && allInts(k) && len(k[1].content) >= 8:
		return "a DSA private key", true
	case n >= 2 && n <= 4 && version(1) && k[1].tag == 0x04 && len(k[1].content) > 0 && optionalTags(k[2:], 0xa0, 0xa1):
		return "an EC private key", true
	case n >= 3 && version(0, 1) && k[1].tag == 0x30 && k[2].tag == 0x04 && len(k[2].content) > 0:
		if t, _, _, ok := derElem(k[1].content); ok && t == 0x06 {
			return "a PKCS#8 private key", true
		}
	case n == 2 && k[0].tag == 0x30 && k[1].tag == 0x04 && len(k[1].content) > 0 &&
		(firstOID(k[0].content, oidPKCS5) || firstOID(k[0].content, oidPKCS12)):
		return "an encrypted PKCS#8 private key", true
	case n >= 2 && version(3) && k[1].tag == 0x30 && firstOID(k[1].content, oidPKCS7):
		return "a PKCS#12 key store", true
	}
	return "", false
}

func allInts(k []derChild) bool {
	for _, c := range k {
		if c.tag != 0x02 || len(c.content) == 0 {
			return false
		}
	}
	return true
}

// optionalTags reports whether every element of k has one of tags, in
// order, each at most once.
func optionalTags(k []derChild, tags ...byte) bool {
	j := 0
	for _, c := range k {
		for j < len(tags) && tags[j] != c.tag {
			j++
		}
		if j == len(tags) {
			return false
		}
		j++
	}
	return true
}
