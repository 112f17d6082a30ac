package events

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/testutil"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The secret a command line carries into a record: the review log
// masks it, and so every sink must show it masked.
const testSecret = "ghp_0123456789abcdefghijABCDEFGHIJ012345"

// denialLine is a review-log record made by a real authority.Log: a
// denial of a write whose value holds a newline, and a command line
// with a token in it.
func denialLine(t testing.TB) []byte {
	var buf testutil.SyncBuffer
	l := authority.NewLogWriter(&buf, authority.LogOptions{})
	r := authority.NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: "/etc/x\nsecond line"})
	r.Access = "create"
	r.Process.PID = 4242
	r.Command = "GITHUB_TOKEN=" + testSecret + " git push"
	r.CommandBy = "claude"
	by := authority.ByRule{Surface: engine.SurfaceWrite, Pattern: "/etc/**", Origin: engine.OriginGlobal, Pos: engine.Position{File: "policy.jsonc", Line: 12, Column: 5}}
	l.Record(authority.EventDenied, r, authority.Denied(by, "system files"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	line := bytes.TrimRight(buf.Bytes(), "\n")
	if bytes.Count(line, []byte("\n")) != 0 || !bytes.Contains(line, []byte(`"event":"permission_request.denied"`)) {
		t.Fatalf("fixture: %s", line)
	}
	if bytes.Contains(line, []byte(testSecret)) {
		t.Fatalf("fixture: the review log did not mask the token: %s", line)
	}
	return line
}

func mustParse(t testing.TB, line []byte) Record {
	t.Helper()
	r, err := ParseRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSummaryAndSeverity(t *testing.T) {
	r := mustParse(t, denialLine(t))
	s := r.Summary()
	want := "permwrap: denied write create /etc/x second line — rule write:/etc/** (policy.jsonc:12:5): system files"
	if s != want {
		t.Errorf("summary\n got %q\nwant %q", s, want)
	}
	for ev, sev := range map[string]Severity{
		"permission_request.denied": SevWarning, "permission_request.rejected": SevWarning,
		"permission_request.asked": SevNotice, "permission_request.approved": SevNotice,
		"permission_request.allowed": SevInfo, "permission_request.allowed_reads": SevInfo,
	} {
		if got := SeverityOf(ev); got != sev {
			t.Errorf("SeverityOf(%s) = %d, want %d", ev, got, sev)
		}
	}
}

func fieldMap(t *testing.T, fs [][2]string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, f := range fs {
		if _, dup := m[f[0]]; dup {
			t.Errorf("field %s twice", f[0])
		}
		m[f[0]] = f[1]
	}
	return m
}

func TestJournalEncoding(t *testing.T) {
	line := denialLine(t)
	dg := EncodeJournal(JournalFields(mustParse(t, line)))
	// The value with a newline takes the binary form: NAME\n, length
	// (64-bit little-endian), value, \n.
	val := "/etc/x\nsecond line"
	bin := append([]byte("\nPERMWRAP_VALUE\n"), []byte{byte(len(val)), 0, 0, 0, 0, 0, 0, 0}...)
	if !bytes.Contains(dg, append(bin, val+"\n"...)) {
		t.Errorf("no binary-length PERMWRAP_VALUE in\n%q", dg)
	}
	fs, err := DecodeJournal(dg)
	if err != nil {
		t.Fatal(err)
	}
	m := fieldMap(t, fs)
	checks := map[string]string{
		"PRIORITY":            "4",
		"SYSLOG_IDENTIFIER":   "permwrap",
		"PERMWRAP_EVENT":      "permission_request.denied",
		"PERMWRAP_SURFACE":    "write",
		"PERMWRAP_VALUE":      val,
		"PERMWRAP_PID":        "4242",
		"PERMWRAP_RECORD":     string(line),
		"PERMWRAP_REASON":     "system files",
		"PERMWRAP_COMMAND":    "GITHUB_TOKEN=*** git push",
		"PERMWRAP_ACTION":     "deny",
		"PERMWRAP_DECIDED_BY": `{"kind":"rule","surface":"write","pattern":"/etc/**","origin":"global","position":"policy.jsonc:12:5"}`,
	}
	for k, v := range checks {
		if m[k] != v {
			t.Errorf("%s = %q, want %q", k, m[k], v)
		}
	}
	if !strings.HasPrefix(m["MESSAGE"], "permwrap: denied write") || strings.Contains(m["MESSAGE"], "\n") {
		t.Errorf("MESSAGE = %q", m["MESSAGE"])
	}
	if m["PERMWRAP_REQUEST_ID"] == "" || m["PERMWRAP_REQUEST_ID"] != mustParse(t, line).Get("requestId") {
		t.Errorf("PERMWRAP_REQUEST_ID = %q", m["PERMWRAP_REQUEST_ID"])
	}
	if bytes.Contains(dg, []byte(testSecret)) {
		t.Error("the token reached the journal entry")
	}
}

// fakeJournal binds a unixgram socket and returns the entries it gets
// (a descriptor passed with SCM_RIGHTS is read as journald does).
func fakeJournal(t *testing.T) (string, <-chan [][2]string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(4 << 20)
	t.Cleanup(func() { c.Close() })
	out := make(chan [][2]string, 100)
	go func() {
		buf, oob := make([]byte, 1<<20), make([]byte, 256)
		for {
			n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
			if err != nil {
				close(out)
				return
			}
			data := append([]byte(nil), buf[:n]...)
			if oobn > 0 {
				msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
				for _, m := range msgs {
					fds, _ := unix.ParseUnixRights(&m)
					for _, fd := range fds {
						f := os.NewFile(uintptr(fd), "memfd")
						seals, _ := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
						data, _ = io.ReadAll(io.NewSectionReader(f, 0, 1<<30))
						f.Close()
						if seals&unix.F_SEAL_WRITE == 0 {
							data = []byte("UNSEALED=1\n")
						}
					}
				}
			}
			fs, err := DecodeJournal(data)
			if err != nil {
				fs = [][2]string{{"DECODE_ERROR", err.Error()}}
			}
			out <- fs
		}
	}()
	return path, out
}

func TestJournaldSink(t *testing.T) {
	path, got := fakeJournal(t)
	d := newDispatcher([]deliverer{newJournald(JournaldConfig{Socket: path})}, 16, FlushBound)
	line := denialLine(t)
	d.Records(append(line, '\n'))
	if dropped := d.Close(); len(dropped) != 0 {
		t.Fatalf("dropped %v", dropped)
	}
	select {
	case fs := <-got:
		m := fieldMap(t, fs)
		if m["PERMWRAP_RECORD"] != string(line) || m["PERMWRAP_EVENT"] != "permission_request.denied" {
			t.Errorf("entry: %v", fs)
		}
	case <-time.After(testutil.Scale(5 * time.Second)):
		t.Fatal("no entry reached the fake journal")
	}

	// An entry larger than a datagram goes as a sealed memfd.
	j := newJournald(JournaldConfig{Socket: path})
	defer j.close()
	big := strings.Repeat("x", 4<<20)
	if err := j.send(context.Background(), EncodeJournal([][2]string{{"MESSAGE", "big"}, {"PERMWRAP_BIG", big}})); err != nil {
		t.Fatal(err)
	}
	select {
	case fs := <-got:
		m := fieldMap(t, fs)
		if m["PERMWRAP_BIG"] != big || m["UNSEALED"] != "" {
			t.Errorf("big entry: %d fields, PERMWRAP_BIG %d bytes, %v", len(fs), len(m["PERMWRAP_BIG"]), m["UNSEALED"])
		}
	case <-time.After(testutil.Scale(5 * time.Second)):
		t.Fatal("the big entry did not reach the fake journal")
	}
}

var rfc5424 = regexp.MustCompile(`^<(\d{1,3})>1 (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z) (\S{1,255}) permwrap (\d+) (\S{1,32}) - (.*)$`)

func TestSyslogEncoding(t *testing.T) {
	line := denialLine(t)
	r := mustParse(t, line)
	msg := string(EncodeSyslog(r, engine.SyslogFacilities["authpriv"], "host1", 77))
	m := rfc5424.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("not RFC 5424: %q", msg)
	}
	if m[1] != strconv.Itoa(10*8+4) || m[3] != "host1" || m[4] != "77" || m[5] != "permission_request.denied" {
		t.Errorf("header: pri %s host %s pid %s msgid %s", m[1], m[3], m[4], m[5])
	}
	if want := r.Summary() + " " + string(line); m[6] != want {
		t.Errorf("MSG\n got %q\nwant %q", m[6], want)
	}
	if strings.Contains(msg, testSecret) {
		t.Error("the token reached syslog")
	}
}

func TestSyslogSinkUDPAndTCP(t *testing.T) {
	line := denialLine(t)
	// UDP: one datagram per message.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	s, _ := newSyslog(SyslogConfig{Network: "udp", Addr: pc.LocalAddr().String(), Facility: 1})
	d := newDispatcher([]deliverer{s}, 16, FlushBound)
	d.Records(append(line, '\n'))
	d.Close()
	pc.SetReadDeadline(time.Now().Add(testutil.Scale(5 * time.Second)))
	buf := make([]byte, 64<<10)
	n, _, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if !rfc5424.Match(buf[:n]) || !bytes.HasSuffix(buf[:n], line) {
		t.Errorf("udp: %q", buf[:n])
	}
	// TCP: octet counting.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		got <- b
	}()
	s, _ = newSyslog(SyslogConfig{Network: "tcp", Addr: ln.Addr().String(), Facility: 1})
	d = newDispatcher([]deliverer{s}, 16, FlushBound)
	d.Records(append(append(line, '\n'), append(line, '\n')...))
	d.Close()
	b := <-got
	for i := 0; i < 2; i++ {
		sp := bytes.IndexByte(b, ' ')
		n, err := strconv.Atoi(string(b[:sp]))
		if err != nil || len(b) < sp+1+n {
			t.Fatalf("tcp framing: %q", b)
		}
		if msg := b[sp+1 : sp+1+n]; !rfc5424.Match(msg) || !bytes.HasSuffix(msg, line) {
			t.Errorf("tcp message %d: %q", i, msg)
		}
		b = b[sp+1+n:]
	}
	if len(b) != 0 {
		t.Errorf("tcp: %d bytes left", len(b))
	}
}

