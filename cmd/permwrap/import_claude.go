package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
		im.out.skip(fmt.Sprintf("additionalDirectories %q (%s)", d, src), "permwrap already lets the agent read everywhere but secrets; writes outside the workspace ask — add a write rule for the directory if it should not")
	}
	switch s.Permissions.DefaultMode {
	case "", "default", "acceptEdits":
	case "bypassPermissions":
		im.out.skip(fmt.Sprintf("defaultMode %q (%s)", s.Permissions.DefaultMode, src), "yolo is never imported; pass --yolo for a run if you mean it")
	case "plan":
		im.out.skip(fmt.Sprintf("defaultMode %q (%s)", s.Permissions.DefaultMode, src), "use --profile read-only for a run that only looks")
	default:
		im.out.skip(fmt.Sprintf("defaultMode %q (%s)", s.Permissions.DefaultMode, src), "Claude Code's prompt mode has no permwrap equivalent")
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
	default:
		im.out.skip(what, "a tool inside the agent: permwrap sees the files, programs and commands it uses, not the call itself")
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
