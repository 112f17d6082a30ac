package authority

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/sockpair"
)

// Limits on what a judge program may send back. A judge is outside
// permwrap's trust: it gets a bounded say, not a bounded memory.
const (
	maxJudgeOutput   = 64 << 10
	maxJudgeStderr   = 4 << 10
	maxQueryLine     = 64 << 10
	maxQueriesPerAsk = 1000
	judgeWaitDelay   = 500 * time.Millisecond
)

// QueryFDEnv names the environment variable that gives a judge the file
// descriptor of its query channel (always 3).
const QueryFDEnv = "PERMWRAP_QUERY_FD"

// queryFD is the query channel's descriptor in the judge: the first of
// ExtraFiles.
const queryFD = 3

// ExecAuthorizer runs a program for every request it reviews: the request
// as one JSON object on stdin (see Request.MarshalJSON), one verdict
// object on stdout. Anything else — a non-zero exit, no answer in time,
// output that is not exactly one verdict object, output over 64 KiB — is
// an error, which the chain turns into defer.
type ExecAuthorizer struct {
	Name    string
	Command []string
	Timeout time.Duration // ≤0: engine.DefaultAuthorizerTimeout
}

// ExecLinks builds the exec links defined in config ("authorizers":
// {"judge": {"command": ["my-judge", "--json"], "timeoutMs": 3000}}) and
// the url links (HTTPAuthorizer), and the per-link timeouts the chain
// should apply.
func ExecLinks(specs map[string]engine.AuthorizerSpec) (map[string]Authorizer, map[string]time.Duration, error) {
	links := make(map[string]Authorizer, len(specs))
	timeouts := make(map[string]time.Duration, len(specs))
	for name, s := range specs {
		if s.Remote != nil { // a url authorizer (httplink.go)
			h, err := NewHTTPAuthorizer(name, s)
			if err != nil {
				return nil, nil, err
			}
			links[name], timeouts[name] = h, h.Timeout
			continue
		}
		if len(s.Command) == 0 || s.Command[0] == "" {
			return nil, nil, fmt.Errorf("authorizers.%s: command is empty", name)
		}
		t := s.Timeout
		if t <= 0 {
			t = engine.DefaultAuthorizerTimeout
		}
		links[name] = &ExecAuthorizer{Name: name, Command: append([]string(nil), s.Command...), Timeout: t}
		timeouts[name] = t
	}
	return links, timeouts, nil
}

// Links builds the registry of every link this node can run: the exec
// links defined in config and the built-in typo-path (with typos as its
// mistakes), and the timeout the chain should give each. Nothing here is
// consulted until ChainConfig.Links names it.
func Links(execs map[string]engine.AuthorizerSpec, typos []engine.TypoPath) (map[string]Authorizer, map[string]time.Duration, error) {
	if _, taken := execs[TypoPathName]; taken {
		return nil, nil, fmt.Errorf("authorizers.%s: the name belongs to the built-in reviewer; choose another", TypoPathName)
	}
	links, timeouts, err := ExecLinks(execs)
	if err != nil {
		return nil, nil, err
	}
	typo, err := NewTypoPath(typos)
	if err != nil {
		return nil, nil, err
	}
	links[TypoPathName] = typo
	return links, timeouts, nil
}

