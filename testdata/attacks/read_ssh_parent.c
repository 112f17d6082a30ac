/* read_ssh_parent: nothing under ~/.ssh may be read. Move it, or a directory
 * above it, to a name no rule covers and read the key there:
 *   1. rename $HOME to $HOME.moved
 *   2. rename $HOME/.ssh to $HOME/ssh-moved
 *   3. exchange $HOME/.ssh with an empty directory free/swap
 *   4. a symlink free/sshlink -> $HOME/.ssh
 * Each is undone afterwards. Control: the same rename on $HOME/pub (a
 * file written here) prints ALLOWED.
 * Judged by: the token (in $HOME/.ssh/id_test) on stdout. */
#include "common.h"
#include <linux/fs.h>
static char buf[4096];
static const char *at(const char *a, const char *b)
{
	snprintf(buf, sizeof buf, "%s%s", a, b);
	return buf;
}
int main(void)
{
	const char *home = getenv("HOME");
	char h1[2048], h2[2048];
	if (!home)
		return 1;
	/* control */
	mkdir(at(home, "/pub"), 0755);
	int cf = open(at(home, "/pub/key.pub"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (cf >= 0) {
		(void)!write(cf, "ALLOWED\n", 8);
		close(cf);
	}
	snprintf(h1, sizeof h1, "%s/pub", home);
	snprintf(h2, sizeof h2, "%s/pub2", home);
	if (check(rename(h1, h2), "rename ~/pub ~/pub2") == 0) {
		dump_path(AT_FDCWD, at(h2, "/key.pub"));
		rename(h2, h1);
	}

	snprintf(h1, sizeof h1, "%s.moved", home);
	if (check(rename(home, h1), "rename $HOME $HOME.moved") == 0) {
		dump_path(AT_FDCWD, at(h1, "/.ssh/id_test"));
		rename(h1, home);
	}
	snprintf(h1, sizeof h1, "%s/.ssh", home);
	snprintf(h2, sizeof h2, "%s/ssh-moved", home);
	if (check(rename(h1, h2), "rename ~/.ssh ~/ssh-moved") == 0) {
		dump_path(AT_FDCWD, at(h2, "/id_test"));
		rename(h2, h1);
	}
	mkdir("free/swap", 0755);
	if (check(syscall(SYS_renameat2, AT_FDCWD, h1, AT_FDCWD, "free/swap", RENAME_EXCHANGE), "exchange ~/.ssh free/swap") == 0) {
		dump_path(AT_FDCWD, "free/swap/id_test");
		syscall(SYS_renameat2, AT_FDCWD, h1, AT_FDCWD, "free/swap", RENAME_EXCHANGE);
	}
	if (check(symlink(h1, "free/sshlink"), "symlink free/sshlink -> ~/.ssh") == 0)
		dump_path(AT_FDCWD, "free/sshlink/id_test");
	return 0;
}
