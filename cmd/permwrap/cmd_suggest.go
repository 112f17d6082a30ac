package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	shwords "mvdan.cc/sh/v3/shell"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/engine/shell"
)

const suggestAbout = `Read a review log and print the narrowest rules that would have allowed
what it recorded permwrap asking about (would_ask), denying (would_deny)
under --audit, or a person approving, as a JSONC fragment to review and
merge into policy.jsonc (permwrap policy edit) or a --policy file.

Paths are suggested exactly; a directory with many requests gets one
"DIR/*" rule instead. Command lines are suggested exactly, or as the
pattern "allow for this session" would offer when several share it.
Every rule is checked against the current policy: it is kept only if it
really allows what was seen. Hard-guard and permwrap's own refusals are
never suggested.

LOG defaults to the review log permwrap writes. Suggested rules are
relative to --workspace (default: the current directory).`

// suggestMin is how many distinct paths in one directory turn into one
// DIR/* rule.
const suggestMin = 4

// observed is what the log says about one (surface, value).
type observed struct {
	surface engine.Surface
	value   string
	count   int
	events  map[authority.Event]int
	rule    engine.Rule // the rule that asked or denied (first seen)
	example authority.LogRecord
}

// cmdPolicySuggest implements `permwrap policy suggest [LOG]`.
func cmdPolicySuggest(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("policy suggest", "permwrap policy suggest [--workspace DIR] [--config-dir DIR] [--since DUR] [--no-approved] [LOG]", suggestAbout, stderr)
	var pf policyFlags
	pf.register(fs, policyFlagSet{})
	var since onceString
	fs.Var(&since, "since", "only records newer than `DUR` ago (90s, 15m, 2h, 3d) or than a time (RFC 3339)")
	var noApproved onceBool
	fs.Var(&noApproved, "no-approved", "leave out what a person approved: only what --audit recorded")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "permwrap policy suggest: at most one LOG")
		return exitInternal
	}
	from, err := suggestFrom(since)
	if err != nil {
		fmt.Fprintln(stderr, "permwrap policy suggest: --since:", err)
		return exitInternal
	}
	ld, err := loadPolicy(&pf, "")
	if err != nil {
		printErr(stderr, "permwrap: ", err)
		return exitInternal
	}
	logPath := ld.logPath
	if fs.NArg() == 1 {
		logPath = fs.Arg(0)
	}
	obs, code, ok := readObservations(logPath, from, !noApproved.v, stderr)
	if !ok {
		return code
	}
	out, err := suggest(ld.policy, obs.seen)
	if err != nil {
		printErr(stderr, "permwrap policy suggest: ", err)
		return exitInternal
	}
	text := obs.fragment(logPath, out)
	// Never hand a person a fragment permwrap itself would refuse.
	if _, _, err := engine.CheckFile("suggested.jsonc", []byte(text), engine.FileScope, ld.env); err != nil {
		printErr(stderr, "permwrap policy suggest: internal error: the suggestion does not load: ", err)
		return exitInternal
	}
	fmt.Fprint(stdout, text)
	return exitOK
}

// suggestFrom is the time --since names, or the zero time without it.
func suggestFrom(since onceString) (time.Time, error) {
	if !since.set {
		return time.Time{}, nil
	}
	return parseSince(since.v, time.Now())
}

// observations are what a review log records that a rule might allow,
// and the time of the first and last of them.
type observations struct {
	seen        map[engine.Check]*observed
	first, last time.Time
}

