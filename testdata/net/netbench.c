/* netbench: the network workloads of scripts/bench-net.
 *   netbench server PORT          accept loop on 127.0.0.1:PORT; each
 *                                 connection is read to its end
 *   netbench connect N PORT       N blocking connects to it (each one
 *                                 judged and performed by permwrap)
 *   netbench bulk MIB PORT        one connection, MIB MiB sent with send()
 *                                 (no destination: never notified)
 *   netbench udp N PORT           N datagrams with sendto(dest) (each one
 *                                 judged and performed by permwrap)
 * The clients print the seconds their loop took (the connection for
 * bulk included), so that permwrap's own start is not counted; they
 * exit 1 on failure. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in addr(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	return a;
}

static void *drain(void *arg)
{
	int c = (int)(long)arg;
	char buf[1 << 16];
	while (read(c, buf, sizeof buf) > 0)
		;
	close(c);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int port = atoi(argv[argc - 1]);
	struct sockaddr_in a = addr(port);
	if (strcmp(argv[1], "server") == 0) {
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(l, (void *)&a, sizeof a) || listen(l, 4096))
			return 1;
		int u = socket(AF_INET, SOCK_DGRAM, 0);
		bind(u, (void *)&a, sizeof a); /* datagrams are dropped unread */
		for (;;) {
			int c = accept(l, NULL, NULL);
			if (c < 0)
				continue;
			pthread_t t;
			pthread_create(&t, NULL, drain, (void *)(long)c);
			pthread_detach(t);
		}
	}
	long n = atol(argv[2]);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (strcmp(argv[1], "connect") == 0) {
		for (long i = 0; i < n; i++) {
			int s = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(s, (void *)&a, sizeof a))
				return 1;
			close(s);
		}
	} else if (strcmp(argv[1], "bulk") == 0) {
		static char buf[1 << 16];
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(s, (void *)&a, sizeof a))
			return 1;
		for (long left = n << 20; left > 0;) {
			ssize_t k = send(s, buf, left < (long)sizeof buf ? left : (long)sizeof buf, 0);
			if (k <= 0)
				return 1;
			left -= k;
		}
		close(s);
	} else if (strcmp(argv[1], "udp") == 0) {
		int u = socket(AF_INET, SOCK_DGRAM, 0);
		for (long i = 0; i < n; i++)
			if (sendto(u, "x", 1, 0, (void *)&a, sizeof a) != 1)
				return 1;
	} else
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.6f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
