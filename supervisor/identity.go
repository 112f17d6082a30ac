package supervisor

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify/pin"
)

// programIDs recognises the programs the policy's command rules name
// (engine.Policy.ProgramNames: git, docker, the wrappers and shells the
// analysis reads through, the dynamic loader) by what an executed file
// holds rather than what it is called: a copy, a hard link or a memfd of
// git is judged as git (engine.ExecIntent.Identity), and so is a copy run
// through the loader (ExecIntent.Identify).
//
// The known binaries are found on PATH and in the usual directories and
// indexed by inode and size. An exec'd image is the program whose inode it
// is; otherwise, only when its size equals a known binary's, its SHA-256
// is compared with theirs. Digests are cached by device, inode, size,
// mtime and ctime, so a file is hashed once until it changes; the index is
// refreshed at most every indexTTL (an upgrade, a session rule naming a
// new program).
//
// The index is built off the exec path: the first build starts with the
// supervisor (newProgramIDs, from Run before the command is launched), and
// the first identity waits for it; a stale index starts a new build and is
// used until that one is done. Built inline, it stat'ed every program name
// in every directory (3.8–6 ms) while the first exec of every run, and one
// exec every indexTTL after, waited.
type programIDs struct {
	policy *engine.Policy
	dirs   []string
	// ready is closed once the first index is built.
	ready chan struct{}

	mu       sync.Mutex
	building bool // a build is under way
	builtAt  time.Time
	byID     map[pin.FileID][]string
	bySize   map[int64][]*knownBinary
	digests  map[pin.ContentKey][32]byte
}

type knownBinary struct {
	names []string
	path  string
	key   pin.ContentKey
	sum   [32]byte
	have  bool
}

const (
	indexTTL = 30 * time.Second
	// maxImageDigest: images larger than this are never hashed.
	maxImageDigest = 512 << 20
	// maxDigests bounds the digest cache; it starts over when full.
	maxDigests = 4096
)

// programDirs are searched for the named programs besides PATH.
func programDirs(pathEnv string) []string {
	var dirs []string
	for _, d := range filepath.SplitList(pathEnv) {
		if filepath.IsAbs(d) && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	common := []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin",
		"/usr/lib/git-core", "/usr/libexec/git-core", "/lib64", "/lib", "/usr/lib"}
	switch runtime.GOARCH {
	case "amd64":
		common = append(common, "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")
	case "arm64":
		common = append(common, "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
	}
	for _, d := range common {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// newProgramIDs starts building the index of the programs p names.
func newProgramIDs(p *engine.Policy, pathEnv string) *programIDs {
	ids := &programIDs{policy: p, dirs: programDirs(pathEnv), ready: make(chan struct{}),
		digests: map[pin.ContentKey][32]byte{}, building: true}
	go ids.build()
	return ids
}

// refreshLocked starts a new build when the index is older than
// indexTTL; the old one serves until it is done.
func (ids *programIDs) refreshLocked() {
	if ids.building || time.Since(ids.builtAt) < indexTTL {
		return
	}
	ids.building = true
	go ids.build()
}

// build makes a new index and puts it in place.
func (ids *programIDs) build() {
	byID := map[pin.FileID][]string{}
	byPath := map[pin.FileID]*knownBinary{}
	bySize := map[int64][]*knownBinary{}
	for _, name := range ids.policy.ProgramNames() {
		if strings.Contains(name, "/") {
			continue
		}
		for _, dir := range ids.dirs {
			p := filepath.Join(dir, name)
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
				continue
			}
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok {
				continue
			}
			id := pin.FileID{Dev: st.Dev, Ino: st.Ino}
			if !slices.Contains(byID[id], name) {
				byID[id] = append(byID[id], name)
			}
			kb := byPath[id]
			if kb == nil {
				ust := unix.Stat_t{Dev: st.Dev, Ino: st.Ino, Size: st.Size,
					Mtim: unix.Timespec(st.Mtim), Ctim: unix.Timespec(st.Ctim)}
				kb = &knownBinary{path: p, key: pin.KeyOf(&ust)}
				byPath[id] = kb
				bySize[st.Size] = append(bySize[st.Size], kb)
			}
			if !slices.Contains(kb.names, name) {
				kb.names = append(kb.names, name)
			}
		}
	}
	ids.mu.Lock()
	defer ids.mu.Unlock()
	// A known binary whose content is cached keeps its digest.
	if ids.bySize != nil {
		for size, old := range ids.bySize {
			for _, o := range old {
				for _, n := range bySize[size] {
					if o.have && n.key == o.key {
						n.sum, n.have = o.sum, true
					}
				}
			}
		}
	}
	first := ids.byID == nil
	ids.byID, ids.bySize, ids.builtAt, ids.building = byID, bySize, time.Now(), false
	if first {
		close(ids.ready)
	}
}

// identity names the program the image r (identified as id, size bytes)
// is, "" when it is none the policy names.
func (ids *programIDs) identity(id pin.FileID, size int64, r *pin.Resolved) string {
	<-ids.ready
	ids.mu.Lock()
	defer ids.mu.Unlock()
	ids.refreshLocked()
	base := baseName(r.Path)
	if names := ids.byID[id]; len(names) > 0 {
		return pickName(names, base)
	}
	cands := ids.bySize[size]
	if len(cands) == 0 || r.Object == nil || size > maxImageDigest {
		return ""
	}
	key := pin.KeyOf(&r.Stat)
	sum, ok := ids.digests[key]
	if !ok {
		var err error
		if sum, err = pin.Digest(r.Object, maxImageDigest); err != nil {
			return ""
		}
		if len(ids.digests) >= maxDigests {
			clear(ids.digests)
		}
		ids.digests[key] = sum
	}
	for _, kb := range cands {
		if !kb.have && !ids.digestKnown(kb) {
			continue
		}
		if kb.sum == sum {
			return pickName(kb.names, base)
		}
	}
	return ""
}

// digestKnown hashes a known binary, if it is still the file indexed.
func (ids *programIDs) digestKnown(kb *knownBinary) bool {
	sum, err := pin.DigestPath(kb.path, kb.key, maxImageDigest)
	if err != nil {
		return false
	}
	kb.sum, kb.have = sum, true
	return true
}

// identifier is ExecIntent.Identify for thread tid: the program a file
// run inside the process (`ld.so FILE`) is, resolved as tid would.
func (ids *programIDs) identifier(tid int) func(string) string {
	return func(p string) string {
		r, err := pin.Resolve(tid, unix.AT_FDCWD, p, pin.FollowLast)
		if err != nil {
			return ""
		}
		defer r.Close()
		if !r.Exists || r.Stat.Mode&unix.S_IFMT != unix.S_IFREG {
			return ""
		}
		return ids.identity(r.ID(), r.Stat.Size, r)
	}
}

// pickName chooses among the names of one binary: the one it was called
// by, if it is one of them.
func pickName(names []string, base string) string {
	if slices.Contains(names, base) {
		return base
	}
	return slices.Min(names)
}
