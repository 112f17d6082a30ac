package engine

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

var editEnv = Env{Home: "/home/u", Workspace: "/home/u/proj", TmpDir: "/tmp"}

func TestAppendRule(t *testing.T) {
	const comment = "permwrap: always allow, 2026-05-04, request 0190a0b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b"
	for _, c := range []struct {
		name string
		src  string
		rule Rule
		want string
	}{
		{
			name: "appended after its siblings, comments kept",
			src: `// my policy
{
  "permission": {
    // reads
    "read": { "*": "allow" },
    "write": {
      "*": "ask", // everything else asks
      "${WORKSPACE}/**": "allow" // the project
    }
  }
}
`,
			rule: Rule{Surface: SurfaceWrite, Pattern: "/srv/data/**", Action: Allow},
			want: `// my policy
{
  "permission": {
    // reads
    "read": { "*": "allow" },
    "write": {
      "*": "ask", // everything else asks
      "${WORKSPACE}/**": "allow", // the project
      // ` + comment + `
      "/srv/data/**": "allow"
    }
  }
}
`,
		},
		{
			name: "trailing commas stay",
			src: `{
  "permission": {
    "bash": {
      "*": "allow",
      "git push *": "ask", // publishing
    },
  },
}
`,
			rule: Rule{Surface: SurfaceBash, Pattern: "git push origin feature/*", Action: Allow},
			want: `{
  "permission": {
    "bash": {
      "*": "allow",
      "git push *": "ask", // publishing
      // ` + comment + `
      "git push origin feature/*": "allow",
    },
  },
}
`,
		},
		{
			name: "an existing pattern changes action and keeps its reason",
			src: `{
  "permission": {
    "write": {
      "*": "allow",
      "/etc/**": { "action": "ask", "reason": "system files" }
    }
  }
}`,
			rule: Rule{Surface: SurfaceWrite, Pattern: "/etc/**", Action: Deny},
			want: `{
  "permission": {
    "write": {
      "*": "allow",
      // ` + comment + `
      "/etc/**": { "action": "deny", "reason": "system files" }
    }
  }
}`,
		},
		{
			name: "a missing surface is added",
			src: `{
  "permission": {
    "read": { "*": "allow" }
  }
}`,
			rule: Rule{Surface: SurfaceWrite, Pattern: "/srv/x", Action: Deny},
			want: `{
  "permission": {
    "read": { "*": "allow" },
    "write": {
      // ` + comment + `
      "/srv/x": "deny"
    }
  }
}`,
		},
		{
			name: "a missing permission object is added",
			src: `{
  "askTimeout": "5m"
}`,
			rule: Rule{Surface: SurfaceRead, Pattern: "~/.ssh/**", Action: Deny},
			want: `{
  "askTimeout": "5m",
  "permission": {
    "read": {
      // ` + comment + `
      "~/.ssh/**": "deny"
    }
  }
}`,
		},
		{
			name: "an empty file object",
			src:  `{}`,
			rule: Rule{Surface: SurfaceRead, Pattern: "~/.ssh/**", Action: Deny},
			want: `{
  "permission": {
    "read": {
      // ` + comment + `
      "~/.ssh/**": "deny"
    }
  }
}`,
		},
		{
			name: "a surface written as one action is spelled out",
			src: `{
  "permission": {
    "exec": "allow"
  }
}`,
			rule: Rule{Surface: SurfaceExec, Pattern: "/opt/evil/**", Action: Deny},
			want: `{
  "permission": {
    "exec": {
      "*": "allow",
      // ` + comment + `
      "/opt/evil/**": "deny"
    }
  }
}`,
		},
		{
			name: "one-line objects stay on one line",
			src:  `{"permission": {"write": {"*": "ask"}, "exec": "allow"}}`,
			rule: Rule{Surface: SurfaceWrite, Pattern: "/srv/a b/\"q\"", Action: Allow},
			want: `{"permission": {"write": {"*": "ask", /* ` + comment + ` */ "/srv/a b/\"q\"": "allow"}, "exec": "allow"}}`,
		},
		{
			name: "a one-line surface written as one action",
			src:  `{"permission": {"exec": "allow"}}`,
			rule: Rule{Surface: SurfaceExec, Pattern: "/opt/**", Action: Deny},
			want: `{"permission": {"exec": { "*": "allow", /* ` + comment + ` */ "/opt/**": "deny" }}}`,
		},
		{
			name: "an empty surface object laid out on lines",
			src: `{
  "permission": {
    "write": {
    }
  }
}`,
			rule: Rule{Surface: SurfaceWrite, Pattern: "/srv/a", Action: Allow},
			want: `{
  "permission": {
    "write": {
      // ` + comment + `
      "/srv/a": "allow"
    }
  }
}`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := AppendRule([]byte(c.src), "policy.jsonc", c.rule, comment, editEnv)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

func TestAppendRuleRefuses(t *testing.T) {
	for _, c := range []struct {
		name, src string
		rule      Rule
		unparse   bool
	}{
		{"not JSONC", `{"permission": {`, Rule{Surface: SurfaceWrite, Pattern: "/x", Action: Allow}, true},
		{"not a policy", `{"permision": {}}`, Rule{Surface: SurfaceWrite, Pattern: "/x", Action: Allow}, true},
		{"permission not an object", `{"permission": []}`, Rule{Surface: SurfaceWrite, Pattern: "/x", Action: Allow}, true},
		{"a pattern the loader rejects", `{}`, Rule{Surface: SurfaceWrite, Pattern: "/x/{a,b}", Action: Allow}, false},
		{"no surface", `{}`, Rule{Pattern: "/x", Action: Allow}, false},
		{"padded pattern", `{}`, Rule{Surface: SurfaceWrite, Pattern: "/x ", Action: Allow}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := AppendRule([]byte(c.src), "policy.jsonc", c.rule, "c", editEnv)
			if err == nil {
				t.Fatalf("accepted:\n%s", out)
			}
			if errors.Is(err, ErrPolicyUnparseable) != c.unparse {
				t.Fatalf("error %v: unparseable=%v, want %v", err, errors.Is(err, ErrPolicyUnparseable), c.unparse)
			}
			if out != nil {
				t.Fatal("text returned with an error")
			}
		})
	}
}

// The comment cannot end early or open a block: newlines, control
// characters and "*/" from a request are neutralised.
func TestAppendRuleCommentIsOneLine(t *testing.T) {
	got, err := AppendRule([]byte(`{"permission": {"write": {"*": "ask"}}}`), "p", Rule{Surface: SurfaceWrite, Pattern: "/x", Action: Allow},
		"evil */ \"permission\": {\"*\": \"allow\"} /*\n\"yoloMode\": true", editEnv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseConfig("p", got, kindGlobal, editEnv)
	if err != nil {
		t.Fatal(err)
	}
	if p.yolo || p.fallback != nil || len(p.rules) != 2 {
		t.Fatalf("the comment changed the policy:\n%s", got)
	}
}

// On the default policy (many rules and comments), every comment and
// rule survives and exactly one rule is added.
func TestAppendRuleDefaultPolicy(t *testing.T) {
	src := DefaultPolicy()
	before, err := parseConfig("default.jsonc", src, kindGlobal, editEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Surfaces {
		r := Rule{Surface: s, Pattern: "/srv/added/**", Action: Deny}
		switch s {
		case SurfaceBash:
			r.Pattern = "terraform destroy *"
		case SurfaceNet:
			r.Pattern = "added.example:443"
		}
		out, err := AppendRule(src, "default.jsonc", r, "added", editEnv)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		after, err := parseConfig("default.jsonc", out, kindGlobal, editEnv)
		if err != nil {
			t.Fatal(err)
		}
		if len(after.rules) != len(before.rules)+1 {
			t.Fatalf("%s: %d rules, want %d", s, len(after.rules), len(before.rules)+1)
		}
		for _, c := range regexp.MustCompile(`//[^\n]*`).FindAllString(string(src), -1) {
			if !strings.Contains(string(out), c) {
				t.Fatalf("%s: comment lost: %q", s, c)
			}
		}
		if !strings.Contains(string(out), "// added\n") {
			t.Fatalf("%s: no comment above the rule:\n%s", s, out)
		}
	}
}

func FuzzAppendRule(f *testing.F) {
	f.Add([]byte(`{"permission": {"write": {"*": "ask"}}}`), "/x/**")
	f.Add([]byte("{\n  \"permission\": {\n    \"write\": {\n      \"a\": \"ask\", // c\n    },\n  },\n}\n"), "a")
	f.Add([]byte(`{"permission": {"exec": "allow"}} // end`), "/bin/*")
	f.Fuzz(func(t *testing.T, src []byte, pattern string) {
		if len(src) > 1<<16 {
			return
		}
		r := Rule{Surface: SurfaceWrite, Pattern: pattern, Action: Allow}
		out, err := AppendRule(src, "p", r, "fuzz", editEnv)
		if err != nil {
			return
		}
		fc, err := parseConfig("p", out, kindGlobal, editEnv)
		if err != nil {
			t.Fatalf("output does not load: %v\n%s", err, out)
		}
		before, _ := parseConfig("p", src, kindGlobal, editEnv)
		if before == nil {
			t.Fatalf("accepted a file the loader rejects:\n%s", src)
		}
		if n := len(fc.rules) - len(before.rules); n != 0 && n != 1 {
			t.Fatalf("%d rules added:\n%s\n→\n%s", n, src, out)
		}
	})
}
