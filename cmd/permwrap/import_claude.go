package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/permwrap/permwrap/engine"
)

// claudeSettings is the part of a Claude Code settings file the importer
// reads (https://code.claude.com/docs/en/settings, "permissions").
type claudeSettings struct {
	Permissions struct {
		Allow                        []string `json:"allow"`
		Ask                          []string `json:"ask"`
		Deny                         []string `json:"deny"`
		AdditionalDirectories        []string `json:"additionalDirectories"`
		DefaultMode                  string   `json:"defaultMode"`
		DisableBypassPermissionsMode string   `json:"disableBypassPermissionsMode"`
	} `json:"permissions"`
	Hooks   json.RawMessage `json:"hooks"`
	Sandbox json.RawMessage `json:"sandbox"`
}

// claudeTools are Claude Code's own tool names, as its permission rules
// spell them: a rule naming another is a typo or a newer tool, and says
// so.
var claudeTools = map[string]bool{
	"Bash": true, "Read": true, "Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true,
	"NotebookRead": true, "WebFetch": true, "WebSearch": true, "Glob": true, "Grep": true, "LS": true,
	"Task": true, "Agent": true, "TodoWrite": true, "TodoRead": true, "BashOutput": true, "KillShell": true,
	"KillBash": true, "ExitPlanMode": true, "SlashCommand": true, "Skill": true, "ListMcpResourcesTool": true,
	"ReadMcpResourceTool": true,
}

// claudeModes are the nearest permwrap setting to each of Claude Code's
// permission modes (permissions.defaultMode).
var claudeModes = map[string]string{
	"acceptEdits":       "Claude Code then takes file edits (and mkdir, touch, mv, cp) in its working directories without asking; permwrap's default profile already allows writes in the workspace (\"${WORKSPACE}/**\": \"allow\") and asks elsewhere",
	"plan":              "Claude Code then only reads; the nearest is a run with --profile read-only",
	"auto":              "Claude Code's classifier then answers for you; permwrap has none of its own: an authorizer chain can put a reviewing program before the person (docs/authorizers.md)",
	"dontAsk":           "Claude Code then denies what would ask; permwrap does the same when no terminal can answer (a headless run), or write those rules as \"deny\"",
	"bypassPermissions": "yolo is never imported; pass --yolo for a run if you mean it (deny rules, hard guards and protected writes still hold)",
}

// claudeCode imports Claude Code settings files.
func (im *importer) claudeCode(files []string) error {
	im.tool = "Claude Code"
	if len(files) == 0 {
		files = existing(
			filepath.Join(im.env.Home, ".claude", "settings.json"),
			filepath.Join(im.env.Workspace, ".claude", "settings.json"),
			filepath.Join(im.env.Workspace, ".claude", "settings.local.json"),
		)
		if len(files) == 0 {
			return fmt.Errorf("no Claude Code settings found (looked for ~/.claude/settings.json and .claude/settings.json, .claude/settings.local.json in %s); name the files", im.env.Workspace)
		}
	}
	im.header("claude-code", files)
	im.out.note("Claude Code's deny > ask > allow order is kept: a rule inside a stricter one")
	im.out.note("is left out (listed below). Claude Code checks its own tools; permwrap checks")
	im.out.note("every file, program and command of the agent and what it starts, so these")
	im.out.note("rules now hold for a `bash -c`, a script or a Python one-liner as well.")
	for _, f := range files {
		if err := im.claudeFile(f); err != nil {
			return err
		}
	}
	return nil
}

