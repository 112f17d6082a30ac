package shell

import (
	"strings"
)

// argKind says whether an option takes a value.
type argKind uint8

const (
	noArg  argKind = iota
	reqArg         // -u NAME, -uNAME, --user NAME, --user=NAME
	optArg         // only attached: -d, -dX, --eof, --eof=X
)

// wrapMode is what follows a wrapper's options and operands.
type wrapMode uint8

const (
	wrapCommand wrapMode = iota // CMD [ARGS…]
	wrapXargs                   // CMD [ARGS…] plus arguments read from stdin
	wrapWatch                   // words joined into a `sh -c` script unless -x
	wrapFlock                   // CMD [ARGS…] or -c SCRIPT, or nothing (fd form)
)

// wrapperSpec describes one wrapper's command line: which options exist
// and which take a value. Getting the value-taking options right is what
// finds the inner command; an option not listed here means the inner
// command cannot be located, and the unit becomes opaque.
type wrapperSpec struct {
	short     string // one-letter options without a value
	shortV    string // one-letter options with a value
	shortO    string // one-letter options with an optional, attached value
	long      map[string]argKind
	assigns   bool   // NAME=value words may precede the command
	numeric   bool   // -NUMBER is an option (nice -10)
	operands  int    // operands between the options and the command
	noRun     string // space-separated options after which no command runs
	opaque    string // space-separated options whose meaning hides the command
	chdir     string // space-separated options that set the command's directory
	dashAlone bool   // "-" is an option (env's old spelling of -i)
	mode      wrapMode
}