// readObservations reads the log at logPath: the records since from that
// a person might want to allow (approved: those a person approved too).
// When there is nothing to suggest it has said why on stderr and returns
// the exit code and false.
func readObservations(logPath string, from time.Time, approved bool, stderr io.Writer) (*observations, int, bool) {
	f, err := os.Open(logPath)
	if err != nil {
		fmt.Fprintf(stderr, "permwrap policy suggest: %v\n", err)
		return nil, exitFailure, false
	}
	defer f.Close()
	obs := &observations{seen: map[engine.Check]*observed{}}
	broken, err := authority.ReadLog(f, func(r authority.LogRecord) error {
		if !from.IsZero() && r.Time.Before(from) {
			return nil
		}
		if wanted(r, approved) {
			obs.add(r)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "permwrap policy suggest: %s: %v\n", logPath, err)
		return nil, exitFailure, false
	}
	if broken > 0 {
		fmt.Fprintf(stderr, "permwrap policy suggest: skipped %d broken line(s)\n", broken)
	}
	if len(obs.seen) == 0 {
		fmt.Fprintf(stderr, "permwrap policy suggest: nothing to suggest: %s records no would_ask, would_deny or approved request (run with --audit to collect some)\n", logPath)
		return nil, exitFailure, false
	}
	return obs, exitOK, true
}

// add counts one wanted record under its (surface, value); a record
// without either is left out.
func (obs *observations) add(r authority.LogRecord) {
	s, ok := engine.ParseSurface(r.Surface)
	if !ok || r.Value == "" {
		return
	}
	c := engine.Check{Surface: s, Value: r.Value}
	o := obs.seen[c]
	if o == nil {
		o = &observed{surface: s, value: r.Value, events: map[authority.Event]int{}, rule: r.Rule, example: r}
		obs.seen[c] = o
	}
	o.count++
	o.events[r.Event]++
	if obs.first.IsZero() || r.Time.Before(obs.first) {
		obs.first = r.Time
	}
	if r.Time.After(obs.last) {
		obs.last = r.Time
	}
}

// fragment is the suggested rules as the JSONC fragment printed: a
// header saying where they come from, then the rules.
func (obs *observations) fragment(logPath string, out *policyOut) string {
	total := 0
	for _, o := range obs.seen {
		total += o.count
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Suggested by `permwrap policy suggest` from %s:\n", safeComment(logPath))
	fmt.Fprintf(&b, "// %d requests (%d distinct) between %s and %s.\n", total, len(obs.seen), obs.first.UTC().Format("2006-01-02 15:04 UTC"), obs.last.UTC().Format("2006-01-02 15:04 UTC"))
	b.WriteString("// Each rule allows no more than what was seen, and was checked against\n")
	b.WriteString("// the current policy. Review every one before you merge it into\n")
	b.WriteString("// policy.jsonc (permwrap policy edit) or a --policy file.\n")
	b.WriteString(out.render(""))
	return b.String()
}

// wanted reports whether a record is something the person might want to
// allow from now on: what audit let through, and what a person approved.
// Hard-guard and permwrap's own refusals are never audited, so never
// appear here.
func wanted(r authority.LogRecord, approved bool) bool {
	switch r.Event {
	case authority.EventWouldAsk, authority.EventWouldDeny:
		return true
	case authority.EventApproved:
		if !approved {
			return false
		}
		switch r.DecidedBy.(type) {
		case authority.ByUser, authority.BySessionApproval:
			return true
		}
	}
	return false
}

// suggest groups the observations into rules and keeps those the policy
// confirms.
func suggest(p *engine.Policy, seen map[engine.Check]*observed) (*policyOut, error) {
	env := p.Env()
	out := newPolicyOut()
	bySurface := map[engine.Surface][]*observed{}
	for _, o := range seen {
		bySurface[o.surface] = append(bySurface[o.surface], o)
	}
	for _, s := range engine.Surfaces {
		list := bySurface[s]
		if len(list) == 0 {
			continue
		}
		sort.Slice(list, func(i, j int) bool { return list[i].value < list[j].value })
		groups := map[string][]*observed{}
		var keys []string
		for _, o := range list {
			k := groupKey(s, o.value)
			if groups[k] == nil {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], o)
		}
		type cand struct {
			pattern string
			obs     []*observed
		}
		var cands []cand
		for _, k := range keys {
			g := groups[k]
			if pat := groupPattern(s, k, g, env); pat != "" {
				cands = append(cands, cand{pat, g})
				continue
			}
			for _, o := range g {
				cands = append(cands, cand{exactPattern(s, o.value, env), []*observed{o}})
			}
		}
		for _, c := range cands {
			ok, err := allowsAll(p, s, c.pattern, c.obs)
			if err != nil {
				return nil, err
			}
			if !ok && len(c.obs) > 1 {
				// The group rule loses to a more specific rule somewhere:
				// fall back to one exact rule per value.
				for _, o := range c.obs {
					pat := exactPattern(s, o.value, env)
					if ok, err := allowsAll(p, s, pat, []*observed{o}); err != nil {
						return nil, err
					} else if ok {
						out.add(s, pat, "allow", "", describeObs([]*observed{o}))
					} else {
						out.skip(fmt.Sprintf("%s %s", s, o.value), "no allow rule could win over the rule that refuses it (a hard guard, or a more specific deny in a layer permwrap cannot outrank)")
					}
				}
				continue
			}
			if !ok {
				out.skip(fmt.Sprintf("%s %s", s, c.obs[0].value), "no allow rule could win over the rule that refuses it (a hard guard, or a more specific deny in a layer permwrap cannot outrank)")
				continue
			}
			out.add(s, c.pattern, "allow", "", describeObs(c.obs))
		}
	}
	return out, nil
}

// groupKey says which observations may share one rule: paths in one
// directory, command lines with one suggested pattern.
func groupKey(s engine.Surface, v string) string {
	if s == engine.SurfaceBash {
		if argv, err := shwords.Fields(v, func(string) string { return "" }); err == nil && len(argv) > 0 && shell.RenderArgv(argv) == v {
			return shell.SuggestBashPattern(argv)
		}
		return "\x00" + v // unsplittable: on its own
	}
	return path.Dir(v)
}

// groupPattern is the one rule for a group, or "" when the group should
// be listed value by value.
func groupPattern(s engine.Surface, key string, g []*observed, env engine.Env) string {
	if s == engine.SurfaceBash {
		if len(g) < 2 || strings.HasPrefix(key, "\x00") {
			return ""
		}
		return key
	}
	if len(g) < suggestMin || key == "/" {
		return ""
	}
	return exactPattern(s, key, env) + "/*"
}

// exactPattern is the rule that matches exactly v: a command line with
// its stars escaped, a path with ~, ${WORKSPACE} or ${TMPDIR} for the
// places a policy names that way.
func exactPattern(s engine.Surface, v string, env engine.Env) string {
	if s == engine.SurfaceBash {
		return strings.NewReplacer(`\`, `\\`, "*", `\*`).Replace(v)
	}
	for _, pre := range []struct{ dir, name string }{{env.Workspace, "${WORKSPACE}"}, {env.TmpDir, "${TMPDIR}"}, {env.Home, "~"}} {
		if pre.dir == "" || pre.dir == "/" {
			continue
		}
		if v == pre.dir {
			return pre.name
		}
		if rest, ok := strings.CutPrefix(v, pre.dir+"/"); ok {
			return pre.name + "/" + engine.QuoteGlob(rest)
		}
	}
	return engine.QuoteGlob(v)
}

// allowsAll reports whether adding pattern → allow on s to the policy (as
// the most recent scope) makes every observation allowed on its surface.
func allowsAll(p *engine.Policy, s engine.Surface, pattern string, obs []*observed) (bool, error) {
	var w policyOut
	w.add(s, pattern, "allow", "", "")
	np, err := p.WithScope("suggested.jsonc", []byte(w.render("")))
	if err != nil {
		return false, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	for _, o := range obs {
		if r := np.Evaluate(engine.Check{Surface: s, Value: o.value}); r.Action != engine.Allow {
			return false, nil
		}
	}
	return true, nil
}

// describeObs is the comment above a suggested rule: how many requests,
// what decided them, an example.
func describeObs(obs []*observed) string {
	n := 0
	ev := map[authority.Event]int{}
	for _, o := range obs {
		n += o.count
		for e, c := range o.events {
			ev[e] += c
		}
	}
	var parts []string
	for _, e := range []struct {
		ev   authority.Event
		word string
	}{{authority.EventWouldDeny, "would deny"}, {authority.EventWouldAsk, "would ask"}, {authority.EventApproved, "approved by a person"}} {
		if c := ev[e.ev]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, e.word))
		}
	}
	s := fmt.Sprintf("%d request%s (%s)", n, plural(n), strings.Join(parts, ", "))
	if r := obs[0].rule; r.Pattern != "" {
		where := r.Origin.String()
		if r.Pos.String() != "" {
			where = r.Pos.String()
		}
		s += fmt.Sprintf(", refused by %s %s (%s)", r.Surface, r.Pattern, where)
	}
	ex := obs[0].example
	s += "; e.g. " + ex.Surface + " " + ex.Value
	if ex.Comm != "" {
		s += " by " + ex.Comm
		if ex.PID != 0 {
			s += " (pid " + strconv.Itoa(ex.PID) + ")"
		}
	}
	if len(obs) > 1 {
		s += fmt.Sprintf(" and %d more", len(obs)-1)
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// policyOut collects rules and the notes about what could not be carried
// over, and renders them as a policy in JSONC: the one writer behind
// `policy suggest` and the importers.
type policyOut struct {
	rules   map[engine.Surface][]outRule
	skipped []string
	// warned are things carried over that may not mean what the person
	// thinks (a settings-relative path).
	warned []string
	notes  []string
}

type outRule struct {
	pattern, action, reason, comment string
	// fallback marks a tool's default answer ("everything else is
	// denied"), which is not a rule that overrides others.
	fallback bool
}

func newPolicyOut() *policyOut { return &policyOut{} }

func (o *policyOut) add(s engine.Surface, pattern, action, reason, comment string) {
	o.addRule(s, outRule{pattern: pattern, action: action, reason: reason, comment: comment})
}

// addFallback adds a tool's default answer for s ("*").
func (o *policyOut) addFallback(s engine.Surface, action, reason, comment string) {
	o.addRule(s, outRule{pattern: "*", action: action, reason: reason, comment: comment, fallback: true})
}

func (o *policyOut) addRule(s engine.Surface, nr outRule) {
	pattern, action, comment := nr.pattern, nr.action, nr.comment
	if o.rules == nil {
		o.rules = map[engine.Surface][]outRule{}
	}
	for i, r := range o.rules[s] {
		if r.pattern == pattern {
			// Two rules for one pattern: the stricter stands.
			a, _ := engine.ParseAction(action)
			b, _ := engine.ParseAction(r.action)
			if a > b {
				nr.comment = joinComments(comment, r.comment)
				o.rules[s][i] = nr
			} else if comment != "" {
				o.rules[s][i].comment = joinComments(r.comment, comment)
			}
			return
		}
	}
	o.rules[s] = append(o.rules[s], nr)
}

func joinComments(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// skip notes something that could not be carried over, and why.
func (o *policyOut) skip(what, why string) {
	o.skipped = append(o.skipped, what+": "+why)
}

// warn notes something carried over that the person should look at.
func (o *policyOut) warn(what, why string) {
	o.warned = append(o.warned, what+": "+why)
}

// note adds a line to the header.
func (o *policyOut) note(s string) { o.notes = append(o.notes, s) }

// render writes the policy; extends is written as the "extends" key
// unless "".
func (o *policyOut) render(extends string) string {
	var b strings.Builder
	for _, n := range o.notes {
		writeComment(&b, "", n)
	}
	if len(o.warned) > 0 {
		writeComment(&b, "", "Carried over, but check:")
		for _, s := range o.warned {
			writeComment(&b, "", "  - "+s)
		}
	}
	if len(o.skipped) > 0 {
		writeComment(&b, "", "Not carried over:")
		for _, s := range o.skipped {
			writeComment(&b, "", "  - "+s)
		}
	}
	b.WriteString("{\n")
	var sections []string
	if extends != "" {
		sections = append(sections, fmt.Sprintf("  \"extends\": %s", jsonString(extends)))
	}
	var perm strings.Builder
	first := true
	for _, s := range engine.Surfaces {
		rules := o.rules[s]
		if len(rules) == 0 {
			continue
		}
		if !first {
			perm.WriteString(",\n")
		}
		first = false
		fmt.Fprintf(&perm, "    %s: {\n", jsonString(s.String()))
		for i, r := range rules {
			writeComment(&perm, "      ", r.comment)
			val := jsonString(r.action)
			if r.reason != "" {
				val = fmt.Sprintf("{ \"action\": %s, \"reason\": %s }", jsonString(r.action), jsonString(r.reason))
			}
			sep := ","
			if i == len(rules)-1 {
				sep = ""
			}
			fmt.Fprintf(&perm, "      %s: %s%s\n", jsonString(r.pattern), val, sep)
		}
		perm.WriteString("    }")
	}
	sections = append(sections, "  \"permission\": {\n"+perm.String()+map[bool]string{true: "", false: "\n"}[first]+"  }")
	b.WriteString(strings.Join(sections, ",\n"))
	b.WriteString("\n}\n")
	return b.String()
}

// writeComment writes text as // lines, one per line of text, with
// anything that could end or break a comment made harmless.
func writeComment(b *strings.Builder, indent, text string) {
	if text == "" {
		return
	}
	for _, line := range strings.Split(text, "\n") {
		fmt.Fprintf(b, "%s// %s\n", indent, safeComment(line))
	}
}

// safeComment keeps a value from the outside (a path, a command line)
// from breaking out of a // comment or driving a terminal.
func safeComment(s string) string {
	s = safeText(s)
	if len(s) > 300 {
		n := 300
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
