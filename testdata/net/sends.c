/* sends: socket calls that permwrap performs on a process's behalf must
 * behave as the kernel's own: file descriptors passed with SCM_RIGHTS,
 * sendmmsg's count and msg_len, Unix datagrams to a path, a non-blocking
 * connect, a name the kernel ignores; and the refusals made in the
 * filter or the decoder. One line per case, "case: result", for the test
 * to compare bare and under permwrap. Addresses: 127.0.0.1 is allowed by
 * the test's policy, 127.0.0.2 (loopback too) is denied. */
#include "common.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

static const char *ename(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EINPROGRESS: return "EINPROGRESS";
	case ECONNREFUSED: return "ECONNREFUSED";
	case EINVAL: return "EINVAL";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EISCONN: return "EISCONN";
	}
	static char b[32];
	snprintf(b, sizeof b, "errno%d", e);
	return b;
}

static struct sockaddr_in in4(const char *a, int port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, a, &s.sin_addr);
	return s;
}

static void result(const char *what, long r)
{
	if (r < 0)
		printf("%s: %s\n", what, ename(errno));
	else
		printf("%s: ok\n", what);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	char buf[256];

	/* SCM_RIGHTS: a file's descriptor passed over a socketpair. */
	int fd = open("rights.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (write(fd, "payload", 7) != 7)
		return 1;
	lseek(fd, 0, SEEK_SET);
	int sp[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sp);
	char cb[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec one = {"x", 1};
	struct msghdr m = {.msg_iov = &one, .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof cb};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(sp[0], &m, 0) != 1) {
		result("rights", -1);
	} else {
		char cb2[CMSG_SPACE(sizeof(int))];
		char x;
		struct iovec i2 = {&x, 1};
		struct msghdr m2 = {.msg_iov = &i2, .msg_iovlen = 1, .msg_control = cb2, .msg_controllen = sizeof cb2};
		int got = -1;
		if (recvmsg(sp[1], &m2, 0) == 1 && CMSG_FIRSTHDR(&m2))
			memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&m2)), sizeof got);
		ssize_t n = got >= 0 ? read(got, buf, sizeof buf) : -1;
		printf("rights: %s\n", n == 7 && memcmp(buf, "payload", 7) == 0 ? "ok" : "wrong");
	}

	/* Datagrams to an allowed receiver. */
	int rcv = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in ra = in4("127.0.0.1", 0);
	socklen_t rl = sizeof ra;
	bind(rcv, (void *)&ra, sizeof ra);
	getsockname(rcv, (void *)&ra, &rl);
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	ssize_t sent = sendto(u, "abc", 3, 0, (void *)&ra, sizeof ra);
	ssize_t got = recv(rcv, buf, sizeof buf, 0);
	printf("udp unconnected: %zd %zd\n", sent, got);

	struct iovec iov[2] = {{"he", 2}, {"llo", 3}};
	struct mmsghdr mm[3];
	memset(mm, 0, sizeof mm);
	for (int i = 0; i < 3; i++) {
		mm[i].msg_hdr.msg_name = &ra;
		mm[i].msg_hdr.msg_namelen = sizeof ra;
		mm[i].msg_hdr.msg_iov = iov;
		mm[i].msg_hdr.msg_iovlen = 2;
	}
	int k = sendmmsg(u, mm, 3, 0);
	printf("sendmmsg: %d %u %u %u\n", k, mm[0].msg_len, mm[1].msg_len, mm[2].msg_len);
	for (int i = 0; i < k; i++)
		recv(rcv, buf, sizeof buf, 0);

	/* The third message goes to a denied address: the kernel's partial
	 * count, the first two sent. */
	struct sockaddr_in denied = in4("127.0.0.2", ntohs(ra.sin_port));
	memset(mm, 0, sizeof mm);
	for (int i = 0; i < 3; i++) {
		mm[i].msg_hdr.msg_name = i == 2 ? &denied : &ra;
		mm[i].msg_hdr.msg_namelen = sizeof ra;
		mm[i].msg_hdr.msg_iov = iov;
		mm[i].msg_hdr.msg_iovlen = 2;
	}
	k = sendmmsg(u, mm, 3, 0);
	printf("sendmmsg partial: %d %u %u %u\n", k, mm[0].msg_len, mm[1].msg_len, mm[2].msg_len);

	/* A Unix datagram to a path. */
	unlink("d.sock");
	int ud = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un ua = {.sun_family = AF_UNIX};
	strcpy(ua.sun_path, "d.sock");
	bind(ud, (void *)&ua, sizeof ua);
	int us = socket(AF_UNIX, SOCK_DGRAM, 0);
	sent = sendto(us, "dg", 2, 0, (void *)&ua, sizeof ua);
	got = recv(ud, buf, sizeof buf, MSG_DONTWAIT);
	printf("unix dgram: %zd %zd\n", sent, got);

	/* A non-blocking connect: EINPROGRESS, then the outcome on the same
	 * socket. */
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in la = in4("127.0.0.1", 0);
	socklen_t ll = sizeof la;
	bind(l, (void *)&la, sizeof la);
	listen(l, 8);
	getsockname(l, (void *)&la, &ll);
	int nb = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int r = connect(nb, (void *)&la, sizeof la);
	int cerr = r < 0 ? errno : 0;
	struct pollfd p = {nb, POLLOUT, 0};
	poll(&p, 1, 5000);
	int soerr = -1;
	socklen_t el = sizeof soerr;
	getsockopt(nb, SOL_SOCKET, SO_ERROR, &soerr, &el);
	printf("nonblocking: %s %d\n", r < 0 ? ename(cerr) : "connected", soerr);

	/* A connected TCP socket ignores a destination given to sendto, even
	 * a denied one. */
	int tc = socket(AF_INET, SOCK_STREAM, 0);
	connect(tc, (void *)&la, sizeof la);
	printf("tcp name ignored: %zd\n", sendto(tc, "hello", 5, 0, (void *)&denied, sizeof denied));

	/* TCP Fast Open makes a send a connect: judged as one. */
	int tfo = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in dl = in4("127.0.0.2", ntohs(la.sin_port));
	result("fastopen to a denied address", sendto(tfo, "x", 1, MSG_FASTOPEN, (void *)&dl, sizeof dl));

	/* Refused in the filter: raw and packet sockets, other families, IP
	 * source routes; in the decoder: a source route in a control message,
	 * credentials permwrap cannot send as the process. */
	result("raw", socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
	result("packet", socket(AF_PACKET, SOCK_RAW, 0));
	result("vsock", socket(40 /* AF_VSOCK */, SOCK_STREAM, 0));
	char lsrr[8] = {0x83, 7, 4, 127, 0, 0, 1, 0};
	result("ip_options", setsockopt(u, IPPROTO_IP, IP_OPTIONS, lsrr, sizeof lsrr));
	char cb3[CMSG_SPACE(sizeof lsrr)] = {0};
	struct iovec i3 = {"r", 1};
	struct msghdr m3 = {.msg_name = &ra, .msg_namelen = sizeof ra, .msg_iov = &i3, .msg_iovlen = 1, .msg_control = cb3, .msg_controllen = sizeof cb3};
	struct cmsghdr *c3 = CMSG_FIRSTHDR(&m3);
	c3->cmsg_level = IPPROTO_IP;
	c3->cmsg_type = IP_RETOPTS;
	c3->cmsg_len = CMSG_LEN(sizeof lsrr);
	memcpy(CMSG_DATA(c3), lsrr, sizeof lsrr);
	result("retopts cmsg", sendmsg(u, &m3, 0));
	return 0;
}