// Review runs the judge once.
func (e *ExecAuthorizer) Review(ctx context.Context, r Request, q Querier) (Verdict, string, error) {
	if len(e.Command) == 0 {
		return 0, "", errors.New("exec link has no command")
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = engine.DefaultAuthorizerTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	input, err := json.Marshal(r)
	if err != nil {
		return 0, "", fmt.Errorf("encoding request: %w", err)
	}

	// The query channel is one end of a socket pair, inherited by the judge
	// (and whatever it starts) and by nothing else: it has no name in any
	// filesystem or namespace, so the sandboxed tree cannot find, connect
	// to or replace it, and holding it is the proof of being the judge.
	local, remote, err := sockpair.New()
	if err != nil {
		return 0, "", fmt.Errorf("judge %s: query channel: %w", e.Name, err)
	}
	defer local.Close()

	cmd := exec.CommandContext(ctx, e.Command[0], e.Command[1:]...)
	cmd.Env = append(os.Environ(), QueryFDEnv+"="+strconv.Itoa(queryFD), "PERMWRAP_REQUEST_ID="+string(r.ID))
	cmd.ExtraFiles = []*os.File{remote}
	cmd.Stdin = bytes.NewReader(input)
	stdout := &capped{max: maxJudgeOutput}
	stderr := &capped{max: maxJudgeStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A judge's own children may hold the pipes open after it is killed;
	// stop waiting for them rather than hang the ask.
	cmd.WaitDelay = judgeWaitDelay

	startErr := cmd.Start()
	remote.Close()
	if startErr != nil {
		return 0, "", fmt.Errorf("judge %s: %w", e.Name, startErr)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		serveQueries(local, q)
		local.Close() // a judge over its limits reads end of file
	}()
	runErr := cmd.Wait()
	// The judge's children may still hold the channel: the review is over
	// for them too.
	local.Close()
	<-served
	if ctx.Err() != nil {
		return 0, "", fmt.Errorf("judge %s: no answer within %s", e.Name, timeout)
	}
	if runErr != nil {
		msg := bytes.TrimSpace(stderr.buf.Bytes())
		if len(msg) > 0 {
			return 0, "", fmt.Errorf("judge %s: %w: %s", e.Name, runErr, msg)
		}
		return 0, "", fmt.Errorf("judge %s: %w", e.Name, runErr)
	}
	if stdout.over {
		return 0, "", fmt.Errorf("judge %s: output over %d bytes", e.Name, maxJudgeOutput)
	}
	return ParseJudgeOutput(stdout.buf.Bytes())
}

// ParseJudgeOutput reads a judge's stdout: exactly one JSON object
// {"verdict": "allow"|"deny"|"defer", "reason": "…"}, surrounded by
// nothing but whitespace. Unknown fields are ignored so judges can add
// their own diagnostics.
func ParseJudgeOutput(out []byte) (Verdict, string, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return 0, "", errors.New("judge wrote nothing")
	}
	if len(out) > maxJudgeOutput {
		return 0, "", fmt.Errorf("judge output over %d bytes", maxJudgeOutput)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var v struct {
		Verdict *string `json:"verdict"`
		Reason  *string `json:"reason"`
	}
	if out[0] != '{' {
		return 0, "", errors.New("judge output is not a JSON object")
	}
	if err := dec.Decode(&v); err != nil {
		return 0, "", fmt.Errorf("judge output: %w", err)
	}
	if dec.More() {
		return 0, "", errors.New("judge output has more than one JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return 0, "", errors.New("judge output has trailing data")
	}
	if v.Verdict == nil {
		return 0, "", errors.New(`judge output has no "verdict"`)
	}
	verdict, ok := ParseVerdict(*v.Verdict)
	if !ok {
		return 0, "", fmt.Errorf("judge verdict %q is not allow, deny or defer", elide(*v.Verdict, 64))
	}
	reason := ""
	if v.Reason != nil {
		reason = elide(*v.Reason, maxReasonBytes)
	}
	return verdict, reason, nil
}

// capped keeps the first max bytes written and notes whether more came.
// It never fails a write, so a chatty judge is not blocked on its pipe.
type capped struct {
	max  int
	buf  bytes.Buffer
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		if len(p) > room {
			c.buf.Write(p[:room])
			c.over = true
		} else {
			c.buf.Write(p)
		}
	} else if len(p) > 0 {
		c.over = true
	}
	return len(p), nil
}

// serveQueries answers a judge's policy queries on its query channel:
// one JSON request per line, {"surface":"bash","value":"git push"}, one
// JSON answer per line, {"action":"ask","rule":{...}} or {"error":"…"}.
// A nil q answers ask to everything.
type queryRequest struct {
	Surface string `json:"surface"`
	Value   string `json:"value"`
}

type queryAnswer struct {
	Action string    `json:"action,omitempty"`
	Rule   *ruleJSON `json:"rule,omitempty"`
	Error  string    `json:"error,omitempty"`
}

func serveQueries(c io.ReadWriter, q Querier) {
	if q == nil {
		q = QuerierFunc(func(engine.Check) QueryResult { return QueryResult{Action: engine.Ask} })
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), maxQueryLine)
	enc := json.NewEncoder(c)
	for n := 0; sc.Scan(); n++ {
		if n >= maxQueriesPerAsk {
			enc.Encode(queryAnswer{Error: "too many queries for one request"})
			return
		}
		if err := enc.Encode(answerQuery(sc.Bytes(), q)); err != nil {
			return
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		enc.Encode(queryAnswer{Error: fmt.Sprintf("query line over %d bytes", maxQueryLine)})
	}
}

func answerQuery(line []byte, q Querier) queryAnswer {
	var req queryRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return queryAnswer{Error: "bad query: " + err.Error()}
	}
	s, ok := engine.ParseSurface(req.Surface)
	if !ok {
		return queryAnswer{Error: fmt.Sprintf("unknown surface %q", elide(req.Surface, 64))}
	}
	res := q.Query(engine.Check{Surface: s, Value: req.Value})
	return queryAnswer{Action: res.Action.String(), Rule: ruleToJSON(res.Rule)}
}
