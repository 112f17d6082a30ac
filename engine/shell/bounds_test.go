package shell

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzAnalyzeScript(f *testing.F) {
	for _, s := range []string{
		"cd x && npm test", "echo $(date) > out", "for f in *.txt; do mv \"$f\" x; done",
		"bash -c 'sh -c \"git push\"'", "X=rm; $X -rf /", "cat <<EOF\n$(id)\nEOF\n",
		"echo 'unterminated", "((((", "${a:-$(b)}", "f() { g; }; f", "case x in a) b;; esac",
		"xargs -I{} sh -c 'echo {}'", "find . -exec sh -c 'eval $1' _ {} +",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		a := analyzeScript(src)
		if len(a.Units) > maxUnits+1 {
			t.Fatalf("%d units exceed the cap", len(a.Units))
		}
		for _, u := range a.Units {
			if u.Sentinel == "" && len(u.Argv) == 0 {
				t.Fatalf("unit without words or sentinel: %+v", u)
			}
			if u.Value() == "" {
				t.Fatalf("unit with an empty bash value: %+v", u)
			}
			if u.Sentinel == "" && len(u.Dynamic) == 0 && !u.StdinArgs && u.Line != RenderArgv(u.Argv) {
				// A later exec of the same words must render the same
				// line, or a person's approval of a unit would not
				// carry over to the exec it announced.
				t.Fatalf("static unit line %q differs from RenderArgv %q", u.Line, RenderArgv(u.Argv))
			}
		}
	})
}

func FuzzAnalyzeArgv(f *testing.F) {
	f.Add("env\x00-i\x00bash\x00-c\x00git push")
	f.Add("xargs\x00-I\x00{}\x00sh\x00-c\x00echo {}")
	f.Add("sudo\x00-u\x00root\x00--\x00rm\x00-rf\x00/")
	f.Add("flock\x00/tmp/l\x00-c\x00make && make install")
	f.Add("watch\x00-n\x001\x00ls | wc -l")
	f.Fuzz(func(t *testing.T, joined string) {
		argv := strings.Split(joined, "\x00")
		a := analyzeArgv(argv)
		if len(a.Units) == 0 {
			t.Fatal("no units")
		}
		if a.Units[0].Sentinel == "" && a.Units[0].Line != RenderArgv(argv) {
			t.Fatalf("Units[0] is not the exec itself: %q", a.Units[0].Line)
		}
		_ = SuggestBashPattern(argv)
	})
}

// FuzzRenderArgvRoundTrip: whatever the words, the rendered line reads
// back as exactly those words.
func FuzzRenderArgvRoundTrip(f *testing.F) {
	f.Add("git", "commit -m 'a b'")
	f.Add("x=y", "$'\\x01'")
	f.Add("\xff", "{a,b}")
	f.Fuzz(func(t *testing.T, a, b string) {
		if strings.ContainsRune(a, 0) || strings.ContainsRune(b, 0) || a == "" {
			t.Skip("argv words cannot hold NUL; an empty command name is not a command")
		}
		argv := []string{a, b}
		line := RenderArgv(argv)
		got := analyzeScript(line)
		if len(got.Units) == 1 && strings.HasPrefix(got.Units[0].Detail, "too deeply nested") {
			// The nesting check ignores quotes on purpose (a quote in a
			// here-document or comment must not hide real nesting), so
			// hundreds of quoted parentheses end in the sentinel.
			return
		}
		if len(got.Units) == 0 || got.Units[0].Sentinel != "" || len(got.Units[0].Dynamic) != 0 {
			t.Fatalf("RenderArgv(%q) = %s reads back as %v", argv, line, got.Units)
		}
		if u := got.Units[0].Argv; len(u) != 2 || u[0] != a || u[1] != b {
			t.Fatalf("RenderArgv(%q) = %s reads back as %q", argv, line, u)
		}
	})
}

