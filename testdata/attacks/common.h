/*
 * Shared helpers for permwrap's attack programs.
 *
 * Every attack runs with its working directory at the test workspace:
 *
 *   secret/key        a random token; reading it is denied
 *   protected/file    must stay unchanged; writing under protected/ is denied
 *   protected/empty/  an empty directory, for rmdir
 *   forbidden/prog    prints FORBIDDEN-MARKER and creates ./forbidden-ran;
 *                     executing it is denied
 *   free/a, free/evil ordinary files (contents "ALLOWED", "EVIL")
 *   free/ok           an allowed program that exits 0
 *
 * Before main, every attack creates ./attack-started (an allowed write):
 * the test requires it, so an attack "blocked" only because permwrap never
 * ran it cannot pass.
 *
 * The programs never judge themselves: they print whatever they managed to
 * read on stdout and leave whatever they managed to change on disk, and the
 * Go test (supervisor/attack_test.go) decides from that. Diagnostics go to
 * stderr prefixed with "attack:" so a failing test shows what happened.
 *
 * Races (the *_race_* attacks) keep trying while race_on(): until their
 * time is up (PERMWRAP_RACE_SECONDS, default 4, counted from the start)
 * or until they see that they won (race_won(), which a forked child may
 * call too). The test gives the bare run a generous cap and stops there at
 * the first win, then gives permwrap at least as long as bare needed. Seeing
 * a win only ends the loop early; the test still judges from outside.
 */
#ifndef PERMWRAP_ATTACK_COMMON_H
#define PERMWRAP_ATTACK_COMMON_H
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline void note(const char *fmt, ...)
{
	va_list ap;
	int saved = errno;
	fputs("attack: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	errno = saved;
}

/* dump copies everything readable from fd to stdout. */
static inline void dump(int fd)
{
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		if (write(1, buf, n) != n)
			break;
	if (n < 0)
		note("read: %s", strerror(errno));
}

/* dump_path opens path read-only and prints its contents. */
static inline int dump_path(int dirfd, const char *path)
{
	int fd = openat(dirfd, path, O_RDONLY);
	if (fd < 0) {
		note("open %s: %s", path, strerror(errno));
		return -1;
	}
	dump(fd);
	close(fd);
	return 0;
}

/* scribble writes a line to fd, reporting the outcome. */
static inline int scribble(int fd, const char *what)
{
	static const char msg[] = "PWNED\n";
	if (write(fd, msg, sizeof msg - 1) != (ssize_t)(sizeof msg - 1)) {
		note("write %s: %s", what, strerror(errno));
		return -1;
	}
	return 0;
}

/* write_path opens path for writing with flags and writes to it. */
static inline int write_path(int dirfd, const char *path, int flags)
{
	int fd = openat(dirfd, path, O_WRONLY | flags, 0644);
	if (fd < 0) {
		note("open %s for writing: %s", path, strerror(errno));
		return -1;
	}
	scribble(fd, path);
	close(fd);
	return 0;
}

/* check reports a failed call; it returns r so calls can be chained. */
static inline long check(long r, const char *what)
{
	if (r < 0)
		note("%s: %s", what, strerror(errno));
	else
		note("%s: ok (%ld)", what, r);
	return r;
}

/* in_child runs fn(arg) in a forked child and waits for it: the allowed
 * twin of an exec attack must not replace the attacker. */
static inline void in_child(void (*fn)(const char *), const char *arg)
{
	pid_t c = fork();
	if (c == 0) {
		fn(arg);
		_exit(127);
	}
	if (c > 0)
		while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
			;
}

/* Race bookkeeping: the deadline, and a win flag shared with forked
 * children. */
static double race_deadline;
static volatile int *race_flag;

static inline double race_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* race_on says whether to keep trying: not won yet, and time left. */
static inline int race_on(void)
{
	return !(race_flag && *race_flag) && race_now() < race_deadline;
}

/* race_won records that the attack saw itself win. */
static inline void race_won(void)
{
	if (race_flag)
		*race_flag = 1;
}

/* race_done reports how the race went, for the test's log. */
static inline void race_done(void)
{
	note("race %s", race_flag && *race_flag ? "won" : "not won before the deadline");
}

__attribute__((constructor)) static void attack_started(void)
{
	const char *s = getenv("PERMWRAP_RACE_SECONDS");
	double secs = s ? atof(s) : 0;
	race_deadline = race_now() + (secs > 0 ? secs : 4);
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		race_flag = p;
	int fd = open("attack-started", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		note("create attack-started: %s", strerror(errno));
		return;
	}
	close(fd);
}

#endif
