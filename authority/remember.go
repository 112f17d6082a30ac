package authority

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// PolicyFile is the user's policy file as permwrap loaded it: where a
// person's "always allow" and "always deny" at the prompt are written.
// The loader says where it is and what it held; nothing else writes it.
type PolicyFile struct {
	Path   string     // the policy.jsonc the loader read, or would have read
	Loaded []byte     // its content when loaded; nil when it did not exist
	Seed   []byte     // what a missing file starts as (the caller's choice: today the embedded default, which a policy.jsonc replaces)
	Env    engine.Env // to check patterns as the loader will

	now func() time.Time
	mu  sync.Mutex
}

// SavedRule is a rule a person's "always" wrote to the policy file.
type SavedRule struct {
	Surface engine.Surface
	Pattern string
	Action  engine.Action
	File    string
}

// Remember appends rules to the file, each with a comment naming the
// date and the request, keeping the file's comments and layout
// (engine.AppendRule), and replaces the file atomically, once for all of
// them: readers see the old file or the new one, never a part, and never
// some of the rules without the others. It refuses — and says why, writing nothing — when
// the file changed since permwrap loaded it (someone else's edit would be
// lost, or a rule appended to text nobody has checked), when it cannot be
// parsed, or when the result would not load.
//
// A symlinked policy.jsonc (a dotfiles repository) is written through:
// the link stays a link.
func (f *PolicyFile) Remember(rules []engine.Rule, id RequestID) error {
	if f == nil || f.Path == "" {
		return errors.New("no policy file to write to")
	}
	if len(rules) == 0 {
		return errors.New("no rule to write")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	target := f.Path
	if t, err := filepath.EvalSymlinks(f.Path); err == nil {
		target = t
	}
	base := f.Path
	cur, err := os.ReadFile(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if f.Loaded != nil {
			return fmt.Errorf("%s was removed since permwrap loaded it; not written", base)
		}
		cur = f.Seed
	case err != nil:
		return fmt.Errorf("reading %s: %w", base, err)
	case f.Loaded == nil:
		return fmt.Errorf("%s was created since permwrap started; not written (restart permwrap to use it)", base)
	case !bytes.Equal(cur, f.Loaded):
		return fmt.Errorf("%s changed since permwrap loaded it; not written (restart permwrap, or add the rule by hand)", base)
	}
	now := time.Now
	if f.now != nil {
		now = f.now
	}
	out := cur
	for _, rule := range rules {
		comment := fmt.Sprintf("permwrap: always %s, %s, request %s", rule.Action, now().Format("2006-01-02"), id)
		if out, err = engine.AppendRule(out, base, rule, comment, f.Env); err != nil {
			if errors.Is(err, engine.ErrPolicyUnparseable) {
				return fmt.Errorf("%s cannot be read back (%v); not written", base, err)
			}
			return fmt.Errorf("%s:%s: %w; nothing written", rule.Surface, rule.Pattern, err)
		}
	}
	if err := replaceFile(target, out); err != nil {
		return fmt.Errorf("writing %s: %w", base, err)
	}
	f.Loaded = out
	return nil
}

// replaceFile writes data to a new file beside path and renames it over
// path (engine.WriteFileAtomic), keeping path's permissions (0600 for a
// new file), then syncs the directory so the rename itself is kept.
func replaceFile(path string, data []byte) error {
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := engine.WriteFileAtomic(path, data, mode); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
