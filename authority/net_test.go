package authority

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

// A net request carries the whole destination to judges and the log.
func TestNetRequest(t *testing.T) {
	in := engine.NetIntent{Proto: engine.ProtoTCP, Host: "github.com", Addr: netip.MustParseAddr("140.82.112.3"), Port: 443, Names: []string{"a.test"}}
	r := NewRequest(engine.Check{Surface: engine.SurfaceNet, Value: "github.com:443"})
	r.Net = &in
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"net":{"proto":"tcp","host":"github.com","addr":"140.82.112.3","port":443,"names":["a.test"]}`; !strings.Contains(string(b), want) {
		t.Errorf("judge request lacks %s:\n%s", want, b)
	}
	c := r.clone()
	c.Net.Names[0] = "changed"
	if in.Names[0] != "a.test" {
		t.Error("clone shares the names")
	}
	var buf strings.Builder
	l := NewLogWriter(&buf, LogOptions{})
	l.Decided(r, false, Allowed(ByRule{Surface: engine.SurfaceNet, Pattern: "github.com:443", Origin: engine.OriginDefault}))
	l.Close()
	if want := `"net":{"addr":"140.82.112.3","host":"github.com","names":["a.test"],"port":443,"proto":"tcp"}`; !strings.Contains(buf.String(), want) {
		t.Errorf("log record lacks %s:\n%s", want, buf.String())
	}
	// Without a destination there is no net field.
	r.Net = nil
	if b, _ := json.Marshal(r); strings.Contains(string(b), `"net":`) {
		t.Errorf("net field without a destination: %s", b)
	}
}

func TestNetPromptShowsDestination(t *testing.T) {
	in := engine.NetIntent{Proto: engine.ProtoTCP, Port: 443, Addr: netip.MustParseAddr("140.82.112.3"), Names: []string{"github.com"}}
	r := NewRequest(engine.Check{Surface: engine.SurfaceNet, Value: "github.com:443"})
	r.Net = &in
	facts := strings.Join(requestFacts(r, 100), "\n")
	if !strings.Contains(facts, "dest:  tcp 140.82.112.3:443 (resolved from github.com)") {
		t.Errorf("prompt facts lack the destination:\n%s", facts)
	}
}

// A service outside the sandbox is named in the prompt with its command
// line, and in the log record with its program.
func TestNetPromptShowsService(t *testing.T) {
	in := engine.NetIntent{Proto: engine.ProtoUnix, Path: "/tmp/tmux-1000/default",
		Service: &engine.NetService{Exe: "/usr/bin/tmux", PID: 812, Cmdline: "tmux new -s work\x1b[2J"}}
	r := NewRequest(engine.Check{Surface: engine.SurfaceNet, Value: "<outside:/usr/bin/tmux>"})
	r.Net = &in
	facts := strings.Join(requestFacts(r, 100), "\n")
	for _, want := range []string{
		"dest:  unix /tmp/tmux-1000/default, served outside the sandbox by /usr/bin/tmux (pid 812)",
		`serves: tmux new -s work\x1b[2J`, // escaped where it is shown
	} {
		if !strings.Contains(facts, want) {
			t.Errorf("prompt facts lack %q:\n%s", want, facts)
		}
	}
	var buf strings.Builder
	l := NewLogWriter(&buf, LogOptions{})
	l.Decided(r, false, Allowed(ByRule{Surface: engine.SurfaceNet, Pattern: "<outside>", Origin: engine.OriginDefault}))
	l.Close()
	if want := `"service":{"cmdline":"tmux new -s work\u001b[2J","exe":"/usr/bin/tmux","pid":812,"tree":false}`; !strings.Contains(buf.String(), want) {
		t.Errorf("log record lacks %s:\n%s", want, buf.String())
	}
}
