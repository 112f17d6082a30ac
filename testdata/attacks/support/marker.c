/*
 * forbidden/prog: the program the exec attacks try to run. It prints a
 * marker and then creates ./forbidden-ran (relative to its working
 * directory, the workspace). Under permwrap the file must never appear: an
 * exec that slips past the check is killed by exec verification at the
 * latest when the new image makes its first watched syscall (this open).
 */
#include <fcntl.h>
#include <unistd.h>

int main(void)
{
	static const char m[] = "FORBIDDEN-MARKER\n";
	(void)!write(1, m, sizeof m - 1);
	int fd = open("forbidden-ran", O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0)
		(void)!write(fd, "ran\n", 4);
	return 0;
}
