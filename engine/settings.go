package engine

import (
	"strconv"
	"strings"
	"time"

	"github.com/tailscale/hujson"
)

// topKey is one top-level key of a configuration file and its value.
type topKey struct {
	key string
	off int // where the key is
	val *hujson.Value
}

// topLevelKeys reads each top-level key a configuration file may hold.
// Only the global policy and the profiles hold settings; the others hold
// "permission", and hard-guards.jsonc "protectedWrites" too.
var topLevelKeys = map[string]func(p *parser, m topKey, kind fileKind, fc *fileConfig){
	"permission":      func(p *parser, m topKey, kind fileKind, fc *fileConfig) { p.permission(m.val, kind, fc) },
	"protectedWrites": (*parser).protectedWrites,
	"yoloMode": func(p *parser, m topKey, _ fileKind, fc *fileConfig) {
		fc.yolo, _ = p.boolean(m.val, m.key)
		fc.settings.Yolo = fc.yolo
	},
	"authorizerChain": (*parser).authorizerChain,
	"authorizers":     (*parser).authorizers,
	"modelDelegation": (*parser).modelDelegation,
	"askTimeout":      (*parser).askTimeout,
	"denialNotice": func(p *parser, m topKey, _ fileKind, fc *fileConfig) {
		if s, ok := p.oneOf(m, "stderr", "off"); ok {
			fc.settings.DenialNotice = s
		}
	},
	"proxy": func(p *parser, m topKey, _ fileKind, fc *fileConfig) {
		if s, ok := p.oneOf(m, "env", "off"); ok {
			fc.settings.Proxy = s
		}
	},
	"listings": func(p *parser, m topKey, _ fileKind, fc *fileConfig) {
		if s, ok := p.oneOf(m, ListingsFree, ListingsJudged); ok {
			fc.settings.Listings = s
		}
	},
	"typoPaths": func(p *parser, m topKey, _ fileKind, fc *fileConfig) {
		for _, e := range p.array(m.val, m.key) {
			if tp, ok := p.typoPath(&e); ok {
				fc.settings.TypoPaths = append(fc.settings.TypoPaths, tp)
			}
		}
	},
	"log":     func(p *parser, m topKey, _ fileKind, fc *fileConfig) { p.logSettings(m.val, &fc.settings.Log) },
	"extends": (*parser).extends,
	"events":  (*parser).eventsSettings,
}

// topLevel reads one top-level key, if kind may hold it.
func (p *parser) topLevel(m topKey, kind fileKind, fc *fileConfig) {
	if kind == kindManaged {
		p.managedKey(m, fc) // managed.go
		return
	}
	if kind != kindGlobal && kind != kindProfile && m.key != "permission" && !(kind == kindHardGuard && m.key == "protectedWrites") {
		switch kind {
		case kindScope:
			if m.key == "extends" {
				p.errorf(m.off, "key \"extends\" is not allowed in a --policy scope: a scope adds rules above the global policy and cannot change its base profile (save the file as policy.jsonc, or give the profile with --profile)")
				return
			}
			p.errorf(m.off, "key %q is not allowed in a --policy scope: settings come from the global policy.jsonc only", m.key)
		case kindProject:
			p.errorf(m.off, "key %q is not allowed in a project policy: it holds only \"permission\"; settings come from the global policy.jsonc", m.key)
		default:
			p.errorf(m.off, "key %q is not allowed in hard-guards.jsonc: it holds only \"permission\" and \"protectedWrites\"", m.key)
		}
		return
	}
	fc.set[m.key] = true
	read, ok := topLevelKeys[m.key]
	if !ok {
		p.errorf(m.off, "unknown key %q (want permission, extends, yoloMode, authorizerChain, authorizers, modelDelegation, askTimeout, denialNotice, proxy, listings, typoPaths, log, events)", m.key)
		return
	}
	read(p, m, kind, fc)
}

func (p *parser) protectedWrites(m topKey, kind fileKind, fc *fileConfig) {
	if kind != kindHardGuard && kind != kindManaged {
		p.errorf(m.off, "unknown key %q: protectedWrites belong in hard-guards.jsonc", m.key)
		return
	}
	for _, e := range p.array(m.val, m.key) {
		s, ok := p.str(&e, "a protectedWrites entry")
		if !ok {
			continue
		}
		if r, ok := p.rule(SurfaceWrite, s, Ask, "", e.StartOffset); ok {
			r.rule.Origin = OriginHardGuard
			fc.protected = append(fc.protected, r)
		}
	}
}