// wrappers is the table of programs that run another program given on
// their command line. Keys are basenames of the program run.
var wrappers = map[string]*wrapperSpec{
	"env": {
		short: "i0v", shortV: "uCSa", assigns: true,
		long: map[string]argKind{"ignore-environment": noArg, "null": noArg, "unset": reqArg,
			"chdir": reqArg, "split-string": reqArg, "debug": noArg, "argv0": reqArg,
			"ignore-signal": optArg, "default-signal": optArg, "block-signal": optArg,
			"list-signal-handling": noArg},
		opaque: "S split-string", chdir: "C chdir", dashAlone: true,
	},
	"nice":    {shortV: "n", numeric: true, long: map[string]argKind{"adjustment": reqArg}},
	"nohup":   {},
	"setsid":  {short: "cfw", long: map[string]argKind{"ctty": noArg, "fork": noArg, "wait": noArg}},
	"busybox": {},
	"timeout": {
		short: "fpv", shortV: "ks", operands: 1,
		long: map[string]argKind{"foreground": noArg, "kill-after": reqArg, "preserve-status": noArg,
			"signal": reqArg, "verbose": noArg},
	},
	"stdbuf": {shortV: "ioe", long: map[string]argKind{"input": reqArg, "output": reqArg, "error": reqArg}},
	"time": {
		short: "pavqV", shortV: "fo", noRun: "V version",
		long: map[string]argKind{"portability": noArg, "append": noArg, "verbose": noArg,
			"quiet": noArg, "format": reqArg, "output": reqArg, "version": noArg},
	},
	"command": {short: "pvV", noRun: "v V"},
	"builtin": {},
	"exec":    {short: "cl", shortV: "a"},
	"sudo": {
		short: "ABbEeHiKklNnPSsVv", shortV: "aCcDgpRrTtUu", shortO: "h", assigns: true, chdir: "D chdir",
		noRun: "e edit l list v validate V version K remove-timestamp h help",
		long: map[string]argKind{"askpass": noArg, "background": noArg, "bell": noArg,
			"close-from": reqArg, "chdir": reqArg, "preserve-env": optArg, "edit": noArg,
			"group": reqArg, "set-home": noArg, "help": noArg, "host": reqArg, "login": noArg,
			"remove-timestamp": noArg, "reset-timestamp": noArg, "list": noArg,
			"non-interactive": noArg, "preserve-groups": noArg, "prompt": reqArg,
			"chroot": reqArg, "role": reqArg, "stdin": noArg, "shell": noArg, "type": reqArg,
			"command-timeout": reqArg, "other-user": reqArg, "user": reqArg,
			"version": noArg, "validate": noArg},
	},
	"doas": {short: "Lns", shortV: "Cu", noRun: "L"},
	"ionice": {
		short: "t", shortV: "cnpPu", noRun: "p P u pid pgid uid",
		long: map[string]argKind{"class": reqArg, "classdata": reqArg, "pid": reqArg,
			"pgid": reqArg, "uid": reqArg, "ignore": noArg},
	},
	"chrt": {
		short: "abdfioRrmpv", shortV: "TPD", operands: 1, noRun: "m max p pid",
		long: map[string]argKind{"all-tasks": noArg, "batch": noArg, "deadline": noArg,
			"fifo": noArg, "idle": noArg, "other": noArg, "rr": noArg, "reset-on-fork": noArg,
			"max": noArg, "pid": noArg, "verbose": noArg, "sched-runtime": reqArg,
			"sched-period": reqArg, "sched-deadline": reqArg},
	},
	"taskset": {short: "ac", operands: 1, noRun: "p pid",
		long: map[string]argKind{"all-tasks": noArg, "cpu-list": noArg, "pid": noArg}},
	"chroot": {operands: 1,
		long: map[string]argKind{"userspec": reqArg, "groups": reqArg, "skip-chdir": noArg}},
	"unshare": {
		short: "fimnpuUCTrc", shortV: "RwSG", chdir: "w wd",
		long: map[string]argKind{"mount": optArg, "uts": optArg, "ipc": optArg, "net": optArg,
			"pid": optArg, "user": optArg, "cgroup": optArg, "time": optArg, "fork": noArg,
			"kill-child": optArg, "mount-proc": optArg, "map-root-user": noArg,
			"map-current-user": noArg, "map-user": reqArg, "map-group": reqArg, "map-auto": noArg,
			"map-users": reqArg, "map-groups": reqArg, "propagation": reqArg,
			"setgroups": reqArg, "keep-caps": noArg, "setuid": reqArg, "setgid": reqArg,
			"root": reqArg, "wd": reqArg, "monotonic": reqArg, "boottime": reqArg},
	},
	"flock": {
		short: "sexnouF", shortV: "wE", operands: 1, mode: wrapFlock,
		long: map[string]argKind{"shared": noArg, "exclusive": noArg, "unlock": noArg,
			"nonblock": noArg, "nb": noArg, "close": noArg, "no-fork": noArg, "timeout": reqArg,
			"wait": reqArg, "conflict-exit-code": reqArg, "verbose": noArg},
	},
	"watch": {
		short: "bcegtwxpr", shortV: "nq", shortO: "d", mode: wrapWatch,
		long: map[string]argKind{"interval": reqArg, "differences": optArg, "no-title": noArg,
			"beep": noArg, "errexit": noArg, "chgexit": noArg, "equexit": reqArg, "color": noArg,
			"no-color": noArg, "exec": noArg, "precise": noArg, "no-wrap": noArg,
			"no-linewrap": noArg, "no-rerun": noArg},
	},
	"xargs": {
		short: "0oprtx", shortV: "aEILnPsd", shortO: "eil", mode: wrapXargs,
		long: map[string]argKind{"null": noArg, "arg-file": reqArg, "delimiter": reqArg,
			"eof": optArg, "replace": optArg, "max-lines": optArg, "max-args": reqArg,
			"max-procs": reqArg, "max-chars": reqArg, "interactive": noArg,
			"no-run-if-empty": noArg, "verbose": noArg, "exit": noArg, "open-tty": noArg,
			"process-slot-var": reqArg, "show-limits": noArg},
	},
}

