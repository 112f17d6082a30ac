package notify

// Reading the target's memory. Every read is one snapshot: the caller
// decides on the bytes returned here, never on memory read again, and
// checks Listener.IDValid afterwards before trusting them (the target may
// have died and its tid been reused).
//
// Reads go page by page through process_vm_readv: within a page a read is
// all or nothing, and a read that runs into an unmapped page comes back
// short. On the VMs permwrap targets the syscall, not the copy, is the
// cost (about 2 µs, whatever the size up to a page), so a reader fetches
// whole pages and keeps the few it has read for the rest of one argument
// (argv strings usually share pages).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// PathMax is PATH_MAX, the kernel's limit for a path argument including its
// terminating NUL.
const PathMax = 4096

// memPageSize is the x86_64 base page size; mappings never start or end
// inside one.
const memPageSize = 4096

// memMaxCachedPages bounds what one reader keeps; past it pages are read
// again rather than held.
const memMaxCachedPages = 16

type memPage struct {
	base uint64
	data [memPageSize]byte
}

// memReader reads one target's memory for one argument.
type memReader struct {
	pid   int
	pages []*memPage
}

// page returns the page containing addr, reading it on first use.
func (r *memReader) page(addr uint64) (*memPage, error) {
	base := addr &^ (memPageSize - 1)
	for _, p := range r.pages {
		if p.base == base {
			return p, nil
		}
	}
	if base == 0 {
		return nil, unix.EFAULT // the NULL page is never mapped for user code
	}
	var p *memPage
	if len(r.pages) < memMaxCachedPages {
		p = new(memPage)
		r.pages = append(r.pages, p)
	} else {
		p = r.pages[len(r.pages)-1] // reuse the newest slot; older pages are the pointer arrays
	}
	p.base = ^uint64(0) // invalid until the read succeeds
	if err := memReadChunk(r.pid, base, p.data[:]); err != nil {
		return nil, err
	}
	p.base = base
	return p, nil
}

// memReads counts the process_vm_readv calls made (tests count reads
// with it).
var memReads atomic.Uint64

// memReadChunk reads exactly len(buf) bytes at addr, within one page.
func memReadChunk(pid int, addr uint64, buf []byte) error {
	if addr == 0 {
		return unix.EFAULT
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := vmReadv(pid, local, remote)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return unix.EFAULT
	}
	return nil
}

// vmReadv is process_vm_readv, made again when a signal interrupts it
// and counted in memReads.
func vmReadv(pid int, local []unix.Iovec, remote []unix.RemoteIovec) (int, error) {
	for {
		memReads.Add(1)
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if err != unix.EINTR {
			return n, err
		}
	}
}

func memError(what string, pid int, addr uint64, err error) error {
	return fmt.Errorf("notify: reading %s of tid %d at %#x: %w", what, pid, addr, err)
}

func (r *memReader) readString(addr uint64, max int) (string, error) {
	b, err := r.stringBytes(addr, max)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (r *memReader) readBytes(addr uint64, out []byte) error {
	if addr+uint64(len(out)) < addr {
		return unix.EFAULT
	}
	for off := 0; off < len(out); {
		p, err := r.page(addr + uint64(off))
		if err != nil {
			return err
		}
		po := int(addr + uint64(off) - p.base)
		off += copy(out[off:], p.data[po:])
	}
	return nil
}

func (r *memReader) readPointerArray(addr uint64, maxEntries int) ([]uint64, error) {
	var out []uint64
	var b [8]byte
	for cur := addr; ; cur += 8 {
		if err := r.readBytes(cur, b[:]); err != nil {
			return nil, err
		}
		p := binary.LittleEndian.Uint64(b[:])
		if p == 0 {
			return out, nil
		}
		if len(out) >= maxEntries {
			return nil, unix.E2BIG
		}
		out = append(out, p)
	}
}

// ReadString reads a NUL-terminated string at addr. max counts the NUL, as
// PATH_MAX does (use PathMax for paths). No NUL within max bytes is
// ENAMETOOLONG; a NULL or unmapped address is EFAULT; errors wrap the errno.
func ReadString(pid int, addr uint64, max int) (string, error) {
	if max <= 0 {
		return "", fmt.Errorf("notify: ReadString with max %d", max)
	}
	// One path, usually one page: read from addr to the page end into a
	// stack buffer, with no page cache to allocate.
	var buf [memPageSize]byte
	var out []byte
	cur := addr
	for len(out) < max {
		if cur == 0 {
			return "", memError("string", pid, addr, unix.EFAULT)
		}
		n := min(max-len(out), int(memPageSize-cur%memPageSize))
		if err := memReadChunk(pid, cur, buf[:n]); err != nil {
			return "", memError("string", pid, addr, err)
		}
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			if out == nil {
				return string(buf[:i]), nil
			}
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf[:n]...)
		if cur+uint64(n) < cur {
			return "", memError("string", pid, addr, unix.EFAULT)
		}
		cur += uint64(n)
	}
	return "", memError("string", pid, addr, unix.ENAMETOOLONG)
}

