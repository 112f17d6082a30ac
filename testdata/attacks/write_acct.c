/* write_acct: process accounting makes the kernel append a record to a
 * file of the caller's choosing each time a process exits. Point it at
 * protected/file, let a child exit, and turn it off again. (Needs
 * CAP_SYS_PACCT.)
 * Judged by: protected/file changing. */
#include "common.h"
static void nothing(const char *s)
{
	(void)s;
	_exit(0);
}
int main(void)
{
	if (check(acct("protected/file"), "acct protected/file") == 0) {
		in_child(nothing, "");
		acct(NULL);
	}
	return 0;
}