// commandOptions are programs that run a shell command given as an
// option's value (su -c CMD, script -c CMD) and otherwise run a login or
// interactive shell that reads commands as it goes. Their options may come
// in any order (GNU getopt permutes them), so every word is read.
var commandOptions = map[string]*wrapperSpec{
	"su": {short: "flmpP", shortV: "cgGsw",
		long: map[string]argKind{"command": reqArg, "session-command": reqArg, "fast": noArg,
			"group": reqArg, "supp-group": reqArg, "login": noArg, "preserve-environment": noArg,
			"pty": noArg, "shell": reqArg, "whitelist-environment": reqArg}},
	"runuser": {short: "flmpP", shortV: "cgGsuw",
		long: map[string]argKind{"command": reqArg, "session-command": reqArg, "fast": noArg,
			"group": reqArg, "supp-group": reqArg, "login": noArg, "preserve-environment": noArg,
			"pty": noArg, "shell": reqArg, "user": reqArg, "whitelist-environment": reqArg}},
	"script": {short: "aefqkB", shortV: "cEoOIT", shortO: "t",
		long: map[string]argKind{"append": noArg, "command": reqArg, "echo": reqArg,
			"return": noArg, "flush": noArg, "force": noArg, "quiet": noArg, "log-in": reqArg,
			"log-out": reqArg, "log-io": reqArg, "log-timing": reqArg, "logging-format": reqArg,
			"output-limit": reqArg, "timing": optArg}},
}

// commandOption finds the -c/--command value of su, runuser or script.
func (a *analyzer) commandOption(name string, sp *wrapperSpec, fs []field, sc *scope) {
	c, ok := a.scanCommandOptions(name, sp, fs, sc)
	if !ok {
		return
	}
	if c.script == nil {
		if c.userMode && c.cmdStart > 0 && c.cmdStart < len(fs) {
			if sc.depth >= maxWrapperDepth {
				a.sentinel(SentinelOpaque, "nesting of wrappers and shells deeper than 16", sc.via)
				return
			}
			a.inner(name, fs[c.cmdStart:], sc, false)
		}
		return
	}
	if c.script.dyn != static {
		a.sentinel(SentinelOpaque, name+" -c with a command that is not static: "+c.script.s, sc.via)
		return
	}
	if sc.depth >= maxWrapperDepth {
		a.sentinel(SentinelOpaque, "nesting of wrappers and shells deeper than 16", sc.via)
		return
	}
	a.script(c.script.s, sc.inner(name+" -c", true))
}

// commandOptionScan is what the words of su, runuser or script say they
// run.
type commandOptionScan struct {
	script   *field // the value of -c, --command or --session-command
	userMode bool   // runuser -u USER [--] CMD [ARGS…] runs CMD directly
	cmdStart int    // in user mode, the index of CMD; -1 when not found
}

// scanCommandOptions reads every word of su, runuser or script: their
// options may come in any order (GNU getopt permutes them). It returns
// false when nothing runs or the command cannot be located (and then has
// recorded why).
func (a *analyzer) scanCommandOptions(name string, sp *wrapperSpec, fs []field, sc *scope) (commandOptionScan, bool) {
	c := commandOptionScan{cmdStart: -1}
	for i := 1; i < len(fs); i++ {
		f := fs[i]
		if c.userMode && c.cmdStart < 0 && (f.dyn != static || !strings.HasPrefix(f.s, "-")) {
			c.cmdStart = i
			break
		}
		if f.dyn != static {
			if f.dyn == dynSplit {
				a.sentinel(SentinelOpaque, name+": word is not static: "+f.s, sc.via)
				return c, false
			}
			continue // a quoted user name or file
		}
		s := f.s
		if s == "--" {
			if c.userMode {
				c.cmdStart = i + 1
			}
			break
		}
		if s == "-" || !strings.HasPrefix(s, "-") {
			continue // "su - user", a user name, script's output file
		}
		var opt, bad string
		var val *field
		var ok bool
		if strings.HasPrefix(s, "--") {
			opt, val, i, bad, ok = longCommandOption(sp, fs, i)
		} else {
			opt, val, i, bad, ok = shortCommandOption(sp, fs, i)
		}
		if !ok {
			if bad != "" {
				a.sentinel(SentinelOpaque, name+": unknown option "+bad, sc.via)
			}
			return c, false
		}
		if val != nil && (opt == "c" || opt == "command" || opt == "session-command") {
			c.script = val
		}
		if name == "runuser" && (opt == "u" || opt == "user") {
			c.userMode = true
		}
	}
	return c, true
}

