package engine

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/tailscale/hujson"
)

// ErrPolicyUnparseable is returned by AppendRule for a policy file that is
// not JSONC, or that the loader would reject: permwrap will not rewrite a
// file it cannot read back.
var ErrPolicyUnparseable = errors.New("the policy file is not a valid policy")

// AppendRule returns the policy text src with one rule added to its
// "permission" object — what a person's "always allow" / "always deny" at
// the prompt writes — preceded by comment, a single line (say when and
// for which request). Everything else in the file is kept byte for byte:
// comments, layout, key order, trailing commas.
//
//   - The rule goes at the end of its surface's object, indented like its
//     siblings; a missing surface or "permission" object is added.
//   - A surface written as one action ("exec": "allow") becomes the object
//     it abbreviates ({"*": "allow", …}).
//   - A pattern that is already there gets the new action (its reason, if
//     any, is kept), so the file never holds a duplicate key.
//
// The result is checked with the loader's own parser (name and env as the
// loader would use them; empty env fields are filled as the loader fills
// them) and must hold the rule; otherwise AppendRule
// returns an error and no text. It is pure: no I/O.
func AppendRule(src []byte, name string, r Rule, comment string, env Env) ([]byte, error) {
	if r.Surface == SurfaceInvalid || r.Surface >= numSurfaces {
		return nil, fmt.Errorf("rule without a surface")
	}
	if r.Action != Allow && r.Action != Deny && r.Action != Ask {
		return nil, fmt.Errorf("rule without an action")
	}
	if strings.TrimSpace(r.Pattern) != r.Pattern || r.Pattern == "" {
		return nil, fmt.Errorf("pattern %q is empty or has spaces at its ends", r.Pattern)
	}
	env = FillEnv(env) // as the loader does
	if _, err := parseConfig(name, src, kindGlobal, env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPolicyUnparseable, err)
	}
	v, err := hujson.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPolicyUnparseable, err)
	}
	top, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("%w: the top level is not an object", ErrPolicyUnparseable)
	}
	comment = oneLineComment(comment)
	action := hujson.String(r.Action.String())

	perm := memberOf(top, "permission")
	if perm == nil {
		perm = appendObject(top, "permission", "")
	}
	pobj, ok := perm.Value.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("%w: \"permission\" is not an object", ErrPolicyUnparseable)
	}
	permIndent, _ := indentOf(perm.Name.BeforeExtra)
	surface := r.Surface.String()
	sm := memberOf(pobj, surface)
	if sm == nil {
		sm = appendObject(pobj, surface, permIndent)
	}
	surfaceIndent, onItsLine := indentOf(sm.Name.BeforeExtra)
	if lit, isLit := sm.Value.Value.(hujson.Literal); isLit {
		// "exec": "allow" is {"*": "allow"}: spell it out to add to it,
		// on lines when the surface has a line of its own.
		before, after := " ", " "
		if onItsLine {
			before, after = "\n"+surfaceIndent+"  ", "\n"+surfaceIndent
		}
		obj := &hujson.Object{AfterExtra: hujson.Extra(after)}
		obj.Members = append(obj.Members, hujson.ObjectMember{
			Name:  hujson.Value{BeforeExtra: hujson.Extra(before), Value: hujson.String("*")},
			Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: lit},
		})
		sm.Value.Value = obj
	}
	sobj, ok := sm.Value.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not an object", ErrPolicyUnparseable, surface)
	}
	if m := memberOf(sobj, r.Pattern); m != nil {
		setAction(&m.Value, action)
		if comment != "" {
			prependComment(&m.Name, comment)
		}
	} else {
		appendMember(sobj, r.Pattern, hujson.Value{Value: action}, comment, surfaceIndent)
	}

	out := v.Pack()
	fc, err := parseConfig(name, out, kindGlobal, env)
	if err != nil {
		return nil, fmt.Errorf("the edited policy would not load (nothing written): %v", err)
	}
	for _, rr := range fc.rules {
		if rr.rule.Surface == r.Surface && rr.rule.Pattern == r.Pattern && rr.rule.Action == r.Action {
			return out, nil
		}
	}
	return nil, fmt.Errorf("the edited policy does not hold %s (nothing written)", r.String())
}

// RuleMatcher compiles pattern on surface s as the policy loader would
// (path patterns with ~ and ${VAR} expanded from env), for matching values
// against a rule that is not part of a compiled Policy — an "always deny"
// a person just gave, until the file is next loaded.
func RuleMatcher(s Surface, pattern string, env Env) (func(value string) bool, error) {
	if s == SurfaceBash {
		bp, err := compileBashPattern(pattern)
		if err != nil {
			return nil, err
		}
		return bp.match, nil
	}
	if s == SurfaceInvalid || s >= numSurfaces {
		return nil, fmt.Errorf("invalid surface %v", s)
	}
	exp, err := expandPattern(pattern, FillEnv(env))
	if err != nil {
		return nil, err
	}
	pp, err := compilePathPattern(exp)
	if err != nil {
		return nil, err
	}
	return pp.match, nil
}

