package authority

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// Encoding a record: its fields in a fixed order, each value sanitized
// (secrets masked, strings capped at the field width, provenance capped
// down to MaxForwardDepth) and cached where the same value recurs.

// field and fields keep record keys in a fixed, readable order (time and
// event first), which map-based encoding would not.
type field struct {
	k string
	v any
}
type fields []field

func (l *Log) encode(ev Event, f fields) []byte {
	return l.encodeAt(l.now(), ev, f)
}

// encodeAt encodes a record stamped t (when it happened, not when the
// writer got to it).
func (l *Log) encodeAt(t time.Time, ev Event, f fields) []byte {
	return l.appendRecord(make([]byte, 0, 512), t, ev, f)
}

// appendRecord appends encodeAt's record to b: the writer encodes a
// batch's records straight into it.
func (l *Log) appendRecord(b []byte, t time.Time, ev Event, f fields) []byte {
	b = append(b, `{"time":"`...)
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","event":`...)
	b = appendJSONString(b, string(ev))
	if l.opts.Run != "" {
		b = append(b, `,"run":`...)
		b = appendJSONString(b, l.opts.Run)
	}
	for _, kv := range f {
		b = append(b, ',')
		b = appendJSONString(b, kv.k)
		b = append(b, ':')
		b = l.appendSanitizedCached(b, kv.k, kv.v)
	}
	return append(b, "}\n"...)
}

// appendSanitizedCached appends sanitize's encoding of v, remembering the
// encodings of the values that repeat from record to record — the rule
// and the provenance of a decision (every allowed read of a session is
// decided by one rule) — keyed by the key and the whole value, so a
// cached encoding is the one sanitize would produce now. Each cache
// holds at most sanitizeCacheMax entries.
func (l *Log) appendSanitizedCached(dst []byte, key string, v any) []byte {
	switch x := v.(type) {
	case engine.Rule:
		return append(dst, cachedEncoding(l, &l.ruleCache, ruleCacheKey{key, x}, func() []byte { return l.sanitize(key, ruleToJSON(x)) })...)
	case ByRule:
		return append(dst, cachedEncoding(l, &l.byRuleCache, byRuleCacheKey{key, x}, func() []byte { return l.sanitize(key, x) })...)
	}
	return l.appendSanitized(dst, key, v)
}

// cachedEncoding is enc()'s encoding from cache *m under k, encoded and
// stored on a miss; a full cache is emptied first.
func cachedEncoding[K comparable](l *Log, m *map[K][]byte, k K, enc func() []byte) []byte {
	l.encMu.Lock()
	b, ok := (*m)[k]
	l.encMu.Unlock()
	if ok {
		return b
	}
	b = enc()
	l.encMu.Lock()
	if *m == nil || len(*m) >= sanitizeCacheMax {
		*m = map[K][]byte{}
	}
	(*m)[k] = b
	l.encMu.Unlock()
	return b
}

// The caches of appendSanitizedCached, typed so a lookup boxes nothing.
type (
	ruleCacheKey struct {
		key string
		val engine.Rule
	}
	byRuleCacheKey struct {
		key string
		val ByRule
	}
)

const sanitizeCacheMax = 256

// sanitize encodes v with every string capped at the field width and
// every value under a secret-looking key masked. It round-trips through
// a generic JSON value so nested objects (decidedBy, rule, links) are
// covered by the same walk and no writer can bypass it.
func (l *Log) sanitize(key string, v any) []byte { return l.appendSanitized(nil, key, v) }

// appendSanitized appends sanitize's encoding of v to dst.
func (l *Log) appendSanitized(dst []byte, key string, v any) []byte {
	if secretKeyCached(key) && v != nil {
		return append(dst, `"`+maskedValue+`"`...)
	}
	switch x := v.(type) { // the common flat fields skip the round trip
	case string:
		return appendJSONString(dst, elide(MaskSecrets(x), l.opts.FieldWidth))
	case RequestID:
		return appendJSONString(dst, elide(string(x), l.opts.FieldWidth))
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case bool:
		return strconv.AppendBool(dst, x)
	}
	return append(dst, l.sanitizeValue(key, v)...)
}

