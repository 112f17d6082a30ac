package supervisor

import (
	"testing"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
)

func askVerdict(access string, touches ...touch) verdict {
	v := verdict{access: access, result: engine.Result{Action: engine.Ask, Layer: engine.LayerPolicy}}
	copy(v.touched[:], touches)
	return v
}

// An approved save answers the rest of that save, for the process that
// was allowed it, and nothing else; its rename ends it.
func TestSaveApprovals(t *testing.T) {
	now := time.Unix(1000, 0)
	a := &saveApprovals{now: func() time.Time { return now }}
	const temp, target = "/w/notes/f.txt.tmp.1.abcdef", "/w/notes/f.txt"
	a.approve(42, temp, target, authority.ByUser{Via: "dialog"})
	w := engine.AccessWrite
	for _, c := range []struct {
		name string
		v    verdict
		tgid int
		want bool
	}{
		{"chmod of the temporary file", askVerdict("chmod", touch{w, temp}), 42, true},
		{"another process", askVerdict("chmod", touch{w, temp}), 43, false},
		{"another file", askVerdict("write", touch{w, "/w/notes/g.txt"}), 42, false},
		{"a read of the target", askVerdict("read", touch{engine.AccessRead, target}), 42, false},
		{"a rename elsewhere", askVerdict("rename", touch{w, temp}, touch{w, "/w/notes/other"}), 42, false},
		{"a denial", verdict{access: "chmod", result: engine.Result{Action: engine.Deny, Layer: engine.LayerPolicy}, touched: [2]touch{{w, temp}}}, 42, false},
		{"a protected write", verdict{access: "chmod", result: engine.Result{Action: engine.Ask, HumanOnly: true, Layer: engine.LayerProtectedWrite}, touched: [2]touch{{w, temp}}}, 42, false},
		{"the rename over the file", askVerdict("rename", touch{w, temp}, touch{w, target}), 42, true},
		{"after the rename", askVerdict("chmod", touch{w, temp}), 42, false},
	} {
		d, ok := a.answer(c.v, c.tgid)
		if ok != c.want {
			t.Errorf("%s: answered %v, want %v", c.name, ok, c.want)
		}
		if ok {
			if by, isUser := d.DecidedBy().(authority.ByUser); !isUser || by.Via != authority.SaveApprovalVia {
				t.Errorf("%s: decided by %v", c.name, d.DecidedBy())
			}
		}
	}
	// A save never finished expires.
	a.approve(42, temp, target, authority.ByUser{Via: "dialog"})
	now = now.Add(saveLifetime + time.Second)
	if _, ok := a.answer(askVerdict("chmod", touch{w, temp}), 42); ok {
		t.Error("an expired save answered")
	}
}
