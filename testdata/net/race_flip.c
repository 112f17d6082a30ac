/* race_flip: the seccomp-notify TOCTOU on a destination. One thread
 * connects (or sends a datagram) to a sockaddr in a loop while a second
 * thread flips the sockaddr's port between an allowed port and a denied
 * one, hoping the supervisor judges the allowed port and the kernel then
 * uses the denied one.
 *
 *   race_flip connect|sendto|sendmsg ALLOWED_PORT DENIED_PORT [ADDR]
 *
 * Runs until it sees itself win (a connection whose peer is the denied
 * port; datagrams cannot tell) or PERMWRAP_RACE_SECONDS pass. The test
 * judges from outside: the denied port's server must see nothing under
 * permwrap, and something bare. Counts go to stderr. */
#include "common.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

static struct sockaddr_in sa;
static volatile int stop;
static uint16_t allowed, denied;

static void *flipper(void *arg)
{
	(void)arg;
	while (!stop) {
		*(volatile uint16_t *)&sa.sin_port = denied;
		__asm__ volatile("" ::: "memory");
		*(volatile uint16_t *)&sa.sin_port = allowed;
		__asm__ volatile("" ::: "memory");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		note("usage: race_flip connect|sendto|sendmsg ALLOWED DENIED [ADDR]");
		return 2;
	}
	const char *mode = argv[1];
	allowed = htons(atoi(argv[2]));
	denied = htons(atoi(argv[3]));
	sa.sin_family = AF_INET;
	sa.sin_port = allowed;
	inet_pton(AF_INET, argc > 4 ? argv[4] : "127.0.0.1", &sa.sin_addr);
	pthread_t t;
	pthread_create(&t, NULL, flipper, NULL);
	long ok = 0, refused = 0, other = 0, reached_denied = 0;
	int udp = socket(AF_INET, SOCK_DGRAM, 0);
	while (race_on()) {
		long r;
		if (strcmp(mode, "connect") == 0) {
			int s = socket(AF_INET, SOCK_STREAM, 0);
			r = connect(s, (struct sockaddr *)&sa, sizeof sa);
			if (r == 0) {
				struct sockaddr_in peer;
				socklen_t l = sizeof peer;
				if (getpeername(s, (struct sockaddr *)&peer, &l) == 0 && peer.sin_port == denied) {
					reached_denied++;
					race_won();
				}
			}
			close(s);
		} else if (strcmp(mode, "sendto") == 0) {
			r = sendto(udp, "x", 1, 0, (struct sockaddr *)&sa, sizeof sa);
		} else {
			struct iovec iov = {"x", 1};
			struct msghdr m = {.msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = &iov, .msg_iovlen = 1};
			r = sendmsg(udp, &m, 0);
		}
		if (r >= 0)
			ok++;
		else if (errno == EACCES)
			refused++;
		else
			other++;
	}
	stop = 1;
	pthread_join(t, NULL);
	race_done();
	note("%s: %ld succeeded, %ld refused (EACCES), %ld failed otherwise, %ld connected to the denied port",
	     mode, ok, refused, other, reached_denied);
	return 0;
}
