/* net_outside_service: a service outside the sandbox that acts for
 * whoever connects — here, one that hands the secret to any client, as
 * the person's tmux server would run `cat ~/.ssh/id_rsa` for one — is
 * reached from inside by every spelling of its address:
 *   1. connect 127.0.0.1:P
 *   2. connect 0.0.0.0:P from an unbound socket (Linux: loopback)
 *   3. bind 127.0.0.1:0, then connect 0.0.0.0:P (the bound source)
 *   4. an IPv6 socket to ::ffff:127.0.0.1:P
 *   5. an IPv6 socket bound to ::ffff:127.0.0.1, to ::ffff:0.0.0.0:P
 *   6. connect [::1]:Q and [::]:Q (a listener on ::1)
 *   7. an abstract Unix socket @NAME, and a Unix socket file PATH
 *   8. UDP: a datagram to 127.0.0.1:U (and 0.0.0.0:U with a bound
 *      source), the service answering with the secret
 *   9. connect 127.0.0.2:R (loopback is a /8)
 * argv: P Q NAME PATH U R.
 * Control: the program starts its own server (a child) on loopback and on
 * an abstract name, serving free/a, and prints what it gets from each.
 * Judged by: the token in the output. */
#include "common.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>
#include <stddef.h>

static void drain(int s, const char *what)
{
	char buf[256];
	struct pollfd p = { .fd = s, .events = POLLIN };
	if (poll(&p, 1, 2000) <= 0) {
		note("%s: no answer", what);
		return;
	}
	ssize_t n = read(s, buf, sizeof buf - 1);
	if (n > 0) {
		buf[n] = 0;
		printf("%s: %s", what, buf);
		fflush(stdout);
	} else {
		note("%s: read: %s", what, n < 0 ? strerror(errno) : "EOF");
	}
}

/* inet_sa fills ss with addr:port of family and returns its length. */
static socklen_t inet_sa(int family, const char *addr, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		inet_pton(AF_INET6, addr, &a->sin6_addr);
		return sizeof *a;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	inet_pton(AF_INET, addr, &a->sin_addr);
	return sizeof *a;
}

/* try_inet reaches dst:port from a socket of family and type (bound to
 * bindaddr first, when given): a stream connects, a datagram socket sends
 * one byte; then it prints what comes back. */
static void try_inet(const char *what, int family, int type, const char *bindaddr, const char *dst, int port)
{
	int s = socket(family, type, 0);
	struct sockaddr_storage a;
	socklen_t l;
	if (bindaddr) {
		l = inet_sa(family, bindaddr, 0, &a);
		if (bind(s, (struct sockaddr *)&a, l) < 0)
			note("%s: bind: %s", what, strerror(errno));
	}
	l = inet_sa(family, dst, port, &a);
	int r = type == SOCK_DGRAM ? (int)sendto(s, "?", 1, 0, (struct sockaddr *)&a, l) : connect(s, (struct sockaddr *)&a, l);
	if (r < 0)
		note("%s: %s: %s", what, type == SOCK_DGRAM ? "sendto" : "connect", strerror(errno));
	else
		drain(s, what);
	close(s);
}

static socklen_t unix_addr(struct sockaddr_un *u, const char *name, int abstract)
{
	memset(u, 0, sizeof *u);
	u->sun_family = AF_UNIX;
	size_t n = strlen(name);
	if (abstract) {
		memcpy(u->sun_path + 1, name, n);
		return offsetof(struct sockaddr_un, sun_path) + 1 + n;
	}
	memcpy(u->sun_path, name, n);
	return sizeof *u;
}

static void try_unix(const char *what, const char *name, int abstract)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un u;
	socklen_t l = unix_addr(&u, name, abstract);
	if (connect(s, (struct sockaddr *)&u, l) < 0)
		note("%s: connect: %s", what, strerror(errno));
	else
		drain(s, what);
	close(s);
}

/* serve answers every connection on l with free/a's content. */
static void serve(int l, int count)
{
	for (int i = 0; i < count; i++) {
		int c = accept(l, NULL, NULL);
		if (c < 0)
			_exit(1);
		int f = open("free/a", O_RDONLY);
		char buf[64];
		ssize_t n = f < 0 ? -1 : read(f, buf, sizeof buf);
		if (n > 0 && write(c, buf, n) < 0)
			note("twin: write: %s", strerror(errno));
		close(f);
		close(c);
	}
}

static void twin(void)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 4) < 0 || getsockname(l, (struct sockaddr *)&a, &al) < 0) {
		note("twin: listen: %s", strerror(errno));
		return;
	}
	char name[64];
	snprintf(name, sizeof name, "permwrap-twin-%d", (int)getpid());
	int ul = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un u;
	socklen_t l2 = unix_addr(&u, name, 1);
	if (bind(ul, (struct sockaddr *)&u, l2) < 0 || listen(ul, 4) < 0) {
		note("twin: unix listen: %s", strerror(errno));
		return;
	}
	pid_t c = fork();
	if (c == 0) {
		serve(l, 1);
		serve(ul, 1);
		_exit(0);
	}
	try_inet("twin tcp", AF_INET, SOCK_STREAM, NULL, "127.0.0.1", ntohs(a.sin_port));
	try_unix("twin abstract", name, 1);
	waitpid(c, NULL, 0);
	close(l);
	close(ul);
}

int main(int argc, char **argv)
{
	if (argc < 7) {
		note("usage: %s P Q NAME PATH U R", argv[0]);
		return 2;
	}
	int p = atoi(argv[1]), q = atoi(argv[2]), u = atoi(argv[5]), r = atoi(argv[6]);
	twin();
	try_inet("1 127.0.0.1", AF_INET, SOCK_STREAM, NULL, "127.0.0.1", p);
	try_inet("2 0.0.0.0", AF_INET, SOCK_STREAM, NULL, "0.0.0.0", p);
	try_inet("3 bound 0.0.0.0", AF_INET, SOCK_STREAM, "127.0.0.1", "0.0.0.0", p);
	try_inet("4 v4-mapped", AF_INET6, SOCK_STREAM, NULL, "::ffff:127.0.0.1", p);
	try_inet("5 bound v4-mapped unspecified", AF_INET6, SOCK_STREAM, "::ffff:127.0.0.1", "::ffff:0.0.0.0", p);
	try_inet("6 ::1", AF_INET6, SOCK_STREAM, NULL, "::1", q);
	try_inet("6 ::", AF_INET6, SOCK_STREAM, NULL, "::", q);
	try_unix("7 abstract", argv[3], 1);
	try_unix("7 path", argv[4], 0);
	try_inet("8 udp", AF_INET, SOCK_DGRAM, NULL, "127.0.0.1", u);
	try_inet("8 udp bound 0.0.0.0", AF_INET, SOCK_DGRAM, "127.0.0.1", "0.0.0.0", u);
	try_inet("9 127.0.0.2", AF_INET, SOCK_STREAM, NULL, "127.0.0.2", r);
	return 0;
}
