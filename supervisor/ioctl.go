package supervisor

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
)

// Filesystem ioctls. An ioctl acts on whatever file its fd names, with
// rights the kernel checks per command: many that change an inode need
// only ownership (or write permission on the inode), not an fd opened for
// writing, so a read-only fd of a protected file — whose open was judged
// a read — could change it: its flags, its generation, fs-verity (the file
// becomes read-only for good), an encryption policy, a btrfs snapshot
// created through a directory fd. Device ioctls are Landlock's
// (IOCTL_DEV) and not watched here.
//
// So every ioctl of the filesystem ioctl types (the type byte of the
// command: 'f', 'X', 0x94, 'v', 0x15, 'r', 0xf5) is sent to the
// supervisor, and each command is one of:
//   - a query, or a change the kernel allows only through an fd opened for
//     writing (FICLONE's destination, preallocation, extent swaps): every
//     such fd was judged a write when it was opened, so the call is
//     continued — the decision depends on the command register alone;
//   - an attribute change permwrap emulates (chattr's flags, the fsxattr,
//     the inode generation, FAT attributes): judged as a write of the fd's
//     file, performed on the target's own open file with the argument read
//     once;
//   - anything else, known or not: refused, with the reason. Continuing
//     would let another thread point the fd number at another file
//     between the check and the call.
// docs/security.md lists them.

// Ioctl command encoding (asm-generic/ioctl.h, x86_64).
const (
	iocNone  = 0
	iocWrite = 1
	iocRead  = 2
)

func ioc(dir, typ, nr, size uint32) uint32 { return dir<<30 | size<<16 | typ<<8 | nr }
func iocType(cmd uint32) uint32            { return cmd >> 8 & 0xff }

// ioctlTypes are the command types (the second byte) of filesystem
// ioctls: generic and ext4 ('f'), XFS and generic ('X'), btrfs and the
// generic clone/dedupe/label commands (0x94), the inode generation ('v'),
// the fs uuid and sysfs path (0x15), FAT ('r'), f2fs (0xf5).
var ioctlTypes = []uint32{'f', 'X', 0x94, 'v', 0x15, 'r', 0xf5}

type ioctlKind uint8

const (
	ioctlUnknown  ioctlKind = iota // refused
	ioctlContinue                  // a query, or gated by the fd's write right
	ioctlSetattr                   // emulated, judged as a write
	ioctlRefused                   // a known change permwrap does not emulate
)

type ioctlClass struct {
	kind ioctlKind
	name string
	size int // ioctlSetattr: bytes the kernel reads at the argument
}