// ReadBytes reads exactly n bytes at addr (a struct argument such as
// openat2's open_how). A read that is short for any reason is EFAULT.
func ReadBytes(pid int, addr uint64, n int) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("notify: ReadBytes with length %d", n)
	}
	out := make([]byte, n)
	if n == 0 {
		return out, nil
	}
	if addr != 0 && addr%memPageSize+uint64(n) <= memPageSize {
		// Within one page (a sockaddr, a struct): one exact read.
		if err := memReadChunk(pid, addr, out); err != nil {
			return nil, memError("bytes", pid, addr, err)
		}
		return out, nil
	}
	r := memReader{pid: pid}
	if err := r.readBytes(addr, out); err != nil {
		return nil, memError("bytes", pid, addr, err)
	}
	return out, nil
}

// ReadArgv reads an argv (or envp) array: at most maxArgs strings totalling
// at most maxBytes including their NULs. Past either bound it is E2BIG,
// never a silent truncation (a check on a truncated argv would judge a
// command other than the one run). A NULL argv reads as empty, as the
// kernel treats it.
func ReadArgv(pid int, addr uint64, maxArgs, maxBytes int) ([]string, error) {
	r := memReader{pid: pid}
	return r.readArgv(addr, maxArgs, maxBytes)
}

func (r *memReader) readArgv(addr uint64, maxArgs, maxBytes int) ([]string, error) {
	return r.readArgvKept(addr, maxArgs, maxBytes, nil)
}

// ExecArgs reads an exec's path and its argv through one reader: the
// path's page and the argv array's first page come in one
// process_vm_readv (NewExecArgs), and a string that lies on a page read
// already is not read again. Read separately, the path and the argv cost
// two reads or more; here they often cost one. Each argument is still
// read once, and Path and Argv answer exactly what ReadString and
// ReadArgv would have, errors included, so the caller keeps the kernel's
// order: the path first, argv only once the path is known good (an
// execvp that tries each directory of PATH never pays for argv).
type ExecArgs struct {
	r          memReader
	path, argv uint64
}

// NewExecArgs starts reading the exec arguments at path and argv of
// thread pid.
func NewExecArgs(pid int, path, argv uint64) *ExecArgs {
	e := &ExecArgs{r: memReader{pid: pid}, path: path, argv: argv}
	e.r.prefetch(path, argv)
	return e
}

// Path is the path argument, as ReadString(pid, path, max).
func (e *ExecArgs) Path(max int) (string, error) {
	// The reader refuses a max of 0 and a NULL address (EFAULT) itself.
	s, err := e.r.readString(e.path, max)
	if err != nil {
		return "", memError("string", e.r.pid, e.path, err)
	}
	return s, nil
}

// Argv is the argv argument, as ReadArgv(pid, argv, maxArgs, maxBytes).
func (e *ExecArgs) Argv(maxArgs, maxBytes int) ([]string, error) {
	return e.r.readArgv(e.argv, maxArgs, maxBytes)
}

