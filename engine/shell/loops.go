package shell

import (
	"mvdan.cc/sh/v3/syntax"
)

// forgetChanged drops what a loop may change (variables it assigns or
// reads into, the directory if it cd's) before walking it, since every
// iteration after the first starts from the changed state.
func (w *walker) forgetChanged(loop syntax.Node, sc *scope) {
	if w.loops == nil {
		w.loops = summarizeLoops(w.file)
	}
	ls := w.loops[loop]
	if ls == nil {
		sc.vars, sc.dir = nil, "" // not summarised: assume the worst
		sc.args, sc.argsKnown = nil, false
		return
	}
	if ls.cd {
		sc.dir = ""
	}
	if ls.args {
		sc.args, sc.argsKnown = nil, false
	}
	if ls.all {
		sc.vars = nil
		return
	}
	for n := range ls.names {
		sc.forget(n)
	}
}

// loopSummary is what a loop or function body may change.
type loopSummary struct {
	names map[string]bool
	all   bool // too many names to list: every variable may change
	cd    bool
	args  bool // shift, set, source or eval: the positional parameters
}

// maxLoopNames bounds a loop summary; a loop assigning more names than
// this is taken to change every variable.
const maxLoopNames = 128

func (ls *loopSummary) addName(n string) {
	if ls.all || n == "" {
		return
	}
	if ls.names == nil {
		ls.names = make(map[string]bool)
	}
	ls.names[n] = true
	if len(ls.names) > maxLoopNames {
		ls.all, ls.names = true, nil
	}
}

func (ls *loopSummary) absorb(inner *loopSummary) {
	ls.cd = ls.cd || inner.cd
	ls.args = ls.args || inner.args
	if inner.all {
		ls.all, ls.names = true, nil
		return
	}
	for n := range inner.names {
		ls.addName(n)
	}
}

// summarizeLoops computes every loop's summary in one walk of the file:
// events go to the innermost loop, whose summary is folded into its
// parent's when the walk leaves it. Walking each loop's subtree on its
// own would cost the nesting depth times the script size.
func summarizeLoops(f *syntax.File) map[syntax.Node]*loopSummary {
	out := make(map[syntax.Node]*loopSummary)
	if f == nil {
		return out
	}
	var nodes []syntax.Node
	var loops []*loopSummary
	top := func() *loopSummary {
		if len(loops) == 0 {
			return nil
		}
		return loops[len(loops)-1]
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			last := nodes[len(nodes)-1]
			nodes = nodes[:len(nodes)-1]
			switch last.(type) {
			case *syntax.WhileClause, *syntax.ForClause, *syntax.FuncDecl:
				inner := loops[len(loops)-1]
				loops = loops[:len(loops)-1]
				if t := top(); t != nil {
					t.absorb(inner)
				}
			}
			return true
		}
		nodes = append(nodes, n)
		switch n := n.(type) {
		case *syntax.WhileClause, *syntax.ForClause, *syntax.FuncDecl:
			ls := &loopSummary{}
			out[n] = ls
			loops = append(loops, ls)
		}
		ls := top()
		if ls == nil {
			return true
		}
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Name != nil {
				ls.addName(n.Name.Value)
			}
		case *syntax.WordIter:
			if n.Name != nil {
				ls.addName(n.Name.Value)
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				break
			}
			switch n.Args[0].Lit() {
			case "cd", "pushd", "popd":
				ls.cd = true
			case "shift", "set":
				ls.args = true
			case "eval", "source", ".":
				// A same-shell body read at run time or from a file
				// may change anything.
				ls.cd, ls.args, ls.all, ls.names = true, true, true, nil
			case "read", "mapfile", "readarray", "getopts", "unset", "printf", "wait":
				for _, a := range n.Args[1:] {
					ls.addName(a.Lit())
				}
			}
		}
		return true
	})
	return out
}
