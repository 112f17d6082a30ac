package engine

import "testing"

func TestSaveTarget(t *testing.T) {
	for _, c := range []struct {
		name, target string
	}{
		{"w.txt.tmp.31016.43ba22cd161f", "w.txt"},                                   // Claude Code
		{"projects.json.3fc56420-1378-4d4f-a9c3-0cdb0d29acc5.tmp", "projects.json"}, // Gemini CLI
		{"package.json.1234567890", "package.json"},                                 // write-file-atomic
		{"settings.json.tmp", "settings.json"},
		{".bashrc.tmp.1.abcdef", ".bashrc"}, // a dotfile
		{".w.txt.tmp", ".w.txt"},            // hidden temporary
		{"Makefile.TMP", "Makefile"},
		{"a.b.c.tmp.123", "a.b.c"},
		// Not temporary files of anything.
		{"w.txt", ""},
		{"notes.md", ""},
		{"archive.tar.gz", ""},
		{"w.txt~", ""},
		{"w.txt.bak", ""},
		{"v1.2.3", ""},              // a version, too short
		{"image.20240101", "image"}, // a date-like counter: recognised (a stamp)
		{".tmp", ""},
		{"tmp", ""},
		{"..tmp", ""},
		{"x.abc", ""},
		{"x.cafebabe-deadbeef", "x"},
		{"report.final", ""},
	} {
		got, ok := SaveTarget(c.name)
		if ok != (c.target != "") || got != c.target {
			t.Errorf("SaveTarget(%q) = %q, %v; want %q", c.name, got, ok, c.target)
		}
	}
}
