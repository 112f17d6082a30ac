/* write_race_bind_swap: one thread keeps exchanging free/d between a real
 * directory and a symlink to ../protected while the main thread binds a
 * Unix socket to the absolute path WS/free/d/s.sock (and unlinks it). The
 * kernel keeps the path it was given as the socket's address, so a
 * supervisor that binds with the program's own path (as it must, for
 * getsockname to be right) has the kernel resolve free/d again after the
 * check: a swap in between puts the socket file in protected/. Each try
 * binds a new name (s0.sock, s1.sock, …), so every allowed bind succeeds.
 * Runs until it wins, at most PERMWRAP_RACE_SECONDS.
 * Judged by: protected/ changing. */
#include "common.h"
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
static volatile int stop;
static void *swapper(void *arg)
{
	(void)arg;
	while (!stop)
		renameat2(AT_FDCWD, "free/d", AT_FDCWD, "free/e", RENAME_EXCHANGE);
	return NULL;
}
int main(void)
{
	pthread_t t;
	long bound = 0, tries = 0;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd) || strlen(cwd) + sizeof "/free/d/s0000000000.sock" > sizeof a.sun_path)
		return note("the workspace path is too long for sun_path"), 1;
	if (check(mkdir("free/d", 0755), "mkdir free/d") < 0 ||
	    check(symlink("../protected", "free/e"), "symlink free/e") < 0)
		return 1;
	pthread_create(&t, NULL, swapper, NULL);
	while (race_on()) {
		char name[64];
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		snprintf(a.sun_path, sizeof a.sun_path, "%s/free/d/s%ld.sock", cwd, tries);
		if (bind(s, (struct sockaddr *)&a, sizeof a) == 0)
			bound++;
		close(s);
		snprintf(name, sizeof name, "protected/s%ld.sock", tries);
		if (access(name, F_OK) == 0)
			race_won();
		tries++;
	}
	stop = 1;
	pthread_join(t, NULL);
	race_done();
	note("%ld of %ld binds succeeded", bound, tries);
	return 0;
}
