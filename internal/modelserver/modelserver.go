// Package modelserver is a scripted language-model server for the agent
// end-to-end tests: an HTTP server on 127.0.0.1 that speaks the four API
// shapes the coding agents use — Anthropic Messages (SSE streaming),
// OpenAI Responses (SSE), OpenAI Chat Completions (SSE) and Gemini
// generateContent / streamGenerateContent — and answers the agent's
// conversation from a script: a list of steps, each "call tool X with
// arguments Y" or "reply with this final text".
//
// The script is followed statelessly: the step a request gets is the
// number of assistant turns already in the conversation it carries, so a
// retried request gets the same answer and the agent's side requests
// (title generation, token counting, model listing, quota checks, a
// next-speaker check) neither advance nor disturb it. A request is part
// of the conversation ("main") when it offers tools; side requests get a
// short plausible answer.
//
// Every request is recorded, with the tool results the agent reported in
// it, so a test can assert on what the model was sent.
package modelserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// API is the shape of a request.
type API string

const (
	Anthropic API = "anthropic" // POST …/v1/messages
	Responses API = "responses" // POST …/responses
	Chat      API = "chat"      // POST …/chat/completions
	Gemini    API = "gemini"    // POST …/models/M:generateContent, :streamGenerateContent
	Other     API = "other"     // anything else (model lists, token counts, …)
)

// Step is one turn of the script: a tool call (Tool set) or a final
// text reply.
type Step struct {
	Tool string         // the tool's name, as the agent offers it
	Args map[string]any // its arguments
	// Input is the whole input of a freeform tool (the Responses API's
	// "custom" tools, such as Codex's apply_patch), sent instead of Args.
	Input string
	Text  string // the final reply, when Tool is empty
}

// Call is a step that calls tool with args.
func Call(tool string, args map[string]any) Step { return Step{Tool: tool, Args: args} }

// Reply is a step that ends the conversation with text.
func Reply(text string) Step { return Step{Text: text} }

// Freeform is a step that calls a freeform (custom) tool with input.
func Freeform(tool, input string) Step { return Step{Tool: tool, Input: input} }

// ToolResult is one tool result the agent sent back to the model.
type ToolResult struct {
	CallID  string // the id of the call it answers ("" where the API has none)
	Name    string // the tool's name, where the API carries it
	Text    string // the result as text (JSON for structured results)
	IsError bool   // the agent marked it as an error (Anthropic)
}

// Request is one recorded request.
type Request struct {
	Seq     int
	Method  string
	Path    string
	Query   string
	Header  http.Header
	Body    []byte
	API     API
	Stream  bool
	Main    bool // part of the scripted conversation (it offers tools)
	Turn    int  // assistant turns in its history: the step it was answered with
	Tools   []string
	Results []ToolResult // every tool result in its history, in order
	Status  int          // what the server answered

	recorded bool
}

// LastResult is the latest tool result in the request's history: for a
// request at turn n, the result of step n-1's call.
func (r *Request) LastResult() (ToolResult, bool) {
	if len(r.Results) == 0 {
		return ToolResult{}, false
	}
	return r.Results[len(r.Results)-1], true
}

// Server is a running scripted model.
type Server struct {
	URL string // http://127.0.0.1:PORT

	script []Step
	ln     net.Listener
	srv    *http.Server

	mu   sync.Mutex
	reqs []*Request
	hold map[int]chan struct{} // turns whose answer waits for Release
}

// Hold makes the answer to the conversation's request at turn n wait
// until Release(n): the agent then sits waiting for the model, so a test
// can look at what it did so far with nothing else going on. The request
// is recorded (and seen by AtTurn) while it waits.
func (s *Server) Hold(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold == nil {
		s.hold = map[int]chan struct{}{}
	}
	if s.hold[n] == nil {
		s.hold[n] = make(chan struct{})
	}
}

// Release lets the answers to turn n go.
func (s *Server) Release(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.hold[n]; ch != nil {
		close(ch)
		s.hold[n] = nil
	}
}

