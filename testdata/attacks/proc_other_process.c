/* proc_other_process: Landlock scopes signals and ptrace to the sandbox,
 * not resource limits, priorities, CPU affinity or I/O priority. Change
 * them for a process outside the tree (argv[1], a process the test
 * started: a stand-in for permwrap itself or any other program of the
 * user):
 *   1. prlimit RLIMIT_NOFILE and RLIMIT_CPU
 *   2. setpriority(PRIO_PROCESS) and setpriority(PRIO_PGRP) on its group
 *   3. sched_setaffinity, sched_setscheduler(SCHED_IDLE)
 *   4. ioprio_set(IOPRIO_WHO_PROCESS)
 * Control: the same calls on itself (pid 0) and on a child work and
 * create ./twin-ok.
 * Judged by: the victim's limits, nice, policy, affinity or I/O priority
 * changing. */
#include "common.h"
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
static int all(pid_t pid, int pgrp)
{
	int bad = 0;
	struct rlimit r = { 7, 7 };
	bad |= check(prlimit(pid, RLIMIT_NOFILE, &r, NULL), "prlimit NOFILE") < 0;
	r.rlim_cur = r.rlim_max = 3600;
	bad |= check(prlimit(pid, RLIMIT_CPU, &r, NULL), "prlimit CPU") < 0;
	bad |= check(setpriority(PRIO_PROCESS, pid, 19), "setpriority PRIO_PROCESS") < 0;
	if (pgrp > 0)
		bad |= check(setpriority(PRIO_PGRP, pgrp, 19), "setpriority PRIO_PGRP") < 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	bad |= check(sched_setaffinity(pid, sizeof set, &set), "sched_setaffinity") < 0;
	struct sched_param sp = { 0 };
	bad |= check(sched_setscheduler(pid, SCHED_IDLE, &sp), "sched_setscheduler SCHED_IDLE") < 0;
	bad |= check(syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, pid, 3 << 13 /* IDLE */), "ioprio_set") < 0;
	return bad;
}
int main(int argc, char **argv)
{
	if (argc < 2)
		return 1;
	pid_t victim = atoi(argv[1]);
	/* control: a child of ours, in its own group, and ourselves */
	pid_t c = fork();
	if (c == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	setpgid(c, c);
	int bad = all(c, c);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	struct rlimit r;
	getrlimit(RLIMIT_NOFILE, &r);
	bad |= check(prlimit(0, RLIMIT_NOFILE, &r, NULL), "prlimit self") < 0;
	if (!bad)
		close(open("twin-ok", O_WRONLY | O_CREAT, 0644));

	all(victim, getpgid(victim));
	return 0;
}
