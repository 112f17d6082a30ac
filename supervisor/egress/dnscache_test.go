package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestDNSCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewDNSCache(time.Minute, 3)
	c.now = func() time.Time { return now }

	c.Add("github.com", addrs("140.82.112.3", "140.82.112.4"))
	c.Add("api.github.com", addrs("140.82.112.4"))
	if got := c.Names(netip.MustParseAddr("140.82.112.4")); !slices.Equal(got, []string{"api.github.com", "github.com"}) {
		t.Errorf("names, most recent first: %q", got)
	}
	// A mapped address is its IPv4 address.
	if got := c.Names(netip.MustParseAddr("::ffff:140.82.112.3")); !slices.Equal(got, []string{"github.com"}) {
		t.Errorf("mapped: %q", got)
	}
	// Resolving again replaces the old answer.
	c.Add("github.com", addrs("140.82.112.5"))
	if got := c.Names(netip.MustParseAddr("140.82.112.3")); len(got) != 0 {
		t.Errorf("a name kept vouching for an address it left: %q", got)
	}
	if got := c.Addrs("github.com"); !slices.Equal(got, addrs("140.82.112.5")) {
		t.Errorf("addrs %v", got)
	}
	// Entries expire.
	now = now.Add(59 * time.Second)
	if len(c.Names(netip.MustParseAddr("140.82.112.5"))) != 1 {
		t.Error("expired early")
	}
	now = now.Add(2 * time.Second)
	if got := c.Names(netip.MustParseAddr("140.82.112.5")); len(got) != 0 {
		t.Errorf("not expired: %q", got)
	}
	if c.Addrs("github.com") != nil {
		t.Error("Addrs of an expired name")
	}
	// The cache is bounded: the entry that expires first goes.
	c = NewDNSCache(time.Minute, 3)
	c.now = func() time.Time { return now }
	for i := 0; i < 10; i++ {
		now = now.Add(time.Second)
		c.Add(fmt.Sprintf("n%d.test", i), addrs(fmt.Sprintf("10.0.0.%d", i)))
	}
	if c.Len() != 3 {
		t.Fatalf("len %d, want 3", c.Len())
	}
	if len(c.Names(netip.MustParseAddr("10.0.0.0"))) != 0 || len(c.Names(netip.MustParseAddr("10.0.0.9"))) != 1 {
		t.Error("evicted the wrong entry")
	}
	// One answer cannot flood the cache.
	var many []netip.Addr
	for i := 0; i < 1000; i++ {
		many = append(many, netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}))
	}
	c.Add("flood.test", many)
	if len(c.Addrs("flood.test")) != maxAddrsPerName {
		t.Errorf("kept %d addresses", len(c.Addrs("flood.test")))
	}
	c.Add("", addrs("1.1.1.1"))
	c.Add("empty.test", nil)
	if c.Addrs("") != nil || c.Addrs("empty.test") != nil {
		t.Error("recorded an empty name or answer")
	}
}

func TestDNSCacheConcurrent(t *testing.T) {
	c := NewDNSCache(time.Minute, 64)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				name := fmt.Sprintf("h%d.test", (g*7+i)%100)
				a := netip.AddrFrom4([4]byte{10, 0, byte(g), byte(i)})
				c.Add(name, []netip.Addr{a})
				c.Names(a)
				c.Addrs(name)
			}
		}()
	}
	wg.Wait()
	if c.Len() > 64 {
		t.Fatalf("len %d over the bound", c.Len())
	}
	// Every address index entry points at a live name that holds it.
	c.mu.Lock()
	defer c.mu.Unlock()
	for a, names := range c.byAddr {
		for _, n := range names {
			e := c.byName[n]
			if e == nil || !slices.Contains(e.addrs, a) {
				t.Fatalf("stale index: %v → %s", a, n)
			}
		}
	}
}
