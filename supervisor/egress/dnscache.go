package egress

import (
	"net/netip"
	"slices"
	"sync"
	"time"
)

// DNSCache remembers the names the proxy resolved for one process tree
// and the addresses they resolved to, for a while, so that a later
// direct connection from the tree to such an address can be judged by
// the name (engine.NetIntent.Names). Only names permwrap itself resolved
// are in it: an address is never given a name on the program's word.
//
// Entries live for TTL after the last resolution. Go's resolver does not
// report record TTLs, so this is a fixed time, short enough that a name
// does not keep vouching for an address it has left. The cache holds at
// most Max names; beyond that the entry that expires first goes.
//
// A DNSCache is safe for concurrent use; the zero value is not usable,
// use NewDNSCache.
type DNSCache struct {
	mu     sync.Mutex
	ttl    time.Duration
	max    int
	now    func() time.Time
	byName map[string]*cacheEntry
	byAddr map[netip.Addr][]string // names, most recently resolved last
}

type cacheEntry struct {
	addrs   []netip.Addr
	expires time.Time
}

// Defaults for NewDNSCache.
const (
	DefaultCacheTTL = 5 * time.Minute
	DefaultCacheMax = 4096
	// maxAddrsPerName bounds what one answer may add.
	maxAddrsPerName = 32
)

// NewDNSCache makes a cache; ttl ≤ 0 and max ≤ 0 take the defaults.
func NewDNSCache(ttl time.Duration, max int) *DNSCache {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	if max <= 0 {
		max = DefaultCacheMax
	}
	return &DNSCache{ttl: ttl, max: max, now: time.Now,
		byName: map[string]*cacheEntry{}, byAddr: map[netip.Addr][]string{}}
}

func cacheKey(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

// Add records that name resolved to addrs just now. name must be
// normalized (engine.NormalizeHostName).
func (c *DNSCache) Add(name string, addrs []netip.Addr) {
	if name == "" || len(addrs) == 0 {
		return
	}
	if len(addrs) > maxAddrsPerName {
		addrs = addrs[:maxAddrsPerName]
	}
	keys := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if a.IsValid() && !slices.Contains(keys, cacheKey(a)) {
			keys = append(keys, cacheKey(a))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.removeLocked(name)
	if len(c.byName) >= c.max {
		c.expireLocked(now)
	}
	for len(c.byName) >= c.max {
		c.evictOneLocked()
	}
	c.byName[name] = &cacheEntry{addrs: keys, expires: now.Add(c.ttl)}
	for _, a := range keys {
		c.byAddr[a] = append(c.byAddr[a], name)
	}
}

// Merge records that name resolved to addrs just now, keeping the
// addresses it resolved to earlier that have not expired: an A and an
// AAAA answer come one at a time.
func (c *DNSCache) Merge(name string, addrs []netip.Addr) {
	if prev := c.Addrs(name); len(prev) > 0 {
		addrs = append(prev, addrs...)
	}
	c.Add(name, addrs)
}

// Names returns the names that resolved to a and have not expired, the
// most recently resolved first.
func (c *DNSCache) Names(a netip.Addr) []string {
	a = cacheKey(a)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	names := c.byAddr[a]
	out := make([]string, 0, len(names))
	for i := len(names) - 1; i >= 0; i-- {
		if e := c.byName[names[i]]; e != nil && now.Before(e.expires) {
			out = append(out, names[i])
		}
	}
	return out
}

// Addrs returns what name resolved to, if it has not expired.
func (c *DNSCache) Addrs(name string) []netip.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byName[name]
	if e == nil || !c.now().Before(e.expires) {
		return nil
	}
	return slices.Clone(e.addrs)
}

// Len is the number of names held (expired ones included until they are
// dropped).
func (c *DNSCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byName)
}

func (c *DNSCache) removeLocked(name string) {
	e := c.byName[name]
	if e == nil {
		return
	}
	delete(c.byName, name)
	for _, a := range e.addrs {
		names := slices.DeleteFunc(c.byAddr[a], func(n string) bool { return n == name })
		if len(names) == 0 {
			delete(c.byAddr, a)
		} else {
			c.byAddr[a] = names
		}
	}
}

func (c *DNSCache) expireLocked(now time.Time) {
	for name, e := range c.byName {
		if !now.Before(e.expires) {
			c.removeLocked(name)
		}
	}
}

func (c *DNSCache) evictOneLocked() {
	var victim string
	var first time.Time
	for name, e := range c.byName {
		if victim == "" || e.expires.Before(first) {
			victim, first = name, e.expires
		}
	}
	c.removeLocked(victim)
}
