package events

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// OpenTelemetry logs over OTLP/HTTP, encoded with the generated OTLP
// types (go.opentelemetry.io/proto/otlp) and google.golang.org/protobuf:
// proto.Marshal for http/protobuf, protojson (enums as numbers,
// lowerCamelCase names, 64-bit integers as strings) for http/json. The
// OpenTelemetry Go SDK's otlploghttp exporter speaks protobuf only, and
// brings the SDK's log pipeline besides; docs/teams.md has the sizes.
//
// The body is a LogsData message: on the wire (both encodings) it is
// the collector's ExportLogsServiceRequest, whose generated package
// would bring gRPC with it.

// OTLP batching and retries.
const (
	otlpBatch     = 512
	otlpBatchWait = time.Second
	otlpAttempts  = 5
	otlpBackoff   = 250 * time.Millisecond
)

// OTLP severity numbers of the severities (logs data model).
func otelSeverity(s Severity) (logspb.SeverityNumber, string) {
	switch s {
	case SevWarning:
		return logspb.SeverityNumber_SEVERITY_NUMBER_WARN, "WARN"
	case SevNotice:
		return logspb.SeverityNumber_SEVERITY_NUMBER_INFO2, "NOTICE"
	}
	return logspb.SeverityNumber_SEVERITY_NUMBER_INFO, "INFO"
}

// OTLPLogs is the LogsData of a batch of records.
func OTLPLogs(c OTLPConfig, recs []Record) *logspb.LogsData {
	res := &resourcepb.Resource{}
	for _, k := range sortedKeys(c.Resource) {
		res.Attributes = append(res.Attributes, strAttr(k, c.Resource[k]))
	}
	if c.Version != "" {
		res.Attributes = append(res.Attributes, strAttr("service.version", c.Version))
	}
	sl := &logspb.ScopeLogs{Scope: &commonpb.InstrumentationScope{Name: "permwrap", Version: c.Version}}
	now := uint64(time.Now().UnixNano())
	for _, r := range recs {
		num, text := otelSeverity(SeverityOf(r.Event))
		lr := &logspb.LogRecord{
			TimeUnixNano:         uint64(r.Time.UnixNano()),
			ObservedTimeUnixNano: now,
			SeverityNumber:       num,
			SeverityText:         text,
			Body:                 &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: r.Summary()}},
			EventName:            r.Event,
		}
		for _, f := range r.Fields {
			lr.Attributes = append(lr.Attributes, &commonpb.KeyValue{Key: "permwrap." + SnakeKey(f.Key), Value: anyValue(f)})
		}
		lr.Attributes = append(lr.Attributes, strAttr("event.name", r.Event), strAttr("permwrap.record", string(r.Line)))
		sl.LogRecords = append(sl.LogRecords, lr)
	}
	return &logspb.LogsData{ResourceLogs: []*logspb.ResourceLogs{{Resource: res, ScopeLogs: []*logspb.ScopeLogs{sl}}}}
}

func strAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// anyValue is a field as an attribute value: numbers as int (or double),
// booleans as bool, strings as they are, objects and arrays as their
// compact JSON (a string a backend can search and parse).
func anyValue(f Field) *commonpb.AnyValue {
	switch f.Kind {
	case '0':
		if n, err := strconv.ParseInt(f.Text, 10, 64); err == nil {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}}
		}
		if x, err := strconv.ParseFloat(f.Text, 64); err == nil {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
		}
	case 't':
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: f.Text == "true"}}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: f.Text}}
}

// EncodeOTLP is the request body of a batch and its Content-Type.
func EncodeOTLP(c OTLPConfig, recs []Record) ([]byte, string, error) {
	m := OTLPLogs(c, recs)
	if c.Protocol == ProtoJSON {
		b, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(m)
		return b, "application/json", err
	}
	b, err := proto.Marshal(m)
	return b, "application/x-protobuf", err
}

type otlpSink struct {
	c      OTLPConfig
	client *http.Client
	sleep  func(ctx context.Context, d time.Duration) bool
}

func newOTLP(c OTLPConfig) *otlpSink {
	return &otlpSink{c: c, client: &http.Client{}, sleep: sleepCtx}
}

func (o *otlpSink) name() string                   { return "otlp" }
func (o *otlpSink) batching() (int, time.Duration) { return otlpBatch, otlpBatchWait }
func (o *otlpSink) close()                         { o.client.CloseIdleConnections() }

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// postError is a failed request: retry marks one worth another try
// (429, 502, 503, 504, or no answer: refused, reset, timed out).
type postError struct {
	retry bool
	msg   string
}

func (e *postError) Error() string { return e.msg }

func (o *otlpSink) deliver(ctx context.Context, recs []Record) (int, error) {
	body, ctype, err := EncodeOTLP(o.c, recs)
	if err != nil {
		return len(recs), fmt.Errorf("encoding: %v", err)
	}
	if o.c.Gzip {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		zw.Write(body)
		zw.Close()
		body = zb.Bytes()
	}
	var last *postError
	for attempt := 0; attempt < otlpAttempts; attempt++ {
		if attempt > 0 && !o.sleep(ctx, otlpBackoff<<(attempt-1)) {
			break
		}
		err := o.post(ctx, body, ctype)
		if err == nil {
			return 0, nil
		}
		last = err
		if !err.retry {
			break
		}
	}
	msg := "not sent within the exit bound"
	if last != nil {
		msg = last.msg
	}
	return len(recs), fmt.Errorf("OTLP %s: %s", redactURL(o.c.URL), msg)
}

// post sends one request. Its error never holds a header's value.
func (o *otlpSink) post(ctx context.Context, body []byte, ctype string) *postError {
	ctx, cancel := context.WithTimeout(ctx, o.c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.c.URL, bytes.NewReader(body))
	if err != nil {
		return &postError{msg: "bad endpoint"}
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "permwrap/"+o.c.Version)
	if o.c.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range o.c.Headers {
		req.Header.Set(k, v)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		// No answer: refused, reset, timed out. The error names the URL
		// (no credentials: the endpoint has none) and never the headers.
		return &postError{retry: true, msg: netErrText(err)}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == 429 || resp.StatusCode == 502 || resp.StatusCode == 503 || resp.StatusCode == 504:
		return &postError{retry: true, msg: "the collector answered " + resp.Status}
	default:
		return &postError{msg: "the collector answered " + resp.Status}
	}
}

// netErrText is a transport error without the URL the message already
// names.
func netErrText(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}