func (im *importer) claudeFile(name string) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	// Settings are JSON; comments and trailing commas are tolerated.
	std, err := hujson.Standardize(data)
	if err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	var s claudeSettings
	if err := json.Unmarshal(std, &s); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	abs, _ := filepath.Abs(name)
	root := im.claudeRoot(abs)
	src := im.display(abs)
	for _, list := range []struct {
		rules  []string
		action string
	}{{s.Permissions.Deny, "deny"}, {s.Permissions.Ask, "ask"}, {s.Permissions.Allow, "allow"}} {
		for _, r := range list.rules {
			im.claudeRule(r, list.action, root, src)
		}
	}
	for _, d := range s.Permissions.AdditionalDirectories {
		im.out.skip(fmt.Sprintf("permissions.additionalDirectories %q (%s)", d, src),
			fmt.Sprintf("reads are allowed everywhere but secrets, writes outside the workspace ask; to write there freely: \"write\": { %s: \"allow\" }", jsonString(im.claudeDir(d, root)+"/**")))
	}
	if m := s.Permissions.DefaultMode; m != "" && m != "default" {
		what := fmt.Sprintf("permissions.defaultMode %q (%s)", m, src)
		if why, ok := claudeModes[m]; ok {
			im.out.skip(what, why)
		} else {
			im.out.skip(what, "not a permission mode this import knows (default, acceptEdits, plan, auto, dontAsk, bypassPermissions); permwrap asks whenever a rule says ask")
		}
	}
	if s.Permissions.DisableBypassPermissionsMode != "" {
		im.out.skip(fmt.Sprintf("permissions.disableBypassPermissionsMode %q (%s)", s.Permissions.DisableBypassPermissionsMode, src), "permwrap has no yolo unless a run passes --yolo (or policy.jsonc says \"yoloMode\"); there is nothing to turn off")
	}
	others, perms := claudeOtherKeys(std)
	for _, k := range perms {
		im.out.skip(fmt.Sprintf("permissions.%s (%s)", k, src), "a permissions setting this import does not know; nothing imported")
	}
	if len(others) > 0 {
		im.out.skip(fmt.Sprintf("%s (%s)", strings.Join(others, ", "), src), "Claude Code's own settings, not rules about what the agent may touch")
	}
	if len(s.Hooks) > 0 && string(s.Hooks) != "null" && string(s.Hooks) != "{}" {
		im.out.skip("hooks ("+src+")", "hooks are Claude Code's; the commands they start are judged by permwrap like any other")
	}
	if len(s.Sandbox) > 0 && string(s.Sandbox) != "null" {
		im.out.skip("sandbox ("+src+")", "Claude Code's own sandbox settings; bubblewrap cannot run under Landlock, and permwrap is the sandbox here")
	}
	return nil
}

// claudeRoot is the directory a Claude Code "/path" pattern is relative
// to: ~/.claude for the user's settings, the project (the directory
// holding .claude/) for a project's, the workspace for any other file.
func (im *importer) claudeRoot(abs string) string {
	dir := filepath.Dir(abs)
	if filepath.Base(dir) == ".claude" {
		parent := filepath.Dir(dir)
		if parent == im.env.Home {
			return dir // user settings: ~/.claude
		}
		return parent
	}
	return im.env.Workspace
}

// claudeRule imports one "Tool(specifier)" rule.
func (im *importer) claudeRule(rule, action, root, src string) {
	tool, spec, hasSpec := strings.Cut(rule, "(")
	tool = strings.TrimSpace(tool)
	if hasSpec {
		if !strings.HasSuffix(spec, ")") {
			im.out.skip(fmt.Sprintf("%s %q (%s)", action, rule, src), "not a Tool(specifier) rule")
			return
		}
		spec = spec[:len(spec)-1]
	}
	what := fmt.Sprintf("%s %q (%s)", action, rule, src)
	comment := fmt.Sprintf("%s: %s", src, rule)
	switch tool {
	case "Bash":
		pat := "*"
		if hasSpec && spec != "" && spec != "*" {
			pat = claudeCommand(spec)
		}
		im.out.add(engine.SurfaceBash, pat, action, "", comment)
	case "Read", "Edit", "Write", "MultiEdit", "NotebookEdit":
		s := engine.SurfaceWrite
		if tool == "Read" {
			s = engine.SurfaceRead
		}
		pat := "*"
		if hasSpec && spec != "" {
			pat = im.claudePath(spec, root)
		}
		if hasSpec && strings.HasPrefix(spec, "/") && !strings.HasPrefix(spec, "//") {
			// Faithful, and rarely what was meant.
			why := fmt.Sprintf("a path starting with one / is relative to the settings' root in Claude Code, so it is %s here; if you meant the absolute path, Claude Code spells it %s(/%s) and permwrap %s", pat, tool, spec, spec)
			im.out.warn(what, why)
			comment += "\nWARNING: relative to " + im.relTo(root) + "; the absolute path is " + tool + "(/" + spec + ")"
		}
		im.out.add(s, pat, action, "", comment)
	case "WebFetch":
		host := "*"
		if hasSpec {
			d, ok := strings.CutPrefix(spec, "domain:")
			if !ok {
				im.out.skip(what, "only WebFetch(domain:...) rules name a host")
				return
			}
			host = d
		}
		if !im.net {
			im.noNet(what)
			return
		}
		im.out.add(netSurface(), host, action, "", comment)
	case "WebSearch":
		im.out.skip(what, "a search runs in Claude Code's service, not on this machine")
	case "Glob", "Grep", "LS", "NotebookRead":
		im.out.skip(what, "Claude Code's Read rules cover its searches; permwrap judges every file they open by the read rules (write the path as a Read rule, or \"read\": { PATTERN: \""+action+"\" })")
	default:
		switch {
		case strings.HasPrefix(tool, "mcp__"):
			im.out.skip(what, "an MCP tool: permwrap judges the files, programs and connections of the server when it runs under permwrap, not the call")
		case claudeTools[tool]:
			im.out.skip(what, "a tool inside the agent: permwrap sees the files, programs and commands it uses, not the call itself")
		default:
			im.out.skip(what, fmt.Sprintf("%q is not a Claude Code tool this import knows (Bash, Read, Edit, Write, WebFetch, …): a typo, or a newer tool; nothing imported", tool))
		}
	}
}

