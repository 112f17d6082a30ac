package shell

import (
	"path"
	"strings"
)

// PathUse is a file an argument of a file command names (`touch f`,
// `cp a b`, `rm -r d`), resolved by the caller's resolve: what
// ArgPathUses finds. engine.PathUse is the same with engine's Access.
type PathUse struct {
	Access Access
	Path   string // as resolve returned it: absolute and clean
	// Tree is set when everything beneath Path is used too (`rm -r d`,
	// `cp -r src dst`).
	Tree bool
	From string // what named it, for people: "argument of cp"
}

// parentUses are the directories `mkdir -p` creates above operand when
// they are missing: those the operand itself names, relative to where it
// runs (`mkdir -p a/b/c` → a, a/b), never the directory it runs in or
// one above it, nor any of an absolute path (`mkdir -p /srv/app` does
// not approve writing /srv).
func parentUses(operand, dir string, a Access, from string, resolve func(p, dir string) (string, bool)) []PathUse {
	if path.IsAbs(operand) || strings.HasPrefix(operand, "~") {
		return nil
	}
	var out []PathUse
	for d := path.Dir(path.Clean(operand)); d != "." && d != ".." && !strings.HasSuffix(d, "/..") && d != "/"; d = path.Dir(d) {
		if p, ok := resolve(d, dir); ok {
			out = append(out, PathUse{Access: a, Path: p, From: from})
		}
	}
	return out
}

// operandMode says what a file command does with its operands.
type operandMode uint8

const (
	operandsAll    operandMode = iota // every operand is used with spec.access
	operandsDest                      // SOURCE… DEST (cp, mv, ln): sources with spec.access, the destination written
	operandsAfter1                    // the first operand is not a file (chmod MODE FILE…)
)

// fileCommand describes a file command's options, so that its operands
// can be told from option values. GNU tools accept options anywhere; an
// option not listed means the command line is not understood and yields
// no path uses (the opens are then judged as they happen).
type fileCommand struct {
	spec    wrapperSpec
	mode    operandMode
	access  Access // for the operands (the sources, for operandsDest)
	tree    string // options that make it recursive
	target  string // options whose value is the destination directory
	noTgt   string // options that make the destination exact (-T)
	ref     string // options whose value replaces the first operand (--reference)
	numeric bool   // -NUM is an option (head -5)
	// parents: options that make the command create the missing
	// directories above each operand too (mkdir -p).
	parents string
}

