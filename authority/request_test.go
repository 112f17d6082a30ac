package authority

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

// TestRequestJSONMasks: what a judge is sent carries no secret-looking
// value from a command line, says when something was masked, and keeps
// paths as they are.
func TestRequestJSONMasks(t *testing.T) {
	r := NewRequest(engine.Check{Surface: engine.SurfaceBash, Value: "curl -H 'Authorization: Bearer abc123' https://u:pw@example.com/"})
	r.Access = "exec"
	r.Process = Process{PID: 7, Comm: "sh", Exe: "/bin/sh", Cmdline: []string{"sh", "-c", "GITHUB_TOKEN=" + ghToken + " ./deploy"}}
	r.Agent = []string{"agent", "--api-key", "k-123456", "--model=m"}
	r.Runs = []string{"env PGPASSWORD=pw psql"}
	r.Units = []string{"export NPM_TOKEN=npm_x", "ls"}
	r.Suggested = []SessionPattern{{Surface: engine.SurfaceBash, Pattern: "curl -H 'Authorization: Bearer abc123' *"}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"abc123", ":pw@", ghToken[4:], "k-123456", "PGPASSWORD=pw", "npm_x"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the request holds %q:\n%s", secret, b)
		}
	}
	var j map[string]any
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if j["masked"] != true {
		t.Errorf("masked = %v, want true", j["masked"])
	}
	if got := j["agent"].([]any); got[2] != Masked || got[3] != "--model=m" {
		t.Errorf("agent = %v", got)
	}
	if got := j["value"]; got != "curl -H 'Authorization: Bearer ***' https://u:***@example.com/" {
		t.Errorf("value = %v", got)
	}
	if units := j["units"].([]any); units[1] != "ls" {
		t.Errorf("units = %v", units)
	}

	// Nothing to mask: no "masked" key, everything as it was.
	p := NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/home/u/token=x/password: y"})
	p.Process = Process{PID: 8, Cmdline: []string{"cat", "f"}}
	b, _ = json.Marshal(p)
	j = nil
	json.Unmarshal(b, &j)
	if _, ok := j["masked"]; ok {
		t.Errorf("masked present for a request with nothing masked:\n%s", b)
	}
	if j["value"] != "/home/u/token=x/password: y" {
		t.Errorf("a path was changed: %v", j["value"])
	}
}

// TestRequestJSONFields pins the field set to what docs/authorizers.md
// documents: a new field is a documentation change first.
func TestRequestJSONFields(t *testing.T) {
	r := bashAsk("git push")
	r.Node = "inner#1"
	r.NodeCommand = []string{"pi", "--api-key=sk-abcdefghijklmnop"}
	r.Rule = engine.Rule{Surface: engine.SurfaceBash, Pattern: "git push *", Action: engine.Ask, Origin: engine.OriginGlobal}
	r.Process.Cmdline = []string{"git", "push", "--password=x"}
	r.Covers = []string{"writes into /srv/repo.git (the push's remote; not its hooks or config)"}
	b, _ := json.Marshal(r)
	var j map[string]any
	json.Unmarshal(b, &j)
	var keys []string
	for k := range j {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"access", "agent", "covers", "humanOnly", "masked", "node", "nodeCommand", "process", "requestId", "rule", "runs", "suggested", "suggestions", "surface", "time", "units", "value"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("request fields %v, documented %v", keys, want)
	}
	if nc := fmt.Sprint(j["nodeCommand"]); strings.Contains(nc, "abcdefghijklmnop") {
		t.Errorf("a secret in the node's command reached the reviewer: %s", nc)
	}
	var pk []string
	for k := range j["process"].(map[string]any) {
		pk = append(pk, k)
	}
	sort.Strings(pk)
	if !reflect.DeepEqual(pk, []string{"cmdline", "comm", "exe", "pid"}) {
		t.Errorf("process fields %v", pk)
	}
}