// admit records a conversation request once it is parsed, then waits
// while its turn is held.
func (s *Server) admit(r *Request) {
	s.record(r)
	s.mu.Lock()
	ch := s.hold[r.Turn]
	s.mu.Unlock()
	if ch != nil && r.Main {
		<-ch
	}
}

// Start serves script on a free port of 127.0.0.1.
func Start(script []Step) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), script: script, ln: ln}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Script is the script the server follows.
func (s *Server) Script() []Step { return s.script }

// Requests is every request so far, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// MainRequests is the requests of the conversation, in order.
func (s *Server) MainRequests() []*Request {
	var out []*Request
	for _, r := range s.Requests() {
		if r.Main {
			out = append(out, r)
		}
	}
	return out
}

// AtTurn is the first conversation request at turn n (the one answered
// with step n), or nil.
func (s *Server) AtTurn(n int) *Request {
	for _, r := range s.MainRequests() {
		if r.Turn == n {
			return r
		}
	}
	return nil
}

// MaxTurn is the highest turn any conversation request reached, -1 for
// none.
func (s *Server) MaxTurn() int {
	m := -1
	for _, r := range s.MainRequests() {
		m = max(m, r.Turn)
	}
	return m
}

// ResultOf is the tool result the agent sent for step n's call: the
// latest result in the first request at turn n+1.
func (s *Server) ResultOf(n int) (ToolResult, bool) {
	r := s.AtTurn(n + 1)
	if r == nil {
		return ToolResult{}, false
	}
	return r.LastResult()
}

// Contains reports whether any request's body contains sub (raw, or
// with JSON string escaping undone).
func (s *Server) Contains(sub string) bool {
	esc, _ := json.Marshal(sub)
	escS := strings.Trim(string(esc), `"`)
	for _, r := range s.Requests() {
		if bytes.Contains(r.Body, []byte(sub)) || bytes.Contains(r.Body, []byte(escS)) {
			return true
		}
	}
	return false
}