// TestRenderArgvRoundTrip checks that what RenderArgv prints is read back
// by the shell parser as the same words.
func TestRenderArgvRoundTrip(t *testing.T) {
	words := []string{"git", "commit", "-m", "a b", "it's", `"q"`, "$HOME", "`x`", "a\\b",
		"tab\there", "nl\nx", "", "*.go", "[x]", "[", "]", "{a,b}", "{}", "{1..3}", "~", "~/x", "a~b",
		"#c", "a#c", "!x", "a!", "}", "x=y", "--format=%H", "é", "\x01", "semi;colon", "p|q", "r&s",
		"<in", ">out", "(x)", "\u00a0nbsp", "\x7f"}
	for _, w := range words {
		for _, first := range []bool{true, false} {
			argv := []string{"cmd", w}
			if first {
				argv = []string{w, "arg"}
			}
			line := RenderArgv(argv)
			a := analyzeScript(line)
			if len(a.Units) != 1 || a.Units[0].Sentinel != "" || len(a.Units[0].Dynamic) != 0 {
				t.Errorf("RenderArgv(%q) = %s, which reads back as %v", argv, line, a.Units)
				continue
			}
			if got := a.Units[0].Argv; len(got) != 2 || got[0] != argv[0] || got[1] != argv[1] {
				t.Errorf("RenderArgv(%q) = %s, which reads back as %q", argv, line, got)
			}
		}
	}
}

func TestAnalyzeScriptHugeInput(t *testing.T) {
	line := "echo hello world > out.txt && git status | grep modified\n"
	src := strings.Repeat(line, (1<<20)/len(line))
	a := analyzeScript(src)
	last := a.Units[len(a.Units)-1]
	if last.Sentinel != SentinelUnparseable || !strings.Contains(last.Detail, "too large") {
		t.Fatalf("a 1 MB script of %d commands should end in a too-large sentinel, got %v", 3*(1<<20)/len(line), last)
	}
	if len(a.Units) != maxUnits+1 {
		t.Fatalf("got %d units, want the cap %d plus the sentinel", len(a.Units), maxUnits)
	}
}

// hostileScripts are inputs whose cost once grew with the square of their
// size (every branch copying every variable, every loop re-walking its
// body); BenchmarkAnalyzeHostile keeps them measured.
func hostileScripts() map[string]string {
	var vars strings.Builder
	for i := 0; i < 20000; i++ {
		vars.WriteString("V" + strconv.Itoa(i) + "=x\n")
	}
	for vars.Len() < 1<<20 {
		vars.WriteString("a && b\n")
	}
	return map[string]string{
		"variables and branches": vars.String(),
		"nested loops":           strings.Repeat("while a; do ", 250) + strings.Repeat("x=1; ", 100000) + strings.Repeat("done; ", 250),
		"many redirections":      "echo" + strings.Repeat(" > f", 1<<18),
		"many ifs":               strings.Repeat("if a; then X=1; fi\n", 50000),
		// Each loader reads its unknown options two ways: nested, they
		// would multiply without the maxForks bound.
		"nested loaders": strings.Repeat("/lib64/ld-linux-x86-64.so.2 --a --b --c ", 17) + "/usr/bin/git push",
	}
}

func TestAnalyzeScriptHostile(t *testing.T) {
	for name, src := range hostileScripts() {
		t.Run(name, func(t *testing.T) {
			a := analyzeScript(src)
			if len(a.Units) > maxUnits+1 || len(a.Redirects) > maxUnits {
				t.Fatalf("%d units, %d redirects: over the caps", len(a.Units), len(a.Redirects))
			}
		})
	}
}

func BenchmarkAnalyzeHostile(b *testing.B) {
	for name, src := range hostileScripts() {
		b.Run(strings.ReplaceAll(name, " ", "-"), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				analyzeScript(src)
			}
		})
	}
}

func TestNestedLoadersStaySmall(t *testing.T) {
	a := analyzeScript(hostileScripts()["nested loaders"])
	if len(a.Units) > 4*maxForks {
		t.Fatalf("%d units from 17 nested loaders", len(a.Units))
	}
	if !a.Opaque() {
		t.Fatalf("past the bound a sentinel says so")
	}
}

