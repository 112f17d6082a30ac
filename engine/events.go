package engine

import (
	"net/url"
	"strings"
	"time"

	"github.com/tailscale/hujson"
	"golang.org/x/net/http/httpguts"
)

// EventsSettings is the policy's "events" key: where the review log's
// records are sent besides the file (docs/teams.md, "Decision events").
// Every sink is off unless set. The OTEL_* variables of permwrap's own
// environment can turn OTLP on and override it (package events).
type EventsSettings struct {
	// Journald: send each record to the journal (native protocol).
	Journald bool
	// Syslog, when set, sends each record as an RFC 5424 message.
	Syslog *SyslogSink
	// OTLP, when set, sends records as OpenTelemetry logs over OTLP/HTTP.
	OTLP *OTLPSink
}

// SyslogSink is where syslog messages go.
type SyslogSink struct {
	// Address is "" (the local /dev/log), unixgram:///path,
	// unix:///path, udp://host:port or tcp://host:port.
	Address string
	// Facility is a syslog facility name ("user" when empty).
	Facility string
}

// OTLPSink is an OTLP/HTTP logs endpoint. Header values may hold
// ${env:NAME}, expanded from permwrap's environment when the run starts
// (as a remote reviewer's headers are: ExpandHeaderValue).
type OTLPSink struct {
	Endpoint    string // base URL; /v1/logs is added
	Protocol    string // "http/protobuf" or "http/json"; "" for the default
	Headers     map[string]string
	Timeout     time.Duration // 0: the default
	Compression string        // "" or "none", or "gzip"
	// Fixed: the OTEL_* variables do not change this sink (a managed
	// policy's: whoever runs permwrap must not send its records
	// elsewhere). The loader of such a layer sets it.
	Fixed bool
}

// Any reports whether a sink is set.
func (e EventsSettings) Any() bool { return e.Journald || e.Syslog != nil || e.OTLP != nil }

// Add is e with the sinks that o sets added over it: a layer above (a
// managed policy) adds or replaces a sink; one it does not name stays.
func (e EventsSettings) Add(o EventsSettings) EventsSettings {
	e.Journald = e.Journald || o.Journald
	if o.Syslog != nil {
		e.Syslog = o.Syslog
	}
	if o.OTLP != nil {
		e.OTLP = o.OTLP
	}
	return e
}

// SyslogFacilities are the facility names "events.syslog.facility" takes,
// with their numbers.
var SyslogFacilities = map[string]int{
	"kern": 0, "user": 1, "mail": 2, "daemon": 3, "auth": 4, "syslog": 5, "lpr": 6, "news": 7,
	"uucp": 8, "cron": 9, "authpriv": 10, "ftp": 11,
	"local0": 16, "local1": 17, "local2": 18, "local3": 19, "local4": 20, "local5": 21, "local6": 22, "local7": 23,
}

func (p *parser) eventsSettings(m topKey, _ fileKind, fc *fileConfig) {
	obj, ok := p.object(m.val, "events")
	if !ok {
		return
	}
	es := &fc.settings.Events
	for _, em := range p.members(obj) {
		k := em.Name.Value.(hujson.Literal).String()
		switch k {
		case "journald":
			if b, ok := p.boolean(&em.Value, "events.journald"); ok {
				es.Journald = b
			}
		case "syslog":
			p.syslogSink(&em.Value, es)
		case "otlp":
			p.otlpSink(&em.Value, es)
		default:
			p.errorf(em.Name.StartOffset, "unknown key %q in events (want journald, syslog, otlp)", k)
		}
	}
}

func (p *parser) syslogSink(v *hujson.Value, es *EventsSettings) {
	if l, ok := v.Value.(hujson.Literal); ok && (l.Kind() == 't' || l.Kind() == 'f') {
		if l.Bool() {
			es.Syslog = &SyslogSink{}
		}
		return
	}
	obj, ok := p.object(v, "events.syslog (true, or an object)")
	if !ok {
		return
	}
	s := &SyslogSink{}
	for _, m := range p.members(obj) {
		k := m.Name.Value.(hujson.Literal).String()
		switch k {
		case "address":
			if a, ok := p.str(&m.Value, "events.syslog.address"); ok {
				if err := CheckSyslogAddress(a); err != nil {
					p.errorf(m.Value.StartOffset, "events.syslog.address: %v", err)
				} else {
					s.Address = a
				}
			}
		case "facility":
			if f, ok := p.str(&m.Value, "events.syslog.facility"); ok {
				if _, known := SyslogFacilities[f]; !known {
					p.errorf(m.Value.StartOffset, "events.syslog.facility: %q is not a syslog facility (user, daemon, auth, authpriv, local0 … local7, …)", f)
				} else {
					s.Facility = f
				}
			}
		default:
			p.errorf(m.Name.StartOffset, "unknown key %q in events.syslog (want address, facility)", k)
		}
	}
	es.Syslog = s
}

