package authority

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// TestMain lets the test binary act as a judge program: the exec-link
// tests run it as `<test binary> judge-mode MODE`.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "judge-mode" {
		os.Exit(judgeMain(os.Args[2]))
	}
	os.Exit(m.Run())
}

func judgeMain(mode string) int {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		return 3
	}
	var req struct {
		RequestID string `json:"requestId"`
		Surface   string `json:"surface"`
		Value     string `json:"value"`
		Units     []string
	}
	if err := json.Unmarshal(in, &req); err != nil || req.RequestID == "" || req.Surface == "" {
		fmt.Fprintf(os.Stderr, "bad request on stdin: %v %s", err, in)
		return 4
	}
	switch mode {
	case "allow":
		fmt.Println(`{"verdict":"allow","reason":"looks fine","confidence":0.9}`)
	case "deny":
		fmt.Printf(`{"verdict":"deny","reason":"no pushing %s"}`, req.Value)
	case "defer":
		fmt.Println(`{"verdict":"defer"}`)
	case "hang":
		time.Sleep(time.Minute)
	case "garbage":
		fmt.Println(`I think this is fine! {"verdict":"allow"}`)
	case "two":
		fmt.Println(`{"verdict":"deny"} {"verdict":"allow"}`)
	case "huge":
		fmt.Print(`{"verdict":"allow","reason":"` + strings.Repeat("x", 1<<20) + `"}`)
	case "fail":
		fmt.Println(`{"verdict":"allow"}`)
		fmt.Fprintln(os.Stderr, "model quota exceeded")
		return 1
	case "channel":
		// The query channel is fd 3, a socket, named nowhere: nothing in
		// $TMPDIR, no socket path in the environment.
		var st syscall.Stat_t
		fd, err := strconv.Atoi(os.Getenv(QueryFDEnv))
		switch {
		case err != nil || fd != 3:
			fmt.Printf(`{"verdict":"deny","reason":"%s=%q"}`, QueryFDEnv, os.Getenv(QueryFDEnv))
			return 0
		case syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK:
			fmt.Println(`{"verdict":"deny","reason":"fd 3 is not a socket"}`)
			return 0
		case os.Getenv("PERMWRAP_QUERY_SOCKET") != "":
			fmt.Println(`{"verdict":"deny","reason":"a socket path is in the environment"}`)
			return 0
		}
		if left, _ := os.ReadDir(os.TempDir()); len(left) > 0 {
			fmt.Printf(`{"verdict":"deny","reason":"%s holds %s"}`, os.TempDir(), left[0].Name())
			return 0
		}
		c := os.NewFile(uintptr(fd), "query")
		fmt.Fprintln(c, `{"surface":"bash","value":"git push"}`)
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.Contains(line, `"action":"ask"`) {
			fmt.Printf(`{"verdict":"deny","reason":"query answered %q %v"}`, line, err)
			return 0
		}
		fmt.Println(`{"verdict":"defer","reason":"private channel"}`)
	case "query":
		// Ask the policy about each unit; deny if any is denied.
		fd, err := strconv.Atoi(os.Getenv(QueryFDEnv))
		if err != nil {
			fmt.Fprintln(os.Stderr, "no query channel:", err)
			return 5
		}
		c := os.NewFile(uintptr(fd), "query")
		sc := bufio.NewScanner(c)
		for _, u := range req.Units {
			fmt.Fprintf(c, `{"surface":"bash","value":%q}`+"\n", u)
			if !sc.Scan() {
				return 6
			}
			var a struct {
				Action string
				Rule   *struct{ Pattern string }
			}
			json.Unmarshal(sc.Bytes(), &a)
			if a.Action == "deny" {
				fmt.Printf(`{"verdict":"deny","reason":"%s is denied by rule %s"}`, u, a.Rule.Pattern)
				return 0
			}
		}
		fmt.Fprintln(c, `{"surface":"nonsense","value":"x"}`)
		sc.Scan()
		if !strings.Contains(sc.Text(), `"error"`) {
			return 7
		}
		fmt.Println(`{"verdict":"defer"}`)
	}
	return 0
}