// longCommandOption reads the long option fs[i] of su, runuser or
// script: its name, its value if it takes one (nil otherwise), and the
// index of the last word it used. Not ok when the option is unknown (bad
// names it) or its value is missing (bad is "": the program refuses to
// start).
func longCommandOption(sp *wrapperSpec, fs []field, i int) (opt string, val *field, last int, bad string, ok bool) {
	n, v, hasEq := strings.Cut(fs[i].s[2:], "=")
	kind, known := sp.long[n]
	if !known {
		return "", nil, i, "--" + n, false
	}
	switch {
	case kind == reqArg && hasEq:
		val = &field{s: v}
	case kind == reqArg:
		if i++; i >= len(fs) {
			return "", nil, i, "", false
		}
		val = &fs[i]
	}
	return n, val, i, "", true
}

// shortCommandOption reads the one-letter options of fs[i] as
// longCommandOption reads a long one. The letters end at the first that
// takes a value: the rest of the word, or the next word. opt is that
// letter, or "" when none takes a value.
func shortCommandOption(sp *wrapperSpec, fs []field, i int) (opt string, val *field, last int, bad string, ok bool) {
	s := fs[i].s
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case strings.IndexByte(sp.short, c) >= 0:
			continue
		case strings.IndexByte(sp.shortO, c) >= 0:
		case strings.IndexByte(sp.shortV, c) >= 0:
			opt = string(c)
			if j < len(s)-1 {
				val = &field{s: s[j+1:]}
			} else if i++; i < len(fs) {
				val = &fs[i]
			} else {
				return "", nil, i, "", false
			}
		default:
			return "", nil, i, "-" + string(c), false
		}
		break
	}
	return opt, val, i, "", true
}

// shells run the script given with -c. Their one-letter options take no
// value except -o/+o and -O/+O (a shell option name).
var shells = map[string]bool{
	"sh": true, "bash": true, "rbash": true, "zsh": true, "dash": true, "ash": true,
	"ksh": true, "mksh": true, "yash": true, "posh": true,
}

// foreignShells take a command string too, in a language the bash parser
// cannot read: their -c is opaque rather than misread.
var foreignShells = map[string]bool{"fish": true, "nu": true, "elvish": true, "pwsh": true, "xonsh": true, "tcsh": true, "csh": true}

var shellLong = map[string]argKind{
	"login": noArg, "norc": noArg, "noprofile": noArg, "posix": noArg, "rcfile": reqArg,
	"init-file": reqArg, "restricted": noArg, "verbose": noArg, "noediting": noArg,
	"debugger": noArg, "dump-strings": noArg, "dump-po-strings": noArg, "pretty-print": noArg,
	"emulate": reqArg, "no-rcs": noArg, "no-globalrcs": noArg,
}

func IsShell(name string) bool { return shells[name] }

// Programs lists the programs the analysis reads through, whose identity
// changes what it finds: every wrapper, shell, command with options that
// run another, command grammar (git, docker, kubectl), find and the
// dynamic loader's names. Unsorted; it may repeat a name.
func Programs() []string {
	out := make([]string, 0, len(wrappers)+len(shells)+len(commandOptions)+len(grammarPrograms)+5)
	for n := range wrappers {
		out = append(out, n)
	}
	for n := range shells {
		out = append(out, n)
	}
	for n := range commandOptions {
		out = append(out, n)
	}
	out = append(out, grammarPrograms...)
	return append(out, "find", "ld.so", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "ld-linux.so.2")
}

// optScan is the outcome of reading a wrapper's options.
type optScan struct {
	next int      // index of the first word after options and operands
	seen []string // options given, short as "x", long as "name"
	vals []field  // the value of each option in seen (zero when none)
	err  string   // why the inner command cannot be located
}

// value returns the last value given to any of the named options.
func (s optScan) value(names string) (field, bool) {
	for i := len(s.seen) - 1; i >= 0; i-- {
		for _, n := range strings.Fields(names) {
			if s.seen[i] == n {
				return s.vals[i], true
			}
		}
	}
	return field{}, false
}

