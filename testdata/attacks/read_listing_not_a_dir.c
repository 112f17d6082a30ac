/* read_listing_not_a_dir: a listing's flags on what is not a directory —
 * a symlink named like a directory pointing at secret/key, secret/key
 * itself, with O_NOFOLLOW too, and a FIFO (which would block a plain
 * open) — hoping the unjudged open gives a readable fd. The kernel
 * answers ENOTDIR before opening anything, bare too (the test's trial
 * shows it), so this attack is impossible; under permwrap nothing may
 * get through either. Judged by: the token on stdout. */
#include "common.h"
static void try(const char *path, int flags)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | flags);
	if (fd < 0) {
		note("open %s O_DIRECTORY: %s", path, strerror(errno));
		return;
	}
	dump(fd);
	close(fd);
}
int main(void)
{
	check(symlink("../secret/key", "free/keydir"), "symlink free/keydir -> ../secret/key");
	try("free/keydir", 0);
	try("free/keydir", O_NOFOLLOW);
	try("secret/key", 0);
	try("secret/key", O_NONBLOCK);
	check(mkfifo("free/fifo", 0600), "mkfifo free/fifo");
	try("free/fifo", 0);
	return 0;
}
