/* write_new_syscalls: change protected/file's metadata through the newest
 * *at syscalls, which older filters and libcs do not know by name:
 * fchmodat2 (452, 6.6), setxattrat (463, 6.13) and file_setattr (469,
 * 6.17; sets the FS_XFLAG_NODUMP inode flag), and fchmodat2 with
 * AT_EMPTY_PATH on an O_PATH fd. Raw numbers, no libc
 * wrappers. Judged by: protected/ changing (mode, xattrs, inode flags). */
#include "common.h"
#include <linux/types.h>
struct xattr_args_v0 {
	__aligned_u64 value;
	__u32 size;
	__u32 flags;
};
struct file_attr_v0 {
	__u64 fa_xflags;
	__u32 fa_extsize, fa_nextents, fa_projid, fa_cowextsize;
};
int main(void)
{
	check(syscall(452, AT_FDCWD, "protected/file", 0700, 0), "fchmodat2 protected/file 0700");
	struct xattr_args_v0 xa = { .value = (unsigned long)"1", .size = 1 };
	check(syscall(463, AT_FDCWD, "protected/file", 0, "user.pwned-at", &xa, sizeof xa), "setxattrat protected/file");
	struct file_attr_v0 fa = { .fa_xflags = 0x00000080 /* FS_XFLAG_NODUMP */ };
	check(syscall(469, AT_FDCWD, "protected/file", &fa, 24, 0), "file_setattr protected/file NODUMP");
	int p = open("protected/file", O_PATH);
	check(syscall(452, p, "", 0600, AT_EMPTY_PATH), "fchmodat2 O_PATH fd AT_EMPTY_PATH 0600");
	return 0;
}