func (s optScan) has(names string) bool {
	for _, n := range strings.Fields(names) {
		for _, o := range s.seen {
			if o == n {
				return true
			}
		}
	}
	return false
}

func scanOptions(fs []field, sp *wrapperSpec) optScan {
	s := &optScanner{fs: fs, sp: sp, i: 1, r: optScan{next: 1}}
	if !s.options() || !s.operands() {
		return s.r
	}
	i := s.i
	// env also takes assignments after its options.
	for sp.assigns && i < len(fs) && fs[i].dyn == static && isAssignWord(fs[i].s) {
		i++
	}
	s.r.next = i
	return s.r
}

// optScanner reads a wrapper's words as its spec says: i is the word
// being read, r what was found so far.
type optScanner struct {
	fs []field
	sp *wrapperSpec
	i  int
	r  optScan
}

// saw records the option opt with its value v (zero when none).
func (s *optScanner) saw(opt string, v field) {
	s.r.seen = append(s.r.seen, opt)
	s.r.vals = append(s.r.vals, v)
}

// value takes the next word as the value of the option last seen, opt.
func (s *optScanner) value(opt string) bool {
	s.i++
	if s.i >= len(s.fs) {
		s.r.err = "option " + opt + " needs a value"
		return false
	}
	if s.fs[s.i].dyn == dynSplit {
		s.r.err = "value of option " + opt + " is not static: " + s.fs[s.i].s
		return false
	}
	s.r.vals[len(s.r.vals)-1] = s.fs[s.i]
	return true
}

// options reads the options up to the first word that is none (or past
// "--"), leaving i there. It returns false with r.err set when the inner
// command cannot be located.
func (s *optScanner) options() bool {
	for ; s.i < len(s.fs); s.i++ {
		f := s.fs[s.i]
		if f.dyn != static {
			s.r.err = "word is not static: " + f.s
			return false
		}
		w := f.s
		switch {
		case w == "--":
			s.i++
			return true
		case w == "-" && s.sp.dashAlone:
			s.saw("-", field{})
		case strings.HasPrefix(w, "--"):
			if !s.long(w) {
				return false
			}
		case len(w) > 1 && w[0] == '-':
			if s.sp.numeric && IsDigits(w[1:]) {
				continue
			}
			if !s.short(w) {
				return false
			}
		case s.sp.assigns && isAssignWord(w):
		default:
			return true
		}
	}
	return true
}

// long reads the long option w (--name or --name=value).
func (s *optScanner) long(w string) bool {
	name, v, hasEq := strings.Cut(w[2:], "=")
	kind, ok := s.sp.long[name]
	if !ok {
		s.r.err = "unknown option --" + name
		return false
	}
	s.saw(name, field{s: v})
	if kind == reqArg && !hasEq && !s.value("--"+name) {
		return false
	}
	if kind == noArg && hasEq {
		s.r.err = "option --" + name + " takes no value"
		return false
	}
	return true
}

// short reads the one-letter options of w; the first that takes a value
// takes the rest of the word, or the next word when none is left.
func (s *optScanner) short(w string) bool {
	for j := 1; j < len(w); j++ {
		c := w[j]
		opt := string(c)
		switch {
		case strings.IndexByte(s.sp.short, c) >= 0:
			s.saw(opt, field{})
		case strings.IndexByte(s.sp.shortV, c) >= 0:
			s.saw(opt, field{s: w[j+1:]})
			return j < len(w)-1 || s.value("-"+opt)
		case strings.IndexByte(s.sp.shortO, c) >= 0:
			s.saw(opt, field{s: w[j+1:]})
			return true
		default:
			s.r.err = "unknown option -" + opt
			return false
		}
	}
	return true
}

// operands skips the operands between the options and the command. It
// returns false when they are missing (r.next is where they end) or one
// is not static (r.err says so).
func (s *optScanner) operands() bool {
	for k := 0; k < s.sp.operands; k++ {
		if s.i >= len(s.fs) {
			s.r.next = s.i
			return false
		}
		if s.fs[s.i].dyn == dynSplit {
			s.r.err = "operand is not static: " + s.fs[s.i].s
			return false
		}
		s.i++
	}
	return true
}

