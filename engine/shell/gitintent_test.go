package shell

import (
	"slices"
	"testing"
)

func TestGitLevenshtein(t *testing.T) {
	var rows [3][]int
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"pushh", "push", 3}, // a deletion
		{"pusx", "push", 2},  // a substitution
		{"psuh", "push", 0},  // a swap
		{"pus", "push", 1},   // an insertion
		{"", "abc", 3},       // insertions only
		{"abc", "", 9},       // deletions only
		{"lfs", "push", 5},   // two substitutions and an insertion
		{"statsu", "status", 0},
		{"send-pakc", "send-pack", 0},
	} {
		if got := gitLevenshtein(c.a, c.b, &rows); got != c.want {
			t.Errorf("%q → %q: %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestGitAutocorrect: the commands git may run for an unknown subcommand
// are those at its best similarity, below the floor.
func TestGitAutocorrect(t *testing.T) {
	for _, c := range []struct {
		typed string
		want  []string
	}{
		{"pushh", []string{"push"}},
		{"psuh", []string{"push"}},
		{"statsu", []string{"status"}},
		{"send-pakc", []string{"send-pack"}},
		{"lfs", []string{"refs"}},      // push is similar too, but refs (and log) are nearer
		{"push", nil},                  // a command is never autocorrected
		{"frobnicate-everything", nil}, // nothing is near enough
		{"", nil},
	} {
		if got := gitAutocorrect(c.typed); !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.typed, got, c.want)
		}
	}
}