func judge(t *testing.T, mode string, timeout time.Duration) *ExecAuthorizer {
	t.Helper()
	links, _, err := ExecLinks(map[string]engine.AuthorizerSpec{"judge": {Command: []string{os.Args[0], "judge-mode", mode}, Timeout: timeout}})
	if err != nil {
		t.Fatal(err)
	}
	return links["judge"].(*ExecAuthorizer)
}

func TestExecLink(t *testing.T) {
	cases := []struct {
		mode    string
		verdict Verdict
		reason  string
		errLike string
	}{
		{"allow", VerdictAllow, "looks fine", ""},
		{"deny", VerdictDeny, "no pushing git push origin main", ""},
		{"defer", VerdictDefer, "", ""},
		{"hang", 0, "", "no answer within"},
		{"garbage", 0, "", "not a JSON object"},
		{"two", 0, "", "more than one"},
		{"huge", 0, "", "output over"},
		{"fail", 0, "", "model quota exceeded"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			// Generous except for the hang: a loaded CI machine can take
			// seconds to start the judge, and that must not read as a hang.
			timeout := 30 * time.Second
			if c.mode == "hang" {
				timeout = 2 * time.Second
			}
			j := judge(t, c.mode, timeout)
			start := time.Now()
			v, reason, err := j.Review(context.Background(), bashAsk("git push origin main"), nil)
			if c.errLike != "" {
				if err == nil || !strings.Contains(err.Error(), c.errLike) {
					t.Fatalf("err = %v, want %q", err, c.errLike)
				}
				if c.mode == "hang" && time.Since(start) > 10*time.Second {
					t.Fatalf("hung judge was not killed: %s", time.Since(start))
				}
				return
			}
			if err != nil || v != c.verdict || reason != c.reason {
				t.Fatalf("got %v %q %v", v, reason, err)
			}
		})
	}
}

func TestExecLinkInChain(t *testing.T) {
	// Through the chain, every failure mode defers to the terminal.
	for _, mode := range []string{"hang", "garbage", "huge", "fail"} {
		t.Run(mode, func(t *testing.T) {
			timeout := 30 * time.Second
			if mode == "hang" {
				timeout = 300 * time.Millisecond
			}
			links, timeouts, err := ExecLinks(map[string]engine.AuthorizerSpec{"judge": {Command: []string{os.Args[0], "judge-mode", mode}, Timeout: timeout}})
			if err != nil {
				t.Fatal(err)
			}
			term := &recTerm{}
			cfg := allowBash()
			cfg.Links, cfg.Timeouts = []string{"judge"}, timeouts
			d := NewChain(cfg, links, term, nil, nil).Resolve(context.Background(), bashAsk("git push"))
			if len(term.reached) != 1 || d.DecidedBy().Kind() != "user" {
				t.Fatalf("%v", d)
			}
		})
	}
}

func TestExecLinkQueryChannel(t *testing.T) {
	q := QuerierFunc(func(c engine.Check) QueryResult {
		if strings.HasPrefix(c.Value, "rm ") {
			return QueryResult{Action: engine.Deny, Rule: engine.Rule{Surface: engine.SurfaceBash, Pattern: "rm *", Action: engine.Deny, Origin: engine.OriginGlobal}}
		}
		return QueryResult{Action: engine.Allow, Rule: engine.Rule{Surface: engine.SurfaceBash, Pattern: "*", Action: engine.Allow, Origin: engine.OriginGlobal}}
	})
	r := bashAsk("bash -c 'ls; rm -rf build'")
	r.Units = []string{"ls", "rm -rf build"}
	v, reason, err := judge(t, "query", 30*time.Second).Review(context.Background(), r, q)
	if err != nil || v != VerdictDeny || reason != "rm -rf build is denied by rule rm *" {
		t.Fatalf("%v %q %v", v, reason, err)
	}
	r.Units = []string{"ls", "pwd"}
	if v, _, err := judge(t, "query", 30*time.Second).Review(context.Background(), r, q); err != nil || v != VerdictDefer {
		t.Fatalf("%v %v", v, err)
	}
}

