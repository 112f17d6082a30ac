/*
 * Shared by the attacks that push from gitwork/: a clone with an
 * unpushed commit whose remote is the bare repository remote.git, both
 * set up by the test (`git: true` in supervisor/attack_test.go). Each way
 * the attack tries is spawned in gitwork and noted with the remote's main
 * branch afterwards, so the log shows which ways moved it; the test
 * itself judges from outside, by the same file.
 */
#ifndef PERMWRAP_ATTACK_GITWORK_H
#define PERMWRAP_ATTACK_GITWORK_H
#include "common.h"
#include <sys/sendfile.h>

#define GIT "/usr/bin/git"
#define PATHENV "PATH=/usr/local/bin:/usr/bin:/bin"
static char *plain_env[] = { PATHENV, NULL };

/* gitwork_spawn runs path in gitwork with envp and returns its exit
 * status (128 + the signal when it was killed). */
static inline int gitwork_spawn(const char *path, char *const argv[], char *const envp[])
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

/* gitwork_commit adds a commit to push, so that each way moves the
 * remote. */
static inline void gitwork_commit(void)
{
	gitwork_spawn(GIT, (char *[]){ "git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
		"commit", "-q", "--allow-empty", "-m", "next", NULL }, plain_env);
}

/* remote_head reads the remote's main branch into buf (empty when
 * there is none). */
static inline void remote_head(char *buf, size_t n)
{
	int fd = open("remote.git/refs/heads/main", O_RDONLY);
	ssize_t r = fd >= 0 ? read(fd, buf, n - 1) : -1;
	buf[r > 0 ? r : 0] = 0;
	if (fd >= 0)
		close(fd);
}

/* remote_note notes one way's exit status and the remote's main branch
 * after it. */
static inline void remote_note(const char *way, int code)
{
	char buf[16];
	remote_head(buf, 13);
	note("%s: exit %d, remote main %s", way, code, buf);
}

/* copy_file copies from to to, executable. */
static inline int copy_file(const char *from, const char *to)
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

/* loader is the dynamic loader, run as a program. */
static inline const char *loader(void)
{
	static const char *cands[] = { "/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", NULL };
	for (int i = 0; cands[i]; i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	return cands[0];
}
#endif
