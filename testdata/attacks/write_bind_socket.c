/* write_bind_socket: bind() an AF_UNIX socket to a path inside the
 * protected directory, which creates a socket inode there.
 * Judged by: protected/ changing. */
#include "common.h"
#include <sys/socket.h>
#include <sys/un.h>
int main(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(a.sun_path, "protected/sock");
	check(bind(s, (struct sockaddr *)&a, sizeof a), "bind protected/sock");
	return 0;
}
