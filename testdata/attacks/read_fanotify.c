/* read_fanotify: a fanotify group without FID reporting gets, with each
 * event, a file descriptor the kernel opens for it on the file someone
 * accessed — past every check of the open it did not make. Mark
 * secret/tokscript (an executable #! script holding the token; exec is
 * allowed, reading is not) for open events, then make someone open it:
 * exec it (the kernel, bare; permwrap itself reads its head to see what
 * it runs). Read what the event's fd holds. (Needs CAP_SYS_ADMIN.)
 * Judged by: the token on stdout. */
#include "common.h"
#include <poll.h>
#include <sys/fanotify.h>
static void run(const char *path)
{
	char *argv[] = { "x", NULL };
	execve(path, argv, (char *[]){ NULL });
	_exit(127);
}
int main(void)
{
	int g = check(fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY), "fanotify_init");
	if (g < 0)
		return 1;
	if (check(fanotify_mark(g, FAN_MARK_ADD, FAN_OPEN | FAN_OPEN_EXEC, AT_FDCWD, "secret/tokscript"), "fanotify_mark") < 0)
		return 1;
	in_child(run, "secret/tokscript");
	char buf[8192];
	struct pollfd p = { .fd = g, .events = POLLIN };
	while (poll(&p, 1, 2000) > 0) {
		ssize_t n = read(g, buf, sizeof buf);
		if (n <= 0)
			break;
		for (struct fanotify_event_metadata *m = (void *)buf; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
			if (m->fd >= 0) {
				pread(m->fd, buf + sizeof buf / 2, 0, 0); /* keep the event buffer */
				char data[4096];
				ssize_t k = pread(m->fd, data, sizeof data, 0);
				if (k > 0)
					(void)!write(1, data, k);
				close(m->fd);
			}
		}
	}
	return 0;
}