// otlpReceiver is a local OTLP/HTTP logs receiver: it decodes what it
// gets (protobuf or JSON, gzip or not) into LogsData.
type otlpReceiver struct {
	mu      sync.Mutex
	logs    []*logspb.LogsData
	raw     [][]byte // bodies, decompressed
	ctypes  []string
	headers []http.Header
	srv     *httptest.Server
}

func newReceiver(t testing.TB) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/logs" || r.Method != http.MethodPost {
			http.Error(w, "not here", http.StatusNotFound)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var ld logspb.LogsData
		var err error
		switch r.Header.Get("Content-Type") {
		case "application/x-protobuf":
			err = proto.Unmarshal(b, &ld)
		case "application/json":
			err = unmarshalOTLPJSON(b, &ld)
		default:
			http.Error(w, "content type", http.StatusUnsupportedMediaType)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		rc.mu.Lock()
		rc.logs = append(rc.logs, &ld)
		rc.raw = append(rc.raw, b)
		rc.ctypes = append(rc.ctypes, r.Header.Get("Content-Type"))
		rc.headers = append(rc.headers, r.Header.Clone())
		rc.mu.Unlock()
		w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
		w.Write(nil)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *otlpReceiver) records() []*logspb.LogRecord {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*logspb.LogRecord
	for _, ld := range rc.logs {
		for _, rl := range ld.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				out = append(out, sl.LogRecords...)
			}
		}
	}
	return out
}