func TestLoopsForgetWhatTheyChange(t *testing.T) {
	for src, want := range map[string]string{
		"X=ls; while a; do Y=1; done; $X":                    "ls",
		"X=ls; while a; do X=rm; done; $X":                   SentinelOpaque,
		"X=ls; while a; do while b; do X=rm; done; done; $X": SentinelOpaque,
		"X=ls; until a; do read X; done; $X":                 SentinelOpaque,
		"X=ls; for X in a; do :; done; $X":                   SentinelOpaque,
		"X=ls; while $X; do X=rm; done":                      SentinelOpaque,
	} {
		a := analyzeScript(src)
		if got := a.Units[len(a.Units)-1].Value(); got != want && !(want == SentinelOpaque && a.Opaque()) {
			t.Errorf("%s: last unit %q, want %q", src, got, want)
		}
	}
	a := analyzeScript("cd /a; while x; do cd b; done; echo > f")
	if r := a.Redirects[0]; r.Dir != "" {
		t.Errorf("a loop that cd's leaves the directory unknown, got %q", r.Dir)
	}
}

func TestAnalyzeScriptDeepNesting(t *testing.T) {
	for name, src := range map[string]string{
		"subshells":     strings.Repeat("(", 1000) + "true" + strings.Repeat(")", 1000),
		"cmdsubst":      strings.Repeat("echo $(", 1000) + "true" + strings.Repeat(")", 1000),
		"groups":        strings.Repeat("{ ", 1000) + "true" + strings.Repeat("; }", 1000),
		"ifs":           strings.Repeat("if true; then ", 1000) + "true" + strings.Repeat("; fi", 1000),
		"backquotes":    strings.Repeat("`", 1000),
		"unclosed":      strings.Repeat("$((", 1<<18),
		"bash -c chain": nestedBashC(20),
		"arith":         "echo $((" + strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000) + "))",
	} {
		t.Run(name, func(t *testing.T) {
			a := analyzeScript(src)
			if !a.Opaque() {
				t.Fatalf("nesting 1000 deep should yield a sentinel, got %d units", len(a.Units))
			}
		})
	}
}

// nestedBashC builds bash -c 'bash -c ...' n levels deep with correct quoting.
func nestedBashC(n int) string {
	s := "git push"
	for i := 0; i < n; i++ {
		s = RenderArgv([]string{"bash", "-c", s})
	}
	return s
}

func TestNestingWithinBoundsIsAnalysed(t *testing.T) {
	src := strings.Repeat("(", 100) + "git push" + strings.Repeat(")", 100)
	a := analyzeScript(src)
	if len(a.Units) != 1 || a.Units[0].Line != "git push" {
		t.Fatalf("100 nested subshells: got %v", a.Units)
	}
	a = analyzeScript(nestedBashC(15))
	last := a.Units[len(a.Units)-1]
	if last.Line != "git push" || len(last.Via) != 15 {
		t.Fatalf("15 nested bash -c: last unit %v", last)
	}
	a = analyzeScript(nestedBashC(18))
	if !a.Opaque() {
		t.Fatalf("18 nested bash -c should exceed the depth bound")
	}
}

func TestQuoteWordValidUTF8(t *testing.T) {
	for _, w := range []string{"\xff", "a\xc3", "ok"} {
		got := RenderArgv([]string{w})
		if !utf8.ValidString(got) {
			t.Errorf("RenderArgv(%q) = %q is not valid UTF-8", w, got)
		}
	}
}

// FuzzAnalyzeSourced: a script that sources files whose contents are the
// fuzzer's, including itself, stays within the bounds.
func FuzzAnalyzeSourced(f *testing.F) {
	f.Add(". ./a.sh; eval 'cd x'; echo > f", "source ./a.sh \"$@\"; shift; exec \"$@\"")
	f.Add(`sh -c '. "$1" && shift && exec "$@"' _ /w/a.sh git push`, "set -- a b; eval \"$1\"")
	f.Fuzz(func(t *testing.T, src, file string) {
		reads := 0
		ctx := ScriptContext{Cwd: "/w", Home: "/home/u", ReadFile: func(p string, limit int) ([]byte, error) {
			reads++
			if len(file) > limit {
				return []byte(file[:limit+1]), nil
			}
			return []byte(file), nil
		}}
		a := AnalyzeScript(src, ctx)
		if reads > maxSourced {
			t.Fatalf("%d files read", reads)
		}
		if len(a.Units) > maxUnits+1 {
			t.Fatalf("%d units exceed the cap", len(a.Units))
		}
		for _, u := range a.Units {
			if u.Value() == "" || u.Sentinel == "" && len(u.Argv) == 0 {
				t.Fatalf("bad unit %+v", u)
			}
		}
	})
}
