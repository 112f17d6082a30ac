package egress

import (
	"net/netip"
	"sync"
	"time"
)

// ExactPeers names a connection's process from what the supervisor saw
// when it performed that process's connect() to the proxy: the client's
// address and port, registered before the process learns its connect
// succeeded, so before it can send a request. Connections nobody
// registered (the supervisor does not watch connect, or it could not read
// the client port) go to Fallback.
type ExactPeers struct {
	Fallback Peers // nil: unregistered connections have no process

	mu  sync.Mutex
	m   map[netip.AddrPort]exactPeer
	now func() time.Time
}

type exactPeer struct {
	pid  int
	when time.Time
}

// exactPeerTTL bounds how long a registration waits for its connection's
// first request; a client that connects and never speaks is forgotten.
const exactPeerTTL = 2 * time.Minute

// maxExactPeers bounds the registrations kept at once.
const maxExactPeers = 8192

// Register records that pid connected to the proxy from client.
func (e *ExactPeers) Register(client netip.AddrPort, pid int) {
	client = unmapAP(client)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock()
	if e.m == nil {
		e.m = map[netip.AddrPort]exactPeer{}
	}
	if len(e.m) >= maxExactPeers {
		for k, v := range e.m {
			if now.Sub(v.when) > exactPeerTTL {
				delete(e.m, k)
			}
		}
		if len(e.m) >= maxExactPeers {
			return // the fallback will name it
		}
	}
	e.m[client] = exactPeer{pid: pid, when: now}
}

// Peer implements Peers: a registered client is its registrant (once:
// the port is reused by later connections), others ask Fallback.
func (e *ExactPeers) Peer(client, proxy netip.AddrPort) (int, error) {
	client = unmapAP(client)
	e.mu.Lock()
	p, ok := e.m[client]
	if ok {
		delete(e.m, client)
	}
	e.mu.Unlock()
	if ok && e.clock().Sub(p.when) <= exactPeerTTL {
		return p.pid, nil
	}
	if e.Fallback == nil {
		return 0, ErrNoPeer
	}
	return e.Fallback.Peer(client, proxy)
}

func (e *ExactPeers) clock() time.Time {
	if e.now != nil {
		return e.now()
	}
	return time.Now()
}
