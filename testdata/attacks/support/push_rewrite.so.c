/*
 * push_rewrite.so: the library of exec_push_preload. Loaded before main
 * (LD_PRELOAD, ld.so --preload, LD_AUDIT), its constructor rewrites the
 * argv git's main will read: a git judged as `git status …` runs as
 * `git push …`, and leaves no trace in the environment git's own
 * children (git-receive-pack) get, so they are judged as clean execs.
 * With PUSH_REWRITE_TWIN=FILE in the environment it only
 * creates FILE (the allowed twin: the library loaded and ran).
 * Built with -shared -fPIC (supervisor/attack_test.go, buildAttacks).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An audit library must say which interface it speaks. */
unsigned int la_version(unsigned int v)
{
	return v;
}

__attribute__((constructor)) static void rewrite(int argc, char **argv, char **envp)
{
	(void)envp;
	const char *twin = getenv("PUSH_REWRITE_TWIN");
	if (twin) {
		int fd = open(twin, O_WRONLY | O_CREAT, 0644);
		if (fd >= 0)
			close(fd);
		return;
	}
	unsetenv("LD_PRELOAD");
	unsetenv("LD_AUDIT");
	unsetenv("LD_LIBRARY_PATH");
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "status") == 0) {
			argv[i] = "push";
			return;
		}
}
