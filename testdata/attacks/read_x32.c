/* read_x32: open the secret with the x32 ABI: openat's number with
 * __X32_SYSCALL_BIT (0x40000000) set. It arrives as AUDIT_ARCH_X86_64 with
 * a number a filter that compares exact x86_64 numbers does not watch.
 * Kernels without CONFIG_X86_X32_ABI answer ENOSYS even bare (the test
 * then reports the attack as impossible there and still requires permwrap
 * to kill or deny it). Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	long fd = syscall(0x40000000 | SYS_openat, AT_FDCWD, "secret/key", O_RDONLY, 0);
	if (fd < 0)
		return note("x32 openat: %s", strerror(errno)), 1;
	note("x32 openat: fd %ld", fd);
	dump((int)fd);
	return 0;
}
