/* exec_deleted: keep an O_PATH handle on a program the policy forbids,
 * remove its name, and run the object through the handle:
 * execveat(fd, "", AT_EMPTY_PATH) and execve("/proc/self/fd/N"). Two
 * programs: forbidden/prog (denied by a directory rule) and
 * free/denied-tool (denied by a rule on its name alone, which the
 * "(deleted)" the kernel appends would no longer match). Control: a copy
 * of free/ok treated the same way creates ./ok-ran.
 * Judged by: ./forbidden-ran existing. */
#include "common.h"
static int the_fd;
static void run_fd(const char *how)
{
	char *argv[] = { "x", NULL };
	if (how[0] == 'a')
		syscall(SYS_execveat, the_fd, "", argv, (char *[]){ NULL }, AT_EMPTY_PATH);
	else {
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d", the_fd);
		execve(p, argv, (char *[]){ NULL });
	}
	note("exec of fd %d (%s): %s", the_fd, how, strerror(errno));
}
static void copy(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ssize_t n;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, n) != n)
			break;
	close(in);
	close(out);
}
static void attempt(const char *path)
{
	the_fd = open(path, O_PATH);
	if (the_fd < 0) {
		note("open %s O_PATH: %s", path, strerror(errno));
		return;
	}
	check(unlink(path), path);
	in_child(run_fd, "at");
	in_child(run_fd, "proc");
	close(the_fd);
}
int main(void)
{
	copy("free/ok", "free/ok2");
	attempt("free/ok2");
	attempt("forbidden/prog");
	attempt("free/denied-tool");
	return 0;
}
