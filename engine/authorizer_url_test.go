package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A url authorizer's configuration: what is accepted, and every mistake
// an error at its line and column.
func TestRemoteAuthorizerConfig(t *testing.T) {
	t.Setenv("PERMWRAP_TEST_TOKEN", "tok-3f9a1c77e2b54d")
	t.Setenv("PERMWRAP_TEST_EMPTY", "")
	p, _ := compile(t, `{
  "authorizerChain": ["team-review"],
  "authorizers": {"team-review": {
    "url": "https://review.example.com:8443/permwrap/ask?key=k1",
    "headers": {"Authorization": "Bearer ${env:PERMWRAP_TEST_TOKEN}", "X-Team": "infra"},
    "caFile": "~/team-ca.pem",
    "timeoutMs": 600000}}
}`)
	s := p.Settings()
	spec := s.Authorizers["team-review"]
	r := spec.Remote
	if r == nil || len(spec.Command) != 0 {
		t.Fatalf("spec %+v: want a url authorizer", spec)
	}
	if spec.Timeout != 10*time.Minute || r.URL != "https://review.example.com:8443/permwrap/ask?key=k1" || r.CAFile != "/home/u/team-ca.pem" {
		t.Errorf("spec: timeout %v, url %q, caFile %q", spec.Timeout, r.URL, r.CAFile)
	}
	if r.CAFilePos.String() != "policy.jsonc:6:15" || r.Pos.String() != "policy.jsonc:4:12" {
		t.Errorf("positions: caFile %s, url %s", r.CAFilePos, r.Pos)
	}
	if len(r.Headers) != 2 || r.Headers[0] != (RemoteHeader{"Authorization", "Bearer tok-3f9a1c77e2b54d"}) || r.Headers[1] != (RemoteHeader{"X-Team", "infra"}) {
		t.Errorf("headers: %d, %q", len(r.Headers), r.HeaderNames())
	}
	if d := r.Display(); d != "https://review.example.com:8443/permwrap/ask" {
		t.Errorf("display %q: want scheme, host and path only", d)
	}
	// Printing the settings, however, shows no header value.
	for _, verb := range []string{"%v", "%+v", "%#v"} {
		for what, v := range map[string]any{"settings": s, "spec": spec, "remote": *r, "remote pointer": r} {
			if out := fmt.Sprintf(verb, v); strings.Contains(out, "tok-3f9a1c77e2b54d") {
				t.Errorf("%s of the %s shows the token: %s", verb, what, out)
			}
		}
	}
	// Settings is a copy.
	s.Authorizers["team-review"].Remote.Headers[0].Value = "x"
	if p.Settings().Authorizers["team-review"].Remote.Headers[0].Value != "Bearer tok-3f9a1c77e2b54d" {
		t.Error("changing the copy changed the policy")
	}

	// A url's default timeout is long enough for a person; an exec's is not.
	d, _ := compile(t, `{"authorizers": {"a": {"url": "http://127.0.0.1:8080/ask"}, "b": {"url": "http://localhost/x"}, "c": {"url": "http://[::1]:9/"}, "e": {"command": ["j"]}}}`)
	ds := d.Settings().Authorizers
	if ds["a"].Timeout != DefaultRemoteAuthorizerTimeout || ds["e"].Timeout != DefaultAuthorizerTimeout || ds["b"].Remote == nil || ds["c"].Remote == nil {
		t.Errorf("defaults: %v %v", ds["a"].Timeout, ds["e"].Timeout)
	}

	bad := []struct{ name, src, want string }{
		{"http to another host", `{"authorizers": {"r": {"url": "http://review.example.com/ask"}}}`,
			`1:31: authorizer "r": url http://review.example.com/ask: http:// is allowed only to a loopback address`},
		{"http to a private address", `{"authorizers": {"r": {"url": "http://10.0.0.1/ask"}}}`, `1:31: authorizer "r": url http://10.0.0.1/ask: http:// is allowed only`},
		{"another scheme", `{"authorizers": {"r": {"url": "ftp://x/y"}}}`, `1:31: authorizer "r": url: want https://HOST/PATH`},
		{"no host", `{"authorizers": {"r": {"url": "https:///ask"}}}`, `1:31: authorizer "r": url: no host`},
		{"user and password", `{"authorizers": {"r": {"url": "https://bob:hunter2secret@x/y"}}}`, `1:31: authorizer "r": url: a user or password in the URL`},
		{"both", `{"authorizers": {"r": {"command": ["j"], "url": "https://x/y"}}}`, `1:23: authorizer "r" has both "command" and "url"`},
		{"neither", `{"authorizers": {"r": {"timeoutMs": 5}}}`, `1:23: authorizer "r" has no "command" (or "url")`},
		{"headers without url", `{"authorizers": {"r": {"headers": {}}}}`, `1:23: authorizer "r" has no "url"`},
		{"headers with a command", `{"authorizers": {"r": {"command": ["j"], "caFile": "/ca.pem"}}}`, `1:42: authorizer "r": "caFile" belongs to a url authorizer`},
		{"missing variable", "{\"authorizers\": {\"r\": {\"url\": \"https://x/y\",\n  \"headers\": {\"Authorization\": \"Bearer ${env:PERMWRAP_TEST_UNSET_9f2}\"}}}}",
			`2:32: authorizer "r": header "Authorization": ${env:PERMWRAP_TEST_UNSET_9f2} is not set in permwrap's environment`},
		{"empty variable", `{"authorizers": {"r": {"url": "https://x/y", "headers": {"X-K": "${env:PERMWRAP_TEST_EMPTY}"}}}}`,
			`1:65: authorizer "r": header "X-K": ${env:PERMWRAP_TEST_EMPTY} is empty`},
		{"other variable", `{"authorizers": {"r": {"url": "https://x/y", "headers": {"X-K": "${HOME}"}}}}`, `1:65: authorizer "r": header "X-K": unknown variable ${HOME}`},
		{"unterminated", `{"authorizers": {"r": {"url": "https://x/y", "headers": {"X-K": "${env:A"}}}}`, `1:65: authorizer "r": header "X-K": unterminated ${`},
		{"bad variable name", `{"authorizers": {"r": {"url": "https://x/y", "headers": {"X-K": "${env:1A}"}}}}`, `1:65: authorizer "r": header "X-K": ${env:1A}: not a variable name`},
		{"line break", `{"authorizers": {"r": {"url": "https://x/y", "headers": {"X-K": "a\nb"}}}}`, `1:65: authorizer "r": header "X-K": the value (after expansion) holds a line break`},
		{"reserved header", `{"authorizers": {"r": {"url": "https://x/y", "headers": {"content-type": "text/plain"}}}}`, `1:58: authorizer "r": header "content-type" is set by permwrap`},
		{"idempotency key", `{"authorizers": {"r": {"url": "https://x/y", "headers": {"Idempotency-Key": "1"}}}}`, `1:58: authorizer "r": header "Idempotency-Key" is set by permwrap`},
		{"not a header name", `{"authorizers": {"r": {"url": "https://x/y", "headers": {"Bad Name": "1"}}}}`, `1:58: authorizer "r": "Bad Name" is not a header name`},
		{"header not a string", `{"authorizers": {"r": {"url": "https://x/y", "headers": {"X-N": 1}}}}`, `1:65: header X-N: want a string, got a number`},
		{"timeout over an hour", `{"authorizers": {"r": {"url": "https://x/y", "timeoutMs": 3600001}}}`, `1:59: authorizer "r": timeoutMs: a url authorizer waits at most 3600000`},
		{"relative caFile", `{"authorizers": {"r": {"url": "https://x/y", "caFile": "ca.pem"}}}`, `1:56: authorizer "r": caFile "ca.pem" must be absolute`},
		{"unknown key", `{"authorizers": {"r": {"url": "https://x/y", "token": "x"}}}`, `1:46: unknown key "token" in authorizer "r"`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := CheckFile("f.jsonc", []byte(tt.src), FileGlobal, testEnv)
			if err == nil {
				t.Fatalf("accepted; want %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), "f.jsonc:"+tt.want) {
				t.Errorf("error %q\nwant prefix %q", err, "f.jsonc:"+tt.want)
			}
			if strings.Contains(err.Error(), "hunter2secret") {
				t.Errorf("the error shows the URL's password: %q", err)
			}
		})
	}
}

func TestExpandHeaderValue(t *testing.T) {
	env := map[string]string{"A": "1", "B_2": "two"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for in, want := range map[string]string{
		"plain":                       "plain",
		"Bearer ${env:A}":             "Bearer 1",
		"${env:A}-${env:B_2}$x":       "1-two$x",
		"$ {env:A} costs $5, not ${5": "",
	} {
		got, err := ExpandHeaderValue(in, lookup)
		if want == "" {
			if err == nil {
				t.Errorf("%q: expanded to %q, want an error", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
}
