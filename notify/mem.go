package notify

// Reading the target's memory. Every read is one snapshot: the caller
// decides on the bytes returned here, never on memory read again, and
// checks Listener.IDValid afterwards before trusting them (the target may
// have died and its tid been reused).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// PathMax is PATH_MAX, the kernel's limit for a path argument including its
// terminating NUL.
const PathMax = 4096

var pageSize = uint64(os.Getpagesize())

// memReadChunk reads exactly len(buf) bytes at addr, which must not cross a
// page boundary: process_vm_readv reports a read that runs into an unmapped
// page as short, and within a page it is all or nothing.
func memReadChunk(pid int, addr uint64, buf []byte) error {
	if addr == 0 {
		return unix.EFAULT
	}
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	for {
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n != len(buf) {
			return unix.EFAULT
		}
		return nil
	}
}

// memChunkLen is how many bytes can be read at addr without crossing a page
// boundary, at most want.
func memChunkLen(addr uint64, want int) int {
	room := pageSize - addr%pageSize
	if uint64(want) < room {
		return want
	}
	return int(room)
}

func memError(what string, pid int, addr uint64, err error) error {
	return fmt.Errorf("notify: reading %s of tid %d at %#x: %w", what, pid, addr, err)
}

// ReadString reads a NUL-terminated string at addr. max counts the NUL, as
// PATH_MAX does (use PathMax for paths). No NUL within max bytes is
// ENAMETOOLONG; a NULL or unmapped address is EFAULT; errors wrap the errno.
func ReadString(pid int, addr uint64, max int) (string, error) {
	if max <= 0 {
		return "", fmt.Errorf("notify: ReadString with max %d", max)
	}
	if addr == 0 {
		return "", memError("string", pid, addr, unix.EFAULT)
	}
	var out []byte
	var page [4096]byte
	cur := addr
	for len(out) < max {
		n := memChunkLen(cur, min(max-len(out), len(page)))
		if err := memReadChunk(pid, cur, page[:n]); err != nil {
			return "", memError("string", pid, addr, err)
		}
		if i := bytes.IndexByte(page[:n], 0); i >= 0 {
			out = append(out, page[:i]...)
			return string(out), nil
		}
		out = append(out, page[:n]...)
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
	if addr == 0 || addr+uint64(n) < addr {
		return nil, memError("bytes", pid, addr, unix.EFAULT)
	}
	for off := 0; off < n; {
		c := memChunkLen(addr+uint64(off), n-off)
		if err := memReadChunk(pid, addr+uint64(off), out[off:off+c]); err != nil {
			return nil, memError("bytes", pid, addr, err)
		}
		off += c
	}
	return out, nil
}

// ReadPointerArray reads a NULL-terminated array of pointers (argv, envp).
// More than maxEntries non-NULL entries is E2BIG, never a truncation.
// A NULL array is EFAULT; callers wanting execve's "NULL argv means empty"
// check for addr 0 themselves.
func ReadPointerArray(pid int, addr uint64, maxEntries int) ([]uint64, error) {
	if addr == 0 {
		return nil, memError("pointer array", pid, addr, unix.EFAULT)
	}
	if addr%8 != 0 {
		// The kernel accepts misaligned arrays; so do we, reading
		// element by element across the page boundary.
		return readPointerArraySlow(pid, addr, maxEntries)
	}
	var out []uint64
	var page [4096]byte
	cur := addr
	for {
		n := memChunkLen(cur, len(page))
		if err := memReadChunk(pid, cur, page[:n]); err != nil {
			return nil, memError("pointer array", pid, addr, err)
		}
		for i := 0; i+8 <= n; i += 8 {
			p := binary.LittleEndian.Uint64(page[i:])
			if p == 0 {
				return out, nil
			}
			if len(out) == maxEntries {
				return nil, memError("pointer array", pid, addr, unix.E2BIG)
			}
			out = append(out, p)
		}
		cur += uint64(n)
	}
}

func readPointerArraySlow(pid int, addr uint64, maxEntries int) ([]uint64, error) {
	var out []uint64
	for i := 0; ; i++ {
		b, err := ReadBytes(pid, addr+uint64(i)*8, 8)
		if err != nil {
			return nil, memError("pointer array", pid, addr, err)
		}
		p := binary.LittleEndian.Uint64(b)
		if p == 0 {
			return out, nil
		}
		if len(out) == maxEntries {
			return nil, memError("pointer array", pid, addr, unix.E2BIG)
		}
		out = append(out, p)
	}
}

// ReadArgv reads an argv (or envp) array: at most maxArgs strings totalling
// at most maxBytes including their NULs. Past either bound it is E2BIG,
// never a silent truncation (a check on a truncated argv would judge a
// command other than the one run). A NULL argv reads as empty, as the
// kernel treats it.
func ReadArgv(pid int, addr uint64, maxArgs, maxBytes int) ([]string, error) {
	if addr == 0 {
		return []string{}, nil
	}
	ptrs, err := ReadPointerArray(pid, addr, maxArgs)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ptrs))
	left := maxBytes
	for i, p := range ptrs {
		if left <= 0 {
			return nil, memError("argv", pid, addr, unix.E2BIG)
		}
		s, err := ReadString(pid, p, left)
		if err != nil {
			if errors.Is(err, unix.ENAMETOOLONG) {
				return nil, fmt.Errorf("notify: argv of tid %d: %d arguments exceed %d bytes: %w", pid, i+1, maxBytes, unix.E2BIG)
			}
			return nil, fmt.Errorf("notify: argv[%d] of tid %d: %w", i, pid, err)
		}
		left -= len(s) + 1
		out = append(out, s)
	}
	return out, nil
}
