package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/permwrap/permwrap/engine"
)

// srtSettings is sandbox-runtime's settings file (~/.srt-settings.json,
// `srt --settings FILE`; its README, "Configuration").
type srtSettings struct {
	Network *struct {
		AllowedDomains      []string `json:"allowedDomains"`
		DeniedDomains       []string `json:"deniedDomains"`
		AllowUnixSockets    []string `json:"allowUnixSockets"`
		AllowAllUnixSockets bool     `json:"allowAllUnixSockets"`
		AllowLocalBinding   bool     `json:"allowLocalBinding"`
		HTTPProxyPort       int      `json:"httpProxyPort"`
		SocksProxyPort      int      `json:"socksProxyPort"`
	} `json:"network"`
	Filesystem *struct {
		DenyRead       []string `json:"denyRead"`
		AllowWrite     []string `json:"allowWrite"`
		DenyWrite      []string `json:"denyWrite"`
		AllowGitConfig bool     `json:"allowGitConfig"`
	} `json:"filesystem"`
	IgnoreViolations          map[string][]string `json:"ignoreViolations"`
	EnableWeakerNestedSandbox bool                `json:"enableWeakerNestedSandbox"`
}

// srt imports one sandbox-runtime settings file.
func (im *importer) srt(files []string) error {
	im.tool = "sandbox-runtime"
	name, err := im.srtFile(files)
	if err != nil {
		return err
	}
	s, err := readSrtSettings(name)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(name)
	im.out.note("Imported by `permwrap import srt` from " + im.display(abs) + ".")
	im.out.note("Relative paths are relative to the workspace (srt: the current directory);")
	im.out.note("a path means it and everything beneath it. denyWrite wins over allowWrite, as")
	im.out.note("in srt. srt's mandatory protections (shell start-up files, git hooks) are in")
	im.out.note("permwrap's default profile, which asks about them.")
	im.srtFilesystem(s)
	im.srtNetwork(s)
	im.srtIgnored(s)
	return nil
}

// srtFile is the one settings file to import: the one named, else
// ~/.srt-settings.json.
func (im *importer) srtFile(files []string) (string, error) {
	if len(files) == 0 {
		files = existing(filepath.Join(im.env.Home, ".srt-settings.json"))
		if len(files) == 0 {
			return "", errors.New("no ~/.srt-settings.json; name the settings file")
		}
	}
	if len(files) > 1 {
		return "", errors.New("srt takes one settings file")
	}
	return files[0], nil
}

// readSrtSettings reads a settings file (JSON with comments).
func readSrtSettings(name string) (srtSettings, error) {
	var s srtSettings
	data, err := os.ReadFile(name)
	if err != nil {
		return s, err
	}
	std, err := hujson.Standardize(data)
	if err != nil {
		return s, fmt.Errorf("%s: %v", name, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(std)))
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%s: %v", name, err)
	}
	return s, nil
}

// srtFilesystem imports the read and write rules.
func (im *importer) srtFilesystem(s srtSettings) {
	fs := s.Filesystem
	if fs == nil {
		return
	}
	for _, p := range fs.DenyRead {
		im.out.add(engine.SurfaceRead, im.srtPath(p), "deny", "", "srt filesystem.denyRead: "+p)
	}
	// srt denies every write it does not allow.
	im.out.addFallback(engine.SurfaceWrite, "deny", "outside sandbox-runtime's allowWrite", "srt: writes are denied unless allowed; the default profile's allows for tools' own state (caches, agents' state) are more specific and still apply")
	for _, p := range fs.AllowWrite {
		im.out.add(engine.SurfaceWrite, im.srtPath(p), "allow", "", "srt filesystem.allowWrite: "+p)
	}
	for _, p := range fs.DenyWrite {
		im.out.add(engine.SurfaceWrite, im.srtPath(p), "deny", "", "srt filesystem.denyWrite: "+p)
	}
	if fs.AllowGitConfig {
		im.out.skip("filesystem.allowGitConfig", "permwrap's default lets the workspace's .git/config be written; its hooks still ask")
	}
}

// srtNetwork imports the domains and Unix sockets (or, without net
// rules, says they were left out), and why the binding and proxy
// settings are left out.
func (im *importer) srtNetwork(s srtSettings) {
	n := s.Network
	if n == nil {
		return
	}
	if !im.net {
		for _, d := range n.AllowedDomains {
			im.noNet("network.allowedDomains " + d)
		}
		for _, d := range n.DeniedDomains {
			im.noNet("network.deniedDomains " + d)
		}
		for _, p := range n.AllowUnixSockets {
			im.noNet("network.allowUnixSockets " + p)
		}
	} else {
		ns := netSurface()
		im.out.addFallback(ns, "deny", "outside sandbox-runtime's allowedDomains", "srt: network access is denied unless allowed")
		for _, d := range n.AllowedDomains {
			im.out.add(ns, d, "allow", "", "srt network.allowedDomains")
		}
		for _, d := range n.DeniedDomains {
			im.out.add(ns, d, "deny", "", "srt network.deniedDomains")
		}
		for _, p := range n.AllowUnixSockets {
			// A socket is a file, not a tree: the path itself.
			im.out.add(ns, "unix:"+strings.TrimSuffix(im.srtPath(p), "/**"), "allow", "", "srt network.allowUnixSockets")
		}
	}
	if n.AllowLocalBinding {
		im.out.skip("network.allowLocalBinding", "permwrap does not judge TCP binds; Unix-socket binds are writes of the socket's path")
	}
	if n.AllowAllUnixSockets {
		im.out.skip("network.allowAllUnixSockets", "Unix sockets are judged by their path like any other file")
	}
	if n.HTTPProxyPort != 0 || n.SocksProxyPort != 0 {
		im.out.skip("network proxy ports", "permwrap runs its own egress proxy")
	}
}

// srtIgnored says why ignoreViolations and enableWeakerNestedSandbox are
// left out.
func (im *importer) srtIgnored(s srtSettings) {
	cmds := make([]string, 0, len(s.IgnoreViolations))
	for cmd := range s.IgnoreViolations {
		cmds = append(cmds, cmd)
	}
	sort.Strings(cmds)
	for _, cmd := range cmds {
		paths := s.IgnoreViolations[cmd]
		im.out.skip(fmt.Sprintf("ignoreViolations %q: %s", cmd, strings.Join(paths, ", ")), "srt only hides these reports; permwrap logs every decision (see permwrap log)")
	}
	if s.EnableWeakerNestedSandbox {
		im.out.skip("enableWeakerNestedSandbox", "permwrap needs no nested sandbox")
	}
}

// srtPath turns an srt path into a pattern: ~ and absolute paths as they
// are, anything else relative to the workspace; a literal path means it
// and everything beneath it (srt's paths name directories or files), a
// glob (srt on macOS) stays a glob.
func (im *importer) srtPath(p string) string {
	var pat string
	switch {
	case p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, "/"):
		pat = strings.TrimRight(p, "/")
		if pat == "" {
			pat = "/"
		}
	default:
		rel := strings.TrimPrefix(strings.TrimRight(p, "/"), "./")
		if rel == "." || rel == "" {
			pat = "${WORKSPACE}"
		} else {
			pat = "${WORKSPACE}/" + rel
		}
	}
	if strings.ContainsAny(p, "*?[") {
		return pat
	}
	if pat == "/" {
		return "/**"
	}
	return pat + "/**"
}