func (p *parser) authorizerChain(m topKey, _ fileKind, fc *fileConfig) {
	for _, e := range p.array(m.val, m.key) {
		if s, ok := p.str(&e, "an authorizerChain entry"); ok {
			if s == "" {
				p.errorf(e.StartOffset, "empty authorizer name")
				continue
			}
			fc.settings.AuthorizerChain = append(fc.settings.AuthorizerChain, s)
		}
	}
}

func (p *parser) authorizers(m topKey, _ fileKind, fc *fileConfig) {
	obj, ok := p.object(m.val, m.key)
	if !ok {
		return
	}
	for _, am := range p.members(obj) {
		name := am.Name.Value.(hujson.Literal).String()
		if spec, ok := p.authorizer(&am.Value, name); ok {
			fc.settings.Authorizers[name] = spec
		}
	}
}

func (p *parser) modelDelegation(m topKey, _ fileKind, fc *fileConfig) {
	obj, ok := p.object(m.val, m.key)
	if !ok {
		return
	}
	for _, dm := range p.members(obj) {
		k := dm.Name.Value.(hujson.Literal).String()
		switch k {
		case "allowedSurfaces":
			fc.settings.ModelDelegation.AllowedSurfaces = p.surfaces(&dm.Value, k)
		case "excludedSurfaces":
			fc.settings.ModelDelegation.ExcludedSurfaces = p.surfaces(&dm.Value, k)
		default:
			p.errorf(dm.Name.StartOffset, "unknown key %q in modelDelegation (want allowedSurfaces, excludedSurfaces)", k)
		}
	}
}

func (p *parser) askTimeout(m topKey, _ fileKind, fc *fileConfig) {
	s, ok := p.str(m.val, m.key)
	if !ok {
		return
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		p.errorf(m.val.StartOffset, "askTimeout: %q is not a duration (write e.g. \"10m\", \"90s\")", s)
	case d <= 0:
		p.errorf(m.val.StartOffset, "askTimeout must be positive")
	default:
		fc.settings.AskTimeout = d
	}
}

// oneOf is a string setting that must be a or b.
func (p *parser) oneOf(m topKey, a, b string) (string, bool) {
	s, ok := p.str(m.val, m.key)
	if !ok {
		return "", false
	}
	if s != a && s != b {
		p.errorf(m.val.StartOffset, "%s: %q is not %q or %q", m.key, s, a, b)
		return "", false
	}
	return s, true
}

func (p *parser) extends(m topKey, kind fileKind, fc *fileConfig) {
	if kind == kindProfile {
		p.errorf(m.off, "a profile does not extend another")
		return
	}
	if s, ok := p.str(m.val, m.key); ok {
		if s != ExtendsNone && !IsProfile(s) {
			p.errorf(m.val.StartOffset, "extends: unknown profile %q (want %s or %q)", s, strings.Join(ProfileNames(), ", "), ExtendsNone)
			return
		}
		fc.extends, fc.extendsAt = s, p.pos(m.val.StartOffset)
	}
}

func (p *parser) surfaces(v *hujson.Value, what string) []Surface {
	var out []Surface
	for _, e := range p.array(v, what) {
		s, ok := p.str(&e, what+" entry")
		if !ok {
			continue
		}
		sf, ok := ParseSurface(s)
		if !ok {
			p.errorf(e.StartOffset, "unknown surface %q (want read, write, exec, bash, path or net)", s)
			continue
		}
		out = append(out, sf)
	}
	return out
}