var fileCommands = map[string]*fileCommand{
	"touch": {access: AccessWrite, spec: wrapperSpec{short: "acfhm", shortV: "dtr",
		long: map[string]argKind{"no-create": noArg, "date": reqArg, "no-dereference": noArg, "reference": reqArg, "time": reqArg}}},
	"mkdir": {access: AccessWrite, parents: "p parents", spec: wrapperSpec{short: "pvZ", shortV: "m",
		long: map[string]argKind{"mode": reqArg, "parents": noArg, "verbose": noArg, "context": optArg}}},
	"rmdir": {access: AccessWrite, spec: wrapperSpec{short: "pv",
		long: map[string]argKind{"ignore-fail-on-non-empty": noArg, "parents": noArg, "verbose": noArg}}},
	"rm": {access: AccessWrite, tree: "r R recursive", spec: wrapperSpec{short: "fiIrRdv",
		long: map[string]argKind{"force": noArg, "interactive": optArg, "one-file-system": noArg, "no-preserve-root": noArg,
			"preserve-root": optArg, "recursive": noArg, "dir": noArg, "verbose": noArg}}},
	"tee": {access: AccessWrite, spec: wrapperSpec{short: "aip",
		long: map[string]argKind{"append": noArg, "ignore-interrupts": noArg, "output-error": optArg}}},
	"truncate": {access: AccessWrite, spec: wrapperSpec{short: "co", shortV: "rs",
		long: map[string]argKind{"no-create": noArg, "io-blocks": noArg, "reference": reqArg, "size": reqArg}}},
	"cp": {mode: operandsDest, access: AccessRead, tree: "a r R recursive archive", target: "t target-directory", noTgt: "T no-target-directory",
		spec: wrapperSpec{short: "abdfiHlLnPpRrsTuvxZ", shortV: "St",
			long: map[string]argKind{"archive": noArg, "attributes-only": noArg, "backup": optArg, "copy-contents": noArg,
				"dereference": noArg, "force": noArg, "interactive": noArg, "link": noArg, "no-clobber": noArg,
				"no-dereference": noArg, "preserve": optArg, "no-preserve": reqArg, "parents": noArg, "recursive": noArg,
				"reflink": optArg, "remove-destination": noArg, "sparse": reqArg, "strip-trailing-slashes": noArg,
				"suffix": reqArg, "symbolic-link": noArg, "target-directory": reqArg, "no-target-directory": noArg,
				"update": optArg, "verbose": noArg, "one-file-system": noArg, "context": optArg, "debug": noArg,
				"keep-directory-symlink": noArg}}},
	"mv": {mode: operandsDest, access: AccessWrite, target: "t target-directory", noTgt: "T no-target-directory",
		spec: wrapperSpec{short: "bfinTuvZ", shortV: "St",
			long: map[string]argKind{"backup": optArg, "exchange": noArg, "force": noArg, "interactive": noArg,
				"no-clobber": noArg, "no-copy": noArg, "strip-trailing-slashes": noArg, "suffix": reqArg,
				"target-directory": reqArg, "no-target-directory": noArg, "update": optArg, "verbose": noArg, "context": noArg}}},
	"ln": {mode: operandsDest, target: "t target-directory", noTgt: "T no-target-directory",
		spec: wrapperSpec{short: "bdfFinLPrsTv", shortV: "St",
			long: map[string]argKind{"backup": optArg, "directory": noArg, "force": noArg, "interactive": noArg,
				"logical": noArg, "no-dereference": noArg, "physical": noArg, "relative": noArg, "symbolic": noArg,
				"suffix": reqArg, "target-directory": reqArg, "no-target-directory": noArg, "verbose": noArg}}},
	"chmod": {mode: operandsAfter1, access: AccessWrite, tree: "R recursive", ref: "reference",
		spec: wrapperSpec{short: "cfvR", long: map[string]argKind{"changes": noArg, "quiet": noArg, "silent": noArg,
			"verbose": noArg, "no-preserve-root": noArg, "preserve-root": noArg, "reference": reqArg, "recursive": noArg}}},
	"chown": {mode: operandsAfter1, access: AccessWrite, tree: "R recursive", ref: "reference", spec: chownSpec},
	"chgrp": {mode: operandsAfter1, access: AccessWrite, tree: "R recursive", ref: "reference", spec: chownSpec},
	"cat": {access: AccessRead, spec: wrapperSpec{short: "AbeEnstTuv",
		long: map[string]argKind{"show-all": noArg, "number-nonblank": noArg, "show-ends": noArg, "number": noArg,
			"squeeze-blank": noArg, "show-tabs": noArg, "show-nonprinting": noArg}}},
	"head": {access: AccessRead, numeric: true, spec: wrapperSpec{short: "qvz", shortV: "cn",
		long: map[string]argKind{"bytes": reqArg, "lines": reqArg, "quiet": noArg, "silent": noArg, "verbose": noArg, "zero-terminated": noArg}}},
	"tail": {access: AccessRead, numeric: true, spec: wrapperSpec{short: "fFqvz", shortV: "cns",
		long: map[string]argKind{"bytes": reqArg, "lines": reqArg, "follow": optArg, "pid": reqArg, "quiet": noArg,
			"silent": noArg, "retry": noArg, "sleep-interval": reqArg, "verbose": noArg, "zero-terminated": noArg}}},
	"wc": {access: AccessRead, spec: wrapperSpec{short: "clmwL",
		long: map[string]argKind{"bytes": noArg, "chars": noArg, "lines": noArg, "words": noArg, "max-line-length": noArg, "total": reqArg}}},
}