func isAssignWord(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	return ok && validName(name)
}

func validName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

// wrapped looks through fs (a command already recorded as a unit) into
// the command it runs, if it is a wrapper, a shell with a script, or
// find -exec. name is the program's identity: the basename of the
// resolved binary when known, of argv[0] otherwise.
func (a *analyzer) wrapped(name string, fs []field, sc *scope) {
	a.wrappedAs(name, name, fs, sc)
}

// wrappedAs is wrapped with the name shown in Via given separately: the
// program is recognised by what really runs (/bin/sh resolving to dash)
// but shown as it was invoked ("sh -c").
func (a *analyzer) wrappedAs(name, label string, fs []field, sc *scope) {
	if a.full {
		return
	}
	switch {
	case shells[name]:
		a.shell(name, label, fs, sc)
	case foreignShells[name]:
		a.foreignShell(name, fs, sc)
	case name == "find":
		a.findExec(fs, sc)
	case isLoader(name):
		a.loader(label, fs, sc)
	case commandOptions[name] != nil:
		a.commandOption(name, commandOptions[name], fs, sc)
	case wrappers[name] != nil:
		a.wrapper(name, label, wrappers[name], fs, sc)
	}
}

// foreignShell makes a foreign shell's command line opaque when it may
// run a script (-c, --command, or a word only known at run time).
func (a *analyzer) foreignShell(name string, fs []field, sc *scope) {
	for _, f := range fs[1:] {
		if f.dyn != static || f.s == "-c" || f.s == "--command" || strings.HasPrefix(f.s, "--command=") {
			a.sentinel(SentinelOpaque, name+" runs a script in a language permwrap does not parse", sc.via)
			return
		}
	}
}

// wrapper looks through a program of the wrappers table, as its spec
// says, into the command it runs.
func (a *analyzer) wrapper(name, label string, sp *wrapperSpec, fs []field, sc *scope) {
	if sc.depth >= maxWrapperDepth {
		a.sentinel(SentinelOpaque, "nesting of wrappers and shells deeper than 16", sc.via)
		return
	}
	r := scanOptions(fs, sp)
	if r.err != "" {
		a.sentinel(SentinelOpaque, name+": "+r.err, sc.via)
		return
	}
	if r.has(sp.opaque) {
		a.sentinel(SentinelOpaque, name+": option hides the command it runs", sc.via)
		return
	}
	if r.has(sp.noRun) {
		return
	}
	rest := fs[r.next:]
	if len(rest) == 0 && sc.argsFollow {
		// xargs env, xargs sudo …: the command itself comes from stdin.
		a.sentinel(SentinelOpaque, label+" runs a command read at run time", sc.via)
		return
	}
	if sp.mode == wrapXargs {
		rest = markReplaced(r, rest)
	}
	if sp.mode == wrapWatch && !r.has("x exec") {
		a.watchScript(label, rest, sc)
		return
	}
	if sp.mode == wrapFlock && a.flockScript(label, rest, sc) {
		return
	}
	if len(rest) == 0 {
		return // env, nice, time … alone run no other program
	}
	if v, ok := r.value(sp.chdir); ok && sp.chdir != "" {
		// The command starts elsewhere: relative paths in it follow.
		sc = sc.clone()
		sc.cd(v.s, v.dyn == static)
	}
	argv0 := ""
	if v, ok := r.value("a"); ok && name == "exec" && v.dyn == static {
		argv0 = v.s // exec -a NAME: the program sees NAME as argv[0]
	}
	a.innerAs(label, rest, sc, innerOpts{stdinArgs: sp.mode == wrapXargs, argv0: argv0})
}

// watchScript reads the script watch (without -x) runs: its words,
// joined by spaces, handed to sh -c.
func (a *analyzer) watchScript(label string, rest []field, sc *scope) {
	if len(rest) == 0 {
		return
	}
	var parts []string
	for _, f := range rest {
		if f.dyn == dynSplit {
			a.sentinel(SentinelOpaque, "watch: word is not static: "+f.s, sc.via)
			return
		}
		parts = append(parts, f.s)
	}
	a.script(strings.Join(parts, " "), sc.inner(label, true))
}

