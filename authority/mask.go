package authority

import (
	"strings"
	"unicode"
)

// Masked stands in for a value MaskSecrets removed. A reader must take it
// as unknown content, not as harmless content.
const Masked = "***"

// MaskSecrets returns s with secret-looking values replaced by Masked. It
// is the one masking function for everything permwrap sends or writes
// outside (requests to reviewer programs, the review log); see "What a
// reviewer is sent" in docs/authorizers.md for the forms it knows:
//
//   - NAME=value, NAME: value, "NAME": "value" where NAME looks secret
//     (GITHUB_TOKEN=…, --password=…, Authorization: Bearer …,
//     ?access_token=…, "apiKey": "…");
//   - --password VALUE (a long option with a secret name, then a value);
//   - the password of a URL's userinfo (https://user:…@host);
//   - tokens by their shape (ghp_…, glpat-…, sk-…, xoxb-…, AKIA…, JWTs…);
//   - the body of a PEM private key block.
//
// Only runs of characters that mean nothing to a shell are ever replaced:
// whitespace, quotes, backslashes, $, backquotes and ;&|<>() are always
// kept where they were. So masking can shorten a value but never hide a
// command, a substitution or a redirection from whoever reads the
// result; the price is that a secret holding one of those characters is
// masked only up to it.
func MaskSecrets(s string) string {
	if !mightHoldSecret(s) {
		return s
	}
	m := masker{s: s}
	m.pemBlocks()
	m.urlPasswords()
	m.pairs()
	m.optionValues()
	m.tokenShapes()
	return m.render()
}

// MaskArgv masks a command line given as its words: each word with
// MaskSecrets, and the word after an option with a secret name given
// on its own (--password VALUE as two words). It returns argv itself when
// nothing was masked.
func MaskArgv(argv []string) []string {
	var out []string
	for i, w := range argv {
		mw := MaskSecrets(w)
		if i > 0 && secretOption(argv[i-1]) && !strings.HasPrefix(w, "-") {
			mw = maskLeading(mw)
		}
		if mw != w && out == nil {
			out = append(make([]string, 0, len(argv)), argv[:i]...)
		}
		if out != nil {
			out = append(out, mw)
		}
	}
	if out == nil {
		return argv
	}
	return out
}

// maskLeading masks the run of inert characters at the start of w.
func maskLeading(w string) string {
	n := inertRun(w, 0)
	if n == 0 || w[:n] == Masked {
		return w
	}
	return Masked + w[n:]
}

// mightHoldSecret is the fast path: every form needs a '=' or ':', an
// option word, or a token prefix at the start of a word.
func mightHoldSecret(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '=' || c == ':' {
			return true
		}
		if i > 0 && alnumDash(s[i-1]) {
			continue
		}
		if c == '-' && (i == 0 || isSpace(s[i-1])) {
			return true
		}
		for _, t := range shapesByFirst[c] {
			if strings.HasPrefix(s[i:], t.prefix) {
				return true
			}
		}
	}
	return false
}

// unsafeByte reports the bytes masking never removes: those that can
// start or end a word, a quote, a command, a substitution or a
// redirection in a shell, in any quoting state.
func unsafeByte(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f', '\'', '"', '`', '$', '\\', ';', '&', '|', '<', '>', '(', ')':
		return true
	}
	return false
}

// inertRun is the length of the run of safe bytes at s[i:].
func inertRun(s string, i int) int {
	j := i
	for j < len(s) && !unsafeByte(s[j]) {
		j++
	}
	return j - i
}

type masker struct {
	s    string
	mask []bool // nil until something is masked
}

func (m *masker) set(lo, hi int) {
	if m.mask == nil {
		m.mask = make([]bool, len(m.s))
	}
	for k := lo; k < hi; k++ {
		m.mask[k] = true
	}
}

// maskRun marks the inert run starting at i (nothing if it is empty or
// already the placeholder) and returns its end.
func (m *masker) maskRun(i int) int {
	n := inertRun(m.s, i)
	if n > 0 && m.s[i:i+n] != Masked {
		m.set(i, i+n)
	}
	return i + n
}

// maskRange marks every inert run inside s[lo:hi] (but not the
// placeholder).
func (m *masker) maskRange(lo, hi int) {
	for k := lo; k < hi; {
		if unsafeByte(m.s[k]) {
			k++
			continue
		}
		j := k
		for j < hi && !unsafeByte(m.s[j]) {
			j++
		}
		if m.s[k:j] != Masked {
			m.set(k, j)
		}
		k = j
	}
}