// Summary describes every request in a line, for a test's failure
// output.
func (s *Server) Summary() string {
	var b strings.Builder
	for _, r := range s.Requests() {
		fmt.Fprintf(&b, "#%d %s %s api=%s main=%v turn=%d status=%d tools=%d results=%d\n",
			r.Seq, r.Method, r.Path, r.API, r.Main, r.Turn, r.Status, len(r.Tools), len(r.Results))
		if res, ok := r.LastResult(); ok && r.Main {
			fmt.Fprintf(&b, "    last result (call %q, error=%v): %s\n", res.CallID, res.IsError, clip(res.Text, 600))
		}
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (s *Server) record(r *Request) {
	s.mu.Lock()
	if r.recorded {
		s.mu.Unlock()
		return
	}
	r.recorded = true
	r.Seq = len(s.reqs)
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
}

// step is the script's step n, or a closing reply past its end.
func (s *Server) step(n int) Step {
	if n < len(s.script) {
		return s.script[n]
	}
	return Reply("done")
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(hr.Body)
	r := &Request{Method: hr.Method, Path: hr.URL.Path, Query: hr.URL.RawQuery, Header: hr.Header.Clone(), Body: body, API: Other}
	defer s.record(r)
	var m map[string]any
	if len(body) > 0 {
		_ = json.Unmarshal(body, &m)
	}
	p := hr.URL.Path
	switch {
	case hr.Method == http.MethodPost && strings.HasSuffix(p, "/messages/count_tokens"):
		r.Status = writeJSON(w, map[string]any{"input_tokens": 100})
	case hr.Method == http.MethodPost && strings.HasSuffix(p, "/messages"):
		r.API = Anthropic
		s.anthropic(w, r, m)
	case hr.Method == http.MethodPost && strings.HasSuffix(p, "/responses"):
		r.API = Responses
		s.responses(w, r, m)
	case hr.Method == http.MethodPost && strings.HasSuffix(p, "/chat/completions"):
		r.API = Chat
		s.chat(w, r, m)
	case hr.Method == http.MethodPost && strings.Contains(p, ":countTokens"):
		r.Status = writeJSON(w, map[string]any{"totalTokens": 100})
	case hr.Method == http.MethodPost && (strings.Contains(p, ":generateContent") || strings.Contains(p, ":streamGenerateContent")):
		r.API = Gemini
		s.gemini(w, r, m, strings.Contains(p, ":streamGenerateContent"))
	case hr.Method == http.MethodHead:
		// A reachability probe (Claude Code's HEAD /).
		r.Status = http.StatusOK
		w.WriteHeader(http.StatusOK)
	case hr.Method == http.MethodGet && strings.HasSuffix(p, "/models"):
		r.Status = writeJSON(w, map[string]any{
			"object": "list",
			"data":   []any{map[string]any{"id": "e2e-model", "object": "model", "created": 0, "owned_by": "e2e"}},
			"models": []any{},
		})
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		r.Status = http.StatusNotFound
		io.WriteString(w, `{"error":{"type":"not_found_error","message":"not served by the e2e model server"}}`)
	}
}

func writeJSON(w http.ResponseWriter, v any) int {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(v)
	w.Write(b)
	return http.StatusOK
}

// sse writes Server-Sent Events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event; name "" writes only its data.
func (e *sse) event(name string, data any) {
	var b []byte
	if s, ok := data.(string); ok {
		b = []byte(s)
	} else {
		b, _ = json.Marshal(data)
	}
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	if e.f != nil {
		e.f.Flush()
	}
}

func argsJSON(a map[string]any) string {
	if a == nil {
		a = map[string]any{}
	}
	b, _ := json.Marshal(a)
	return string(b)
}

func toolNames(m map[string]any) []string {
	var out []string
	tools, _ := m["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		if tm == nil {
			continue
		}
		if n, ok := tm["name"].(string); ok {
			out = append(out, n)
		}
		if f, ok := tm["function"].(map[string]any); ok {
			if n, ok := f["name"].(string); ok {
				out = append(out, n)
			}
		}
		// Gemini: {"functionDeclarations": [{"name": …}]}
		if decls, ok := tm["functionDeclarations"].([]any); ok {
			for _, d := range decls {
				if dm, ok := d.(map[string]any); ok {
					if n, ok := dm["name"].(string); ok {
						out = append(out, n)
					}
				}
			}
		}
	}
	return out
}

// isMain decides whether a request is part of the conversation: it
// offers tools, among them one the script calls.
func (s *Server) isMain(tools []string) bool {
	for _, st := range s.script {
		for _, t := range tools {
			if st.Tool != "" && st.Tool == t {
				return true
			}
		}
	}
	return false
}

// readTools reads the tools a request offers, whatever its API, and so
// whether it is part of the conversation.
func (s *Server) readTools(r *Request, m map[string]any) {
	r.Tools = toolNames(m)
	r.Main = s.isMain(r.Tools)
}

// answerStep admits a parsed request (recorded, then held while its turn
// is) and returns the step it is answered with: the script's step at its
// turn for the conversation, a short "ok" for a side request.
func (s *Server) answerStep(r *Request) Step {
	st := Reply("ok")
	if r.Main {
		st = s.step(r.Turn)
	}
	r.Status = http.StatusOK
	s.admit(r)
	return st
}

// textOf flattens a content value (a string, or a list of parts with
// text) to text; anything else is given as JSON.
func textOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []any:
		var parts []string
		for _, p := range x {
			if pm, ok := p.(map[string]any); ok {
				if t, ok := pm["text"].(string); ok {
					parts = append(parts, t)
					continue
				}
				if t, ok := pm["content"]; ok {
					parts = append(parts, textOf(t))
					continue
				}
			}
			parts = append(parts, plainJSON(p))
		}
		return strings.Join(parts, "\n")
	default:
		return plainJSON(x)
	}
}

