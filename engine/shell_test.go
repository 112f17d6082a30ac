package engine

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateShell = flag.Bool("update-shell", false, "rewrite the expectations in testdata/shell/cases.txt from the current analysis (review the diff!)")

// shellCase is one entry of testdata/shell/cases.txt:
//
//	$ script line          (repeat for more lines; "$" alone is an empty line)
//	argv ["json", "array"] (instead of a script: AnalyzeArgv)
//	unit LINE (via …)      every unit, in order
//	redirect write PATH …  every redirect, in order
//	compound LINE          compounds are compared only when a case lists one
//	suggest PATTERN        SuggestBashPattern of the first unit's argv
//
// Cases are separated by blank lines; lines starting with '#' are comments.
type shellCase struct {
	line      int
	comments  []string
	script    []string
	argv      []string
	isArgv    bool
	want      []string // "unit …", "redirect …", "compound …", "suggest …"
	compounds bool
	suggest   bool
}

func readShellCases(t *testing.T, path string) []*shellCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []*shellCase
	var c *shellCase
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if strings.TrimSpace(l) == "" {
			c = nil
			continue
		}
		if c == nil {
			c = &shellCase{line: n}
			cases = append(cases, c)
		}
		switch {
		case strings.HasPrefix(l, "#"):
			c.comments = append(c.comments, l)
		case l == "$":
			c.script = append(c.script, "")
		case strings.HasPrefix(l, "$ "):
			c.script = append(c.script, l[2:])
		case strings.HasPrefix(l, "argv "):
			c.isArgv = true
			if err := json.Unmarshal([]byte(l[5:]), &c.argv); err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
		case strings.HasPrefix(l, "unit "), strings.HasPrefix(l, "redirect "):
			c.want = append(c.want, l)
		case strings.HasPrefix(l, "compound "):
			c.compounds = true
			c.want = append(c.want, l)
		case strings.HasPrefix(l, "suggest "):
			c.suggest = true
			c.want = append(c.want, l)
		default:
			t.Fatalf("%s:%d: cannot read %q", path, n, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func (c *shellCase) got() []string {
	var a ShellAnalysis
	if c.isArgv {
		a = AnalyzeArgv(c.argv)
	} else {
		a = AnalyzeScript(strings.Join(c.script, "\n"))
	}
	var out []string
	for _, u := range a.Units {
		out = append(out, "unit "+u.String())
	}
	for _, r := range a.Redirects {
		out = append(out, "redirect "+r.String())
	}
	if c.compounds {
		for _, cp := range a.Compounds {
			s := "compound " + cp.Line
			if len(cp.Via) > 0 {
				s += " (via " + strings.Join(cp.Via, ", ") + ")"
			}
			out = append(out, s)
		}
	}
	if c.suggest && len(a.Units) > 0 {
		out = append(out, "suggest "+SuggestBashPattern(a.Units[0].Argv))
	}
	for i, l := range out {
		// One expectation per line: multi-line words are written \n.
		out[i] = strings.ReplaceAll(l, "\n", `\n`)
	}
	return out
}

func (c *shellCase) input() string {
	if c.isArgv {
		b, _ := json.Marshal(c.argv)
		return "argv " + string(b)
	}
	return strings.Join(c.script, "\n")
}

func TestShellCases(t *testing.T) {
	const path = "testdata/shell/cases.txt"
	cases := readShellCases(t, path)
	if len(cases) < 150 {
		t.Errorf("%s holds %d cases; the table is meant to pin at least 150", path, len(cases))
	}
	var rewritten strings.Builder
	for _, c := range cases {
		got := c.got()
		if *updateShell {
			for _, l := range c.comments {
				rewritten.WriteString(l + "\n")
			}
			if c.isArgv {
				rewritten.WriteString(c.input() + "\n")
			} else {
				for _, l := range c.script {
					if l == "" {
						rewritten.WriteString("$\n")
					} else {
						rewritten.WriteString("$ " + l + "\n")
					}
				}
			}
			for _, l := range got {
				rewritten.WriteString(l + "\n")
			}
			rewritten.WriteString("\n")
			continue
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:%d: %s\n got:\n\t%s\nwant:\n\t%s", path, c.line, c.input(),
				strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
		}
	}
	if *updateShell {
		if err := os.WriteFile(path, []byte(strings.TrimSuffix(rewritten.String(), "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Println("rewrote", path)
	}
}