// sanitizeValue is sanitize for every value but the flat ones.
func (l *Log) sanitizeValue(key string, v any) []byte {
	switch x := v.(type) {
	case DecidedBy: // typed copies: the nested records of every decision skip the round trip too
		return l.marshal(l.capDecidedBy(x))
	case engine.Rule:
		return l.sanitizeValue(key, ruleToJSON(x))
	case *ruleJSON:
		if x == nil {
			return []byte("null")
		}
		c := *x
		c.Pattern, c.Position = l.str(c.Pattern), l.str(c.Position)
		return l.marshal(&c)
	case []LinkOutcome:
		c := make([]LinkOutcome, len(x))
		for i, o := range x {
			c[i] = LinkOutcome{Name: l.str(o.Name), Verdict: o.Verdict, Reason: l.str(o.Reason), Note: l.str(o.Note)}
		}
		return l.marshal(c)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		raw, _ = json.Marshal("unencodable: " + err.Error())
	}
	var g any
	if err := json.Unmarshal(raw, &g); err != nil {
		g = "unencodable"
	}
	out, err := json.Marshal(l.walk(key, g))
	if err != nil {
		return []byte(`"unencodable"`)
	}
	return out
}

// str caps and masks one string value.
func (l *Log) str(s string) string { return elide(MaskSecrets(s), l.opts.FieldWidth) }

func (l *Log) marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`"unencodable"`)
	}
	return b
}

// capDecidedBy returns d with every string capped and masked, following
// forwarded decisions down to MaxForwardDepth.
func (l *Log) capDecidedBy(d DecidedBy) DecidedBy {
	return l.capDecidedByDepth(d, 0)
}

func (l *Log) capDecidedByDepth(d DecidedBy, depth int) DecidedBy {
	switch x := d.(type) {
	case ByUser:
		x.Via = l.str(x.Via)
		return x
	case ByAuthorizer:
		x.Name, x.Reason = l.str(x.Name), l.str(x.Reason)
		return x
	case ByRule:
		x.Pattern, x.Pos.File = l.str(x.Pattern), l.str(x.Pos.File)
		return x
	case BySessionApproval:
		x.Pattern = l.str(x.Pattern)
		return x
	case ByYolo:
		x.Pattern = l.str(x.Pattern)
		return x
	case ByAudit:
		x.Pattern, x.Pos.File = l.str(x.Pattern), l.str(x.Pos.File)
		return x
	case ByKernel:
		x.Errno, x.Reason = l.str(x.Errno), l.str(x.Reason)
		return x
	case ByUnavailable:
		x.Reason = l.str(x.Reason)
		return x
	case ByError:
		x.Reason = l.str(x.Reason)
		return x
	case ByForwarded:
		x.Responder, x.Node = l.str(x.Responder), l.str(x.Node)
		if depth >= MaxForwardDepth {
			x.Decision = nil
		} else if x.Decision != nil {
			x.Decision = l.capDecidedByDepth(x.Decision, depth+1)
		}
		return x
	}
	return ByError{Reason: "unknown provenance"}
}

func (l *Log) walk(key string, v any) any {
	if secretKey(key) && v != nil {
		return maskedValue
	}
	switch x := v.(type) {
	case string:
		return elide(MaskSecrets(x), l.opts.FieldWidth)
	case map[string]any:
		for k, e := range x {
			x[k] = l.walk(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = l.walk("", e)
		}
		return x
	}
	return v
}

// secretKey reports whether a key's value should never be written: the
// key is a name MaskSecrets would mask the value of (password, api_key,
// token, key, …).
func secretKey(k string) bool {
	strong, weak := secretName(k)
	return strong || weak
}

// recordKeySecret is secretKey of the keys records are made of, worked
// out once: every record asked it of each of its dozen keys.
var recordKeySecret = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range []string{"requestId", "pid", "tid", "comm", "exe", "surface", "access", "value",
		"net", "node", "rule", "action", "decidedBy", "reason", "sessionRules", "policyRules",
		"command", "links", "terminal", "name", "rules", "count",
		"exe", "program", "since", "dirs", "paths", "what", "routine", "important"} {
		m[k] = secretKey(k)
	}
	return m
}()

// secretKeyCached is secretKey, from recordKeySecret for a record's keys.
func secretKeyCached(k string) bool {
	if s, ok := recordKeySecret[k]; ok {
		return s
	}
	return secretKey(k)
}

// appendJSONString appends s as encoding/json writes it. A string of
// printable ASCII that needs no escaping (a path, a name, a key: almost
// every value) is copied between quotes; any other goes through
// json.Marshal, so the escaping is always encoding/json's.
func appendJSONString(dst []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, err := json.Marshal(s)
	if err != nil { // unreachable for a string; keep the record well-formed anyway
		return append(dst, `"unencodable"`...)
	}
	return append(dst, b...)
}
