package shell

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// The analysis removes quotes itself (unquoteLit, unescapeDbl,
// decodeANSIC) rather than through mvdan.cc/sh/v3/expand, because expand
// differs from bash on the inputs pinned in TestQuoteRemovalAgainstExpand.
// Everywhere else the two must agree: expand is the reference.

// compareWithExpand reports every word of src that the analysis takes as
// static but expand reads differently: command words through
// expand.Fields, redirect targets and assignment values through
// expand.Literal.
func compareWithExpand(src string, report func(string)) {
	f, err := parse(src)
	if err != nil {
		return
	}
	w := &walker{src: src, file: f}
	literal := func(word *syntax.Word) {
		if word == nil {
			return
		}
		ours, ok := w.literal(word, &scope{}, true)
		if !ok {
			return
		}
		theirs, err := expand.Literal(&expand.Config{}, word)
		if err != nil || ours != theirs {
			report(fmt.Sprintf("literal %q: ours %q, expand %q (%v)", w.text(word), ours, theirs, err))
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Redirect:
			literal(n.Word)
		case *syntax.Assign:
			literal(n.Value)
		case *syntax.CallExpr:
			for _, word := range n.Args {
				var ours []string
				for _, fl := range w.fields(word, &scope{}) {
					if fl.dyn != static {
						ours = nil
						break
					}
					ours = append(ours, fl.s)
				}
				if ours == nil {
					continue
				}
				theirs, err := expand.Fields(&expand.Config{}, word)
				if err != nil || strings.Join(ours, "\x00") != strings.Join(theirs, "\x00") || len(ours) != len(theirs) {
					report(fmt.Sprintf("fields %q: ours %q, expand %q (%v)", w.text(word), ours, theirs, err))
				}
			}
		}
		return true
	})
}

// expandDiffers are the inputs on which expand (v3.14.1) and bash part
// ways, with what bash makes of them (checked with bash 5.2). The
// analysis must give bash's answer; if expand ever does too, it can
// replace the hand-written quote removal.
var expandDiffers = []struct {
	script string
	bash   string // the value of the last word (or redirect target)
}{
	// expand.Literal keeps the backslashes of an unquoted word; bash
	// removes them in a redirect target or an assignment.
	{`echo > out\ file.txt`, "out file.txt"},
	// \1 is one octal escape; 8 is not octal. expand gives "".
	{`echo $'\1800'`, "\x01800"},
	// An escaped backslash, then a line continuation: expand keeps both.
	{"echo \\\\\\\n", `\`},
}

func TestQuoteRemovalAgainstExpand(t *testing.T) {
	n := 0
	for _, srcs := range caseInputs(t, "../testdata/shell/cases.txt") {
		for _, src := range srcs {
			n++
			compareWithExpand(src, func(s string) {
				if !knownExpandDifference(src, s) {
					t.Errorf("%s\n  in %q", s, src)
				}
			})
		}
	}
	if n < 400 {
		t.Errorf("compared %d inputs; cases.txt should give more", n)
	}
	for _, d := range expandDiffers {
		a := analyzeScript(d.script)
		got := ""
		switch {
		case len(a.Redirects) > 0:
			got = a.Redirects[0].Path
		case len(a.Units) > 0 && len(a.Units[0].Argv) > 1:
			got = a.Units[0].Argv[len(a.Units[0].Argv)-1]
		}
		if got != d.bash {
			t.Errorf("%q: the analysis reads %q, bash %q", d.script, got, d.bash)
		}
		differs := false
		compareWithExpand(d.script, func(string) { differs = true })
		if !differs {
			t.Errorf("%q: expand now agrees with bash; consider using it for quote removal", d.script)
		}
	}
}

// caseInputs reads the inputs of engine's testdata/shell/cases.txt (see
// engine's shellCase): a case's script lines joined, or its argv words
// (-c scripts among them). The expectations are engine's to check.
func caseInputs(t *testing.T, file string) [][]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, block := range strings.Split(string(data), "\n\n") {
		var script, argv []string
		isArgv := false
		for _, l := range strings.Split(block, "\n") {
			switch {
			case l == "$":
				script = append(script, "")
			case strings.HasPrefix(l, "$ "):
				script = append(script, l[2:])
			case strings.HasPrefix(l, "argv "):
				isArgv = true
				if err := json.Unmarshal([]byte(l[5:]), &argv); err != nil {
					t.Fatalf("%s: %v", l, err)
				}
			}
		}
		switch {
		case isArgv:
			out = append(out, argv)
		case strings.TrimSpace(block) != "":
			out = append(out, []string{strings.Join(script, "\n")})
		}
	}
	return out
}

// knownExpandDifference reports whether a difference found in src is of
// a kind listed in expandDiffers.
func knownExpandDifference(src, report string) bool {
	return strings.HasPrefix(report, "literal") && strings.Contains(src, `\`) ||
		strings.Contains(src, "$'") || strings.Contains(src, "\\\n")
}

// FuzzQuoteRemovalAgainstExpand looks for inputs beyond the known ones on
// which the analysis and expand disagree.
func FuzzQuoteRemovalAgainstExpand(f *testing.F) {
	for _, s := range []string{`a\ b`, `$'\x41'`, `"a\"b"`, `'x'y`, "a\\\nb", `echo > "x\$y"`, `X=a\ b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 200 || nestingEstimate(src) > 50 || strings.ContainsRune(src, 0) {
			return // argv words, hence -c scripts, cannot hold NUL
		}
		compareWithExpand(src, func(s string) {
			if !knownExpandDifference(src, s) {
				t.Fatal(s)
			}
		})
	})
}