// plainJSON is v as JSON, without escaping <, > and & (so a test reads
// the text as the model would).
func plainJSON(v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// --- Anthropic Messages ---

func (s *Server) anthropic(w http.ResponseWriter, r *Request, m map[string]any) {
	r.Stream, _ = m["stream"].(bool)
	s.readTools(r, m)
	msgs, _ := m["messages"].([]any)
	for _, msg := range msgs {
		mm, _ := msg.(map[string]any)
		if mm["role"] == "assistant" {
			r.Turn++
		}
		if content, ok := mm["content"].([]any); ok {
			for _, c := range content {
				cm, _ := c.(map[string]any)
				if cm["type"] == "tool_result" {
					id, _ := cm["tool_use_id"].(string)
					isErr, _ := cm["is_error"].(bool)
					r.Results = append(r.Results, ToolResult{CallID: id, Text: textOf(cm["content"]), IsError: isErr})
				}
			}
		}
	}
	model, _ := m["model"].(string)
	st := s.answerStep(r)
	id := fmt.Sprintf("msg_e2e_%d", r.Turn)
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	var block map[string]any
	stop := "end_turn"
	if st.Tool != "" {
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_e2e_%02d", r.Turn), "name": st.Tool, "input": st.Args}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": st.Text}
	}
	if !r.Stream {
		writeJSON(w, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	e := startSSE(w)
	e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}})
	if st.Tool != "" {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": st.Tool, "input": map[string]any{}}})
		e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": argsJSON(st.Args)}})
	} else {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": st.Text}})
	}
	e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}

// --- OpenAI Responses ---

func (s *Server) responses(w http.ResponseWriter, r *Request, m map[string]any) {
	r.Stream, _ = m["stream"].(bool)
	s.readTools(r, m)
	input, _ := m["input"].([]any)
	for _, it := range input {
		im, _ := it.(map[string]any)
		switch im["type"] {
		case "function_call", "custom_tool_call", "local_shell_call":
			r.Turn++
		case "message":
			if im["role"] == "assistant" {
				r.Turn++
			}
		case "function_call_output", "custom_tool_call_output":
			id, _ := im["call_id"].(string)
			r.Results = append(r.Results, ToolResult{CallID: id, Text: textOf(im["output"])})
		}
	}
	model, _ := m["model"].(string)
	st := s.answerStep(r)
	respID := fmt.Sprintf("resp_e2e_%d", r.Turn)
	var item map[string]any
	if st.Tool != "" && st.Input != "" {
		item = map[string]any{"type": "custom_tool_call", "id": fmt.Sprintf("ctc_e2e_%02d", r.Turn),
			"call_id": fmt.Sprintf("call_e2e_%02d", r.Turn), "name": st.Tool, "input": st.Input, "status": "completed"}
	} else if st.Tool != "" {
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_e2e_%02d", r.Turn),
			"call_id": fmt.Sprintf("call_e2e_%02d", r.Turn), "name": st.Tool, "arguments": argsJSON(st.Args), "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_e2e_%02d", r.Turn), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": st.Text, "annotations": []any{}}}}
	}
	usage := map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}
	resp := func(status string, output []any) map[string]any {
		return map[string]any{"id": respID, "object": "response", "created_at": 0, "status": status, "model": model, "output": output, "usage": usage}
	}
	if !r.Stream {
		writeJSON(w, resp("completed", []any{item}))
		return
	}
	e := startSSE(w)
	e.event("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": resp("in_progress", []any{})})
	e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item})
	if st.Tool == "" {
		e.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "sequence_number": 2,
			"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": st.Text})
	}
	e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": item})
	e.event("response.completed", map[string]any{"type": "response.completed", "sequence_number": 4, "response": resp("completed", []any{item})})
}

// --- OpenAI Chat Completions ---

