/* exec_read_denied: secret/prog may be executed but not read (all of secret/
 * is read-denied). Running it maps its contents into a process the agent
 * controls, so exec needs read as well:
 *   1. execve secret/prog
 *   2. a #! script free/s1 whose interpreter is secret/prog
 *   3. a #! script free/s2 whose interpreter is free/s1 (nested)
 *   4. the dynamic loader: ld.so secret/prog
 *   5. execveat(dirfd of secret/, "prog")
 * Control: free/ok through a #! script and through the loader creates
 * ./ok-ran.
 * Judged by: ./forbidden-ran existing (secret/prog is the marker
 * program). */
#include "common.h"
static const char *loader(void)
{
	static const char *cands[] = { "/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", "/lib/ld-linux-x86-64.so.2", NULL };
	for (int i = 0; cands[i]; i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	return cands[0];
}
static void run(const char *path)
{
	char *argv[] = { "x", NULL };
	execve(path, argv, (char *[]){ NULL });
	note("execve %s: %s", path, strerror(errno));
}
static void run_loader(const char *path)
{
	char *argv[] = { "ld.so", (char *)path, NULL };
	execve(loader(), argv, (char *[]){ NULL });
	note("execve ld.so %s: %s", path, strerror(errno));
}
static void run_at(const char *name)
{
	char *argv[] = { "x", NULL };
	int d = open("secret", O_PATH | O_DIRECTORY);
	syscall(SYS_execveat, d, name, argv, (char *[]){ NULL }, 0);
	note("execveat secret/%s: %s", name, strerror(errno));
}
static void script(const char *path, const char *interp)
{
	char cwd[3000], line[4096];
	if (!getcwd(cwd, sizeof cwd))
		return;
	int n = snprintf(line, sizeof line, "#!%s/%s\n", cwd, interp);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, line, n) != n)
		note("write %s: %s", path, strerror(errno));
	close(fd);
}
int main(void)
{
	script("free/c1", "free/ok");
	in_child(run, "free/c1");
	in_child(run_loader, "free/ok");

	in_child(run, "secret/prog");
	script("free/s1", "secret/prog");
	in_child(run, "free/s1");
	script("free/s2", "free/s1");
	in_child(run, "free/s2");
	in_child(run_loader, "secret/prog");
	in_child(run_at, "prog");
	return 0;
}