// TestExecLinkQueryChannelIsPrivate: the judge's query channel is an
// inherited socket, not a file anyone can find. (The attack from inside
// the sandbox is supervisor's TestQueryChannelAttack.)
func TestExecLinkQueryChannelIsPrivate(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("PERMWRAP_QUERY_SOCKET", "") // as a stale value from an older permwrap would be overridden
	v, reason, err := judge(t, "channel", 30*time.Second).Review(context.Background(), bashAsk("git push"), nil)
	if err != nil || v != VerdictDefer || reason != "private channel" {
		t.Fatalf("%v %q %v", v, reason, err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the review left %s in $TMPDIR", left[0].Name())
	}
}

// TestExecLinkQueryChannelEnds: a judge's child that keeps the channel
// open does not keep the review (or a goroutine) alive, and sees the
// channel close when the review ends.
func TestExecLinkQueryChannelEnds(t *testing.T) {
	script := filepath.Join(t.TempDir(), "judge.sh")
	out := filepath.Join(t.TempDir(), "child-saw-eof")
	os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\n(cat <&3 >/dev/null; echo eof > "+out+") >/dev/null 2>&1 &\necho '{\"verdict\": \"defer\"}'\n"), 0o755)
	j := &ExecAuthorizer{Name: "sh", Command: []string{script}, Timeout: 30 * time.Second}
	if v, _, err := j.Review(context.Background(), bashAsk("ls"), nil); err != nil || v != VerdictDefer {
		t.Fatalf("%v %v", v, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(out); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the judge's child never saw the query channel close")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestShellScriptJudge(t *testing.T) {
	script := filepath.Join(t.TempDir(), "judge.sh")
	os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho '{\"verdict\": \"deny\", \"reason\": \"from sh\"}'\n"), 0o755)
	links, _, err := ExecLinks(map[string]engine.AuthorizerSpec{"sh": {Command: []string{script}}})
	if err != nil {
		t.Fatal(err)
	}
	v, reason, err := links["sh"].Review(context.Background(), bashAsk("ls"), nil)
	if err != nil || v != VerdictDeny || reason != "from sh" {
		t.Fatalf("%v %q %v", v, reason, err)
	}
}

func TestExecLinksRejectsBadSpecs(t *testing.T) {
	for _, s := range []engine.AuthorizerSpec{{}, {Command: []string{""}}} {
		if _, _, err := ExecLinks(map[string]engine.AuthorizerSpec{"j": s}); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if _, _, err := Links(map[string]engine.AuthorizerSpec{TypoPathName: {Command: []string{"x"}}}, nil); err == nil {
		t.Error("an exec link took the built-in name")
	}
	links, timeouts, err := Links(map[string]engine.AuthorizerSpec{"j": {Command: []string{"x"}}}, WorkspaceSiblings("/w/p"))
	if err != nil || links["j"] == nil || links[TypoPathName] == nil || timeouts["j"] != engine.DefaultAuthorizerTimeout {
		t.Fatalf("Links: %v %v %v", links, timeouts, err)
	}
}

func TestParseJudgeOutput(t *testing.T) {
	good := map[string]Verdict{
		`{"verdict":"allow"}`:                         VerdictAllow,
		"  {\"verdict\":\"deny\",\"reason\":\"r\"}\n": VerdictDeny,
		`{"verdict":"defer","extra":[1,2]}`:           VerdictDefer,
	}
	for in, want := range good {
		if v, _, err := ParseJudgeOutput([]byte(in)); err != nil || v != want {
			t.Errorf("%q: %v %v", in, v, err)
		}
	}
	for _, in := range []string{``, `allow`, `{}`, `{"verdict":"yes"}`, `{"verdict":1}`, `{"verdict":"allow"}x`, `{"verdict":"allow"}{}`, `[{"verdict":"allow"}]`, `{"verdict":"allow","reason":3}`, `{"verdict":"allow"`} {
		if v, _, err := ParseJudgeOutput([]byte(in)); err == nil {
			t.Errorf("%q accepted as %v", in, v)
		}
	}
}

func FuzzParseJudgeOutput(f *testing.F) {
	f.Add([]byte(`{"verdict":"deny","reason":"did you mean /x?"}`))
	f.Add([]byte(`{"verdict":"allow"} trailing`))
	f.Fuzz(func(t *testing.T, out []byte) {
		v, reason, err := ParseJudgeOutput(out)
		if err != nil {
			return
		}
		if v != VerdictAllow && v != VerdictDeny && v != VerdictDefer {
			t.Fatalf("accepted verdict %v", v)
		}
		if len(reason) > maxReasonBytes {
			t.Fatalf("reason %d bytes", len(reason))
		}
	})
}
