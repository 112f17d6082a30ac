package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	shwords "mvdan.cc/sh/v3/shell"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/engine/shell"
)

const suggestAbout = `Read a review log and print the rules that would have allowed what it
recorded permwrap asking about (would_ask), denying (would_deny) under
--audit, or a person approving, as a JSONC fragment to review and merge
into policy.jsonc (permwrap policy edit) or pass with --policy FILE.

Only the last run that recorded any is read (each run's records carry
its id), unless --all-runs, --run ID or --since says otherwise.

Rules are grouped by surface (read, write, exec, bash, net) and by the
program that made the requests. Temporary and numbered names become
patterns (tmp_objdir-incoming-*, *.pyc.*); a directory the run created,
or filled with 4 names or more, becomes DIR/**; a command line becomes
the pattern "allow for this session" offers (git checkout *), or stays
exact where every argument matters (rm, curl, git push). No rule is ever
broader than the workspace or a tool's own directory: nothing for /,
/home, ~, ~/.cache or an ancestor of the workspace (a mkdir of a
directory that exists changes nothing). Under each rule, a line says
what it would allow: the requests seen, the rule it beats (as explain
says), and what else it lets through. Every rule is checked against the
current policy; hard-guard and permwrap's own refusals are never
suggested.

LOG defaults to the review log permwrap writes. Suggested rules are
relative to --workspace (default: the current directory).`

// suggestMin is how many distinct names in one directory turn into one
// DIR/** rule.
const suggestMin = 4

// observed is what the log says about one (surface, value).
type observed struct {
	surface  engine.Surface
	value    string
	count    int
	events   map[authority.Event]int
	accesses map[string]int
	progs    map[string]int
	madeBy   map[string]bool // the programs that made it a directory (mkdir)
	rule     engine.Rule     // the rule that asked or denied (first seen)
	example  authority.LogRecord
}

// suggestOptions say which records of the log to read.
type suggestOptions struct {
	from     time.Time // zero: from the start
	approved bool      // what a person approved, too
	allRuns  bool
	run      string // this run only
}

// cmdPolicySuggest implements `permwrap policy suggest [LOG]`.
func cmdPolicySuggest(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("policy suggest", "permwrap policy suggest [--workspace DIR] [--config-dir DIR] [--all-runs | --run ID | --since DUR] [--no-approved] [LOG]", suggestAbout, stderr)
	var pf policyFlags
	pf.register(fs, policyFlagSet{})
	var since, run onceString
	fs.Var(&since, "since", "every run's records newer than `DUR` ago (90s, 15m, 2h, 3d) or than a time (RFC 3339)")
	fs.Var(&run, "run", "the records of the run `ID` (the \"run\" of its records)")
	var noApproved, allRuns onceBool
	fs.Var(&noApproved, "no-approved", "leave out what a person approved: only what --audit recorded")
	fs.Var(&allRuns, "all-runs", "read every run in the log, not only the last")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "permwrap policy suggest: at most one LOG")
		return exitInternal
	}
	if run.set && allRuns.v {
		fmt.Fprintln(stderr, "permwrap policy suggest: --run and --all-runs exclude each other")
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
	opts := suggestOptions{from: from, approved: !noApproved.v, allRuns: allRuns.v || since.set, run: run.v}
	obs, code, ok := readObservations(logPath, opts, stderr)
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
	// run is the run read ("" for every run, or a log without ids);
	// runs is how many runs the log holds records of.
	run  string
	runs int
}