func (s *Server) chat(w http.ResponseWriter, r *Request, m map[string]any) {
	r.Stream, _ = m["stream"].(bool)
	s.readTools(r, m)
	msgs, _ := m["messages"].([]any)
	for _, msg := range msgs {
		mm, _ := msg.(map[string]any)
		switch mm["role"] {
		case "assistant":
			r.Turn++
		case "tool":
			id, _ := mm["tool_call_id"].(string)
			r.Results = append(r.Results, ToolResult{CallID: id, Text: textOf(mm["content"])})
		}
	}
	model, _ := m["model"].(string)
	st := s.answerStep(r)
	id := fmt.Sprintf("chatcmpl-e2e-%d", r.Turn)
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	callID := fmt.Sprintf("call_e2e_%02d", r.Turn)
	finish := "stop"
	if st.Tool != "" {
		finish = "tool_calls"
	}
	if !r.Stream {
		msg := map[string]any{"role": "assistant", "content": st.Text}
		if st.Tool != "" {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": callID, "type": "function", "function": map[string]any{"name": st.Tool, "arguments": argsJSON(st.Args)}}}}
		}
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	e := startSSE(w)
	chunk := func(delta map[string]any, finish any, usage any) map[string]any {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		return c
	}
	if st.Tool != "" {
		e.event("", chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": callID, "type": "function",
			"function": map[string]any{"name": st.Tool, "arguments": argsJSON(st.Args)}}}}, nil, nil))
	} else {
		e.event("", chunk(map[string]any{"role": "assistant", "content": st.Text}, nil, nil))
	}
	e.event("", chunk(map[string]any{}, finish, usage))
	e.event("", "[DONE]")
}

// --- Gemini ---

func (s *Server) gemini(w http.ResponseWriter, r *Request, m map[string]any, stream bool) {
	r.Stream = stream
	s.readTools(r, m)
	contents, _ := m["contents"].([]any)
	for _, c := range contents {
		cm, _ := c.(map[string]any)
		if cm["role"] == "model" {
			r.Turn++
		}
		parts, _ := cm["parts"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			if fr, ok := pm["functionResponse"].(map[string]any); ok {
				id, _ := fr["id"].(string)
				name, _ := fr["name"].(string)
				r.Results = append(r.Results, ToolResult{CallID: id, Name: name, Text: textOf(fr["response"])})
			}
		}
	}
	st := s.answerStep(r)
	var part map[string]any
	if r.Main {
		if st.Tool != "" {
			part = map[string]any{"functionCall": map[string]any{"id": fmt.Sprintf("call_e2e_%02d", r.Turn), "name": st.Tool, "args": st.Args}}
		} else {
			part = map[string]any{"text": st.Text}
		}
	} else {
		part = map[string]any{"text": geminiSideText(m)}
	}
	resp := map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "e2e-model",
	}
	if !stream {
		writeJSON(w, resp)
		return
	}
	e := startSSE(w)
	e.event("", resp)
}

// geminiSideText answers a side request: for one that asks for JSON
// (generationConfig.responseMimeType application/json, as Gemini CLI's
// next-speaker check and model router do), an object filled from its
// schema; otherwise "ok".
func geminiSideText(m map[string]any) string {
	gc, _ := m["generationConfig"].(map[string]any)
	if gc == nil {
		return "ok"
	}
	if mt, _ := gc["responseMimeType"].(string); mt != "application/json" {
		return "ok"
	}
	schema, _ := gc["responseJsonSchema"].(map[string]any)
	if schema == nil {
		schema, _ = gc["responseSchema"].(map[string]any)
	}
	b, _ := json.Marshal(fromSchema(schema))
	return string(b)
}

// fromSchema makes a value that fits a JSON schema: the first enum value,
// "user" for a field named next_speaker, "ok" for other strings.
func fromSchema(schema map[string]any) any {
	if schema == nil {
		return map[string]any{}
	}
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ, _ := schema["type"].(string)
	switch strings.ToLower(typ) {
	case "object", "":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for k, v := range props {
			vm, _ := v.(map[string]any)
			if k == "next_speaker" {
				out[k] = "user"
				continue
			}
			out[k] = fromSchema(vm)
		}
		return out
	case "array":
		return []any{}
	case "boolean":
		return false
	case "number", "integer":
		return 0
	default:
		return "ok"
	}
}
