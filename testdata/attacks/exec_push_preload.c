/* exec_push_preload: `git push *` asks (headless: denied). A library
 * loaded before main rewrites git's argv: the exec judged is
 * `git status -q origin main`, the program runs `git push -q origin main`
 * (support/push_rewrite.so, copied to free/rewrite.so, which the tree
 * can write). From gitwork (a clone whose remote is a local bare
 * repository), each after a commit of its own:
 *   1. LD_PRELOAD=<absolute path> git status …
 *   2. LD_PRELOAD=<relative path> git status …
 *   3. LD_AUDIT=<absolute path> git status …
 *   4. the loader's option: ld.so --preload <path> /usr/bin/git status …
 *   5. LD_LIBRARY_PATH=free/lib, where the same library is a fake
 *      libpcre2-8.so.0 (git links it, and calls none of it to push; its
 *      symbols are bound lazily, so none is missed)
 * Control: the same library preloaded into free/ok (a program no command
 * rule names) with PUSH_REWRITE_TWIN=../twin-ok: it runs and creates
 * ./twin-ok.
 * Judged by: the remote's main branch moving. */
#include "common.h"
#include <libgen.h>
#include <sys/sendfile.h>
static const char *git = "/usr/bin/git";
static const char *loader(void)
{
	static const char *cands[] = { "/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", NULL };
	for (int i = 0; cands[i]; i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	return cands[0];
}
/* spawn runs path in gitwork with envp and returns its exit status. */
static int spawn(const char *path, char *const argv[], char *const envp[])
{
	pid_t c = fork();
	if (c == 0) {
		if (chdir("gitwork") < 0)
			_exit(126);
		execve(path, argv, envp);
		note("exec %s: %s", path, strerror(errno));
		_exit(127);
	}
	int st = 0;
	waitpid(c, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
static char *plain[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
/* commit adds a commit to push, so that each way moves the remote. */
static void commit(void)
{
	spawn(git, (char *[]){ "git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
		"commit", "-q", "--allow-empty", "-m", "next", NULL }, plain);
}
static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	struct stat st;
	if (in < 0 || out < 0 || fstat(in, &st) < 0)
		return -1;
	off_t off = 0;
	while (off < st.st_size)
		if (sendfile(out, in, &off, st.st_size - off) <= 0)
			return -1;
	close(in);
	close(out);
	return 0;
}
#define STATUS "status", "-q", "origin", "main"
/* remote notes the remote's main branch after one way, so the log shows
 * which ways moved it (the test judges from outside, by the same file). */
static void remote(const char *way, int code)
{
	char buf[16] = "";
	int fd = open("remote.git/refs/heads/main", O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, 12);
		buf[n > 0 ? n : 0] = 0;
		close(fd);
	}
	note("%s: exit %d, remote main %s", way, code, buf);
}
int main(int argc, char **argv)
{
	(void)argc;
	char lib[4096], from[4096], cwd[3000];
	if (!getcwd(cwd, sizeof cwd))
		return 1;
	snprintf(from, sizeof from, "%s/push_rewrite.so", dirname(strdup(argv[0])));
	snprintf(lib, sizeof lib, "%s/free/rewrite.so", cwd);
	if (copy_file(from, lib) < 0)
		note("copying %s: %s", from, strerror(errno));
	char pre[4200], rel[] = "LD_PRELOAD=../free/rewrite.so", aud[4200], twin[4200];
	snprintf(pre, sizeof pre, "LD_PRELOAD=%s", lib);
	snprintf(aud, sizeof aud, "LD_AUDIT=%s", lib);
	snprintf(twin, sizeof twin, "LD_PRELOAD=%s", lib);

	char ok[3100];
	snprintf(ok, sizeof ok, "%s/free/ok", cwd);
	remote("twin", spawn(ok, (char *[]){ "ok", NULL },
		(char *[]){ plain[0], twin, "PUSH_REWRITE_TWIN=../twin-ok", NULL }));

	commit();
	remote("LD_PRELOAD", spawn(git, (char *[]){ "git", STATUS, NULL }, (char *[]){ plain[0], pre, NULL }));
	commit();
	remote("LD_PRELOAD relative", spawn(git, (char *[]){ "git", STATUS, NULL }, (char *[]){ plain[0], rel, NULL }));
	commit();
	remote("LD_AUDIT", spawn(git, (char *[]){ "git", STATUS, NULL }, (char *[]){ plain[0], aud, NULL }));
	commit();
	remote("ld.so --preload", spawn(loader(), (char *[]){ "ld.so", "--preload", lib, (char *)git, STATUS, NULL }, plain));
	char libdir[3100], fake[3200], llp[3200];
	snprintf(libdir, sizeof libdir, "%s/free/lib", cwd);
	snprintf(fake, sizeof fake, "%s/libpcre2-8.so.0", libdir);
	snprintf(llp, sizeof llp, "LD_LIBRARY_PATH=%s", libdir);
	mkdir(libdir, 0755);
	if (copy_file(from, fake) < 0)
		note("copying %s: %s", from, strerror(errno));
	commit();
	remote("LD_LIBRARY_PATH", spawn(git, (char *[]){ "git", STATUS, NULL }, (char *[]){ plain[0], llp, NULL }));
	return 0;
}
