package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellStdin handles a shell started without a script operand: a visible
// here-document or here-string is its script; a pipe is a script nobody
// can see before it runs.
func (w *walker) shellStdin(name string, s *syntax.Stmt, sc *scope) {
	for _, r := range s.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				w.a.script("", sc.inner(name+" <<", true))
				return
			}
			if body, ok := w.heredocBody(r); ok {
				w.a.script(body, sc.inner(name+" <<", true))
			} else {
				w.a.sentinel(SentinelOpaque, name+" reads a here-document with expansions", sc.via)
			}
			return
		case syntax.WordHdoc:
			if v, ok := w.literal(r.Word, sc, true); ok {
				w.a.script(v, sc.inner(name+" <<<", true))
			} else {
				w.a.sentinel(SentinelOpaque, name+" reads a here-string that is not static", sc.via)
			}
			return
		case syntax.RdrIn:
			w.a.sentinel(SentinelOpaque, name+" reads its script from "+w.text(r.Word), sc.via)
			return
		}
	}
	if sc.pipedStdin {
		w.a.sentinel(SentinelOpaque, name+" runs a script read from a pipe", sc.via)
	}
}

func (w *walker) heredocBody(r *syntax.Redirect) (string, bool) {
	var b strings.Builder
	for _, p := range r.Hdoc.Parts {
		lit, ok := p.(*syntax.Lit)
		if !ok {
			return "", false
		}
		b.WriteString(lit.Value)
	}
	return b.String(), true
}

func (w *walker) redirect(r *syntax.Redirect, sc *scope) {
	w.word(r.Word, sc)
	var acc Access
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		acc = AccessWrite
	case syntax.RdrIn:
		acc = AccessRead
	case syntax.RdrInOut:
		acc = AccessRead | AccessWrite
	case syntax.DplOut, syntax.DplIn:
		// `>&2` duplicates a descriptor; only bash's `>& file` (no
		// descriptor number, no "-") opens a file.
		v, ok := w.literal(r.Word, sc, true)
		if ok && (v == "-" || IsDigits(strings.TrimSuffix(v, "-"))) {
			return
		}
		if r.Op == syntax.DplIn {
			acc = AccessRead
		} else {
			acc = AccessWrite
		}
	case syntax.Hdoc, syntax.DashHdoc:
		if r.Hdoc != nil {
			w.word(r.Hdoc, sc)
		}
		return
	default: // here-strings open nothing
		return
	}
	v, ok := w.literal(r.Word, sc, true)
	computed := !ok
	if computed {
		// `> "$f"`, `> f$i.c`: the open is judged when it happens.
		v = w.text(r.Word)
	}
	if len(w.a.redirects) >= maxUnits {
		w.a.add(Unit{Sentinel: SentinelUnparseable, Detail: "too large: more than 10000 redirections", Via: sc.via})
		w.a.full = true
		return
	}
	w.a.redirects = append(w.a.redirects, Redirect{Access: acc, Path: v, Dir: sc.dir, Via: sc.via, Computed: computed})
}

// IsDigits reports whether s is one or more ASCII digits.
func IsDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
