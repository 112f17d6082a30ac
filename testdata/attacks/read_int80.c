/* read_int80: open the secret with the i386 ABI (int 0x80, open = 5) from
 * a 64-bit process. A filter that looks only at the syscall number, not
 * seccomp_data.arch, sees syscall 5 (fstat on x86_64) and waves it
 * through. The path lives below 4 GiB (MAP_32BIT) because i386 arguments
 * are 32-bit. The fd is read with the ordinary 64-bit read().
 * Judged by: the token on stdout; under permwrap the process must also be
 * killed by SIGSYS (checked by the test). */
#include "common.h"
#include <sys/mman.h>
int main(void)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (p == MAP_FAILED)
		return note("mmap: %s", strerror(errno)), 1;
	strcpy(p, "secret/key");
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(5), "b"((long)p), "c"(O_RDONLY), "d"(0) : "memory");
	if (r < 0)
		return note("i386 open: %s", strerror(-r)), 1;
	note("i386 open: fd %ld", r);
	dump((int)r);
	return 0;
}
