package display

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/home/u/src/main.go", "/home/u/src/main.go"},
		{"日本語/ファイル.go", "日本語/ファイル.go"},
		{"a\x1b[2Jb", `a\x1b[2Jb`},
		{"bell\x07", `bell\a`},
		{"tab\there", `tab\there`},
		{"nl\nx", `nl\nx`},
		{"del\x7f", `del\x7f`},
		{"c1 csi \u009b31m", `c1 csi \u009b31m`},
		{"c1 osc \u009d0;title\u009c", `c1 osc \u009d0;title\u009c`},
		{"rlo \u202etxt.exe", `rlo \u202etxt.exe`},
		{"isolate \u2066x\u2069", `isolate \u2066x\u2069`},
		{"zwj a\u200db", `zwj a\u200db`},
		{"bom \ufeff", `bom \ufeff`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"replacement \ufffd", `replacement \ufffd`},
	} {
		if got := Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Nothing Printable returns can act on a terminal, whatever the input.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"a\x1b[2J", "\u009b1m", "\u202e", "\xff", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Printable(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Printable(%q) = %q is not UTF-8", s, out)
		}
		for _, c := range out {
			if Hidden(c) {
				t.Fatalf("Printable(%q) = %q keeps %U", s, out, c)
			}
		}
		if !strings.ContainsFunc(s, Hidden) && utf8.ValidString(s) && out != s {
			t.Fatalf("clean %q changed to %q", s, out)
		}
	})
}