// Env is the envp argument at addr, as ReadArgv(pid, addr, maxArgs,
// maxBytes), through the same reader: its pages are often the argv's.
func (e *ExecArgs) Env(addr uint64, maxArgs, maxBytes int) ([]string, error) {
	return e.r.readArgv(addr, maxArgs, maxBytes)
}

// EnvKept is Env keeping only the entries keep accepts. Every entry is
// still read, counted against the bounds and failed on exactly as Env
// would (the same errors, in the same order); only the kept ones are
// copied out of the pages read. keep must not retain its argument. An
// exec's environment is judged by its few loader entries, and copying
// every entry into a string was half the cost of reading it.
func (e *ExecArgs) EnvKept(addr uint64, maxArgs, maxBytes int, keep func([]byte) bool) ([]string, error) {
	return e.r.readArgvKept(addr, maxArgs, maxBytes, keep)
}

// readArgvKept reads a NULL-terminated array of strings (argv, envp)
// and returns those keep accepts (every one with a nil keep); every
// string is read and bounded either way.
func (r *memReader) readArgvKept(addr uint64, maxArgs, maxBytes int, keep func([]byte) bool) ([]string, error) {
	pid := r.pid
	if addr == 0 {
		return []string{}, nil
	}
	ptrs, err := r.readPointerArray(addr, maxArgs)
	if err != nil {
		return nil, memError("argv", pid, addr, err)
	}
	out := []string{}
	if keep == nil {
		out = make([]string, 0, len(ptrs))
	}
	left := maxBytes
	for i, p := range ptrs {
		if left <= 0 {
			return nil, fmt.Errorf("notify: argv of tid %d: more than %d bytes: %w", pid, maxBytes, unix.E2BIG)
		}
		b, err := r.stringBytes(p, left)
		if err != nil {
			if errors.Is(err, unix.ENAMETOOLONG) {
				return nil, fmt.Errorf("notify: argv of tid %d: %d arguments exceed %d bytes: %w", pid, i+1, maxBytes, unix.E2BIG)
			}
			return nil, memError(fmt.Sprintf("argv[%d]", i), pid, p, err)
		}
		left -= len(b) + 1
		if keep == nil || keep(b) {
			out = append(out, string(b))
		}
	}
	return out, nil
}

// stringBytes is readString's string as bytes, without a copy when it
// lies on one page: the slice is then the reader's page, to be read and
// dropped before the reader is used again.
func (r *memReader) stringBytes(addr uint64, max int) ([]byte, error) {
	if max <= 0 {
		return nil, fmt.Errorf("notify: ReadString with max %d", max)
	}
	var out []byte
	cur := addr
	for len(out) < max {
		p, err := r.page(cur)
		if err != nil {
			return nil, err
		}
		off := int(cur - p.base)
		chunk := p.data[off:min(memPageSize, off+max-len(out))]
		if i := bytes.IndexByte(chunk, 0); i >= 0 {
			if out == nil {
				return chunk[:i:i], nil
			}
			return append(out, chunk[:i]...), nil
		}
		out = append(out, chunk...)
		if cur+uint64(len(chunk)) < cur {
			return nil, unix.EFAULT
		}
		cur += uint64(len(chunk))
	}
	return nil, unix.ENAMETOOLONG
}

