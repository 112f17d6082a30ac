package modelserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// events parses an SSE stream into its data payloads.
func events(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stream))
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("event %q: %v", d, err)
		}
		out = append(out, m)
	}
	return out
}

var script = []Step{
	Call("bash", map[string]any{"command": "echo hi"}),
	Reply("finished"),
}

func start(t *testing.T) *Server {
	s, err := Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestAnthropic(t *testing.T) {
	s := start(t)
	tools := `"tools":[{"name":"bash","input_schema":{}}]`
	out := post(t, s.URL+"/v1/messages", `{"model":"m","stream":true,`+tools+`,"messages":[{"role":"user","content":"go"}]}`)
	ev := events(t, out)
	if len(ev) != 6 || ev[1]["content_block"].(map[string]any)["name"] != "bash" {
		t.Fatalf("turn 0: %s", out)
	}
	if !strings.Contains(out, `"partial_json":"{\"command\":\"echo hi\"}"`) {
		t.Errorf("turn 0 arguments: %s", out)
	}
	out = post(t, s.URL+"/v1/messages", `{"model":"m","stream":true,`+tools+`,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_e2e_00","name":"bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_e2e_00","is_error":true,"content":[{"type":"text","text":"permwrap: denied x"}]}]}]}`)
	if !strings.Contains(out, `"text":"finished"`) {
		t.Errorf("turn 1: %s", out)
	}
	// A side request without tools: answered, not part of the script.
	out = post(t, s.URL+"/v1/messages", `{"model":"haiku","messages":[{"role":"user","content":"title?"}]}`)
	if !strings.Contains(out, `"text":"ok"`) {
		t.Errorf("side request: %s", out)
	}
	post(t, s.URL+"/v1/messages/count_tokens", `{}`)
	res, ok := s.ResultOf(0)
	if !ok || res.Text != "permwrap: denied x" || !res.IsError || res.CallID != "toolu_e2e_00" {
		t.Errorf("result of step 0: %+v %v", res, ok)
	}
	if n := len(s.MainRequests()); n != 2 || s.MaxTurn() != 1 || len(s.Requests()) != 4 {
		t.Errorf("main %d, max turn %d, all %d:\n%s", n, s.MaxTurn(), len(s.Requests()), s.Summary())
	}
	if !s.Contains("permwrap: denied x") || s.Contains("no such text") {
		t.Error("Contains")
	}
}

func TestResponses(t *testing.T) {
	s, err := Start([]Step{Freeform("apply_patch", "*** Begin Patch\n*** End Patch\n"), Call("bash", map[string]any{"cmd": "ls"}), Reply("end")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools := `"tools":[{"type":"function","name":"bash"},{"type":"custom","name":"apply_patch"}]`
	ev := events(t, post(t, s.URL+"/v1/responses", `{"model":"m","stream":true,`+tools+`,"input":[{"type":"message","role":"user","content":[]}]}`))
	last := ev[len(ev)-1]
	if last["type"] != "response.completed" {
		t.Fatalf("last event: %v", last)
	}
	item := ev[len(ev)-2]["item"].(map[string]any)
	if item["type"] != "custom_tool_call" || item["input"] != "*** Begin Patch\n*** End Patch\n" {
		t.Errorf("turn 0 item: %v", item)
	}
	ev = events(t, post(t, s.URL+"/v1/responses", `{"model":"m","stream":true,`+tools+`,"input":[{"type":"message","role":"user","content":[]},
		{"type":"custom_tool_call","call_id":"call_e2e_00","name":"apply_patch","input":"x"},
		{"type":"custom_tool_call_output","call_id":"call_e2e_00","output":"denied"}]}`))
	item = ev[len(ev)-2]["item"].(map[string]any)
	if item["type"] != "function_call" || item["arguments"] != `{"cmd":"ls"}` || item["call_id"] != "call_e2e_01" {
		t.Errorf("turn 1 item: %v", item)
	}
	if res, _ := s.ResultOf(0); res.Text != "denied" {
		t.Errorf("result of step 0: %+v", res)
	}
}

func TestChat(t *testing.T) {
	s := start(t)
	tools := `"tools":[{"type":"function","function":{"name":"bash"}}]`
	out := post(t, s.URL+"/v1/chat/completions", `{"model":"m","stream":true,`+tools+`,"messages":[{"role":"user","content":"go"}]}`)
	ev := events(t, out)
	tc := ev[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if tc["function"].(map[string]any)["name"] != "bash" || !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Fatalf("turn 0: %s", out)
	}
	out = post(t, s.URL+"/v1/chat/completions", `{"model":"m","stream":true,`+tools+`,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"call_e2e_00"}]},{"role":"tool","tool_call_id":"call_e2e_00","content":"out"}]}`)
	if !strings.Contains(out, `"content":"finished"`) {
		t.Errorf("turn 1: %s", out)
	}
	if res, _ := s.ResultOf(0); res.Text != "out" || res.CallID != "call_e2e_00" {
		t.Errorf("result of step 0: %+v", res)
	}
}

func TestGemini(t *testing.T) {
	s := start(t)
	tools := `"tools":[{"functionDeclarations":[{"name":"bash"}]}]`
	out := post(t, s.URL+"/v1beta/models/g:streamGenerateContent?alt=sse", `{`+tools+`,"contents":[{"role":"user","parts":[{"text":"go"}]}]}`)
	if !strings.Contains(out, `"functionCall":{"args":{"command":"echo hi"}`) {
		t.Fatalf("turn 0: %s", out)
	}
	out = post(t, s.URL+"/v1beta/models/g:streamGenerateContent?alt=sse", `{`+tools+`,"contents":[{"role":"user","parts":[{"text":"go"}]},
		{"role":"model","parts":[{"functionCall":{"name":"bash"}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"bash","response":{"output":"<x> & y"}}}]}]}`)
	if !strings.Contains(out, `"text":"finished"`) {
		t.Errorf("turn 1: %s", out)
	}
	if res, _ := s.ResultOf(0); res.Text != `{"output":"<x> & y"}` || res.Name != "bash" {
		t.Errorf("result of step 0: %+v", res)
	}
	// A side request asking for JSON gets an object of its schema.
	out = post(t, s.URL+"/v1beta/models/g:generateContent", `{"contents":[],"generationConfig":{"responseMimeType":"application/json",
		"responseJsonSchema":{"type":"object","properties":{"next_speaker":{"type":"string","enum":["model","user"]},"reasoning":{"type":"string"}}}}}`)
	var resp struct {
		Candidates []struct {
			Content struct{ Parts []struct{ Text string } }
		}
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	var side map[string]any
	if err := json.NewDecoder(bytes.NewReader([]byte(resp.Candidates[0].Content.Parts[0].Text))).Decode(&side); err != nil || side["next_speaker"] != "user" || side["reasoning"] != "ok" {
		t.Errorf("JSON side request: %v %v", side, err)
	}
}

func TestHold(t *testing.T) {
	s := start(t)
	s.Hold(0)
	done := make(chan string, 1)
	go func() {
		done <- post(t, s.URL+"/v1/chat/completions", `{"model":"m","tools":[{"type":"function","function":{"name":"bash"}}],"messages":[{"role":"user","content":"go"}]}`)
	}()
	for s.AtTurn(0) == nil {
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case out := <-done:
		t.Fatalf("answered while held: %s", out)
	case <-time.After(200 * time.Millisecond):
	}
	s.Release(0)
	if out := <-done; !strings.Contains(out, `"name":"bash"`) {
		t.Errorf("after release: %s", out)
	}
}