// flockScript reads what flock runs when that is no command: nothing
// (flock FD) or a script (-c SCRIPT). It returns false when a command
// follows.
func (a *analyzer) flockScript(label string, rest []field, sc *scope) bool {
	if len(rest) == 0 {
		return true // flock FD: locks a descriptor, runs nothing
	}
	if rest[0].dyn != static || (rest[0].s != "-c" && rest[0].s != "--command") {
		return false
	}
	if len(rest) < 2 {
		return true
	}
	if rest[1].dyn != static {
		a.sentinel(SentinelOpaque, "flock -c with a script that is not static: "+rest[1].s, sc.via)
		return true
	}
	a.script(rest[1].s, sc.inner(label+" -c", true))
	return true
}

// inner records the command a wrapper runs and looks into it in turn.
func (a *analyzer) inner(label string, fs []field, sc *scope, stdinArgs bool) {
	a.innerAs(label, fs, sc, innerOpts{stdinArgs: stdinArgs})
}

// innerOpts says how a wrapper runs its command.
type innerOpts struct {
	stdinArgs bool     // more arguments come from stdin (xargs)
	argv0     string   // the argv[0] it receives, when not its name (exec -a, ld.so --argv0)
	inProcess bool     // run inside the wrapper's process (the loader)
	loads     []string // the libraries the loader's options load (Unit.Loads)
}

// innerAs is inner with how the wrapper runs the command.
func (a *analyzer) innerAs(label string, fs []field, sc *scope, o innerOpts) {
	stdinArgs := o.stdinArgs
	in := sc.inner(label, true)
	in.argsFollow = stdinArgs
	if fs[0].dyn != static {
		a.sentinel(SentinelOpaque, label+" runs a command that is not static: "+fs[0].s, in.via)
		return
	}
	argv, dyn := splitFields(fs)
	u := Unit{Argv: argv, Dynamic: dyn, Via: in.via, StdinArgs: stdinArgs, Argv0: o.argv0, Dir: sc.dir, InProcess: o.inProcess, Loads: o.loads}
	if stdinArgs {
		u.Line = renderWords(argv, dyn) + " " + StdinArgsMarker
	}
	a.add(u)
	if label == "command" || label == "builtin" {
		// These run shell builtins too: `command eval …` is eval.
		switch argv[0] {
		case "eval", "source", ".":
			a.sentinel(SentinelOpaque, label+" "+argv[0], in.via)
			return
		}
	}
	a.wrapped(BaseName(argv[0]), fs, in)
}

func BaseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i < len(p)-1 {
		return p[i+1:]
	}
	return p
}

// shell looks into `sh -c SCRIPT [$0 [$1…]]` and its option spellings
// (-lc, -ec, -euo pipefail -c, --login -c, -c -x …). A shell given a
// script file or reading stdin runs commands the kernel checks one by one
// as they exec; only a script on the command line can be judged up front.
func (a *analyzer) shell(name, label string, fs []field, sc *scope) {
	script, args, mode, err := shellArgs(fs)
	switch {
	case err != "":
		a.sentinel(SentinelOpaque, name+": "+err, sc.via)
		return
	case mode == shellModeNoScript && sc.argsFollow:
		// xargs sh -c: the script is the first word read at run time.
		a.sentinel(SentinelOpaque, label+" -c with a script read at run time", sc.via)
		return
	case mode != shellModeScript:
		return
	case sc.depth >= maxWrapperDepth:
		a.sentinel(SentinelOpaque, "nesting of wrappers and shells deeper than 16", sc.via)
		return
	case script.dyn != static:
		a.sentinel(SentinelOpaque, name+" -c with a script that is not static: "+script.s, sc.via)
		return
	}
	in := sc.inner(label+" -c", true)
	// The words after the script are $0, $1, … inside it.
	if len(args) > 0 {
		if args[0].dyn == static {
			in.set("0", args[0].s)
		}
		args = args[1:]
	}
	// Under xargs, more words come from stdin at run time.
	in.args, in.argsKnown = args, !sc.argsFollow
	a.script(script.s, in)
}