// claudeCommand turns a Bash(...) specifier into a command-line pattern:
// Claude Code's legacy prefix form "git push:*" becomes "git push *"
// (which matches "git push" too); its * wildcards mean what they mean
// here; a backslash is literal there and an escape here.
func claudeCommand(spec string) string {
	spec = strings.ReplaceAll(spec, `\`, `\\`)
	if p, ok := strings.CutSuffix(spec, ":*"); ok {
		return strings.TrimRight(p, " ") + " *"
	}
	return spec
}

// claudePath turns a Read/Edit specifier into a path pattern, with
// Claude Code's conventions: "//p" is absolute, "~/p" is in the home
// directory, "/p" is relative to the settings' root, and "p" or "./p" is
// relative to the project, where a pattern with no other "/" matches at
// any depth (gitignore).
func (im *importer) claudePath(spec, root string) string {
	switch {
	case strings.HasPrefix(spec, "//"):
		return "/" + strings.TrimLeft(spec, "/")
	case spec == "~" || strings.HasPrefix(spec, "~/"):
		return spec
	case strings.HasPrefix(spec, "/"):
		return im.relTo(root) + spec
	}
	rel := strings.TrimPrefix(spec, "./")
	if rel == "" || rel == "." {
		return "${WORKSPACE}/**"
	}
	if rel == "*" || rel == "**" {
		return "${WORKSPACE}/**"
	}
	dir := strings.TrimSuffix(rel, "/")
	if !strings.Contains(dir, "/") && !strings.HasPrefix(spec, "./") {
		// gitignore: a name with no slash matches at any depth.
		p := "${WORKSPACE}/**/" + dir
		if strings.HasSuffix(rel, "/") {
			p += "/**"
		}
		return p
	}
	p := "${WORKSPACE}/" + dir
	if strings.HasSuffix(rel, "/") {
		p += "/**"
	}
	return p
}

// netSurface is the network surface, where this permwrap has one.
func netSurface() engine.Surface {
	s, _ := engine.ParseSurface("net")
	return s
}

// claudeDir is an additionalDirectories entry as a policy names it: ~ and
// absolute paths as they are, others relative to the project (the
// settings' root for a project's settings).
func (im *importer) claudeDir(d, root string) string {
	d = strings.TrimRight(d, "/")
	switch {
	case d == "":
		return "/"
	case d == "~" || strings.HasPrefix(d, "~/"):
		return im.relTo(im.env.Home + d[1:])
	case filepath.IsAbs(d):
		return im.relTo(d)
	}
	base := im.env.Workspace
	if filepath.Base(root) != ".claude" {
		base = root
	}
	return im.relTo(filepath.Join(base, d))
}

// claudeRead are the top-level keys of a settings file the import reads
// (or reports on by name).
var claudeRead = map[string]bool{"permissions": true, "hooks": true, "sandbox": true, "$schema": true}

// claudeOtherKeys are the top-level keys of a settings file the import
// does not read, and the keys of "permissions" it does not know, each
// sorted.
func claudeOtherKeys(std []byte) (others, perms []string) {
	var top map[string]json.RawMessage
	if json.Unmarshal(std, &top) != nil {
		return nil, nil
	}
	for k := range top {
		if !claudeRead[k] {
			others = append(others, k)
		}
	}
	var perm map[string]json.RawMessage
	if json.Unmarshal(top["permissions"], &perm) == nil {
		for k := range perm {
			switch k {
			case "allow", "ask", "deny", "additionalDirectories", "defaultMode", "disableBypassPermissionsMode":
			default:
				perms = append(perms, k)
			}
		}
	}
	sort.Strings(others)
	sort.Strings(perms)
	return others, perms
}