var chownSpec = wrapperSpec{short: "cfvhRHLP", long: map[string]argKind{"changes": noArg, "dereference": noArg,
	"no-dereference": noArg, "from": reqArg, "no-preserve-root": noArg, "preserve-root": noArg, "quiet": noArg,
	"silent": noArg, "reference": reqArg, "recursive": noArg, "verbose": noArg}}

// ArgPathUses returns the paths a unit's arguments name, resolved with
// resolve (nil results are skipped). Units of other commands, and command
// lines the table cannot read, name none.
func ArgPathUses(u Unit, resolve func(p, dir string) (string, bool)) []PathUse {
	if u.Sentinel != "" || len(u.Argv) == 0 || u.StdinArgs {
		return nil
	}
	name := BaseName(u.Argv[0])
	fc := fileCommands[name]
	if fc == nil {
		return nil
	}
	cl, ok := readFileCommand(u, fc)
	if !ok {
		return nil
	}
	pu := &pathUses{cl: cl, fc: fc, u: u, resolve: resolve, from: "argument of " + name}
	pu.tree = fc.tree != "" && cl.has(fc.tree)
	switch fc.mode {
	case operandsAll:
		pu.all()
	case operandsAfter1:
		pu.after1()
	case operandsDest:
		if !pu.dest(name == "ln") {
			return nil
		}
	}
	return pu.out
}

// fileCommandLine is a file command's line as its table entry reads it.
type fileCommandLine struct {
	argv   []string
	dyn    map[int]bool // indexes of dynamic words
	ops    []int        // indexes of operands
	seen   []string     // options given, by name
	target string       // the value of a target option
}

// has reports whether one of the options names (space-separated) was
// given.
func (c *fileCommandLine) has(names string) bool {
	for _, n := range strings.Fields(names) {
		for _, o := range c.seen {
			if o == n {
				return true
			}
		}
	}
	return false
}

// readFileCommand tells a file command's operands from its options; ok is
// false when a word is not understood.
func readFileCommand(u Unit, fc *fileCommand) (*fileCommandLine, bool) {
	c := &fileCommandLine{argv: u.Argv, dyn: make(map[int]bool, len(u.Dynamic))}
	for _, i := range u.Dynamic {
		c.dyn[i] = true
	}
	for i := 1; i < len(c.argv); i++ {
		w := c.argv[i]
		ok := true
		switch {
		case c.dyn[i]:
			if strings.HasPrefix(w, "-") || strings.HasPrefix(w, `"-`) {
				return nil, false // an option only known at run time
			}
			c.ops = append(c.ops, i)
		case w == "--":
			for j := i + 1; j < len(c.argv); j++ {
				c.ops = append(c.ops, j)
			}
			i = len(c.argv)
		case w == "-" || !strings.HasPrefix(w, "-"):
			c.ops = append(c.ops, i)
		case strings.HasPrefix(w, "--"):
			i, ok = c.long(i, fc)
		default:
			i, ok = c.short(i, fc)
		}
		if !ok {
			return nil, false
		}
	}
	return c, true
}

// long reads the long option at argv[i] and its value; it returns the
// index of its last word.
func (c *fileCommandLine) long(i int, fc *fileCommand) (int, bool) {
	n, v, hasEq := strings.Cut(c.argv[i][2:], "=")
	kind, ok := fc.spec.long[n]
	if !ok || kind == noArg && hasEq {
		return i, false
	}
	c.seen = append(c.seen, n)
	if kind == reqArg && !hasEq {
		if i++; i >= len(c.argv) || c.dyn[i] {
			return i, false
		}
		v = c.argv[i]
	}
	if strings.Contains(" "+fc.target+" ", " "+n+" ") {
		c.target = v
	}
	return i, true
}

