package engine

import (
	"errors"
	"strings"
	"testing"
)

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		kind FileKind
		src  string
		want []string // every error, in order, "line:col: message fragment"
	}{
		{"syntax", FileGlobal, "{\n  \"permission\": {,}\n}", []string{"2:18: syntax error"}},
		{"empty", FileGlobal, "  \n", []string{"empty file"}},
		{"top level not an object", FileGlobal, `[]`, []string{"1:1: the top level: want an object, got an array"}},
		{"unknown key", FileGlobal, `{"permisson": {}}`, []string{`1:2: unknown key "permisson"`}},
		{"unknown surface", FileGlobal, `{"permission": {"nett": "allow"}}`, []string{`1:17: unknown surface "nett"`}},
		{"unknown action", FileGlobal, `{"permission": {"read": {"*": "alow"}}}`, []string{`1:31: unknown action "alow"`}},
		{"unknown action in a surface string", FileGlobal, `{"permission": {"exec": "yes"}}`, []string{`1:25: unknown action "yes"`}},
		{"wrong type for a rule", FileGlobal, `{"permission": {"read": {"*": true}}}`, []string{"1:31: rule: want an action string"}},
		{"wrong type for a surface", FileGlobal, `{"permission": {"read": ["*"]}}`, []string{`1:25: surface "read": want an action string or an object`}},
		{"wrong type for permission", FileGlobal, `{"permission": 3}`, []string{"1:16: permission: want an object, got a number"}},
		{"duplicate keys", FileGlobal, "{\"permission\": {\"read\": {\"/a\": \"allow\",\n \"/a\": \"deny\"}}}", []string{`2:2: duplicate key "/a"`}},
		{"duplicate top-level keys", FileGlobal, `{"yoloMode": true, "yoloMode": false}`, []string{`1:20: duplicate key "yoloMode"`}},
		{"pattern does not compile", FileGlobal, `{"permission": {"write": {"/a/[b": "deny"}}}`, []string{`1:27: pattern "/a/[b": unterminated [`}},
		{"braces rejected", FileGlobal, `{"permission": {"write": {"/a/{b,c}": "deny"}}}`, []string{`1:27: pattern "/a/{b,c}": {a,b} alternatives are not supported`}},
		{"unknown variable", FileGlobal, `{"permission": {"write": {"${WORKSPCE}/**": "allow"}}}`, []string{`1:27: pattern "${WORKSPCE}/**": unknown variable ${WORKSPCE}`}},
		{"rule object without action", FileGlobal, `{"permission": {"path": {"/etc/**": {"reason": "x"}}}}`, []string{`1:37: rule has no "action"`}},
		{"rule object with unknown key", FileGlobal, `{"permission": {"path": {"/etc/**": {"action": "deny", "why": "x"}}}}`, []string{`1:56: unknown key "why" in a rule`}},
		{"bad duration", FileGlobal, `{"askTimeout": "10 minutes"}`, []string{`1:16: askTimeout: "10 minutes" is not a duration`}},
		{"negative duration", FileGlobal, `{"askTimeout": "-1s"}`, []string{`1:16: askTimeout must be positive`}},
		{"yoloMode not bool", FileGlobal, `{"yoloMode": "yes"}`, []string{"1:14: yoloMode: want true or false, got a string"}},
		{"denialNotice", FileGlobal, `{"denialNotice": "loud"}`, []string{`1:18: denialNotice: "loud" is not`}},
		{"proxy", FileGlobal, `{"proxy": "on"}`, []string{`1:11: proxy: "on" is not`}},
		{"listings", FileGlobal, "{\n  \"listings\": \"secret\"}", []string{`2:15: listings: "secret" is not "free" or "judged"`}},
		{"listings not a string", FileGlobal, `{"listings": false}`, []string{"1:14: listings: want a string, got a boolean"}},
		{"scope may not set listings", FileScope, `{"listings": "free"}`, []string{`1:2: key "listings" is not allowed in a --policy scope`}},
		{"project may not set listings", FileProject, `{"listings": "free"}`, []string{`1:2: key "listings" is not allowed in a project policy`}},
		{"authorizer without command", FileGlobal, `{"authorizers": {"j": {"timeoutMs": 5}}}`, []string{`1:23: authorizer "j" has no "command"`}},
		{"authorizer bad timeout", FileGlobal, `{"authorizers": {"j": {"command": ["x"], "timeoutMs": 0}}}`, []string{"1:55: timeoutMs: want a whole number from 1"}},
		{"authorizer empty command", FileGlobal, `{"authorizers": {"j": {"command": []}}}`, []string{`1:35: authorizer "j": command must name a program`}},
		{"delegation surface", FileGlobal, `{"modelDelegation": {"allowedSurfaces": ["reed"]}}`, []string{`1:42: unknown surface "reed"`}},
		{"typoPaths missing to", FileGlobal, `{"typoPaths": [{"from": "/a/*"}]}`, []string{`1:16: a typoPaths entry needs both`}},
		{"log readAllows", FileGlobal, `{"log": {"readAllows": "some"}}`, []string{`1:24: log.readAllows: "some" is not "summary"`}},
		{"log scratchWrites", FileGlobal, `{"log": {"scratchWrites": "all"}}`, []string{`1:27: log.scratchWrites: "all" is not "summary" or "each"`}},
		{"log keep", FileGlobal, `{"log": {"keep": 10}}`, []string{"1:18: log.keep: at most 9 older files"}},
		{"log rotateMB", FileGlobal, `{"log": {"rotateMB": "10MB"}}`, []string{"1:22: log.rotateMB: want a number, got a string"}},
		{"log relative path", FileGlobal, `{"log": {"path": "review.log"}}`, []string{`1:18: log.path "review.log" must be absolute`}},
		{"log fieldWidth", FileGlobal, `{"log": {"fieldWidth": 2}}`, []string{"1:24: log.fieldWidth: want a whole number from 16"}},
		{"scope may not set yolo", FileScope, `{"permission": {}, "yoloMode": true}`, []string{`1:20: key "yoloMode" is not allowed in a --policy scope: settings come from the global policy.jsonc only`}},
		{"scope may not set reviewers", FileScope, `{"authorizerChain": ["x"]}`, []string{`1:2: key "authorizerChain" is not allowed in a --policy scope`}},
		{"hard guards: no fallback", FileHardGuards, `{"permission": {"*": "deny"}}`, []string{`1:17: a universal fallback "*" is not allowed in hard-guards.jsonc`}},
		{"hard guards: no settings", FileHardGuards, `{"askTimeout": "1s"}`, []string{`1:2: key "askTimeout" is not allowed in hard-guards.jsonc`}},
		{"hard guards: protectedWrites type", FileHardGuards, `{"protectedWrites": [1]}`, []string{"1:22: a protectedWrites entry: want a string, got a number"}},
		{"global may not hold protectedWrites", FileGlobal, `{"protectedWrites": []}`, []string{`1:2: unknown key "protectedWrites"`}},
		{"every error is reported", FileGlobal, "{\n\"permission\": {\"reed\": \"allow\", \"write\": {\"/a\": \"nope\"}},\n\"askTimeout\": 5,\n\"bogus\": 1\n}",
			[]string{`2:16: unknown surface "reed"`, `2:49: unknown action "nope"`, "3:15: askTimeout: want a string, got a number", `4:1: unknown key "bogus"`}},
		{"nesting too deep", FileScope, `{"permission": {"read": {"a": ` + strings.Repeat("[", 100000) + "}}}", []string{"1:92: nested deeper than 64 levels"}},
		{"brackets in strings and comments do not count", FileGlobal, "// [[[[\n{\"permission\": {\"read\": {\"*\": {\"action\": \"deny\", \"reason\": \"" + strings.Repeat("[", 100) + "\"}}}, \"x\": 1}", []string{`2:167: unknown key "x"`}},
		{"comments and trailing commas are fine, positions count them", FileGlobal, "// c\n{\n  /* x */ \"permission\": {\"read\": \"allow\",},\n  \"oops\": 1,\n}", []string{`4:3: unknown key "oops"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := CheckFile("f.jsonc", []byte(tt.src), tt.kind, testEnv)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			var got []string
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					got = append(got, e.Error())
				}
			} else {
				got = []string{err.Error()}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d errors %q, want %d %q", len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				var ce *ConfigError
				if !errors.As(errors.Unwrap(err), &ce) && !errors.As(err, &ce) {
					t.Fatalf("not a *ConfigError: %T", err)
				}
				if !strings.HasPrefix(got[i], "f.jsonc:"+tt.want[i]) && !strings.HasPrefix(got[i], "f.jsonc: "+tt.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], "f.jsonc:"+tt.want[i])
				}
			}
		})
	}
}

func TestConfigGood(t *testing.T) {
	src := `// everything at once
{
  "permission": {
    "*": {"action": "ask", "reason": "nothing else matched"},
    "read": "allow",
    "write": {"${WORKSPACE}/**": "allow", "~/.bashrc": {"action": "deny", "reason": "no"},},
    "exec": {"*": "allow"},
    "bash": {"git push *": "ask"},
    "path": {"/etc/**": "deny"},
  },
  "yoloMode": false,
}`
	n, _, err := CheckFile("policy.jsonc", []byte(src), FileGlobal, testEnv)
	if err != nil || n != 7 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	if _, _, err := CheckFile("hg.jsonc", []byte(`{"permission": {"bash": {"sudo *": "deny"}}, "protectedWrites": ["~/.bashrc"]}`), FileHardGuards, testEnv); err != nil {
		t.Fatal(err)
	}
	if _, _, err := CheckFile("default.jsonc", defaultPolicy, FileGlobal, testEnv); err != nil {
		t.Fatal(err)
	}
}