// readObservations reads the log at logPath: the records that a person
// might want to allow, of the run opts names (by default the last run
// that has any). When there is nothing to suggest it has said why on
// stderr and returns the exit code and false.
func readObservations(logPath string, opts suggestOptions, stderr io.Writer) (*observations, int, bool) {
	var recs []authority.LogRecord
	runs := map[string]bool{}
	last := ""
	broken := 0
	// The rotated older files first, so "the last run" is the last one
	// recorded even when rotation split it.
	files := authority.RotatedLogs(logPath)
	for i, path := range files {
		f, err := os.Open(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && i < len(files)-1 {
				continue // rotated away while we listed
			}
			fmt.Fprintf(stderr, "permwrap policy suggest: %v\n", err)
			return nil, exitFailure, false
		}
		b, err := authority.ReadLog(f, func(r authority.LogRecord) error {
			if !opts.from.IsZero() && r.Time.Before(opts.from) {
				return nil
			}
			if wanted(r, opts.approved) {
				runs[r.Run] = true
				last = r.Run
				r.Raw = nil
				recs = append(recs, r)
			}
			return nil
		})
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "permwrap policy suggest: %s: %v\n", path, err)
			return nil, exitFailure, false
		}
		broken += b
	}
	if broken > 0 {
		fmt.Fprintf(stderr, "permwrap policy suggest: skipped %d broken line(s)\n", broken)
	}
	obs := &observations{seen: map[engine.Check]*observed{}, runs: len(runs)}
	switch {
	case opts.run != "":
		obs.run = opts.run
	case !opts.allRuns:
		obs.run = last
	}
	for _, r := range recs {
		if obs.run == "" && opts.run == "" || r.Run == obs.run {
			obs.add(r)
		}
	}
	if len(obs.seen) == 0 {
		if opts.run != "" {
			fmt.Fprintf(stderr, "permwrap policy suggest: nothing to suggest: %s records no would_ask, would_deny or approved request of run %s\n", logPath, opts.run)
		} else {
			fmt.Fprintf(stderr, "permwrap policy suggest: nothing to suggest: %s records no would_ask, would_deny or approved request (run with --audit to collect some)\n", logPath)
		}
		return nil, exitFailure, false
	}
	return obs, exitOK, true
}

// add counts one wanted record under its (surface, value); a record
// without either is left out. A rename, exchange or link is counted
// under both its names: the record's value is the one that decided, and
// a rule for it alone would leave the other asking (a push's
// refs/heads/main.lock renamed over refs/heads/main).
func (obs *observations) add(r authority.LogRecord) {
	s, ok := engine.ParseSurface(r.Surface)
	if !ok || r.Value == "" {
		return
	}
	for _, p := range r.Paths {
		if p != r.Value && p != "" {
			other := r
			other.Value, other.Paths = p, nil
			obs.add(other)
		}
	}
	c := engine.Check{Surface: s, Value: r.Value}
	o := obs.seen[c]
	if o == nil {
		o = &observed{surface: s, value: r.Value, events: map[authority.Event]int{}, accesses: map[string]int{}, progs: map[string]int{}, madeBy: map[string]bool{}, rule: r.Rule, example: r}
		obs.seen[c] = o
	}
	o.count++
	o.events[r.Event]++
	o.accesses[r.Access]++
	prog := programOf(r)
	if s == engine.SurfaceBash {
		// A command line is grouped by its command, not by the shell
		// that started it.
		if f := strings.Fields(r.Value); len(f) > 0 {
			prog = shell.BaseName(f[0])
		}
	}
	o.progs[prog]++
	if r.Access == "mkdir" {
		o.madeBy[prog] = true
	}
	if obs.first.IsZero() || r.Time.Before(obs.first) {
		obs.first = r.Time
	}
	if r.Time.After(obs.last) {
		obs.last = r.Time
	}
}

