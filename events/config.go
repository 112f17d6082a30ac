package events

import (
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// Config is the sinks in force for a run: the policy's "events" with
// permwrap's own OTEL_* variables over it (Resolve).
type Config struct {
	Journald *JournaldConfig
	Syslog   *SyslogConfig
	OTLP     *OTLPConfig
}

// JournaldConfig is the journal's socket.
type JournaldConfig struct {
	// Socket is the journal's native socket; "" is
	// /run/systemd/journal/socket (set only by tests, in code).
	Socket string
}

// DefaultJournalSocket is where systemd-journald takes native messages.
const DefaultJournalSocket = "/run/systemd/journal/socket"

// SyslogConfig is where syslog messages go.
type SyslogConfig struct {
	Network  string // unixgram, unix, udp, tcp
	Addr     string // a path or host:port
	Facility int
}

// OTLPConfig is an OTLP/HTTP logs exporter's configuration.
type OTLPConfig struct {
	URL      string // the full logs URL (…/v1/logs)
	Protocol string // ProtoProtobuf or ProtoJSON
	Headers  map[string]string
	Timeout  time.Duration // per request
	Gzip     bool
	Resource map[string]string // resource attributes (service.name, …)
	Version  string            // service.version
	// From says where it was turned on: "policy", "OTEL_LOGS_EXPORTER".
	From string
}

// The OTLP/HTTP protocols.
const (
	ProtoProtobuf = "http/protobuf"
	ProtoJSON     = "http/json"
)

// DefaultOTLPTimeout is OTel's default export timeout.
const DefaultOTLPTimeout = 10 * time.Second

// Any reports whether a sink is configured.
func (c Config) Any() bool { return c.Journald != nil || c.Syslog != nil || c.OTLP != nil }

// Resolve is the sinks in force: the policy's settings, with the OTEL_*
// variables of getenv (permwrap's own environment) over OTLP as the
// OpenTelemetry specification has them: OTEL_LOGS_EXPORTER=otlp turns it
// on; the signal-specific variable (…_LOGS_…) wins over the generic one,
// which wins over the policy. OTEL_LOGS_EXPORTER=none does not turn off
// a sink the policy sets (a policy may be an administrator's). version is
// permwrap's, for service.version. Warnings name what was ignored; never
// a header's value.
func Resolve(s engine.EventsSettings, getenv func(string) string, version string) (Config, []string, error) {
	var c Config
	var warns []string
	if s.Journald {
		c.Journald = &JournaldConfig{}
	}
	if s.Syslog != nil {
		sc, err := syslogConfig(*s.Syslog)
		if err != nil {
			return c, nil, err
		}
		c.Syslog = &sc
	}
	on, from := s.OTLP != nil, "policy"
	if v := strings.TrimSpace(getenv("OTEL_LOGS_EXPORTER")); v != "" {
		for _, e := range strings.Split(v, ",") {
			switch e = strings.TrimSpace(e); e {
			case "otlp":
				if !on {
					on, from = true, "OTEL_LOGS_EXPORTER"
				}
			case "none", "":
			default:
				warns = append(warns, fmt.Sprintf("OTEL_LOGS_EXPORTER: %q is not an exporter permwrap has (otlp, none); ignored", e))
			}
		}
	}
	if !on {
		return c, warns, nil
	}
	var p engine.OTLPSink
	if s.OTLP != nil {
		p = *s.OTLP
	}
	if p.Fixed {
		// A managed policy's sink: permwrap's environment does not
		// move, loosen or turn it off (only the resource is its own).
		getenv = fixedEnv(getenv)
	}
	o := OTLPConfig{From: from, Version: version}
	// Endpoint.
	switch {
	case getenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") != "":
		o.URL = getenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") // used as it is
	case getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		o.URL = logsURL(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	case p.Endpoint != "":
		o.URL = logsURL(p.Endpoint)
	default:
		o.URL = "http://localhost:4318/v1/logs"
	}
	if err := engine.CheckOTLPEndpoint(o.URL); err != nil {
		return c, warns, fmt.Errorf("events: OTLP endpoint %s: %v", redactURL(o.URL), err)
	}
	// Protocol.
	o.Protocol = first(getenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), p.Protocol, ProtoProtobuf)
	switch o.Protocol {
	case ProtoProtobuf, ProtoJSON:
	default:
		return c, warns, fmt.Errorf("events: OTLP protocol %q: permwrap speaks http/protobuf and http/json (not grpc)", o.Protocol)
	}
	// Headers: the policy's, the generic variable's over them, the logs
	// variable's over those.
	o.Headers = map[string]string{}
	for _, k := range sortedKeys(p.Headers) {
		v, err := engine.ExpandHeaderValue(p.Headers[k], func(name string) (string, bool) {
			v := getenv(name)
			return v, v != ""
		})
		if err != nil {
			// Never an empty or half-expanded credential: the run stops.
			return c, warns, fmt.Errorf("events: otlp.headers.%s: %v", k, err)
		}
		o.Headers[k] = v
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS"} {
		h, bad := ParseHeaders(getenv(name))
		for k, v := range h {
			o.Headers[k] = v
		}
		if bad > 0 {
			warns = append(warns, fmt.Sprintf("%s: %d entr(y/ies) not key=value, ignored", name, bad))
		}
	}
	// Timeout, in milliseconds.
	o.Timeout = DefaultOTLPTimeout
	if p.Timeout > 0 {
		o.Timeout = p.Timeout
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT"} {
		if v := getenv(name); v != "" {
			ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || ms <= 0 {
				warns = append(warns, fmt.Sprintf("%s=%q is not a number of milliseconds; ignored", name, v))
				continue
			}
			o.Timeout = time.Duration(ms) * time.Millisecond
		}
	}
	// Compression.
	switch comp := first(getenv("OTEL_EXPORTER_OTLP_LOGS_COMPRESSION"), getenv("OTEL_EXPORTER_OTLP_COMPRESSION"), p.Compression, "none"); comp {
	case "gzip":
		o.Gzip = true
	case "none":
	default:
		warns = append(warns, fmt.Sprintf("OTLP compression %q is not gzip or none; sending uncompressed", comp))
	}
	o.Resource = resource(getenv, &warns)
	c.OTLP = &o
	return c, warns, nil
}

// fixedEnv hides the exporter's variables from getenv.
func fixedEnv(getenv func(string) string) func(string) string {
	return func(k string) string {
		if strings.HasPrefix(k, "OTEL_EXPORTER_OTLP_") {
			return ""
		}
		return getenv(k)
	}
}

func first(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// logsURL is a base endpoint with /v1/logs added to its path, as the
// specification has it for OTEL_EXPORTER_OTLP_ENDPOINT.
func logsURL(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base // the check reports it
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/logs"
	return u.String()
}

// redactURL is u without a password or query (they may hold secrets).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	return u.String()
}

// ParseHeaders reads an OTEL_EXPORTER_OTLP_HEADERS value: k=v pairs
// separated by commas, each part percent-decoded and trimmed (W3C
// baggage's format). bad counts entries that are not k=v (ignored).
func ParseHeaders(s string) (h map[string]string, bad int) {
	h = map[string]string{}
	if strings.TrimSpace(s) == "" {
		return h, 0
	}
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			bad++
			continue
		}
		dk, err1 := url.PathUnescape(strings.TrimSpace(k))
		dv, err2 := url.PathUnescape(strings.TrimSpace(v))
		if err1 != nil || err2 != nil || dk == "" {
			bad++
			continue
		}
		h[dk] = dv
	}
	return h, bad
}

