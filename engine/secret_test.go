package engine

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// keyFixtures makes a certificate and its private key in the encodings
// real tools write, so no key is committed to the repository.
type keyFixtures struct {
	certPEM, pkcs8PEM, ecPEM, pubPEM, certDER, keyDER []byte
}

func makeKeys(t testing.TB) keyFixtures {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p8, _ := x509.MarshalPKCS8PrivateKey(key)
	ec, _ := x509.MarshalECPrivateKey(key)
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	return keyFixtures{
		certPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pkcs8PEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}),
		ecPEM:    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ec}),
		pubPEM:   pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		certDER:  der,
		keyDER:   p8,
	}
}

func TestLooksSecret(t *testing.T) {
	k := makeKeys(t)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	edPEM := pem.EncodeToMemory(&pem.Block{Type: "OPENSSH PRIVATE KEY", Bytes: edKey})
	bundle := []byte("##\n## Bundle of CA Root Certificates\n##\n\n# Issuer: CN=Test O=Test\n# Subject: CN=Test\n# Label: \"Test\"\n# Serial: 1\n# SHA256 Fingerprint: 55:92:60:84:ec:96:3a:64:b9:6e:2a:be:01:ce:0b:a8:6a:64:fb:fe:bc:c7:aa:b5:af:c1:55:b3:7f:d7:60:66\n")
	bundle = append(append(bundle, k.certPEM...), k.certPEM...)
	textDump := []byte("Certificate:\n    Data:\n        Version: 3 (0x2)\n        Signature Algorithm: ecdsa-with-SHA256\n            CA Issuers - URI:http://crt.example.com/ExampleRSADomainValidationSecureServerCA.crt\n                    00:b2:78:80:71:ca:78:d5:e3:71:af:47:80:50:74:7d:6e:d8:d7:88:76\n")
	textDump = append(textDump, k.certPEM...)

	tests := []struct {
		name, path string
		head       []byte
		want       bool
	}{
		// Key material: public things are not secret.
		{"empty pem", "/w/x.pem", nil, false},
		{"certificate", "/w/testdata/server.pem", k.certPEM, false},
		{"CA bundle with comments", "/venv/lib/site-packages/certifi/cacert.pem", bundle, false},
		{"certificate with a text dump", "/w/testdata/cert.pem", textDump, false},
		{"public key", "/w/pub.pem", k.pubPEM, false},
		{"ssh public key", "/w/id_ed25519.pub", []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXAMPLEexampleEXAMPLEexampleEXAMPLEex u@h\n"), false},
		{"ssh public key without .pub", "/w/id_rsa_ci", []byte("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC u@h"), false},
		{"RFC 4716 public key", "/w/k.pub", []byte("---- BEGIN SSH2 PUBLIC KEY ----\nComment: \"x\"\nAAAAB3NzaC1yc2E\n---- END SSH2 PUBLIC KEY ----\n"), false},
		// Key material: private things are.
		{"pkcs8 key", "/w/server.key", k.pkcs8PEM, true},
		{"ec key in a .pem", "/w/server.pem", k.ecPEM, true},
		{"certificate then key (haproxy)", "/etc/haproxy/site.pem", append(append([]byte{}, k.certPEM...), k.pkcs8PEM...), true},
		{"openssh key", "/backup/id_ed25519", edPEM, true},
		{"DER key", "/w/server.key", k.keyDER, true},
		{"DER certificate (binary: cannot tell)", "/w/server.crt", k.certDER, true},
		{"raw hex key (Rails master.key)", "/w/config/master.key", []byte("4f3c2b1a0d9e8f7a6b5c4d3e2f1a0b9c\n"), true},
		{"unknown block", "/w/x.pem", []byte("-----BEGIN OPENVPN THING-----\nAAAA\n-----END OPENVPN THING-----\n"), true},
		{"unclosed public block", "/w/x.pem", []byte("-----BEGIN CERTIFICATE-----\nMIIB\n"), true},
		{"mismatched end", "/w/x.pem", []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END PUBLIC KEY-----\n"), true},
		{"raw token line next to a certificate", "/w/x.pem", append(append([]byte{}, k.certPEM...), []byte("dGhpcyBpcyBhIHNlY3JldCB0b2tlbiBvZiBzb21lIGtpbmQ=\n")...), true},
		{"text without blocks", "/w/notes.pem", []byte("hello\n"), true},
		{"putty key", "/w/k.ppk", []byte("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n"), true},
		{"pgp secret key", "/w/k.asc", []byte("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQ\n-----END PGP PRIVATE KEY BLOCK-----\n"), true},
		{"pgp public key", "/w/k.asc", []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQ\n-----END PGP PUBLIC KEY BLOCK-----\n"), false},
		{"age identity", "/w/key.txt", []byte("# created: 2024\nAGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX\n"), true},
		{"an age prefix alone", "/w/key.txt", []byte("# keys look like AGE-SECRET-KEY-1QQQQ…\n"), false},
		{"a private key in any file", "/w/service-account.json", []byte(`{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"}`), true},

		// Environment files.
		{"empty .env", "/w/.env", nil, false},
		{"comments and empty values", "/w/.env.local", []byte("# fill these in\nAPI_KEY=\nexport DB_URL=\"\"\nEMPTY='' # later\nOTHER= # none\n\n"), false},
		{"a value", "/w/.env.production", []byte("# x\nAPI_KEY=sk_live_abc\n"), true},
		{"a harmless-looking value still counts", "/w/.env.test", []byte("NODE_ENV=test\n"), true},
		{"not an assignment", "/w/.env.local", []byte("just some text\n"), true},
		{"binary", "/w/.env.x", []byte("A=\x00"), true},
		{"app.env", "/w/app.env", []byte("TOKEN=abc"), true},
		{"CRLF empty", "/w/.env", []byte("A=\r\nB=\r\n"), false},

		// Files whose name says credentials.
		{"credentials blank", "/w/credentials", []byte(" \n"), false},
		{"credentials", "/w/.aws-other/credentials", []byte("[default]\naws_access_key_id = AKIA\n"), true},
		{"credentials.json", "/w/credentials.json", []byte(`{"installed": {}}`), true},
		{"secrets.yaml", "/w/k8s/secrets.yaml", []byte("apiVersion: v1\n"), true},
		{"netrc", "/home/u/.netrc", []byte("machine h login u password p\n"), true},

		// Configuration files: credential-named keys with literal values.
		{"npmrc without credentials", "/home/u/.npmrc", []byte("prefix=/home/u/.npm-global\nsave-exact=true\nalways-auth=false\ninit-author-name=Me\n"), false},
		{"npmrc with a token", "/home/u/.npmrc", []byte("//registry.npmjs.org/:_authToken=npm_abc123\n"), true},
		{"npmrc with an env reference", "/w/.npmrc", []byte("//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n"), false},
		{"npmrc with _auth", "/w/.npmrc", []byte("_auth = dXNlcjpwYXNz\n"), true},
		{"npmrc registry with a password", "/w/.npmrc", []byte("registry=https://user:pa55@npm.example.com/\n"), true},
		{"npmrc registry without one", "/w/.npmrc", []byte("registry=https://npm.example.com/\n@scope:registry=https://x.example.com/\n"), false},
		{"yarnrc token", "/w/.yarnrc.yml", []byte("npmScopes:\n  acme:\n    npmAuthToken: abcd\n"), true},
		{"yarnrc token reference", "/w/.yarnrc.yml", []byte("npmScopes:\n  acme:\n    npmAuthToken: \"${NPM_TOKEN}\"\nnodeLinker: node-modules\n"), false},
		{"json secret", "/w/config.json", []byte("{\n  \"client_secret\": \"abc\",\n}"), true},
		{"json structure", "/w/config.json", []byte("{\n  \"auth\": {\n  \"type\": \"none\"\n  }\n}"), false},
		{"author is not auth", "/w/package.yml", []byte("author: Someone\n"), false},
		{"password in ini", "/home/u/.pypirc", []byte("[pypi]\nusername = __token__\npassword = pypi-AgEI\n"), true},
		{"binary config", "/w/x.db", []byte("SQLite format 3\x00"), true},
		{"maven password", "/home/u/.m2/settings.xml", []byte("<settings>\n  <servers><server><id>r</id><username>u</username>\n  <password>hunter2</password></server></servers>\n</settings>\n"), true},
		{"maven without passwords", "/home/u/.m2/settings.xml", []byte("<settings>\n  <mirrors><mirror><url>https://repo.example.com/</url></mirror></mirrors>\n  <password></password>\n  <passphrase>${env.GPG_PASS}</passphrase>\n</settings>\n"), false},
		{"gradle properties", "/home/u/.gradle/gradle.properties", []byte("org.gradle.jvmargs=-Xmx2g\nsigning.password=abc\n"), true},
		{"gradle properties without secrets", "/home/u/.gradle/gradle.properties", []byte("org.gradle.jvmargs=-Xmx2g\norg.gradle.parallel=true\n"), false},
		{"pip index with a password", "/home/u/.config/pip/pip.conf", []byte("[global]\nindex-url = https://u:pw@pypi.example.com/simple\n"), true},
		{"my.cnf", "/home/u/.my.cnf", []byte("[client]\nuser=me\npassword=pw\n"), true},
		{"non-ASCII before a key does not shift offsets", "/w/x.conf", []byte("İİİİ token = abc\n"), true},

		// Oversized: could not see it all.
		{"too large", "/w/x.pem", make([]byte, SecretScanLimit), true},
	}
	for _, tt := range tests {
		if got := LooksSecret(tt.path, tt.head); got != tt.want {
			t.Errorf("%s: LooksSecret(%q, %q…) = %v, want %v", tt.name, tt.path, trunc(tt.head), got, tt.want)
		}
	}
}

func trunc(b []byte) string {
	if len(b) > 60 {
		return string(b[:60])
	}
	return string(b)
}

// TestLooksSecretSystemCertificates runs the classifier over the
// machine's real certificate files: none of them may look secret (this
// is what made Python's requests and Go's root loader ask).
func TestLooksSecretSystemCertificates(t *testing.T) {
	var files []string
	for _, g := range []string{"/etc/ssl/certs/*.pem", "/usr/lib/python3*/dist-packages/certifi/cacert.pem", "/usr/local/lib/python3*/*-packages/certifi/cacert.pem", "/root/.pyenv/versions/*/lib/python3*/site-packages/certifi/cacert.pem", "/usr/share/ca-certificates/*/*.crt"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("no system certificate files on this machine")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) >= SecretScanLimit {
			continue
		}
		if LooksSecret(f, b) {
			t.Errorf("%s looks secret", f)
		}
	}
	t.Logf("%d certificate files read as public", len(files))
}

// TestLooksSecretAppendedKey: whatever a file starts with, a private key
// block after it makes it secret (within the scan limit).
func TestLooksSecretAppendedKey(t *testing.T) {
	k := makeKeys(t)
	for _, name := range []string{"/w/a.pem", "/w/.env.x", "/w/credentials", "/w/x.yaml", "/w/id_rsa"} {
		for _, prefix := range [][]byte{nil, k.certPEM, []byte("A=\n"), []byte("x: y\n")} {
			b := append(append([]byte{}, prefix...), k.pkcs8PEM...)
			if !LooksSecret(name, b) {
				t.Errorf("%s with %q then a key: not secret", name, trunc(prefix))
			}
		}
	}
}

// FuzzLooksSecret: seeded with every key form and its public twins
// (secret_keys_test.go), it checks that the classifier never panics,
// answers the same twice, stays within a time bound per byte, calls
// every key it finds secret, keeps finding it when public content
// follows, and finds a key appended to anything.
func FuzzLooksSecret(f *testing.F) {
	k := makeKeys(f)
	f.Add("/w/x.pem", k.certPEM)
	f.Add("/w/x.pem", k.pkcs8PEM)
	f.Add("/w/.env", []byte("A=\n# c\nexport B=''\n"))
	f.Add("/w/.npmrc", []byte("//r/:_authToken=${T}\nregistry=https://u:p@h/\n"))
	f.Add("/w/id_rsa.pub", []byte("ssh-rsa AAAAB3 u@h"))
	f.Add("/w/credentials", []byte("x"))
	f.Add("/w/x.key", []byte("---- BEGIN SSH2 PUBLIC KEY ----\n---- END SSH2 PUBLIC KEY ----"))
	for _, forms := range []map[string][]byte{secretForms(f), publicForms(f)} {
		for name, b := range forms {
			f.Add("/w/"+strings.ReplaceAll(name, " ", "_"), b)
		}
	}
	publics := [][]byte{fixture(f, "test-only-cert.pem"), fixture(f, "test-only-rsa-pub-dump.txt"), []byte(`{"kty":"EC","crv":"P-256","x":"AAAA"}`)}
	key := fixture(f, "test-only-ed25519.key")
	f.Fuzz(func(t *testing.T, path string, head []byte) {
		if len(head) > SecretScanLimit {
			head = head[:SecretScanLimit]
		}
		// The time bound: 2µs a byte (the slowest input measured, deep
		// JSON, takes 0.15µs uninstrumented) plus 200ms. A machine that
		// stalls the fuzzer's worker for a moment is not the classifier:
		// it fails only if the best of three tries is over.
		var got bool
		took := time.Duration(1 << 62)
		for try := 0; try < 3; try++ {
			start := time.Now()
			got = LooksSecret(path, head)
			if took = min(took, time.Since(start)); took <= 200*time.Millisecond+time.Duration(len(head))*2*time.Microsecond {
				break
			}
			if try == 2 {
				t.Fatalf("%d bytes took %v at best", len(head), took)
			}
		}
		if got != LooksSecret(path, head) {
			t.Fatal("not deterministic")
		}
		found, ok := FindPrivateKey(head)
		if ok && !got {
			t.Fatalf("%v in %q was not secret", found, head)
		}
		if ok {
			for _, p := range publics {
				if _, still := FindPrivateKey(append(append(append([]byte{}, head...), '\n'), p...)); !still {
					t.Fatalf("%v in %q: lost after %q", found, head, trunc(p))
				}
			}
		}
		// Appending a private key never makes a file look less secret.
		if !LooksSecret(path, append(append(append([]byte{}, head...), '\n'), key...)) {
			t.Fatalf("%q plus a key: not secret", head)
		}
		// Nothing but whitespace is never secret material.
		if len(bytes.TrimSpace(head)) == 0 && got && len(head) < SecretScanLimit {
			t.Fatalf("blank %q looks secret", head)
		}
	})
}