func (p *parser) authorizer(v *hujson.Value, name string) (AuthorizerSpec, bool) {
	spec := AuthorizerSpec{Timeout: DefaultAuthorizerTimeout}
	obj, ok := p.object(v, "authorizer "+strconv.Quote(name))
	if !ok {
		return spec, false
	}
	n := len(p.errs)
	hasCmd := false
	var remote RemoteSpec
	var remoteKeys []hujson.ObjectMember // url, headers, caFile
	var timeout *hujson.Value
	for _, m := range p.members(obj) {
		k := m.Name.Value.(hujson.Literal).String()
		switch k {
		case "command":
			hasCmd = true
			for _, e := range p.array(&m.Value, "command") {
				if s, ok := p.str(&e, "a command word"); ok {
					spec.Command = append(spec.Command, s)
				}
			}
			if len(spec.Command) == 0 && n == len(p.errs) {
				p.errorf(m.Value.StartOffset, "authorizer %q: command must name a program", name)
			}
		case "url", "headers", "caFile":
			remoteKeys = append(remoteKeys, m)
			p.remoteKey(k, &m.Value, name, &remote)
		case "timeoutMs":
			timeout = &m.Value
			if ms, ok := p.integer(&m.Value, "timeoutMs", 1); ok {
				spec.Timeout = time.Duration(ms) * time.Millisecond
			}
		default:
			p.errorf(m.Name.StartOffset, "unknown key %q in authorizer %q (want command or url, timeoutMs; a url's headers, caFile)", k, name)
		}
	}
	p.remoteOrCommand(v, name, hasCmd, remoteKeys, timeout, &remote, &spec)
	return spec, n == len(p.errs)
}

func (p *parser) typoPath(v *hujson.Value) (TypoPath, bool) {
	var tp TypoPath
	obj, ok := p.object(v, "a typoPaths entry")
	if !ok {
		return tp, false
	}
	n := len(p.errs)
	var hasFrom, hasTo bool
	for _, m := range p.members(obj) {
		k := m.Name.Value.(hujson.Literal).String()
		switch k {
		case "from":
			hasFrom = true
			if s, ok := p.str(&m.Value, "from"); ok {
				tp.From = s
				if r, ok := p.rule(SurfacePath, s, Ask, "", m.Value.StartOffset); ok {
					tp.pat = r.path
				}
			}
		case "to":
			hasTo = true
			if s, ok := p.str(&m.Value, "to"); ok {
				exp, err := expandPattern(s, p.env)
				if err != nil {
					p.errorf(m.Value.StartOffset, "to %q: %v", s, err)
				}
				tp.To = exp
			}
		default:
			p.errorf(m.Name.StartOffset, "unknown key %q in a typoPaths entry (want from, to)", k)
		}
	}
	if !hasFrom || !hasTo {
		p.errorf(v.StartOffset, "a typoPaths entry needs both \"from\" and \"to\"")
	}
	return tp, n == len(p.errs)
}

func (p *parser) logSettings(v *hujson.Value, ls *LogSettings) {
	obj, ok := p.object(v, "log")
	if !ok {
		return
	}
	for _, m := range p.members(obj) {
		k := m.Name.Value.(hujson.Literal).String()
		switch k {
		case "path":
			if s, ok := p.str(&m.Value, "log.path"); ok {
				exp, err := expandPattern(s, p.env)
				switch {
				case err != nil:
					p.errorf(m.Value.StartOffset, "log.path %q: %v", s, err)
				case !strings.HasPrefix(exp, "/"):
					p.errorf(m.Value.StartOffset, "log.path %q must be absolute (~ and ${HOME} are allowed)", s)
				default:
					ls.Path = exp
				}
			}
		case "readAllows":
			if s, ok := p.str(&m.Value, "log.readAllows"); ok {
				switch s {
				case "summary", "each", "none":
					ls.ReadAllows = s
				case "all": // the old name of "each"
					ls.ReadAllows = "each"
				default:
					p.errorf(m.Value.StartOffset, "log.readAllows: %q is not \"summary\", \"each\" or \"none\"", s)
				}
			}
		case "scratchWrites":
			if s, ok := p.str(&m.Value, "log.scratchWrites"); ok {
				switch s {
				case "summary", "each":
					ls.ScratchWrites = s
				default:
					p.errorf(m.Value.StartOffset, "log.scratchWrites: %q is not \"summary\" or \"each\"", s)
				}
			}
		case "rotateMB":
			if n, ok := p.integer(&m.Value, "log.rotateMB", 0); ok {
				ls.RotateBytes = n << 20
			}
		case "keep":
			if n, ok := p.integer(&m.Value, "log.keep", 0); ok {
				if n > MaxLogKeep {
					p.errorf(m.Value.StartOffset, "log.keep: at most %d older files", MaxLogKeep)
				} else {
					ls.Keep = int(n)
				}
			}
		case "fieldWidth":
			if n, ok := p.integer(&m.Value, "log.fieldWidth", 16); ok {
				ls.FieldWidth = int(n)
			}
		default:
			p.errorf(m.Name.StartOffset, "unknown key %q in log (want path, readAllows, scratchWrites, fieldWidth, rotateMB, keep)", k)
		}
	}
}