// short reads the short options at argv[i] (-abc, -tDIR, -t DIR) and the
// value of the last; it returns the index of its last word.
func (c *fileCommandLine) short(i int, fc *fileCommand) (int, bool) {
	w := c.argv[i]
	if fc.numeric && IsDigits(w[1:]) {
		return i, true
	}
	for j := 1; j < len(w); j++ {
		o := w[j]
		if strings.IndexByte(fc.spec.short, o) >= 0 {
			c.seen = append(c.seen, string(o))
			continue
		}
		if strings.IndexByte(fc.spec.shortV, o) < 0 {
			return i, false
		}
		c.seen = append(c.seen, string(o))
		v := w[j+1:]
		if v == "" {
			if i++; i >= len(c.argv) || c.dyn[i] {
				return i, false
			}
			v = c.argv[i]
		}
		if strings.Contains(" "+fc.target+" ", " "+string(o)+" ") {
			c.target = v
		}
		break
	}
	return i, true
}

// pathUses gathers the path uses of one file command's operands.
type pathUses struct {
	cl      *fileCommandLine
	fc      *fileCommand
	u       Unit
	resolve func(p, dir string) (string, bool)
	from    string
	tree    bool // the command is recursive
	out     []PathUse
}

// use adds operand i used with a, unless it is stdin or not known;
// it returns the resolved path, or "".
func (pu *pathUses) use(i int, a Access, t bool) string {
	w := pu.u.Argv[i]
	if a == 0 || pu.cl.dyn[i] && !plainTilde(w) || w == "-" {
		return ""
	}
	p, ok := pu.resolve(w, pu.u.Dir)
	if !ok {
		return ""
	}
	pu.out = append(pu.out, PathUse{Access: a, Path: p, Tree: t, From: pu.from})
	return p
}

// all: every operand is used (touch, rm, cat …), and with mkdir -p the
// directories above it.
func (pu *pathUses) all() {
	for _, i := range pu.cl.ops {
		pu.use(i, pu.fc.access, pu.tree)
		if pu.fc.parents != "" && pu.cl.has(pu.fc.parents) && !pu.cl.dyn[i] {
			pu.out = append(pu.out, parentUses(pu.u.Argv[i], pu.u.Dir, pu.fc.access, pu.from, pu.resolve)...)
		}
	}
}

// after1: the first operand is not a file (chmod MODE FILE…) unless a
// reference option stands for it.
func (pu *pathUses) after1() {
	ops := pu.cl.ops
	if len(ops) > 0 && (pu.fc.ref == "" || !pu.cl.has(pu.fc.ref)) {
		ops = ops[1:]
	}
	for _, i := range ops {
		pu.use(i, pu.fc.access, pu.tree)
	}
}

// dest: SOURCE… DEST (cp, mv, ln): the sources are used, the destination
// written, itself or as DEST/basename(SOURCE); isLn for ln's one-operand
// form. It is false when the line names no destination.
func (pu *pathUses) dest(isLn bool) bool {
	cl, fc, u := pu.cl, pu.fc, pu.u
	ops := cl.ops
	srcs := ops
	var dest string
	destKnown := false
	switch {
	case cl.target != "":
		dest, destKnown = pu.resolve(cl.target, u.Dir)
	case len(ops) == 1 && isLn:
		// ln TARGET: a link named after it, here.
		p, ok := pu.resolve(path.Base(u.Argv[ops[0]]), u.Dir)
		if ok && !cl.dyn[ops[0]] {
			pu.out = append(pu.out, PathUse{Access: AccessWrite, Path: p, From: pu.from})
		}
		return true
	case len(ops) >= 2:
		last := ops[len(ops)-1]
		srcs = ops[:len(ops)-1]
		if !cl.dyn[last] {
			dest, destKnown = pu.resolve(u.Argv[last], u.Dir)
		}
		if destKnown && (cl.has(fc.noTgt) || len(srcs) == 1) {
			// DEST itself when it is not a directory.
			pu.out = append(pu.out, PathUse{Access: AccessWrite, Path: dest, Tree: pu.tree, From: pu.from})
		}
	default:
		return false
	}
	for _, i := range srcs {
		pu.use(i, fc.access, pu.tree)
		if destKnown && !cl.has(fc.noTgt) && !cl.dyn[i] {
			// DEST/basename(SOURCE) when DEST is a directory.
			pu.out = append(pu.out, PathUse{Access: AccessWrite, Path: path.Join(dest, path.Base(u.Argv[i])), Tree: pu.tree, From: pu.from})
		}
	}
	return true
}