// programOf names the program that made a request: its command name, or
// its executable's base name.
func programOf(r authority.LogRecord) string {
	if r.Comm != "" && r.Comm != "exe" {
		return r.Comm
	}
	if r.Exe != "" {
		return path.Base(r.Exe)
	}
	return "?"
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
	switch {
	case obs.run != "" && obs.runs > 1:
		fmt.Fprintf(&b, "// run %s only (the log has %d; --all-runs reads every one).\n", safeComment(obs.run), obs.runs)
	case obs.run != "":
		fmt.Fprintf(&b, "// run %s.\n", safeComment(obs.run))
	}
	fmt.Fprintf(&b, "// %d requests (%d distinct) between %s and %s.\n", total, len(obs.seen), obs.first.UTC().Format("2006-01-02 15:04 UTC"), obs.last.UTC().Format("2006-01-02 15:04 UTC"))
	b.WriteString("// Each rule was checked against the current policy: it allows what was\n")
	b.WriteString("// seen. Review every one before you merge it into policy.jsonc\n")
	b.WriteString("// (permwrap policy edit) or pass it with --policy FILE.\n")
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

// cand is one suggested rule and the observations it is for.
type cand struct {
	pattern string
	obs     []*observed
	// also says what else the rule lets through ("" for an exact rule).
	also string
}

// suggest groups the observations into rules, keeps those the policy
// confirms, and says what each would allow.
func suggest(p *engine.Policy, seen map[engine.Check]*observed) (*policyOut, error) {
	env := p.Env()
	out := newPolicyOut()
	out.skipHeader = "Not suggested:"
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
		var cands []cand
		switch {
		case s == engine.SurfaceBash:
			cands = bashCands(list)
		case s.IsPath():
			list = dropTooBroad(out, s, list, env)
			cands = pathCands(s, list, env)
		default:
			for _, o := range list {
				cands = append(cands, cand{pattern: exactPattern(s, o.value, env), obs: []*observed{o}})
			}
		}
		var kept []cand
		cands = alreadyAllowed(p, out, s, cands)
		for _, c := range cands {
			ok, err := allowsAll(p, s, c.pattern, c.obs)
			if err != nil {
				return nil, err
			}
			if ok {
				kept = append(kept, c)
				continue
			}
			// The rule loses to a more specific rule somewhere: one exact
			// rule per value.
			for _, o := range c.obs {
				exact := cand{pattern: exactPattern(s, o.value, env), obs: []*observed{o}}
				if exact.pattern == c.pattern {
					out.skip(fmt.Sprintf("%s %s", s, o.value), "no allow rule could win over the rule that refuses it (a hard guard, or a more specific deny in a layer permwrap cannot outrank)")
					continue
				}
				if ok, err := allowsAll(p, s, exact.pattern, exact.obs); err != nil {
					return nil, err
				} else if ok {
					kept = append(kept, exact)
				} else {
					out.skip(fmt.Sprintf("%s %s", s, o.value), "no allow rule could win over the rule that refuses it (a hard guard, or a more specific deny in a layer permwrap cannot outrank)")
				}
			}
		}
		// By program, then by pattern.
		sort.SliceStable(kept, func(i, j int) bool {
			pi, pj := mainProgram(kept[i].obs), mainProgram(kept[j].obs)
			if pi != pj {
				return pi < pj
			}
			return kept[i].pattern < kept[j].pattern
		})
		for _, c := range kept {
			comment, err := describeCand(p, s, c)
			if err != nil {
				return nil, err
			}
			out.addRule(s, outRule{pattern: c.pattern, action: "allow", comment: comment, group: mainProgram(c.obs)})
		}
	}
	return out, nil
}

// alreadyAllowed leaves out, with a note, what the current policy
// allows by now (a rule added since the log was written).
func alreadyAllowed(p *engine.Policy, out *policyOut, s engine.Surface, cands []cand) []cand {
	var keep []cand
	for _, c := range cands {
		var still []*observed
		for _, o := range c.obs {
			r := p.Evaluate(engine.Check{Surface: s, Value: o.value})
			if r.Action == engine.Allow {
				out.skip(fmt.Sprintf("%s %s", s, o.value), "already allowed by "+ruleWhere(r.Rule))
				continue
			}
			still = append(still, o)
		}
		if len(still) > 0 {
			c.obs = still
			keep = append(keep, c)
		}
	}
	return keep
}

// dropTooBroad leaves out, with a note, the requests for a directory no
// rule should name: /, /home, ~, ~/.cache, an ancestor of the workspace.
// They come from `mkdir -p` of directories that exist (which changes
// nothing) or from a program walking up the tree.
func dropTooBroad(out *policyOut, s engine.Surface, list []*observed, env engine.Env) []*observed {
	var keep []*observed
	for _, o := range list {
		if !tooBroad(o.value, env) {
			keep = append(keep, o)
			continue
		}
		why := "a rule for it would be broader than the workspace or a tool's own directory"
		if len(o.accesses) == 1 && o.accesses["mkdir"] > 0 {
			why = "a mkdir of a directory like this one (mkdir -p of one that exists changes nothing); " + why
		}
		out.skip(fmt.Sprintf("%s %s (%d request%s by %s)", s, o.value, o.count, plural(o.count), mainProgram([]*observed{o})), why)
	}
	return keep
}

// pathCands groups paths: a directory the run created, or filled with
// suggestMin names or more, becomes DIR/** (the highest such directory
// that is not too broad; never for exec, where DIR/** would let any
// program there run); the rest become their generalised path
// (tmp_objdir-incoming-*), grouped.
func pathCands(s engine.Surface, list []*observed, env engine.Env) []cand {
	trees := map[string]bool{}
	if s != engine.SurfaceExec {
		trees = filledDirs(list, env)
	}
	var set candSet
	for _, o := range list {
		var pat, also string
		if d := treeOf(o.value, trees); d != "" {
			pat = exactPattern(s, d, env) + "/**"
			also = "every other path under " + exactPattern(s, d, env)
		} else {
			pat = genPattern(o.value, s, env)
			if pat != exactPattern(s, o.value, env) {
				also = "other names of the same shape (each * a temporary or numbered part)"
			}
		}
		set.add(pat, also, o)
	}
	return set.list()
}