// appendObject adds name: {} at the end of obj (see appendMember) and
// returns the new member; outer is the indentation of obj's own line.
func appendObject(obj *hujson.Object, name, outer string) *hujson.ObjectMember {
	appendMember(obj, name, hujson.Value{Value: &hujson.Object{}}, "", outer)
	m := &obj.Members[len(obj.Members)-1]
	if ind, ok := indentOf(m.Name.BeforeExtra); ok {
		m.Value.Value.(*hujson.Object).AfterExtra = hujson.Extra("\n" + ind)
	}
	return m
}

// member is the value of obj's member named name, or nil.
func member(obj *hujson.Object, name string) *hujson.Value {
	if m := memberOf(obj, name); m != nil {
		return &m.Value
	}
	return nil
}

func memberOf(obj *hujson.Object, name string) *hujson.ObjectMember {
	for i := range obj.Members {
		if l, ok := obj.Members[i].Name.Value.(hujson.Literal); ok && l.String() == name {
			return &obj.Members[i]
		}
	}
	return nil
}

// setAction gives a rule value the action: a plain action string is
// replaced; in {"action": …, "reason": …} only the action changes.
func setAction(v *hujson.Value, action hujson.Literal) {
	if obj, ok := v.Value.(*hujson.Object); ok {
		if a := member(obj, "action"); a != nil {
			a.Value = action
			return
		}
	}
	v.Value = action
}

// oneLineComment makes comment safe as a // comment: one line, no
// control characters.
func oneLineComment(c string) string {
	c = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, c)
	return strings.TrimSpace(c)
}

// indentOf is the indentation of the line a member's name starts on, as
// its BeforeExtra shows it ("\n    " → "    "); ok is false when the
// member shares its line with what precedes it.
func indentOf(before hujson.Extra) (string, bool) {
	i := bytes.LastIndexByte(before, '\n')
	if i < 0 {
		return "", false
	}
	ind := before[i+1:]
	if len(bytes.Trim(ind, " \t")) != 0 {
		return "", false
	}
	return string(ind), true
}

// prependComment puts "// comment" on its own line before a member's
// name, at the name's indentation.
func prependComment(name *hujson.Value, comment string) {
	ind, ok := indentOf(name.BeforeExtra)
	if !ok {
		name.BeforeExtra = append(name.BeforeExtra, []byte("/* "+blockSafe(comment)+" */ ")...)
		return
	}
	var b []byte
	b = append(b, name.BeforeExtra...)
	b = append(b, "// "+comment+"\n"+ind...)
	name.BeforeExtra = b
}

func blockSafe(c string) string { return strings.ReplaceAll(c, "*/", "* /") }

// appendMember adds name: value at the end of obj, with comment above it,
// laid out like the members already there: one per line at their
// indentation, or inline when obj is written on one line. A trailing
// comma stays if the object had one; a comment that followed the old
// last member on its line stays on that line. outer is the indentation
// of the line obj opens on, for an empty obj.
func appendMember(obj *hujson.Object, name string, value hujson.Value, comment, outer string) {
	nameV := hujson.Value{Value: hujson.String(name)}
	value.BeforeExtra = hujson.Extra(" ")
	n := len(obj.Members)
	trailing := n > 0 && obj.Members[n-1].Value.AfterExtra != nil

	// Where the new member's line goes, and at what indentation.
	ind, multiline := "", false
	if n > 0 {
		ind, multiline = indentOf(obj.Members[n-1].Name.BeforeExtra)
	} else if closing, ok := indentOf(obj.AfterExtra); ok {
		// An empty object laid out on lines: one level deeper than its
		// closing brace.
		ind, multiline = closing+"  ", true
	} else if len(bytes.TrimSpace(obj.AfterExtra)) == 0 {
		// {}: open it up, one level deeper than the line it is on.
		ind, multiline = outer+"  ", true
		obj.AfterExtra = hujson.Extra("\n" + outer)
	}
	if !multiline {
		pre := " "
		if comment != "" {
			pre = " /* " + blockSafe(comment) + " */ "
		}
		nameV.BeforeExtra = hujson.Extra(pre)
		if n == 0 {
			obj.AfterExtra = hujson.Extra(" ")
		}
	} else {
		// What followed the old last member on its own line (", // why")
		// stays there; the rest (the newline before the closing brace)
		// stays before the brace.
		head, tail := splitLine(obj.AfterExtra)
		if n == 0 {
			head = nil
		}
		var before []byte
		before = append(before, head...)
		before = append(before, '\n')
		if comment != "" {
			before = append(before, ind+"// "+comment+"\n"...)
		}
		before = append(before, ind...)
		nameV.BeforeExtra = before
		if n > 0 {
			obj.AfterExtra = tail
		}
	}
	m := hujson.ObjectMember{Name: nameV, Value: value}
	if trailing {
		m.Value.AfterExtra = hujson.Extra{}
	}
	obj.Members = append(obj.Members, m)
}

// splitLine splits extra at its first newline: what is still on the
// current line, and the rest from the newline on. Extra holding a block
// comment is not split (a newline may be inside it).
func splitLine(extra hujson.Extra) (head, tail hujson.Extra) {
	i := bytes.IndexByte(extra, '\n')
	if i < 0 || bytes.Contains(extra[:i], []byte("/*")) {
		return nil, extra
	}
	return extra[:i], extra[i:]
}
