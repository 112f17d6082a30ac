package engine

import (
	"strings"
	"testing"
)

// A Unix socket keeps its net answer when it is renamed or linked, and a
// directory holding sockets keeps theirs: a denied or asked-about socket
// cannot be reached under a new name.
func TestDecideMoveUnixSockets(t *testing.T) {
	p := compileTest(t, `{ "extends": "none", "permission": { "*": "allow",
	  "net": { "*": "ask", "unix:*": "allow",
	    "unix:/run/docker.sock": "deny",
	    "unix:/tmp/ssh-*/agent.*": "ask",
	    "unix:/tmp/tmux-*/**": "ask" } } }`)
	tests := []struct {
		name string
		m    Move
		want Action
		at   string // a prefix of the path the answer names, when not ""
	}{
		{"a socket renamed out of a denied name", Move{Kind: MoveRename, From: "/run/docker.sock", To: "/tmp/d.sock", FromSocket: true}, Deny, "unix:/run/docker.sock"},
		{"a socket hard-linked to a new name", Move{Kind: MoveLink, From: "/run/docker.sock", To: "/tmp/d.sock", FromSocket: true}, Deny, "unix:/run/docker.sock"},
		{"the agent's socket moved out", Move{Kind: MoveRename, From: "/tmp/ssh-x/agent.1", To: "/tmp/a", FromSocket: true}, Ask, "unix:/tmp/ssh-x/agent.1"},
		{"a socket exchanged with one asked about", Move{Kind: MoveExchange, From: "/tmp/a.sock", To: "/tmp/ssh-x/agent.1", FromSocket: true, ToSocket: true}, Ask, "unix:/tmp/ssh-x/agent.1"},
		{"the tmux directory moved aside", Move{Kind: MoveRename, From: "/tmp/tmux-0", To: "/tmp/t", FromDir: true}, Ask, "unix:/tmp/tmux-0/"},
		{"the agent's directory moved aside", Move{Kind: MoveRename, From: "/tmp/ssh-x", To: "/tmp/s", FromDir: true}, Ask, "unix:/tmp/ssh-x/agent."},

		// Twins that change no answer stay allowed.
		{"a socket moved into a stricter name", Move{Kind: MoveRename, From: "/tmp/a.sock", To: "/tmp/ssh-x/agent.1", FromSocket: true}, Allow, ""},
		{"a socket renamed beside itself", Move{Kind: MoveRename, From: "/tmp/a.sock", To: "/tmp/b.sock", FromSocket: true}, Allow, ""},
		{"a plain file leaving the agent's name", Move{Kind: MoveRename, From: "/tmp/ssh-x/agent.1", To: "/tmp/a"}, Allow, ""},
		{"a symlink to the docker socket (a connect is judged at the target)", Move{Kind: MoveSymlink, From: "/run/docker.sock", To: "/tmp/d.sock", FromSocket: true}, Allow, ""},
		{"an ordinary directory", Move{Kind: MoveRename, From: "/tmp/build", To: "/tmp/build.old", FromDir: true}, Allow, ""},
	}
	for _, tt := range tests {
		r := p.DecideMove(tt.m)
		if r.Action != tt.want || tt.at != "" && !strings.HasPrefix(r.Check.Value, tt.at) {
			t.Errorf("%s: DecideMove(%v) = %v (%s), want %v at %q", tt.name, tt.m, r.Action, r.Check.Value, tt.want, tt.at)
		}
	}
}

// Under the default policy, moving the SSH agent's socket (or the
// directory the docker socket is in) is refused or asked like connecting
// to it, and workspace moves are unaffected.
func TestDecideMoveUnixDefault(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.DecideMove(Move{Kind: MoveRename, From: "/tmp/ssh-abc/agent.42", To: "/home/u/src/proj/a.sock", FromSocket: true}); r.Action == Allow {
		t.Errorf("the SSH agent's socket moved into the workspace: %v", r)
	}
	if r := p.DecideMove(Move{Kind: MoveRename, From: "/home/u/src/proj/s.sock", To: "/home/u/src/proj/t.sock", FromSocket: true}); r.Action != Allow {
		t.Errorf("a socket renamed inside the workspace: %v", r)
	}
}