// filledDirs are the directories that become one DIR/** rule: those a
// tool made for itself (a program other than mkdir made it, and wrote
// beneath it: git init, git worktree add, python's __pycache__), and
// those with suggestMin names or more beneath them; none too broad. A
// directory made by mkdir is not a tool's own: `mkdir -p` of one that
// exists is logged as its mkdir too.
func filledDirs(list []*observed, env engine.Env) map[string]bool {
	children := map[string]map[string]bool{}
	below := map[string]map[string]bool{} // the programs that wrote beneath a directory
	for _, o := range list {
		for d, child := path.Dir(o.value), o.value; d != child && !tooBroad(d, env); d, child = path.Dir(d), d {
			if children[d] == nil {
				children[d], below[d] = map[string]bool{}, map[string]bool{}
			}
			name, _ := genName(path.Base(child))
			children[d][name] = true
			for p := range o.progs {
				below[d][p] = true
			}
		}
	}
	dirs := map[string]bool{}
	for d, names := range children {
		if len(names) >= suggestMin {
			dirs[d] = true
		}
	}
	for _, o := range list {
		for p := range o.madeBy {
			if !plainMkdir[p] && below[o.value][p] && !tooBroad(o.value, env) {
				dirs[o.value] = true
			}
		}
	}
	return dirs
}

// plainMkdir are the programs whose mkdir says nothing about who owns the
// directory: a shell's or a script's mkdir -p.
var plainMkdir = map[string]bool{"mkdir": true, "install": true, "bash": true, "sh": true, "dash": true, "zsh": true, "?": true}

// treeOf is the highest directory of trees that holds p (or is p).
func treeOf(p string, trees map[string]bool) string {
	found := ""
	for d := p; ; d = path.Dir(d) {
		if trees[d] {
			found = d
		}
		if d == "/" || d == "." {
			return found
		}
	}
}

// genPattern is v with its temporary and numbered names generalised
// (genPath), written with ~, ${WORKSPACE} or ${TMPDIR} as exactPattern
// writes them. Only the names below those directories are generalised:
// a home named /home/user12345 stays itself.
func genPattern(v string, s engine.Surface, env engine.Env) string {
	for _, pre := range []struct{ dir, name string }{{env.Workspace, "${WORKSPACE}"}, {env.TmpDir, "${TMPDIR}"}, {env.Home, "~"}} {
		if pre.dir == "" || pre.dir == "/" {
			continue
		}
		if rest, ok := strings.CutPrefix(v, pre.dir+"/"); ok {
			return pre.name + "/" + genPath(rest)
		}
	}
	return genPath(v)
}

// bashCands groups command lines by the pattern "allow for this session"
// would offer (the arity table: git checkout *, npm run dev), which is
// the exact line where every argument matters.
func bashCands(list []*observed) []cand {
	var set candSet
	for _, o := range list {
		pat, also := exactPattern(engine.SurfaceBash, o.value, engine.Env{}), ""
		if argv, err := shwords.Fields(o.value, func(string) string { return "" }); err == nil && len(argv) > 0 && shell.RenderArgv(argv) == o.value {
			if sp := shell.SuggestBashPattern(argv); sp != pat {
				pat = sp
				also = strings.TrimSuffix(sp, " *") + " with any other arguments"
			}
		}
		set.add(pat, also, o)
	}
	return set.list()
}