// CheckSyslogAddress checks an events.syslog.address.
func CheckSyslogAddress(a string) error {
	if a == "" {
		return nil
	}
	u, err := url.Parse(a)
	if err != nil {
		return errorString("not a URL: unixgram:///dev/log, unix:///path, udp://host:514 or tcp://host:514")
	}
	switch u.Scheme {
	case "unixgram", "unix":
		if !strings.HasPrefix(u.Path, "/") || u.Host != "" {
			return errorString("a " + u.Scheme + " address is " + u.Scheme + ":///absolute/path")
		}
	case "udp", "tcp":
		if u.Host == "" || u.Port() == "" {
			return errorString("a " + u.Scheme + " address is " + u.Scheme + "://host:port")
		}
	default:
		return errorString("scheme " + quoteOr(u.Scheme) + " is not unixgram, unix, udp or tcp")
	}
	return nil
}

func quoteOr(s string) string {
	if s == "" {
		return "(none)"
	}
	return `"` + s + `"`
}

type errorString string

func (e errorString) Error() string { return string(e) }

func (p *parser) otlpSink(v *hujson.Value, es *EventsSettings) {
	obj, ok := p.object(v, "events.otlp")
	if !ok {
		return
	}
	o := &OTLPSink{}
	for _, m := range p.members(obj) {
		k := m.Name.Value.(hujson.Literal).String()
		switch k {
		case "endpoint":
			if s, ok := p.str(&m.Value, "events.otlp.endpoint"); ok {
				if err := CheckOTLPEndpoint(s); err != nil {
					p.errorf(m.Value.StartOffset, "events.otlp.endpoint: %v", err)
				} else {
					o.Endpoint = s
				}
			}
		case "protocol":
			if s, ok := p.str(&m.Value, "events.otlp.protocol"); ok {
				switch s {
				case "http/protobuf", "http/json":
					o.Protocol = s
				default:
					p.errorf(m.Value.StartOffset, "events.otlp.protocol: %q is not \"http/protobuf\" or \"http/json\" (grpc is not supported)", s)
				}
			}
		case "headers":
			hobj, ok := p.object(&m.Value, "events.otlp.headers")
			if !ok {
				continue
			}
			o.Headers = map[string]string{}
			for _, hm := range p.members(hobj) {
				name := hm.Name.Value.(hujson.Literal).String()
				if !httpguts.ValidHeaderFieldName(name) {
					p.errorf(hm.Name.StartOffset, "events.otlp.headers: %q is not a header name", name)
					continue
				}
				if s, ok := p.str(&hm.Value, "events.otlp.headers."+name); ok {
					// ${env:NAME} is expanded when a run starts (package
					// events); here only how it is written is checked.
					if _, err := ExpandHeaderValue(s, func(string) (string, bool) { return "x", true }); err != nil {
						p.errorf(hm.Value.StartOffset, "events.otlp.headers.%s: %v", name, err)
						continue
					}
					o.Headers[name] = s
				}
			}
		case "timeoutMs":
			if n, ok := p.integer(&m.Value, "events.otlp.timeoutMs", 1); ok {
				o.Timeout = time.Duration(n) * time.Millisecond
			}
		case "compression":
			if s, ok := p.str(&m.Value, "events.otlp.compression"); ok {
				switch s {
				case "gzip", "none":
					o.Compression = s
				default:
					p.errorf(m.Value.StartOffset, "events.otlp.compression: %q is not \"gzip\" or \"none\"", s)
				}
			}
		default:
			p.errorf(m.Name.StartOffset, "unknown key %q in events.otlp (want endpoint, protocol, headers, timeoutMs, compression)", k)
		}
	}
	if o.Endpoint == "" {
		p.errorf(v.StartOffset, "events.otlp: an endpoint is needed (\"endpoint\": \"http://localhost:4318\")")
		return
	}
	es.OTLP = o
}

// CheckOTLPEndpoint checks an OTLP/HTTP endpoint URL.
func CheckOTLPEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errorString("want an http:// or https:// URL such as http://localhost:4318")
	}
	if u.User != nil {
		return errorString("put credentials in headers, not in the URL")
	}
	return nil
}
