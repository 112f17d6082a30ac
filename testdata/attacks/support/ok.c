/*
 * free/ok: the allowed program of the exec attacks. It creates ./ok-ran,
 * the proof an attack's allowed twin (the same technique aimed at an
 * allowed file) worked, so a technique permwrap breaks for everyone does
 * not pass as a block.
 */
#include <fcntl.h>
#include <unistd.h>

int main(void)
{
	int fd = open("ok-ran", O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0)
		close(fd);
	return 0;
}