// ioctlClasses are the filesystem ioctls permwrap knows; the rest of the
// watched types are refused as unknown.
var ioctlClasses = func() map[uint32]ioctlClass {
	m := map[uint32]ioctlClass{}
	q := func(name string, cmds ...uint32) {
		for _, c := range cmds {
			m[c] = ioctlClass{kind: ioctlContinue, name: name}
		}
	}
	set := func(name string, size int, cmds ...uint32) {
		for _, c := range cmds {
			m[c] = ioctlClass{kind: ioctlSetattr, name: name, size: size}
		}
	}
	no := func(name string, cmds ...uint32) {
		for _, c := range cmds {
			m[c] = ioctlClass{kind: ioctlRefused, name: name}
		}
	}
	const f, X, b, v, fs15, r = 'f', 'X', 0x94, 'v', 0x15, 'r'

	// Attribute changes through any fd (the kernel checks ownership,
	// not the fd's mode): emulated. The kernel reads an int for the flags
	// and the generation despite their _IOW(long) encoding.
	set("FS_IOC_SETFLAGS", 4, unix.FS_IOC_SETFLAGS)
	set("FS_IOC_FSSETXATTR", sizeofFsxattr, fsIocFssetxattr)
	set("FS_IOC_SETVERSION", 4, ioc(iocWrite, v, 2, 8))
	set("EXT4_IOC_SETVERSION", 4, ioc(iocWrite, f, 4, 8))
	set("FAT_IOCTL_SET_ATTRIBUTES", 4, ioc(iocWrite, r, 0x11, 4))

	// Queries.
	q("FS_IOC_GETFLAGS", unix.FS_IOC_GETFLAGS, ioc(iocRead, f, 1, 4))
	q("FS_IOC_GETVERSION", ioc(iocRead, v, 1, 8), ioc(iocRead, v, 1, 4), ioc(iocRead, f, 3, 8))
	q("FS_IOC_FSGETXATTR", ioc(iocRead, X, 31, sizeofFsxattr), ioc(iocRead, X, 45, sizeofFsxattr))
	q("FS_IOC_FIEMAP", ioc(iocRead|iocWrite, f, 11, 32))
	q("FS_IOC_GETFSLABEL", ioc(iocRead, b, 49, 256))
	q("FS_IOC_GETFSUUID", ioc(iocRead, fs15, 0, 17), ioc(iocRead, f, 44, 8))
	q("FS_IOC_GETFSSYSFSPATH", ioc(iocRead, fs15, 1, 129))
	q("FS_IOC_GETFSMAP", ioc(iocRead|iocWrite, X, 59, 192))
	q("fs-verity query", ioc(iocRead|iocWrite, f, 134, 4), ioc(iocRead|iocWrite, f, 135, 40))
	q("fscrypt query", ioc(iocWrite, f, 20, 16), ioc(iocWrite, f, 21, 12), ioc(iocRead|iocWrite, f, 22, 9),
		ioc(iocRead|iocWrite, f, 26, 128), ioc(iocRead, f, 27, 16))
	q("ext4 query", ioc(iocWrite, f, 41, 4), ioc(iocRead|iocWrite, f, 42, 32), ioc(iocNone, f, 18, 0),
		ioc(iocNone, f, 40, 0), ioc(iocNone, f, 12, 0))
	q("XFS query", ioc(iocRead, X, 30, 12), ioc(iocRead, X, 100, 112), ioc(iocRead, X, 124, 112),
		ioc(iocRead, X, 126, 256), ioc(iocRead, X, 113, 32), ioc(iocRead|iocWrite, X, 38, 32),
		ioc(iocRead|iocWrite, X, 44, 32), ioc(iocRead|iocWrite, X, 56, 48))
	q("btrfs query", ioc(iocRead|iocWrite, b, 18, 4096), ioc(iocRead|iocWrite, b, 20, 24),
		ioc(iocRead, b, 25, 8), ioc(iocRead|iocWrite, b, 30, 4096), ioc(iocRead, b, 31, 1024),
		ioc(iocRead, b, 57, 24), ioc(iocRead, b, 57, 72), ioc(iocRead, b, 60, 504),
		ioc(iocRead|iocWrite, b, 61, 4096), ioc(iocRead|iocWrite, b, 62, 4096),
		ioc(iocNone, b, 8, 0), ioc(iocRead, b, 24, 8), ioc(iocWrite, b, 22, 8))
	q("FAT query", ioc(iocRead, r, 1, 2*280), ioc(iocRead, r, 2, 2*280), ioc(iocRead, r, 0x10, 4), ioc(iocRead, r, 0x13, 4))

	// Changes the kernel allows only through an fd opened for writing
	// (or, for FIDEDUPERANGE, that leave the content as it was).
	q("FICLONE", ioc(iocWrite, b, 9, 4))
	q("FICLONERANGE", ioc(iocWrite, b, 13, 32))
	q("FIDEDUPERANGE", ioc(iocRead|iocWrite, b, 54, 24))
	q("preallocation", ioc(iocWrite, X, 40, 48), ioc(iocWrite, X, 41, 48), ioc(iocWrite, X, 42, 48),
		ioc(iocWrite, X, 43, 48), ioc(iocWrite, X, 57, 48))
	q("EXT4_IOC_MOVE_EXT", ioc(iocRead|iocWrite, f, 15, 40))
	q("XFS_IOC_SWAPEXT", ioc(iocRead|iocWrite, X, 109, 176))
	q("XFS_IOC_EXCHANGE_RANGE", ioc(iocWrite, X, 129, 40))
	q("BTRFS_IOC_ENCODED_READ/WRITE", ioc(iocRead, b, 64, 120), ioc(iocWrite, b, 64, 120))

	// Known changes permwrap does not emulate.
	no("FS_IOC_ENABLE_VERITY (makes the file read-only for good)", unix.FS_IOC_ENABLE_VERITY)
	no("FS_IOC_SET_ENCRYPTION_POLICY", ioc(iocRead, f, 19, 12))
	no("fscrypt key management", ioc(iocRead|iocWrite, f, 23, 80), ioc(iocRead|iocWrite, f, 24, 64), ioc(iocRead|iocWrite, f, 25, 64))
	no("FS_IOC_SETFSLABEL", ioc(iocWrite, b, 50, 256))
	no("ext4 file system change", ioc(iocWrite, f, 7, 8), ioc(iocWrite, f, 8, 40), ioc(iocNone, f, 9, 0),
		ioc(iocWrite, f, 16, 8), ioc(iocNone, f, 17, 0), ioc(iocWrite, f, 43, 4), ioc(iocWrite, f, 44, 8))
	no("FIFREEZE/FITHAW/FITRIM", ioc(iocRead|iocWrite, X, 119, 4), ioc(iocRead|iocWrite, X, 120, 4), ioc(iocRead|iocWrite, X, 121, 24))
	no("file system shutdown", ioc(iocRead, X, 125, 4))
	no("XFS handle (opens files by handle, past any path)", ioc(iocRead|iocWrite, X, 104, 72), ioc(iocRead|iocWrite, X, 105, 72),
		ioc(iocRead|iocWrite, X, 106, 72), ioc(iocRead|iocWrite, X, 107, 72), ioc(iocRead|iocWrite, X, 108, 72),
		ioc(iocRead|iocWrite, X, 122, 72), ioc(iocRead|iocWrite, X, 123, 72))
	no("btrfs snapshot or subvolume (creates or removes directories through a directory fd)",
		ioc(iocWrite, b, 1, 4096), ioc(iocWrite, b, 14, 4096), ioc(iocWrite, b, 15, 4096),
		ioc(iocWrite, b, 23, 4096), ioc(iocWrite, b, 24, 4096), ioc(iocWrite, b, 63, 4096),
		ioc(iocWrite, b, 26, 8), ioc(iocRead|iocWrite, b, 37, 200), ioc(iocWrite, b, 19, 8))
	no("btrfs send (reads a whole subvolume)", ioc(iocWrite, b, 38, 72))
	no("btrfs tree search (reads raw metadata, inline file data included)", ioc(iocRead|iocWrite, b, 17, 4096), ioc(iocRead|iocWrite, b, 17, 112))
	return m
}()

