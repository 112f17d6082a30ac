package engine

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixture reads a key file of testdata/keys (made by its make.sh with
// openssl, ssh-keygen and puttygen, for the tests only).
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "keys", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// certBundle is about n bytes of PEM certificates (a CA bundle).
func certBundle(t testing.TB, n int) []byte {
	cert := fixture(t, "test-only-cert.pem")
	var b []byte
	for len(b) < n {
		b = append(b, "# Issuer: CN=test-only\n"...)
		b = append(b, cert...)
	}
	return b
}

func b64lines(der []byte, width int) string {
	s := base64.StdEncoding.EncodeToString(der)
	if width <= 0 {
		return s
	}
	var out strings.Builder
	for len(s) > width {
		out.WriteString(s[:width] + "\n")
		s = s[width:]
	}
	out.WriteString(s + "\n")
	return out.String()
}

func bigB64(n *big.Int) string { return base64.RawURLEncoding.EncodeToString(n.Bytes()) }

// jwks makes private JWKs of each kind and their public twins.
func jwks(t testing.TB) (private, public map[string]string) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	epub, _ := ek.PublicKey.Bytes()
	edpub, edpriv, _ := ed25519.GenerateKey(rand.Reader)
	rsaPub := fmt.Sprintf(`"kty":"RSA","kid":"test-only","n":%q,"e":"AQAB"`, bigB64(rk.N))
	ecPub := fmt.Sprintf(`"kty":"EC","crv":"P-256","x":%q,"y":%q`, base64.RawURLEncoding.EncodeToString(epub[1:33]), base64.RawURLEncoding.EncodeToString(epub[33:]))
	edPub := fmt.Sprintf(`"kty":"OKP","crv":"Ed25519","x":%q`, base64.RawURLEncoding.EncodeToString(edpub))
	ecD, _ := ek.Bytes()
	private = map[string]string{
		"rsa": fmt.Sprintf(`{%s,"d":%q,"p":%q,"q":%q}`, rsaPub, bigB64(rk.D), bigB64(rk.Primes[0]), bigB64(rk.Primes[1])),
		"ec":  fmt.Sprintf(`{%s,"d":%q}`, ecPub, base64.RawURLEncoding.EncodeToString(ecD)),
		"okp": fmt.Sprintf(`{%s,"d":%q}`, edPub, base64.RawURLEncoding.EncodeToString(edpriv.Seed())),
		"oct": `{"kty":"oct","alg":"HS256","k":"GawgguFyGrWKav7AX4VKUg"}`,
	}
	public = map[string]string{
		"rsa": "{" + rsaPub + "}",
		"ec":  "{" + ecPub + "}",
		"okp": "{" + edPub + "}",
	}
	return private, public
}