func attrs(lr *logspb.LogRecord) map[string]string {
	m := map[string]string{}
	for _, kv := range lr.Attributes {
		if s := kv.Value.GetStringValue(); s != "" {
			m[kv.Key] = s
		} else if kv.Value.GetIntValue() != 0 {
			m[kv.Key] = strconv.FormatInt(kv.Value.GetIntValue(), 10)
		}
	}
	return m
}

func unmarshalOTLPJSON(b []byte, m *logspb.LogsData) error { return protojson.Unmarshal(b, m) }

func testOTLPConfig(url, proto string) OTLPConfig {
	return OTLPConfig{URL: url + "/v1/logs", Protocol: proto, Timeout: 5 * time.Second, Headers: map[string]string{"Authorization": "Bearer sekrit"},
		Resource: map[string]string{"service.name": "permwrap", "host.name": "h1"}, Version: "v9"}
}

func TestOTLPSinkBothProtocols(t *testing.T) {
	line := denialLine(t)
	for _, p := range []string{ProtoProtobuf, ProtoJSON} {
		for _, gz := range []bool{false, true} {
			t.Run(strings.ReplaceAll(p, "/", "-")+"-gzip="+strconv.FormatBool(gz), func(t *testing.T) {
				rc := newReceiver(t)
				c := testOTLPConfig(rc.srv.URL, p)
				c.Gzip = gz
				d := newDispatcher([]deliverer{newOTLP(c)}, 16, FlushBound)
				d.Records(append(line, '\n'))
				if dropped := d.Close(); len(dropped) != 0 {
					t.Fatalf("dropped %v", dropped)
				}
				recs := rc.records()
				if len(recs) != 1 {
					t.Fatalf("%d records", len(recs))
				}
				lr := recs[0]
				if lr.SeverityNumber != logspb.SeverityNumber_SEVERITY_NUMBER_WARN || lr.EventName != "permission_request.denied" {
					t.Errorf("severity %v event %q", lr.SeverityNumber, lr.EventName)
				}
				if !strings.HasPrefix(lr.Body.GetStringValue(), "permwrap: denied write") {
					t.Errorf("body %q", lr.Body.GetStringValue())
				}
				a := attrs(lr)
				if a["permwrap.event"] != "permission_request.denied" || a["permwrap.surface"] != "write" || a["permwrap.pid"] != "4242" ||
					a["permwrap.command"] != "GITHUB_TOKEN=*** git push" || a["permwrap.record"] != string(line) || a["event.name"] != "permission_request.denied" ||
					!strings.Contains(a["permwrap.decided_by"], `"kind":"rule"`) {
					t.Errorf("attributes %v", a)
				}
				res := map[string]string{}
				for _, kv := range rc.logs[0].ResourceLogs[0].Resource.Attributes {
					res[kv.Key] = kv.Value.GetStringValue()
				}
				if res["service.name"] != "permwrap" || res["service.version"] != "v9" || res["host.name"] != "h1" {
					t.Errorf("resource %v", res)
				}
				if rc.headers[0].Get("Authorization") != "Bearer sekrit" || rc.ctypes[0] != map[string]string{ProtoProtobuf: "application/x-protobuf", ProtoJSON: "application/json"}[p] {
					t.Errorf("headers %v", rc.headers[0])
				}
				if bytes.Contains(rc.raw[0], []byte(testSecret)) {
					t.Error("the token reached the collector")
				}
				if p == ProtoJSON {
					checkOTLPJSON(t, rc.raw[0])
				}
			})
		}
	}
}