// ioctlWatched are the `when` conditions of the ioctl row: any command of
// a filesystem ioctl type (the type byte of the int command).
func ioctlWatched() []notify.Match {
	var ms []notify.Match
	for _, t := range ioctlTypes {
		ms = append(ms, notify.Match{{Arg: 1, Op: notify.CmpMaskedEqual, Mask: 0xff00, Value: uint64(t) << 8}})
	}
	return ms
}

// decodeIoctl sorts a filesystem ioctl (see above): continued, emulated
// (argument read once, the fd's file resolved for judging) or refused.
func decodeIoctl(d *decoder) (decoded, error) {
	cmd := uint32(d.arg(1))
	c, ok := ioctlClasses[cmd]
	switch {
	case !ok:
		return nil, &refusal{errno: unix.ENOTTY, why: fmt.Sprintf("ioctl %#x (type %#x) is a file system ioctl permwrap does not know to be harmless", cmd, iocType(cmd))}
	case c.kind == ioctlContinue:
		return continued{}, nil
	case c.kind == ioctlRefused:
		return nil, &refusal{errno: unix.EPERM, why: "ioctl " + c.name + " is not emulated by permwrap"}
	}
	arg, err := d.bytes(2, c.size, "the ioctl argument")
	if err != nil {
		return nil, err
	}
	obj, err := d.fdObject(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	return &ioctlCall{obj: obj, cmd: uint64(cmd), arg: arg}, nil
}

// ioctlCall is an attribute-changing ioctl (chattr's flags, the fsxattr):
// a write of the fd's file, performed on the target's open file with the
// argument read once.
type ioctlCall struct {
	callDefaults
	obj object
	cmd uint64
	arg []byte
}

func (c *ioctlCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "setattr", c.obj.res) }

func (c *ioctlCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	h, err := c.obj.handle()
	if err == nil {
		err = h.Ioctl(c.cmd, c.arg)
		h.Close()
	}
	s.answer(id, err)
}

func (c *ioctlCall) close() { c.obj.res.Close() }