func (m *masker) render() string {
	if m.mask == nil {
		return m.s
	}
	var b strings.Builder
	changed := false
	for i := 0; i < len(m.s); {
		if !m.mask[i] {
			b.WriteByte(m.s[i])
			i++
			continue
		}
		changed = true
		b.WriteString(Masked)
		for i < len(m.s) && m.mask[i] {
			i++
		}
	}
	if !changed {
		return m.s
	}
	return b.String()
}

// pemBlocks masks the body of every -----BEGIN … PRIVATE KEY----- block.
func (m *masker) pemBlocks() {
	const begin, end = "-----BEGIN ", "-----END "
	from := 0
	for {
		i := strings.Index(m.s[from:], begin)
		if i < 0 {
			return
		}
		i += from
		hdrEnd := strings.Index(m.s[i+len(begin):], "-----")
		if hdrEnd < 0 {
			return
		}
		hdr := m.s[i+len(begin) : i+len(begin)+hdrEnd]
		body := i + len(begin) + hdrEnd + len("-----")
		from = body
		if !strings.HasSuffix(hdr, "PRIVATE KEY") || strings.ContainsAny(hdr, "\n\r") {
			continue
		}
		stop := strings.Index(m.s[body:], end)
		if stop < 0 {
			stop = len(m.s) - body // cut off: mask to the end
		}
		m.maskRange(body, body+stop)
		from = body + stop
	}
}

// urlPasswords masks the password of scheme://user:password@host, and a
// long user name alone (https://TOKEN@host), which is how tokens are
// usually put in a URL.
func (m *masker) urlPasswords() {
	from := 0
	for {
		i := strings.Index(m.s[from:], "://")
		if i < 0 {
			return
		}
		start := from + i + 3
		from = start
		// userinfo: up to '@', before any '/', '?', '#' or unsafe byte.
		j := start
		colon := -1
		for j < len(m.s) && !unsafeByte(m.s[j]) && m.s[j] != '/' && m.s[j] != '?' && m.s[j] != '#' && m.s[j] != '@' {
			if m.s[j] == ':' && colon < 0 {
				colon = j
			}
			j++
		}
		if j >= len(m.s) || m.s[j] != '@' {
			continue
		}
		lo, hi := -1, -1
		switch {
		case colon >= 0 && colon+1 < j:
			lo, hi = colon+1, j
		case colon < 0 && j-start >= 20:
			lo, hi = start, j
		}
		if lo >= 0 && m.s[lo:hi] != Masked {
			m.set(lo, hi)
		}
	}
}

// nameByte is a byte of a NAME in NAME=value.
func nameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// pairs masks NAME=value, NAME: value (a space after the colon: headers,
// YAML), Authorization:value, and "NAME": "value" (JSON, Python) where
// NAME looks secret.
func (m *masker) pairs() {
	s := m.s
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' && c != ':' {
			continue
		}
		var name string
		if i > 0 && (s[i-1] == '"' || s[i-1] == '\'') && c == ':' {
			// "NAME": — the name is the quoted string before.
			q := s[i-1]
			open := strings.LastIndexByte(s[:i-1], q)
			if open < 0 {
				continue
			}
			name = s[open+1 : i-1]
		} else {
			k := i
			for k > 0 && nameByte(s[k-1]) {
				k--
			}
			name = s[k:i]
		}
		strong, weak := secretName(name)
		if !strong && !weak {
			continue
		}
		v := i + 1
		if c == ':' {
			// A colon is a separator when a space follows it, when the
			// name is quoted (JSON), or for Authorization headers;
			// otherwise it is part of a word (npm run auth:test).
			sp := v
			for sp < len(s) && (s[sp] == ' ' || s[sp] == '\t') {
				sp++
			}
			quoted := i > 0 && (s[i-1] == '"' || s[i-1] == '\'')
			if sp == v && !quoted && !strings.Contains(strings.ToLower(name), "authorization") {
				continue
			}
			v = sp
		}
		v = skipAuthScheme(s, v)
		if v < len(s) && (s[v] == '"' || s[v] == '\'') {
			v++
		}
		if weak && !strong && inertRun(s, v) < 8 {
			continue // sort --key=2, KEY=a: short values under a vague name
		}
		m.maskRun(v)
	}
}

