package engine

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	pathpkg "path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/permwrap/permwrap/engine/shell"
)

var updateShell = flag.Bool("update-shell", false, "rewrite the expectations in testdata/shell/cases.txt from the current analysis (review the diff!)")

// shellCase is one entry of testdata/shell/cases.txt:
//
//	$ script line          (repeat for more lines; "$" alone is an empty line)
//	argv ["json", "array"] (instead of a script: AnalyzeArgv)
//	unit LINE (via …)      every unit, in order
//	redirect write PATH …  every redirect, in order
//	compound LINE          compounds are compared only when a case lists one
//	suggest PATTERN        shell.SuggestBashPattern of the first unit's argv
//	file PATH "CONTENT"    a file the script may source (Go-quoted content)
//	exec PATH RESOLVED     for argv cases: the execve path and the resolved binary
//	interp PATH [ARG]      for argv cases: one #! interpreter, outermost first
//	default ACTION[: WHO]  DecideExec under the embedded default policy,
//	                       compared only when a case lists it, after
//	kernel UNIT            the units of the lines the kernel builds for #!
//
// Scripts and argv are analysed as if run in /work/repo with home /home/u,
// the files listed readable. Cases are separated by blank lines; lines
// starting with '#' are comments.
type shellCase struct {
	line      int
	comments  []string
	script    []string
	argv      []string
	isArgv    bool
	want      []string // "unit …", "redirect …", "compound …", "suggest …", "default …"
	compounds bool
	suggest   bool
	decide    bool
	files     map[string]string
	setup     []string // file/exec/interp lines, kept as written
	execPath  string
	resolved  string
	interps   []Interp
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
		case strings.HasPrefix(l, "default "), strings.HasPrefix(l, "kernel "):
			c.decide = true
			c.want = append(c.want, l)
		case strings.HasPrefix(l, "file "):
			name, quoted, ok := strings.Cut(l[5:], " ")
			content, err := strconv.Unquote(quoted)
			if !ok || err != nil {
				t.Fatalf("%s:%d: file PATH \"CONTENT\": %v", path, n, err)
			}
			if c.files == nil {
				c.files = map[string]string{}
			}
			c.files[name] = content
			c.setup = append(c.setup, l)
		case strings.HasPrefix(l, "exec "):
			f := strings.Fields(l[5:])
			if len(f) != 2 {
				t.Fatalf("%s:%d: exec PATH RESOLVED", path, n)
			}
			c.execPath, c.resolved = f[0], f[1]
			c.setup = append(c.setup, l)
		case strings.HasPrefix(l, "interp "):
			ip, arg, _ := strings.Cut(l[7:], " ")
			c.interps = append(c.interps, Interp{Path: ip, Arg: arg, Resolved: ip})
			c.setup = append(c.setup, l)
		default:
			t.Fatalf("%s:%d: cannot read %q", path, n, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// caseEnv is where the cases run.
var caseEnv = Env{Home: "/home/u", Workspace: "/work/repo", TmpDir: "/tmp"}

func (c *shellCase) reader() shell.FileReader {
	fsys := fstest.MapFS{}
	for name, content := range c.files {
		fsys[strings.TrimPrefix(name, "/")] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
	}
	return shell.FSReader(fsys)
}

func (c *shellCase) intent() ExecIntent {
	in := ExecIntent{Cwd: caseEnv.Workspace, ReadFile: c.reader(), Interpreters: c.interps}
	if !c.isArgv {
		in.Path, in.Resolved = "/bin/bash", "/usr/bin/bash"
		in.Argv = []string{"bash", "-c", strings.Join(c.script, "\n")}
		return in
	}
	in.Argv = c.argv
	switch {
	case c.execPath != "":
		in.Path, in.Resolved = c.execPath, c.resolved
	case len(c.argv) == 0:
	case strings.HasPrefix(c.argv[0], "/"):
		in.Path, in.Resolved = c.argv[0], c.argv[0]
	case strings.Contains(c.argv[0], "/"):
		in.Path, in.Resolved = c.argv[0], pathpkg.Join(in.Cwd, c.argv[0])
	default:
		in.Path, in.Resolved = "/usr/bin/"+c.argv[0], "/usr/bin/"+c.argv[0]
	}
	return in
}

var defaultPolicyForCases = sync.OnceValues(func() (*Policy, error) {
	p, _, err := Compile(Config{Env: caseEnv})
	return p, err
})

func (c *shellCase) got() []string {
	var a shell.Analysis
	ctx := shell.ScriptContext{Cwd: caseEnv.Workspace, Home: caseEnv.Home, ReadFile: c.reader()}
	if c.isArgv {
		a = analyzeArgvIn(c.argv, ctx)
	} else {
		a = shell.AnalyzeScript(strings.Join(c.script, "\n"), ctx)
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
		out = append(out, "suggest "+shell.SuggestBashPattern(a.Units[0].Argv))
	}
	if c.decide {
		p, err := defaultPolicyForCases()
		if err != nil {
			return []string{"default: " + err.Error()}
		}
		d := p.DecideExec(c.intent())
		for _, u := range d.Units {
			if len(u.Unit.Via) > 0 && strings.HasPrefix(u.Unit.Via[0], "#!") {
				out = append(out, "kernel "+u.Unit.String())
			}
		}
		l := "default " + d.Result.Action.String()
		if d.Result.Action != Allow {
			l += ": " + d.Decider
		}
		out = append(out, l)
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
			for _, l := range c.setup {
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
