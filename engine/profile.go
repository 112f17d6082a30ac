package engine

import (
	"embed"
	"sort"
)

// Profiles are named base policies in the policy format, embedded in
// the binary: the layer a policy.jsonc is applied on top of ("extends",
// or --profile for one run). "default" is the embedded default policy.
//
//go:embed profiles/*.jsonc
var profileFS embed.FS

// ExtendsNone is the "extends" value for a policy that starts empty.
const ExtendsNone = "none"

// DefaultProfile is the profile a policy.jsonc extends unless it says
// otherwise.
const DefaultProfile = "default"

// profileFile names the embedded file of each profile besides the
// default; positions in its rules use that name.
var profileFile = map[string]string{
	"read-only": "read-only.jsonc",
	"strict":    "strict.jsonc",
}

// ProfileNames lists the profiles, default first.
func ProfileNames() []string {
	names := []string{DefaultProfile}
	var rest []string
	for n := range profileFile {
		rest = append(rest, n)
	}
	sort.Strings(rest)
	return append(names, rest...)
}

// IsProfile reports whether name is a profile.
func IsProfile(name string) bool {
	_, ok := profileFile[name]
	return ok || name == DefaultProfile
}

// Profile returns a profile's text and the file name its positions use.
func Profile(name string) (File, bool) {
	if name == DefaultProfile {
		return File{Name: DefaultPolicyName, Data: DefaultPolicy()}, true
	}
	f, ok := profileFile[name]
	if !ok {
		return File{}, false
	}
	data, err := profileFS.ReadFile("profiles/" + f)
	if err != nil {
		return File{}, false
	}
	return File{Name: f, Data: data}, true
}