// skipAuthScheme skips "Bearer ", "Basic ", "token " … at s[v:], which
// tell the kind of credential, not the credential.
func skipAuthScheme(s string, v int) int {
	for _, scheme := range []string{"bearer", "basic", "token", "digest", "bot", "oauth", "apikey", "negotiate"} {
		if len(s) > v+len(scheme) && strings.EqualFold(s[v:v+len(scheme)], scheme) && (s[v+len(scheme)] == ' ' || s[v+len(scheme)] == '\t') {
			v += len(scheme)
			for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
				v++
			}
			return v
		}
	}
	return v
}

// optionValues masks the value after an option with a secret name given
// as its own word: --password hunter2, -passphrase x.
func (m *masker) optionValues() {
	s := m.s
	for i := 0; i < len(s); i++ {
		if s[i] != '-' || (i > 0 && !isSpace(s[i-1])) {
			continue
		}
		j := i
		for j < len(s) && nameByte(s[j]) {
			j++
		}
		if j == len(s) || !isSpace(s[j]) || !secretOption(s[i:j]) {
			i = j
			continue
		}
		v := j
		for v < len(s) && isSpace(s[v]) {
			v++
		}
		if v < len(s) && s[v] == '-' {
			i = v - 1
			continue
		}
		if v < len(s) && (s[v] == '"' || s[v] == '\'') {
			v++
		}
		m.maskRun(v)
		i = j
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

// secretOption reports whether w is an option (a word starting with "-",
// no "=") whose name is clearly a secret.
func secretOption(w string) bool {
	if len(w) < 2 || w[0] != '-' || strings.ContainsRune(w, '=') {
		return false
	}
	strong, _ := secretName(w)
	return strong
}

// tokenShape is a credential format recognisable by itself: a fixed
// prefix and a minimum number of body bytes from a given alphabet.
type tokenShape struct {
	prefix string
	min    int
	body   func(byte) bool
	// mixed: the body must hold an upper-case letter, a lower-case
	// letter and a digit (keys are random; package names are not).
	mixed bool
}

func alnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func alnumDash(c byte) bool { return alnum(c) || c == '-' || c == '_' }
func upperDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z'
}
func jwtByte(c byte) bool { return alnumDash(c) || c == '.' }

// tokenShapes lists well-known credential formats (GitHub, GitLab,
// OpenAI/Anthropic, Slack, AWS, Google, npm, PyPI, Hugging Face, JWT).
var tokenShapes = []tokenShape{
	{prefix: "ghp_", min: 30, body: alnum}, {prefix: "gho_", min: 30, body: alnum}, {prefix: "ghu_", min: 30, body: alnum}, {prefix: "ghs_", min: 30, body: alnum}, {prefix: "ghr_", min: 30, body: alnum},
	{prefix: "github_pat_", min: 30, body: alnumDash},
	{prefix: "glpat-", min: 20, body: alnumDash},
	{prefix: "sk-", min: 32, body: alnumDash, mixed: true},
	{prefix: "xoxb-", min: 10, body: alnumDash}, {prefix: "xoxp-", min: 10, body: alnumDash}, {prefix: "xoxa-", min: 10, body: alnumDash}, {prefix: "xoxr-", min: 10, body: alnumDash}, {prefix: "xoxs-", min: 10, body: alnumDash},
	{prefix: "AKIA", min: 16, body: upperDigit}, {prefix: "ASIA", min: 16, body: upperDigit},
	{prefix: "AIza", min: 30, body: alnumDash},
	{prefix: "npm_", min: 30, body: alnum},
	{prefix: "pypi-", min: 50, body: alnumDash},
	{prefix: "hf_", min: 30, body: alnum, mixed: true},
	{prefix: "eyJ", min: 20, body: jwtByte},
}

// shapesByFirst indexes tokenShapes by the first byte of their prefix.
var shapesByFirst = func() (t [256][]tokenShape) {
	for _, s := range tokenShapes {
		t[s.prefix[0]] = append(t[s.prefix[0]], s)
	}
	return t
}()

// tokenShapes masks tokens recognised by their shape, keeping the prefix
// (it says what kind of token it was).
func (m *masker) tokenShapes() {
	s := m.s
	for i := 0; i < len(s); i++ {
		if i > 0 && alnumDash(s[i-1]) {
			continue // not the start of a word
		}
		for _, t := range shapesByFirst[s[i]] {
			if !strings.HasPrefix(s[i:], t.prefix) {
				continue
			}
			j := i + len(t.prefix)
			for j < len(s) && t.body(s[j]) {
				j++
			}
			if j-i-len(t.prefix) < t.min {
				continue
			}
			if t.mixed && !mixedCase(s[i+len(t.prefix):j]) {
				continue
			}
			if t.prefix == "eyJ" && strings.Count(s[i:j], ".") != 2 {
				continue // a JWT has three parts
			}
			m.set(i+len(t.prefix), j)
			i = j - 1
			break
		}
	}
}

func mixedCase(b string) bool {
	var up, low, digit bool
	for i := 0; i < len(b); i++ {
		c := b[i]
		up = up || c >= 'A' && c <= 'Z'
		low = low || c >= 'a' && c <= 'z'
		digit = digit || c >= '0' && c <= '9'
	}
	return up && low && digit
}

// secretName classifies a NAME (of a variable, option, header or field):
// strong when it names a secret (password, token, secret, API key, …),
// weak when it only ends in "key" (STRIPE_KEY, but also sort's --key).
// Names whose last word says the value is something else — a file, a
// path, an id, a length, a command — are neither.
func secretName(name string) (strong, weak bool) {
	if !mentionsSecret(name) {
		return false, false
	}
	words := nameWords(name)
	if len(words) == 0 {
		return false, false
	}
	if notAValue[words[len(words)-1]] {
		return false, false
	}
	for i, w := range words {
		if secretWords[w] {
			return true, false
		}
		if w == "pwd" && len(words) > 1 { // DB_PWD, but not PWD (the working directory)
			return true, false
		}
		for _, suf := range secretSuffixes {
			if strings.HasSuffix(w, suf) && len(w) > len(suf) {
				return true, false // PGPASSWORD, authtoken, clientsecret
			}
		}
		if (w == "key" || w == "keys") && i > 0 && keyQualifiers[words[i-1]] {
			return true, false // api_key, private-key, AWS_SECRET_ACCESS_KEY
		}
	}
	if last := words[len(words)-1]; last == "key" || last == "keys" {
		return false, true
	}
	return false, false
}

// mentionsSecret is secretName's fast path: every secret name holds one
// of these, in any case.
func mentionsSecret(name string) bool {
	for _, w := range []string{"pass", "pwd", "secret", "token", "cred", "auth", "cookie", "key", "sig", "pat"} {
		if containsFold(name, w) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case ASCII word w in
// any case, without allocating.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		j := 0
		for ; j < len(w); j++ {
			c := s[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != w[j] {
				break
			}
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

var secretWords = map[string]bool{
	"pass": true, "passwd": true, "password": true, "passwords": true, "passphrase": true,
	"secret": true, "secrets": true, "token": true, "credential": true, "credentials": true,
	"creds": true, "cred": true, "auth": true, "authorization": true, "cookie": true,
	"apikey": true, "privatekey": true, "accesskey": true, "secretkey": true,
	"sig": true, "signature": true, "pat": true,
}

var secretSuffixes = []string{"password", "passwd", "passphrase", "secret", "token", "credential", "credentials", "apikey"}

var keyQualifiers = map[string]bool{
	"api": true, "private": true, "access": true, "secret": true, "client": true, "master": true,
	"signing": true, "encryption": true, "session": true, "license": true, "auth": true, "account": true,
}

var notAValue = map[string]bool{
	"file": true, "files": true, "path": true, "dir": true, "directory": true, "stdin": true,
	"fd": true, "env": true, "cmd": true, "command": true, "helper": true, "id": true, "ids": true,
	"name": true, "type": true, "length": true, "len": true, "size": true, "count": true,
	"format": true, "prompt": true, "url": true, "uri": true, "endpoint": true, "mode": true,
	"required": true, "expiry": true, "expires": true, "ttl": true, "timeout": true,
	"version": true, "kind": true, "store": true, "method": true,
}

// nameWords splits a name into lower-case words at non-alphanumerics and
// camel-case boundaries: "--api-key" → api key, "apiKey" → api key,
// "AWS_SECRET_ACCESS_KEY" → aws secret access key, "APIKey" → api key.
func nameWords(name string) []string {
	var words []string
	var cur []rune
	rs := []rune(name)
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if i > 0 && unicode.IsUpper(r) && len(cur) > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}