type shellMode uint8

const (
	shellModeStdin    shellMode = iota // interactive, -s, or a here-document
	shellModeFile                      // sh FILE [ARGS…]
	shellModeScript                    // sh -c SCRIPT [ARGS…]
	shellModeNoScript                  // sh -c with no script: the shell refuses to start
)

func shellArgs(fs []field) (script field, args []field, mode shellMode, err string) {
	cflag, sflag := false, false
	i := 1
options:
	for ; i < len(fs); i++ {
		f := fs[i]
		if f.dyn != static {
			if cflag {
				break
			}
			return field{}, nil, 0, "option is not static: " + f.s
		}
		s := f.s
		switch {
		case s == "--" || s == "-":
			i++
			break options
		case strings.HasPrefix(s, "--"):
			name, _, hasEq := strings.Cut(s[2:], "=")
			kind, ok := shellLong[name]
			switch {
			case name == "command":
				cflag = true
			case !ok:
				return field{}, nil, 0, "unknown option --" + name
			case kind == reqArg && !hasEq:
				i++
			}
		case len(s) > 1 && (s[0] == '-' || s[0] == '+'):
			for j := 1; j < len(s); j++ {
				c := s[j]
				switch {
				case c == 'c':
					cflag = true
				case c == 's':
					sflag = true
				case c == 'o' || c == 'O':
					if j != len(s)-1 {
						return field{}, nil, 0, "option -" + string(c) + " followed by more letters"
					}
					i++
					if i >= len(fs) {
						if s[0] == '+' || c == 'O' {
							break
						}
						// `sh -o` alone lists options.
						return field{}, nil, shellModeStdin, ""
					}
					if fs[i].dyn != static {
						return field{}, nil, 0, "shell option name is not static: " + fs[i].s
					}
				case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
				default:
					return field{}, nil, 0, "unknown option -" + string(c)
				}
			}
		default:
			break options
		}
	}
	switch {
	case cflag:
		if i >= len(fs) {
			return field{}, nil, shellModeNoScript, ""
		}
		return fs[i], fs[i+1:], shellModeScript, ""
	case sflag || i >= len(fs):
		return field{}, nil, shellModeStdin, ""
	}
	return fs[i], fs[i+1:], shellModeFile, ""
}

// findExec looks into find's -exec/-execdir/-ok/-okdir actions. {} is the
// found path, kept as written.
func (a *analyzer) findExec(fs []field, sc *scope) {
	for i := 1; i < len(fs); i++ {
		f := fs[i]
		if f.dyn != static {
			continue
		}
		switch f.s {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(fs) && !(fs[j].dyn == static && (fs[j].s == ";" || fs[j].s == "+")) {
			j++
		}
		if j == i+1 {
			continue
		}
		if sc.depth >= maxWrapperDepth {
			a.sentinel(SentinelOpaque, "nesting of wrappers and shells deeper than 16", sc.via)
			return
		}
		// {} is a path found at run time.
		cmd := make([]field, j-i-1)
		copy(cmd, fs[i+1:j])
		for k := range cmd {
			if cmd[k].dyn == static && strings.Contains(cmd[k].s, "{}") {
				cmd[k].dyn = dynOne
			}
		}
		a.inner("find "+f.s, cmd, sc, false)
		i = j
	}
}

// markReplaced marks the words of an xargs command that hold the -I/-i
// replacement string: they are filled in from stdin at run time, so
// `xargs -I{} sh -c {}` runs a script nobody can see.
func markReplaced(r optScan, rest []field) []field {
	v, ok := r.value("I i replace")
	if !ok {
		return rest
	}
	repl := v.s
	if repl == "" {
		repl = "{}" // -i and --replace without a value
	}
	out := make([]field, len(rest))
	copy(out, rest)
	for i := range out {
		if out[i].dyn == static && strings.Contains(out[i].s, repl) {
			out[i].dyn = dynOne
		}
	}
	return out
}