// secretForms are private key material in every text form the
// classifier knows; publicForms are their public twins.
func secretForms(t testing.TB) map[string][]byte {
	f := map[string][]byte{}
	for _, n := range []string{"test-only-rsa.key", "test-only-rsa-pkcs1.pem", "test-only-ec-sec1.pem", "test-only-ec.key",
		"test-only-ed25519.key", "test-only-x25519.key", "test-only-dsa.key", "test-only-dh.key", "test-only-rsa-encrypted.pem",
		"test-only-ssh-ed25519", "test-only-ssh-rsa", "test-only-ssh-encrypted", "test-only-putty.ppk", "test-only-pgp-secret.asc"} {
		f[n] = fixture(t, n)
	}
	for _, k := range []string{"rsa", "ec", "ed25519", "x25519", "dsa", "dh"} {
		f[k+" text dump"] = fixture(t, "test-only-"+k+"-dump.txt")
	}
	// OpenSSL 1.1's `openssl rsa -text` header.
	f["rsa text dump (1.1)"] = bytes.Replace(fixture(t, "test-only-rsa-dump.txt"), []byte("Private-Key:"), []byte("RSA Private-Key:"), 1)
	// Only the private exponent, as a red team would cut it.
	d := fixture(t, "test-only-rsa-dump.txt")
	f["rsa privateExponent only"] = d[bytes.Index(d, []byte("privateExponent:")):bytes.Index(d, []byte("prime1:"))]
	for _, n := range []string{"test-only-rsa-pkcs1.der", "test-only-rsa-pkcs8.der", "test-only-ec-sec1.der", "test-only-ec-encrypted.der"} {
		der := fixture(t, n)
		f[n+" raw"] = der
		f[n+" base64 one line"] = []byte(b64lines(der, 0) + "\n")
		f[n+" base64 76"] = []byte(b64lines(der, 76))
		f[n+" in YAML"] = []byte("apiVersion: v1\ndata:\n  blob: " + b64lines(der, 0) + "\n  other: x\n")
		f[n+" YAML block"] = []byte("blob: |\n    " + strings.ReplaceAll(strings.TrimSpace(b64lines(der, 64)), "\n", "\n    ") + "\nnext: 1\n")
		f[n+" JSON value with \\n"] = []byte(`{"blob": "` + strings.ReplaceAll(b64lines(der, 64), "\n", `\n`) + `", "n": 1}`)
		f[n+" base64url"] = []byte("v=" + base64.RawURLEncoding.EncodeToString(der) + "\n")
	}
	f["k8s secret (base64 of PEM)"] = []byte("kind: Secret\ndata:\n  tls.crt: " + base64.StdEncoding.EncodeToString(fixture(t, "test-only-cert.pem")) +
		"\n  tls.key: " + base64.StdEncoding.EncodeToString(fixture(t, "test-only-ec-sec1.pem")) + "\n")
	ssh := fixture(t, "test-only-ssh-ed25519")
	f["openssh body without armour"] = bytes.TrimSpace(ssh[bytes.IndexByte(ssh, '\n')+1 : bytes.Index(ssh, []byte("-----END"))])
	private, _ := jwks(t)
	for k, v := range private {
		f["jwk "+k] = []byte(v)
		f["jwks "+k] = []byte(`{"keys": [` + v + `]}`)
		f["jwk "+k+" in JS"] = []byte("export const key = " + strings.ReplaceAll(v, `"kty"`, `'kty'`) + ";\n")
		f["jwk "+k+" then junk"] = []byte(v + "\n} not json {\n")
	}
	// A private member's name escaped: only a JSON reader sees it.
	f["jwk escaped name"] = []byte(strings.Replace(private["ec"], `"d":`, `"\u0064":`, 1))
	f["age identity"] = []byte("# created: 2024-01-01T00:00:00Z\n# public key: age1qqqq\nAGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX\n")
	// Keys as code holds them.
	rsaPEM := string(fixture(t, "test-only-rsa-pkcs1.pem"))
	f["Go raw string"] = []byte("package x\n\nconst key = `" + rsaPEM + "`\n")
	f["Go concatenation"] = []byte("package x\n\nvar key = \"" + strings.ReplaceAll(strings.TrimSpace(rsaPEM), "\n", "\\n\" +\n\t\"") + "\\n\"\n")
	f["Python dict"] = []byte("KEY = {'pem': '" + strings.ReplaceAll(rsaPEM, "\n", `\n`) + "'}\n")
	f["JSON service account"] = []byte(`{"type": "x", "pk": ` + mustJSON(string(fixture(t, "test-only-rsa.key"))) + `}`)
	f["JSON string holding a dump"] = []byte(`{"note": ` + mustJSON(string(fixture(t, "test-only-ec-dump.txt"))) + `}`)
	return f
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func publicForms(t testing.TB) map[string][]byte {
	f := map[string][]byte{}
	for _, n := range []string{"test-only-cert.pem", "test-only.csr", "test-only-ssh-ed25519.pub", "test-only-ssh-rsa.pub", "test-only-putty-pub.txt",
		"test-only-cert-dump.txt", "test-only-csr-dump.txt", "test-only-pgp-public.asc"} {
		f[n] = fixture(t, n)
	}
	for _, k := range []string{"rsa", "ec", "ed25519", "x25519", "dsa", "dh"} {
		f[k+" public key"] = fixture(t, "test-only-"+k+"-pub.pem")
		f[k+" public text dump"] = fixture(t, "test-only-"+k+"-pub-dump.txt")
	}
	cert := fixture(t, "test-only-cert.pem")
	f["x509 -text with the PEM"] = append(fixture(t, "test-only-cert-dump.txt"), cert...)
	blk, _ := pem.Decode(cert)
	f["certificate base64 (no armour)"] = []byte(b64lines(blk.Bytes, 64))
	f["certificate base64 in YAML"] = []byte("ca.crt: " + b64lines(blk.Bytes, 0))
	pub, _ := pem.Decode(fixture(t, "test-only-rsa-pub.pem"))
	f["public key base64 in JSON"] = []byte(`{"spki": "` + b64lines(pub.Bytes, 0) + `"}`)
	_, public := jwks(t)
	for k, v := range public {
		f["jwk "+k] = []byte(v)
		f["jwks "+k] = []byte(`{"keys": [` + v + `]}`)
	}
	noise := make([]byte, 3000)
	_, _ = rand.Read(noise)
	f["random base64 (an image)"] = []byte(`{"png": "data:image/png;base64,` + base64.StdEncoding.EncodeToString(noise) + `"}`)
	f["sha256 and a JWT-shaped value"] = []byte("sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\nexample: eyJhbGciOiJIUzI1NiJ9.e30.ZRrHA1JJJW8opsbCGfG_HACGpVUMN_a9IV7pAx_Zmeo\n")
	f["prose about markers"] = []byte("// A PKCS#1 key starts with -----BEGIN RSA PRIVATE KEY----- and ends with\n" +
		"// -----END RSA PRIVATE KEY-----; OpenSSH's with -----BEGIN OPENSSH PRIVATE KEY-----.\n" +
		"// age identities start AGE-SECRET-KEY-1, PuTTY's PuTTY-User-Key-File-3 and Private-Lines:.\n" +
		"// `openssl pkey -text` prints privateExponent: and priv: before the hex.\n" +
		"func parse(b []byte) {}\n")
	f["test fixture without a body"] = []byte("var bad = []string{\"-----BEGIN PRIVATE KEY-----\\nMIIE...\\n-----END PRIVATE KEY-----\", `{\"kty\":\"EC\",\"d\":\"\"}`}\n")
	f["prose: Go source that parses keys"] = []byte("// parseKey reads -----BEGIN RSA PRIVATE KEY----- blocks.\nfunc parseRSAPrivateKeyFromPEMBlock(b []byte) (*rsa.PrivateKey, error) {\n\treturn x509.ParsePKCS1PrivateKey(b) // ParsePKCS8PrivateKeyOtherwise\n}\n")
	f["JSON with d but no kty"] = []byte(`{"d": "2024-01-01T00:00:00Z-abcdefgh", "p": "some/long/path/name/here"}`)
	return f
}

// jsonOnly are the secret forms only a JSON reader sees.
var jsonOnly = map[string]bool{"jwk escaped name": true, "JSON string holding a dump": true}

// TestLooksSecretKeyForms: every form of a private key is secret under
// any name, at the start, after 200 KB of certificates and at the end of
// a file; its public twin is public.
func TestLooksSecretKeyForms(t *testing.T) {
	bundle := certBundle(t, 200<<10)
	tail := fixture(t, "test-only-cert.pem")
	for name, b := range secretForms(t) {
		if jsonOnly[name] {
			// Seen only by reading the file as JSON: whole, or followed
			// by anything, but not after other text.
			for _, path := range []string{"/w/k.json", "/w/x.pem", "/w/notes.txt"} {
				if !LooksSecret(path, b) || !LooksSecret(path, append(append([]byte{}, b...), tail...)) {
					t.Errorf("%s as %s: not secret", name, path)
				}
			}
			continue
		}
		for _, path := range []string{"/w/x.pem", "/w/notes.txt", "/w/config.yaml", "/w/.env.local", "/w/id_deploy", "/w/data.bin"} {
			if f, ok := FindPrivateKey(b); !ok || !LooksSecret(path, b) {
				t.Errorf("%s as %s: not secret (%v)", name, path, f)
			}
		}
		mid := append(append(append(append([]byte{}, bundle...), '\n'), b...), append([]byte("\n"), tail...)...)
		if f, ok := FindPrivateKey(mid); !ok || !LooksSecret("/w/chain.pem", mid) {
			t.Errorf("%s after %d KB of certificates: not secret", name, len(bundle)>>10)
		} else if f.Line < bytes.Count(bundle, []byte{'\n'}) {
			t.Errorf("%s after certificates: found at line %d, before it starts", name, f.Line)
		}
		end := append(bytes.Repeat([]byte("# filler line of a long configuration file\n"), (SecretScanLimit-len(b))/44-1), b...)
		if len(end) >= SecretScanLimit || !LooksSecret("/w/notes.txt", end) {
			t.Errorf("%s at the end of %d bytes: not secret", name, len(end))
		}
	}
	for name, b := range publicForms(t) {
		paths := []string{"/w/notes.txt", "/w/config.yaml"}
		if (bytes.Contains(b, []byte("-----BEGIN")) || bytes.Contains(b, []byte("---- BEGIN")) || bytes.HasPrefix(b, []byte("ssh-"))) && !jsonOnly[name] && !strings.HasPrefix(name, "prose") && !strings.HasPrefix(name, "test fixture") {
			// Key material names: public only when made of public blocks.
			paths = append(paths, "/w/x.pem", "/w/id_x.pub")
		}
		for _, path := range paths {
			if f, ok := FindPrivateKey(b); ok || LooksSecret(path, b) {
				t.Errorf("public %s as %s: looks secret (%v)", name, path, f)
			}
		}
		if bytes.Contains(b, []byte("-----BEGIN")) && !strings.HasPrefix(name, "prose") && !strings.HasPrefix(name, "test fixture") {
			chain := append(append(append([]byte{}, bundle...), b...), tail...)
			if LooksSecret("/w/chain.pem", chain) {
				t.Errorf("public %s among certificates: looks secret", name)
			}
		}
	}
}

// TestFindPrivateKeySays: what was found, and where.
func TestFindPrivateKeySays(t *testing.T) {
	b := append(fixture(t, "test-only-cert.pem"), fixture(t, "test-only-rsa-dump.txt")...)
	f, ok := FindPrivateKey(b)
	line := bytes.Count(fixture(t, "test-only-cert.pem"), []byte{'\n'}) + 1 + bytes.Count(fixture(t, "test-only-rsa-dump.txt")[:bytes.Index(fixture(t, "test-only-rsa-dump.txt"), []byte("privateExponent:"))], []byte{'\n'})
	if !ok || f.String() != fmt.Sprintf("a private key (openssl -text dump) at line %d", line) {
		t.Errorf("got %q %v, want line %d", f, ok, line)
	}
	for form, want := range map[string]string{
		"test-only-ed25519-dump.txt": "an ED25519 private key (openssl -text dump)",
		"test-only-rsa-pkcs1.der":    "an RSA private key (DER)",
		"test-only-ec-encrypted.der": "an encrypted PKCS#8 private key (DER)",
		"test-only-putty.ppk":        "a PuTTY private key",
		"test-only-ssh-ed25519":      `a private key (PEM block "OPENSSH PRIVATE KEY")`,
	} {
		if f, _ := FindPrivateKey(fixture(t, form)); f.What != want {
			t.Errorf("%s: %q, want %q", form, f.What, want)
		}
	}
}

// TestDERShapes: the structural check takes private key shapes and
// nothing public that real files hold.
func TestDERShapes(t *testing.T) {
	for _, n := range []string{"test-only-rsa-pkcs1.der", "test-only-rsa-pkcs8.der", "test-only-ec-sec1.der", "test-only-ec-encrypted.der"} {
		if _, ok := derPrivateKey(fixture(t, n)); !ok {
			t.Errorf("%s: not a private key", n)
		}
		der := fixture(t, n)
		if _, ok := derPrivateKey(der[:len(der)-1]); ok {
			t.Errorf("%s cut short: still a key", n)
		}
	}
	cert, _ := pem.Decode(fixture(t, "test-only-cert.pem"))
	csr, _ := pem.Decode(fixture(t, "test-only.csr"))
	for name, der := range map[string][]byte{"certificate": cert.Bytes, "request": csr.Bytes} {
		if _, ok := derPrivateKey(der); ok {
			t.Errorf("%s: taken for a private key", name)
		}
	}
	for _, k := range []string{"rsa", "ec", "ed25519", "x25519", "dsa", "dh"} {
		blk, _ := pem.Decode(fixture(t, "test-only-"+k+"-pub.pem"))
		if _, ok := derPrivateKey(blk.Bytes); ok {
			t.Errorf("%s public key: taken for a private key", k)
		}
	}
	// A DER key whose numbers were altered is still a key by its shape.
	der := append([]byte{}, fixture(t, "test-only-rsa-pkcs1.der")...)
	copy(der[len(der)-20:], "SECRET-0123456789abc")
	if _, ok := derPrivateKey(der); !ok {
		t.Error("an altered RSA key: not a key")
	}
}

// TestLooksSecretAppendedPublic: public content after a secret keeps it
// secret; this is the consistency the fuzzer checks on random input.
func TestLooksSecretAppendedPublic(t *testing.T) {
	pub := publicForms(t)
	for name, b := range secretForms(t) {
		for pn, p := range pub {
			for _, path := range []string{"/w/x.pem", "/w/notes.json"} {
				if !LooksSecret(path, append(append(append([]byte{}, b...), '\n'), p...)) {
					t.Errorf("%s then %s as %s: not secret", name, pn, path)
				}
			}
		}
	}
}

// TestLooksSecretLinear: inputs made to be slow for each finder take
// time in proportion to their size (16 times the bytes: under 128 times
// the time, where a quadratic finder takes 256 times). The two sizes are
// timed in turn, best of five each, so a busy machine slows both alike;
// what a scan costs is measured by the benchmarks, not held here.
func TestLooksSecretLinear(t *testing.T) {
	cert := fixture(t, "test-only-cert.pem")
	der := fixture(t, "test-only-rsa-pkcs1.der")
	bad := append([]byte{}, der...)
	bad[len(bad)-1] ^= 0xff
	bad = bad[:len(bad)-3]
	patterns := map[string][]byte{
		"begin markers":       []byte("-----BEGIN RSA PRIVATE KEY-----\nMII\n"),
		"unterminated begin":  []byte("-----BEGIN RSA PRIVATE KEY-----"),
		"putty markers":       []byte("PuTTY-User-Key-File-3: x\n"),
		"age prefixes":        []byte("AGE-SECRET-KEY-1QQQQQQQQ "),
		"dump labels":         []byte("priv:\n    00:11:22:\n"),
		"quotes and kty":      []byte(`"kty" "d": "abc" 'k':`),
		"M runs":              []byte("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ\n"),
		"base64 of a bad key": []byte(b64lines(bad, 64)),
		"raw DER headers":     {0x30, 0x82, 0x04, 0xa4, 0x02, 0x01, 0x00, 0x02},
		"certificates":        cert,
		"deep JSON":           []byte("[{\"a\\u0041\":["),
		"JSON tokens":         []byte(`{"kty": "x", "d": "", "v": ["\u0041", 1, true, null]},`),
		"json strings":        []byte(`{"s": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQMIIEvQIBADANBgkqhkiG9w0BAQEF"},`),
	}
	size := func(p []byte, n int) []byte {
		b := bytes.Repeat(p, n/len(p)+1)
		return b[:n]
	}
	measure := func(small, large []byte) (ts, tl time.Duration) {
		ts, tl = time.Duration(1<<62), time.Duration(1<<62)
		for i := 0; i < 5; i++ {
			start := time.Now()
			LooksSecret("/w/x.json", small)
			ts = min(ts, time.Since(start))
			start = time.Now()
			LooksSecret("/w/x.json", large)
			tl = min(tl, time.Since(start))
		}
		return ts, tl
	}
	for name, p := range patterns {
		small, large := measure(size(p, 64<<10), size(p, SecretScanLimit-1))
		// Linear: 16 times the bytes in about 16 times the time; a
		// quadratic scan takes 256 times. Only the ratio is held (of the
		// fastest of five runs each): a loaded machine stretches both
		// sizes alike, where a bound in seconds failed a run whose 1 MiB
		// took 1.06 s at a ratio of 21.
		if large > 128*max(small, 100*time.Microsecond) {
			t.Errorf("%s: 64 KiB in %v, 1 MiB in %v", name, small, large)
		}
		t.Logf("%-20s 64 KiB %8v  1 MiB %8v", name, small, large)
	}
}
