/* read_nested_listener: install our own seccomp filter with
 * SECCOMP_FILTER_FLAG_NEW_LISTENER that sends open/openat to a listener,
 * fork, and have the parent answer every notification of the child with
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE while the child opens the secret. The
 * newest filter's CONTINUE skips older filters' USER_NOTIF, so if
 * permwrap's listener were gone (or permwrap allowed a second one) the
 * child's open would never reach permwrap. Under permwrap the
 * seccomp(NEW_LISTENER) call itself must fail (EPERM from the BPF filter).
 * Judged by: the token on stdout. */
#include "common.h"
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <poll.h>
int main(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	int lfd = check(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog),
			"seccomp(SET_MODE_FILTER, NEW_LISTENER)");
	if (lfd < 0)
		return 1;
	pid_t c = fork();
	if (c == 0) {
		close(lfd);
		dump_path(AT_FDCWD, "secret/key");
		_exit(0);
	}
	struct seccomp_notif *req = calloc(1, 4096);
	struct seccomp_notif_resp *resp = calloc(1, 4096);
	/* The parent is under its own filter too, so the listener never
	 * hangs up: serve until the child has exited. */
	while (waitpid(c, NULL, WNOHANG) == 0) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		if (poll(&pfd, 1, 50) <= 0)
			continue;
		memset(req, 0, 4096);
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
			continue;
		memset(resp, 0, 4096);
		resp->id = req->id;
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		check(ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, resp), "CONTINUE");
	}
	return 0;
}