// checkOTLPJSON checks the OTLP JSON encoding's rules: camelCase
// names, enums as integers, 64-bit integers as strings.
func checkOTLPJSON(t *testing.T, b []byte) {
	t.Helper()
	var doc struct {
		ResourceLogs []struct {
			ScopeLogs []struct {
				LogRecords []map[string]json.RawMessage `json:"logRecords"`
			} `json:"scopeLogs"`
		} `json:"resourceLogs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.ResourceLogs) != 1 || len(doc.ResourceLogs[0].ScopeLogs) != 1 || len(doc.ResourceLogs[0].ScopeLogs[0].LogRecords) != 1 {
		t.Fatalf("shape: %s", b)
	}
	lr := doc.ResourceLogs[0].ScopeLogs[0].LogRecords[0]
	if string(lr["severityNumber"]) != "13" {
		t.Errorf("severityNumber %s, want the integer 13", lr["severityNumber"])
	}
	var ts string
	if err := json.Unmarshal(lr["timeUnixNano"], &ts); err != nil || ts == "" {
		t.Errorf("timeUnixNano %s, want a string", lr["timeUnixNano"])
	}
	if _, ok := lr["eventName"]; !ok {
		t.Errorf("no eventName in %s", b)
	}
	if bytes.Contains(b, []byte("time_unix_nano")) || bytes.Contains(b, []byte("SEVERITY_NUMBER")) {
		t.Errorf("not OTLP JSON: %s", b)
	}
	if !bytes.Contains(b, []byte(`"intValue":"4242"`)) {
		t.Errorf("pid not an int64 string: %s", b)
	}
}

func TestParseHeaders(t *testing.T) {
	h, bad := ParseHeaders(" api-key = a%20b ,Authorization=Bearer%20t%3D1,broken, x=y=z ,")
	want := map[string]string{"api-key": "a b", "Authorization": "Bearer t=1", "x": "y=z"}
	if bad != 1 || len(h) != len(want) {
		t.Errorf("got %v bad %d", h, bad)
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("%s = %q, want %q", k, h[k], v)
		}
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestResolveEnvPrecedence(t *testing.T) {
	pol := engine.EventsSettings{OTLP: &engine.OTLPSink{Endpoint: "https://policy:4318", Protocol: "http/json",
		Headers: map[string]string{"authorization": "Bearer ${env:OTEL_TOKEN}", "x-team": "a"}}}
	// Off: nothing set.
	if c, _, err := Resolve(engine.EventsSettings{}, env(nil), "v"); err != nil || c.Any() {
		t.Errorf("off by default: %+v %v", c, err)
	}
	// On by the variable alone, with the default endpoint and protocol.
	c, _, _ := Resolve(engine.EventsSettings{}, env(map[string]string{"OTEL_LOGS_EXPORTER": "otlp"}), "v")
	if c.OTLP == nil || c.OTLP.URL != "http://localhost:4318/v1/logs" || c.OTLP.Protocol != ProtoProtobuf || c.OTLP.Timeout != DefaultOTLPTimeout {
		t.Errorf("env only: %+v", c.OTLP)
	}
	// "none" does not turn off the policy's sink.
	c, _, _ = Resolve(pol, env(map[string]string{"OTEL_LOGS_EXPORTER": "none", "OTEL_TOKEN": "tok"}), "v")
	if c.OTLP == nil || c.OTLP.URL != "https://policy:4318/v1/logs" || c.OTLP.Protocol != ProtoJSON || c.OTLP.Headers["authorization"] != "Bearer tok" {
		t.Errorf("policy: %+v", c.OTLP)
	}
	// Generic over the policy, logs-specific over generic.
	e := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":      "http://generic:4318/base/",
		"OTEL_EXPORTER_OTLP_PROTOCOL":      "http/protobuf",
		"OTEL_EXPORTER_OTLP_HEADERS":       "x-team=b,x-gen=1",
		"OTEL_EXPORTER_OTLP_LOGS_HEADERS":  "x-team=c",
		"OTEL_EXPORTER_OTLP_TIMEOUT":       "3000",
		"OTEL_EXPORTER_OTLP_COMPRESSION":   "gzip",
		"OTEL_SERVICE_NAME":                "agents",
		"OTEL_RESOURCE_ATTRIBUTES":         "deployment.environment=ci,service.name=ignored",
		"OTEL_EXPORTER_OTLP_LOGS_TIMEOUT":  "1500",
		"OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/json",
		"OTEL_TOKEN":                       "t2",
	}
	c, _, _ = Resolve(pol, env(e), "v")
	o := c.OTLP
	if o.URL != "http://generic:4318/base/v1/logs" || o.Protocol != ProtoJSON || o.Timeout != 1500*time.Millisecond || !o.Gzip {
		t.Errorf("generic: %+v", o)
	}
	if o.Headers["x-team"] != "c" || o.Headers["x-gen"] != "1" || o.Headers["authorization"] != "Bearer t2" {
		t.Errorf("headers: %v", o.Headers)
	}
	if o.Resource["service.name"] != "agents" || o.Resource["deployment.environment"] != "ci" {
		t.Errorf("resource: %v", o.Resource)
	}
	e["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"] = "http://logs:9999/exact"
	if c, _, _ = Resolve(pol, env(e), "v"); c.OTLP.URL != "http://logs:9999/exact" {
		t.Errorf("logs endpoint used as it is: %s", c.OTLP.URL)
	}
	// A header's variable that is not set stops the run: never an empty
	// credential.
	if _, _, err := Resolve(pol, env(map[string]string{"OTEL_LOGS_EXPORTER": "otlp"}), "v"); err == nil || !strings.Contains(err.Error(), "OTEL_TOKEN") {
		t.Errorf("an unset ${env:OTEL_TOKEN}: %v, want an error naming it", err)
	}
	if _, _, err := Resolve(pol, env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_TOKEN": "t"}), "v"); err == nil {
		t.Error("grpc accepted")
	}
	// A managed policy's sink (Fixed) is not moved by the variables.
	fixed := *pol.OTLP
	fixed.Fixed = true
	c, _, _ = Resolve(engine.EventsSettings{OTLP: &fixed}, env(e), "v")
	if c.OTLP.URL != "https://policy:4318/v1/logs" || c.OTLP.Protocol != ProtoJSON || c.OTLP.Headers["x-team"] != "a" || c.OTLP.Timeout != DefaultOTLPTimeout {
		t.Errorf("fixed: %+v", c.OTLP)
	}
	// Described without the headers' values.
	c, _, _ = Resolve(pol, env(map[string]string{"OTEL_TOKEN": "sekrit-token"}), "v")
	desc := strings.Join(c.Describe(), "\n")
	if strings.Contains(desc, "sekrit") || !strings.Contains(desc, "authorization=***") {
		t.Errorf("describe: %s", desc)
	}
}

// blockingSink never delivers until released.
type blockingSink struct{ release chan struct{} }

func (b *blockingSink) name() string                   { return "slow" }
func (b *blockingSink) batching() (int, time.Duration) { return 1, 0 }
func (b *blockingSink) close()                         {}
func (b *blockingSink) deliver(ctx context.Context, recs []Record) (int, error) {
	select {
	case <-b.release:
		return 0, nil
	case <-ctx.Done():
		return len(recs), ctx.Err()
	}
}

func TestFullQueueDropsAndCounts(t *testing.T) {
	line := denialLine(t)
	b := &blockingSink{release: make(chan struct{})}
	d := newDispatcher([]deliverer{b}, 4, 100*time.Millisecond)
	var said []string
	var mu sync.Mutex
	d.SetSay(func(kind, text string) { mu.Lock(); said = append(said, kind+": "+text); mu.Unlock() })
	for i := 0; i < 20; i++ {
		d.Records(append(line, '\n'))
	}
	// At most the queue (4) and the one being delivered were taken.
	if n := d.Dropped()["slow"]; n < 15 {
		t.Errorf("dropped %d of 20 with a queue of 4", n)
	}
	got := d.Close() // the bound passes: the rest are dropped too
	if got["slow"] != 20 {
		t.Errorf("Close: %v, want all 20 counted", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 1 || !strings.Contains(said[0], "queue is full") {
		t.Errorf("told %q, want once", said)
	}
}

// The review log hands the tee exactly the lines it writes, and writes
// what the tee dropped as its last record.
type recordingTee struct {
	lines   []byte
	dropped map[string]int64
}

func (r *recordingTee) Records(b []byte)        { r.lines = append(r.lines, b...) }
func (r *recordingTee) Close() map[string]int64 { return r.dropped }

func TestLogTee(t *testing.T) {
	var buf testutil.SyncBuffer
	tee := &recordingTee{dropped: map[string]int64{"otlp": 3}}
	l := authority.NewLogWriter(&buf, authority.LogOptions{Tee: tee})
	for i := 0; i < 3; i++ {
		r := authority.NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: "/etc/x" + strconv.Itoa(i)})
		l.Record(authority.EventDenied, r, authority.Denied(authority.ByError{Reason: "test"}, "no"))
	}
	l.Close()
	file := buf.Bytes()
	i := bytes.LastIndex(bytes.TrimRight(file, "\n"), []byte("\n"))
	body, last := file[:i+1], file[i+1:]
	if !bytes.Equal(tee.lines, body) {
		t.Errorf("tee got\n%s\nthe file has\n%s", tee.lines, body)
	}
	if !bytes.Contains(last, []byte(`"event":"events.dropped"`)) || !bytes.Contains(last, []byte(`"sinks":{"otlp":3}`)) || !bytes.Contains(last, []byte(`"count":3`)) {
		t.Errorf("last record: %s", last)
	}
}