// mainProgram is the program that made most of the requests.
func mainProgram(obs []*observed) string {
	n := map[string]int{}
	for _, o := range obs {
		for p, c := range o.progs {
			n[p] += c
		}
	}
	best, bestN := "", -1
	for p, c := range n {
		if c > bestN || c == bestN && p < best {
			best, bestN = p, c
		}
	}
	return best
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

// withRule is the policy with pattern → allow on s added as the most
// recent scope.
func withRule(p *engine.Policy, s engine.Surface, pattern string) (*engine.Policy, error) {
	var w policyOut
	w.add(s, pattern, "allow", "", "")
	np, err := p.WithScope("suggested.jsonc", []byte(w.render("")))
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	return np, nil
}

// allowsAll reports whether adding pattern → allow on s to the policy (as
// the most recent scope) makes every observation allowed on its surface.
func allowsAll(p *engine.Policy, s engine.Surface, pattern string, obs []*observed) (bool, error) {
	np, err := withRule(p, s, pattern)
	if err != nil {
		return false, err
	}
	for _, o := range obs {
		if r := np.Evaluate(engine.Check{Surface: s, Value: o.value}); r.Action != engine.Allow {
			return false, nil
		}
	}
	return true, nil
}

// describeCand is the comment above a suggested rule: who made how many
// requests, an example, and what the rule would allow — the requests
// seen, the rule it beats as explain says, and what else it lets
// through.
func describeCand(p *engine.Policy, s engine.Surface, c cand) (string, error) {
	n := 0
	ev := map[authority.Event]int{}
	for _, o := range c.obs {
		n += o.count
		for e, k := range o.events {
			ev[e] += k
		}
	}
	var parts []string
	for _, e := range []struct {
		ev   authority.Event
		word string
	}{{authority.EventWouldDeny, "would deny"}, {authority.EventWouldAsk, "would ask"}, {authority.EventApproved, "approved by a person"}} {
		if k := ev[e.ev]; k > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", k, e.word))
		}
	}
	ex := c.obs[0]
	line1 := fmt.Sprintf("%d request%s (%s), e.g. %s %s", n, plural(n), strings.Join(parts, ", "), ex.example.Surface, ex.value)
	if len(c.obs) > 1 {
		line1 += fmt.Sprintf(" and %d more", len(c.obs)-1)
	}
	np, err := withRule(p, s, c.pattern)
	if err != nil {
		return "", err
	}
	// What explain says of the example with the rule, and without it.
	before := p.Explain(engine.Check{Surface: s, Value: ex.value})
	line2 := "would allow: "
	switch {
	case n == 1:
		line2 += "the request seen"
	case len(c.obs) == 1:
		line2 += fmt.Sprintf("the %d requests seen", n)
	case s == engine.SurfaceBash:
		line2 += fmt.Sprintf("the %d requests seen (%d command lines)", n, len(c.obs))
	default:
		line2 += fmt.Sprintf("the %d requests seen (%d %s)", n, len(c.obs), map[bool]string{true: "paths", false: "values"}[s.IsPath()])
	}
	if r := before.Result.Rule; r.Pattern != "" {
		line2 += ", over " + ruleWhere(r)
	}
	if after := np.Explain(engine.Check{Surface: s, Value: ex.value}); after.Result.Rule.Pattern != c.pattern {
		line2 += " (decided by " + ruleWhere(after.Result.Rule) + ")"
	}
	switch {
	case c.also != "":
		line2 += "; also allows " + c.also
	case onlyMkdir(c.obs):
		line2 += "; nothing else (only its mkdir was seen: `mkdir -p` of a directory that exists is logged as one, and this rule then changes nothing)"
	default:
		line2 += "; nothing else"
	}
	return line1 + "\n" + line2, nil
}

// onlyMkdir reports whether every request seen was a mkdir.
func onlyMkdir(obs []*observed) bool {
	for _, o := range obs {
		if len(o.accesses) != 1 || o.accesses["mkdir"] == 0 {
			return false
		}
	}
	return true
}

// ruleWhere is a rule as "write * (ask, default.jsonc:42:7)".
func ruleWhere(r engine.Rule) string {
	where := r.Origin.String()
	if r.Pos.File != "" {
		// The file's name: the comment stays short, and the same on
		// every machine.
		pos := r.Pos
		pos.File = path.Base(pos.File)
		where = pos.String()
	}
	return fmt.Sprintf("%s %s (%s, %s)", r.Surface, r.Pattern, r.Action, where)
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
	// skipHeader heads the skipped list ("Not carried over:" unless set).
	skipHeader string
}

type outRule struct {
	pattern, action, reason, comment string
	// group, when set, heads the rules that share it with a comment
	// ("// by git:"), once.
	group string
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
		h := o.skipHeader
		if h == "" {
			h = "Not carried over:"
		}
		writeComment(&b, "", h)
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
			if r.group != "" && (i == 0 || rules[i-1].group != r.group) {
				writeComment(&perm, "      ", "by "+r.group+":")
			}
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

// candSet gathers observations under the pattern that would allow them,
// in the order the patterns were first seen.
type candSet struct {
	byPattern map[string]*cand
	order     []string
}

func (cs *candSet) add(pat, also string, o *observed) {
	c := cs.byPattern[pat]
	if c == nil {
		if cs.byPattern == nil {
			cs.byPattern = map[string]*cand{}
		}
		c = &cand{pattern: pat, also: also}
		cs.byPattern[pat] = c
		cs.order = append(cs.order, pat)
	}
	c.obs = append(c.obs, o)
}

func (cs *candSet) list() []cand {
	cands := make([]cand, 0, len(cs.order))
	for _, pat := range cs.order {
		cands = append(cands, *cs.byPattern[pat])
	}
	return cands
}