// prefetch reads the pages holding a and b (either may be 0: none) in
// one process_vm_readv and keeps those it got. A page it could not get is
// not kept, so the read that needs it makes its own and meets the error
// itself: prefetching changes how many reads are made, never what any of
// them answers.
func (r *memReader) prefetch(a, b uint64) {
	var bases []uint64
	for _, addr := range []uint64{a, b} {
		base := addr &^ (memPageSize - 1)
		if base != 0 && !slices.Contains(bases, base) {
			bases = append(bases, base)
		}
	}
	if len(bases) < 2 || len(r.pages)+len(bases) > memMaxCachedPages {
		return // one page: the ordinary read is the same call
	}
	pages := make([]memPage, len(bases))
	local := make([]unix.Iovec, len(bases))
	remote := make([]unix.RemoteIovec, len(bases))
	for i, base := range bases {
		local[i].Base = &pages[i].data[0]
		local[i].SetLen(memPageSize)
		remote[i] = unix.RemoteIovec{Base: uintptr(base), Len: memPageSize}
	}
	n, err := vmReadv(r.pid, local, remote)
	if err != nil {
		return
	}
	// The kernel copies the iovecs in order and stops at the first it
	// cannot read: whole pages from the front are good.
	for i, base := range bases {
		if n < (i+1)*memPageSize {
			break
		}
		pages[i].base = base
		r.pages = append(r.pages, &pages[i])
	}
}

// Iovec is one struct iovec of a target's array: where and how long.
type Iovec struct{ Base, Len uint64 }

// sizeofIovec is sizeof(struct iovec) on x86_64.
const sizeofIovec = 16

// ReadIovecs reads the n struct iovec at addr (sendmsg's msg_iov).
func ReadIovecs(pid int, addr uint64, n int) ([]Iovec, error) {
	if n == 0 {
		return nil, nil
	}
	b, err := ReadBytes(pid, addr, n*sizeofIovec)
	if err != nil {
		return nil, err
	}
	out := make([]Iovec, n)
	for i := range out {
		out[i] = Iovec{binary.LittleEndian.Uint64(b[16*i:]), binary.LittleEndian.Uint64(b[16*i+8:])}
	}
	return out, nil
}

// iovMax is IOV_MAX: process_vm_readv takes at most this many iovecs.
const iovMax = 1024

// ReadGather reads the first n bytes the iovecs name, in order, into one
// buffer: a datagram's payload, read once. Unlike a path it may be large,
// so it is read with as few process_vm_readv calls as the iovecs allow,
// not page by page; any part that cannot be read is EFAULT, as the kernel
// answers a send from an unmapped buffer.
func ReadGather(pid int, iov []Iovec, n int) ([]byte, error) {
	out := make([]byte, n)
	var remote []unix.RemoteIovec
	left := n
	for _, v := range iov {
		if left == 0 {
			break
		}
		l := int(min(v.Len, uint64(left)))
		if l == 0 {
			continue
		}
		if v.Base == 0 || v.Base+uint64(l) < v.Base {
			return nil, memError("data", pid, v.Base, unix.EFAULT)
		}
		remote = append(remote, unix.RemoteIovec{Base: uintptr(v.Base), Len: l})
		left -= l
	}
	if left != 0 {
		return nil, fmt.Errorf("notify: ReadGather: the iovecs hold fewer than %d bytes", n)
	}
	done := 0
	for len(remote) > 0 {
		batch := remote[:min(len(remote), iovMax)]
		want := 0
		for _, r := range batch {
			want += r.Len
		}
		local := []unix.Iovec{{Base: &out[done]}}
		local[0].SetLen(want)
		got, err := vmReadv(pid, local, batch)
		if err != nil {
			return nil, memError("data", pid, uint64(batch[0].Base), err)
		}
		if got != want {
			return nil, memError("data", pid, uint64(batch[0].Base), unix.EFAULT)
		}
		done += want
		remote = remote[len(batch):]
	}
	return out, nil
}

// WriteUint32 stores v at addr in the target's memory, as the kernel
// stores a result a syscall returns through a pointer (sendmmsg's
// msg_len). Check Listener.IDValid first: the target must still be the
// one blocked in the call.
func WriteUint32(pid int, addr uint64, v uint32) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(4)
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: 4}}
	for {
		n, err := unix.ProcessVMWritev(pid, local, remote, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("notify: writing tid %d at %#x: %w", pid, addr, err)
		}
		if n != 4 {
			return fmt.Errorf("notify: writing tid %d at %#x: %w", pid, addr, unix.EFAULT)
		}
		return nil
	}
}
