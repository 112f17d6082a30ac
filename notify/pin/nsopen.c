// The user-namespace opener (nsopen.go): a process that opens one
// /proc/PID/{uid_map,gid_map,projid_map,setgroups} file as the target
// would, from inside the target's user namespace and with its ids, and
// sends the fd back.
//
// It must join a user namespace, which a process can only do while it has
// a single thread (setns(2) EINVAL), and a Go program never has. So it
// runs here, in a constructor, before the Go runtime starts, and never
// returns into Go: the binary that links this package (permwrap, or a
// test binary) re-executes itself with argv[1] == "__permwrap_nsopen".
// Every other start of such a binary returns at the first comparison.
//
//   argv: EXE __permwrap_nsopen FLAGS UID GID GROUPS   (GROUPS "-" or "g1,g2,...")
//   fd 3: a SOCK_SEQPACKET socket: one message back, a 4-byte errno
//         (0 on success) with the opened fd as SCM_RIGHTS
//   fd 4: the target's user namespace (/proc/TID/ns/user)
//   fd 5: the file, an O_PATH fd pinned by the supervisor

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define NSOPEN_ARG "__permwrap_nsopen"
#define NSOPEN_MAX_GROUPS 256

static void nsopen_reply(int err, int fd)
{
	int32_t e = err;
	struct iovec iov = {.iov_base = &e, .iov_len = sizeof e};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		memset(&u, 0, sizeof u);
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof u.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	while (sendmsg(3, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
	_exit(0);
}

static int nsopen_parse(const char *s, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

// The raw syscalls act on this (only) thread; glibc's wrappers would try
// to broadcast to threads that do not exist, which is harmless, but the
// raw forms say exactly what happens.
static int nsopen_setids(unsigned long uid, unsigned long gid, const char *groups)
{
	gid_t gs[NSOPEN_MAX_GROUPS];
	size_t n = 0;
	if (strcmp(groups, "-") != 0) {
		const char *p = groups;
		while (*p) {
			char *end;
			errno = 0;
			unsigned long g = strtoul(p, &end, 10);
			if (errno != 0 || end == p || n == NSOPEN_MAX_GROUPS)
				return EINVAL;
			gs[n++] = (gid_t)g;
			p = end;
			if (*p == ',')
				p++;
			else if (*p != '\0')
				return EINVAL;
		}
	}
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;
	if (getresuid(&ruid, &euid, &suid) < 0 || getresgid(&rgid, &egid, &sgid) < 0)
		return errno;
	int same = ruid == uid && euid == uid && suid == uid && rgid == gid && egid == gid && sgid == gid;
	if (same) {
		// An ordinary supervisor acts for targets with its own ids only
		// (it cannot switch), and its groups are theirs too.
		return 0;
	}
	if (syscall(SYS_setgroups, n, gs) < 0)
		return errno;
	if (syscall(SYS_setresgid, gid, gid, gid) < 0)
		return errno;
	if (syscall(SYS_setresuid, uid, uid, uid) < 0)
		return errno;
	return 0;
}

__attribute__((constructor)) static void permwrap_nsopen(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc != 6 || argv == NULL || argv[1] == NULL || strcmp(argv[1], NSOPEN_ARG) != 0)
		return;
	unsigned long flags, uid, gid;
	if (nsopen_parse(argv[2], &flags) < 0 || nsopen_parse(argv[3], &uid) < 0 || nsopen_parse(argv[4], &gid) < 0)
		nsopen_reply(EINVAL, -1);
	int err = nsopen_setids(uid, gid, argv[5]);
	if (err != 0)
		nsopen_reply(err, -1);
	// Join the target's user namespace unless it is already ours (setns
	// refuses to re-enter the caller's own).
	struct stat want, have;
	if (fstat(4, &want) < 0)
		nsopen_reply(errno, -1);
	if (stat("/proc/self/ns/user", &have) < 0)
		nsopen_reply(errno, -1);
	if (want.st_dev != have.st_dev || want.st_ino != have.st_ino) {
		if (setns(4, CLONE_NEWUSER) < 0)
			nsopen_reply(errno, -1);
	}
	int fd;
	do {
		fd = open("/proc/self/fd/5", (int)flags | O_CLOEXEC | O_NOCTTY);
	} while (fd < 0 && errno == EINTR);
	if (fd < 0)
		nsopen_reply(errno, -1);
	nsopen_reply(0, fd);
}