// resource is the resource attributes: service.name=permwrap,
// host.name, OTEL_RESOURCE_ATTRIBUTES over them, OTEL_SERVICE_NAME
// over all.
func resource(getenv func(string) string, warns *[]string) map[string]string {
	r := map[string]string{"service.name": "permwrap"}
	if h, err := os.Hostname(); err == nil {
		r["host.name"] = h
	}
	attrs, bad := ParseHeaders(getenv("OTEL_RESOURCE_ATTRIBUTES"))
	for k, v := range attrs {
		r[k] = v
	}
	if bad > 0 {
		*warns = append(*warns, fmt.Sprintf("OTEL_RESOURCE_ATTRIBUTES: %d entr(y/ies) not key=value, ignored", bad))
	}
	if n := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); n != "" {
		r["service.name"] = n
	}
	return r
}

func syslogConfig(s engine.SyslogSink) (SyslogConfig, error) {
	c := SyslogConfig{Network: "unixgram", Addr: "/dev/log", Facility: engine.SyslogFacilities["user"]}
	if s.Facility != "" {
		c.Facility = engine.SyslogFacilities[s.Facility]
	}
	if s.Address == "" {
		return c, nil
	}
	if err := engine.CheckSyslogAddress(s.Address); err != nil {
		return c, fmt.Errorf("events.syslog.address: %v", err)
	}
	u, _ := url.Parse(s.Address)
	c.Network = u.Scheme
	if u.Scheme == "unix" || u.Scheme == "unixgram" {
		c.Addr = u.Path
	} else {
		c.Addr = u.Host
	}
	return c, nil
}

// Describe is one line per sink in force, for check and doctor: header
// names are shown, their values never.
func (c Config) Describe() []string {
	var out []string
	if c.Journald != nil {
		out = append(out, "journald "+first(c.Journald.Socket, DefaultJournalSocket))
	}
	if c.Syslog != nil {
		out = append(out, fmt.Sprintf("syslog %s://%s (RFC 5424, facility %d)", c.Syslog.Network, c.Syslog.Addr, c.Syslog.Facility))
	}
	if o := c.OTLP; o != nil {
		line := fmt.Sprintf("otlp %s %s (from %s", o.Protocol, redactURL(o.URL), o.From)
		if len(o.Headers) > 0 {
			var hs []string
			for _, k := range sortedKeys(o.Headers) {
				hs = append(hs, k+"=***")
			}
			line += "; headers " + strings.Join(hs, ", ")
		}
		if o.Gzip {
			line += "; gzip"
		}
		out = append(out, line+")")
	}
	return out
}
