/* write_git_hooks_move: nothing under any .git/hooks may be written (the rule
 * has no literal leading directory). Get a hook written by moving things
 * instead of writing under the protected name:
 *   1. rename repo/.git aside, write the hook there, rename it back
 *   2. rename repo (the parent) aside, add a hook, rename it back
 *   3. RENAME_EXCHANGE repo/.git with free/fakegit (whose hooks/ holds a
 *      pre-commit)
 *   4. link free/evil into repo/.git/hooks
 *   5. symlink repo2/.git/hooks -> free/fakehooks (repo2 has no hooks)
 *   6. rename free/movehooks to repo2/.git/hooks
 * Control: the same aside-write-back on repo/.gitx (not .git) works and
 * creates ./twin-ok.
 * Judged by: repo/.git/hooks and repo2/.git/hooks changing. */
#include "common.h"
#include <linux/fs.h>
static int put(const char *p)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0) {
		note("create %s: %s", p, strerror(errno));
		return -1;
	}
	scribble(fd, p);
	close(fd);
	return 0;
}
int main(void)
{
	/* control */
	mkdir("repo/.gitx", 0755);
	mkdir("repo/.gitx/hooks", 0755);
	if (rename("repo/.gitx", "repo/.gitx-aside") == 0 && put("repo/.gitx-aside/hooks/pre-commit") == 0 &&
	    rename("repo/.gitx-aside", "repo/.gitx") == 0) {
		int fd = open("twin-ok", O_WRONLY | O_CREAT, 0644);
		close(fd);
	}

	if (check(rename("repo/.git", "repo/.git-aside"), "rename repo/.git aside") == 0) {
		put("repo/.git-aside/hooks/pre-commit");
		check(rename("repo/.git-aside", "repo/.git"), "rename it back");
	}
	if (check(rename("repo", "repo-aside"), "rename repo aside") == 0) {
		put("repo-aside/.git/hooks/post-checkout");
		check(rename("repo-aside", "repo"), "rename it back");
	}
	mkdir("free/fakegit", 0755);
	mkdir("free/fakegit/hooks", 0755);
	put("free/fakegit/hooks/pre-commit");
	if (check(syscall(SYS_renameat2, AT_FDCWD, "repo/.git", AT_FDCWD, "free/fakegit", RENAME_EXCHANGE), "exchange repo/.git free/fakegit") == 0)
		note("exchanged");
	check(link("free/evil", "repo/.git/hooks/pre-push"), "link free/evil into repo/.git/hooks");
	mkdir("free/fakehooks", 0755);
	put("free/fakehooks/pre-commit");
	check(symlink("../../free/fakehooks", "repo2/.git/hooks"), "symlink repo2/.git/hooks");
	mkdir("free/movehooks", 0755);
	put("free/movehooks/post-merge");
	check(rename("free/movehooks", "repo2/.git/hooks"), "rename free/movehooks to repo2/.git/hooks");
	return 0;
}
