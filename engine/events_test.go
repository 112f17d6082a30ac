package engine

import (
	"strings"
	"testing"
	"time"
)

func TestEventsSettings(t *testing.T) {
	p, _ := compile(t, `{"events": {
  "journald": true,
  "syslog": {"address": "udp://logs.example:514", "facility": "authpriv"},
  "otlp": {"endpoint": "https://collector:4318", "protocol": "http/json", "headers": {"authorization": "Bearer ${env:OTEL_TOKEN}"}, "timeoutMs": 1500, "compression": "gzip"},
}}`)
	e := p.Settings().Events
	if !e.Journald || e.Syslog == nil || e.Syslog.Address != "udp://logs.example:514" || e.Syslog.Facility != "authpriv" {
		t.Errorf("journald/syslog: %+v %+v", e, e.Syslog)
	}
	o := e.OTLP
	if o == nil || o.Endpoint != "https://collector:4318" || o.Protocol != "http/json" || o.Headers["authorization"] != "Bearer ${env:OTEL_TOKEN}" || o.Timeout != 1500*time.Millisecond || o.Compression != "gzip" {
		t.Errorf("otlp: %+v", o)
	}
	if p, _ := compile(t, `{"askTimeout": "1m"}`); p.Settings().Events.Any() {
		t.Error("events on by default")
	}
	if p, _ := compile(t, `{"events": {"syslog": true}}`); p.Settings().Events.Syslog == nil {
		t.Error(`"syslog": true did not turn syslog on`)
	}
}

func TestEventsSettingsErrors(t *testing.T) {
	for src, want := range map[string]string{
		`{"events": {"kafka": true}}`:                                             `1:13: unknown key "kafka" in events`,
		`{"events": {"otlp": {"endpoint": "collector:4318"}}}`:                    `1:34: events.otlp.endpoint: want an http:// or https:// URL`,
		`{"events": {"otlp": {"endpoint": "http://u:p@c:4318"}}}`:                 `1:34: events.otlp.endpoint: put credentials in headers`,
		`{"events": {"otlp": {"endpoint": "http://c", "protocol": "grpc"}}}`:      `1:58: events.otlp.protocol: "grpc"`,
		`{"events": {"otlp": {"protocol": "http/json"}}}`:                         `1:21: events.otlp: an endpoint is needed`,
		`{"events": {"otlp": {"endpoint": "http://c", "header": {}}}}`:            `1:46: unknown key "header" in events.otlp`,
		`{"events": {"syslog": {"address": "/dev/log"}}}`:                         `1:35: events.syslog.address: scheme (none)`,
		`{"events": {"syslog": {"facility": "local9"}}}`:                          `1:36: events.syslog.facility: "local9"`,
		`{"events": {"journald": "yes"}}`:                                         `1:25: events.journald: want true or false`,
		`{"events": {"otlp": {"endpoint": "http://c", "headers": {"a b": "x"}}}}`: `1:58: events.otlp.headers: "a b" is not a header name`,
	} {
		_, _, err := CheckFile("f.jsonc", []byte(src), FileGlobal, testEnv)
		if err == nil || !strings.Contains(err.Error(), "f.jsonc:"+want) {
			t.Errorf("%s\n got %v\nwant f.jsonc:%s…", src, err, want)
		}
	}
}

func TestEventsAdd(t *testing.T) {
	user := EventsSettings{OTLP: &OTLPSink{Endpoint: "http://user"}}
	managed := EventsSettings{Journald: true, Syslog: &SyslogSink{}}
	got := user.Add(managed)
	if !got.Journald || got.Syslog == nil || got.OTLP == nil || got.OTLP.Endpoint != "http://user" {
		t.Errorf("Add kept %+v", got)
	}
	if got := managed.Add(EventsSettings{OTLP: &OTLPSink{Endpoint: "http://m"}}); got.OTLP.Endpoint != "http://m" || !got.Journald {
		t.Errorf("Add over: %+v", got)
	}
}
