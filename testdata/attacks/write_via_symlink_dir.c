/* write_via_symlink_dir: free/pd -> ../protected, then the non-open path
 * operations through the allowed-looking name: mkdir, symlink, mknod,
 * link, rename and unlink under free/pd/ (each resolved by a different
 * code path than open). Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(symlink("../protected", "free/pd"), "symlink free/pd");
	check(mkdir("free/pd/dir", 0755), "mkdir free/pd/dir");
	check(symlink("x", "free/pd/link"), "symlink free/pd/link");
	check(mknod("free/pd/fifo", S_IFIFO | 0644, 0), "mknod free/pd/fifo");
	check(link("free/evil", "free/pd/hl"), "link free/evil free/pd/hl");
	check(rename("free/pd/file", "free/pd/renamed"), "rename free/pd/file free/pd/renamed");
	check(unlink("free/pd/renamed"), "unlink free/pd/renamed");
	check(rmdir("free/pd/empty"), "rmdir free/pd/empty");
	return 0;
}
