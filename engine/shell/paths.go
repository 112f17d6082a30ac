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
	dyn := make(map[int]bool, len(u.Dynamic))
	for _, i := range u.Dynamic {
		dyn[i] = true
	}
	var ops []int // indexes of operands
	var seen []string
	var target string
	opt := func(o string) { seen = append(seen, o) }
	has := func(names string) bool {
		for _, n := range strings.Fields(names) {
			for _, o := range seen {
				if o == n {
					return true
				}
			}
		}
		return false
	}
	sp := &fc.spec
	for i := 1; i < len(u.Argv); i++ {
		w := u.Argv[i]
		switch {
		case dyn[i]:
			if strings.HasPrefix(w, "-") || strings.HasPrefix(w, `"-`) {
				return nil // an option only known at run time
			}
			ops = append(ops, i)
		case w == "--":
			for j := i + 1; j < len(u.Argv); j++ {
				ops = append(ops, j)
			}
			i = len(u.Argv)
		case w == "-" || !strings.HasPrefix(w, "-"):
			ops = append(ops, i)
		case strings.HasPrefix(w, "--"):
			n, v, hasEq := strings.Cut(w[2:], "=")
			kind, ok := sp.long[n]
			if !ok || kind == noArg && hasEq {
				return nil
			}
			opt(n)
			if kind == reqArg && !hasEq {
				if i++; i >= len(u.Argv) || dyn[i] {
					return nil
				}
				v = u.Argv[i]
			}
			if strings.Contains(" "+fc.target+" ", " "+n+" ") {
				target = v
			}
		default:
			if fc.numeric && IsDigits(w[1:]) {
				continue
			}
			for j := 1; j < len(w); j++ {
				c := w[j]
				switch {
				case strings.IndexByte(sp.short, c) >= 0:
					opt(string(c))
					continue
				case strings.IndexByte(sp.shortV, c) >= 0:
					opt(string(c))
					v := w[j+1:]
					if v == "" {
						if i++; i >= len(u.Argv) || dyn[i] {
							return nil
						}
						v = u.Argv[i]
					}
					if strings.Contains(" "+fc.target+" ", " "+string(c)+" ") {
						target = v
					}
				default:
					return nil
				}
				break
			}
		}
	}
	tree := fc.tree != "" && has(fc.tree)
	from := "argument of " + name
	var out []PathUse
	use := func(i int, a Access, t bool) string {
		if a == 0 || dyn[i] && !plainTilde(u.Argv[i]) || u.Argv[i] == "-" {
			return ""
		}
		p, ok := resolve(u.Argv[i], u.Dir)
		if !ok {
			return ""
		}
		out = append(out, PathUse{Access: a, Path: p, Tree: t, From: from})
		return p
	}
	switch fc.mode {
	case operandsAll:
		for _, i := range ops {
			use(i, fc.access, tree)
			if fc.parents != "" && has(fc.parents) && !dyn[i] {
				out = append(out, parentUses(u.Argv[i], u.Dir, fc.access, from, resolve)...)
			}
		}
	case operandsAfter1:
		if len(ops) > 0 && (fc.ref == "" || !has(fc.ref)) {
			ops = ops[1:]
		}
		for _, i := range ops {
			use(i, fc.access, tree)
		}
	case operandsDest:
		srcs := ops
		var dest string
		destKnown := false
		switch {
		case target != "":
			p, ok := resolve(target, u.Dir)
			dest, destKnown = p, ok
		case len(ops) == 1 && name == "ln":
			// ln TARGET: a link named after it, here.
			p, ok := resolve(path.Base(u.Argv[ops[0]]), u.Dir)
			dest, destKnown = p, ok && !dyn[ops[0]]
			if destKnown {
				out = append(out, PathUse{Access: AccessWrite, Path: dest, From: from})
			}
			return out
		case len(ops) >= 2:
			last := ops[len(ops)-1]
			srcs = ops[:len(ops)-1]
			if !dyn[last] {
				dest, destKnown = resolve(u.Argv[last], u.Dir)
			}
			if destKnown && (has(fc.noTgt) || len(srcs) == 1) {
				// DEST itself when it is not a directory.
				out = append(out, PathUse{Access: AccessWrite, Path: dest, Tree: tree, From: from})
			}
		default:
			return nil
		}
		for _, i := range srcs {
			use(i, fc.access, tree)
			if destKnown && !has(fc.noTgt) && !dyn[i] {
				// DEST/basename(SOURCE) when DEST is a directory.
				out = append(out, PathUse{Access: AccessWrite, Path: path.Join(dest, path.Base(u.Argv[i])), Tree: tree, From: from})
			}
		}
	}
	return out
}
