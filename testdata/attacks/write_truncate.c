/* write_truncate: truncate(2) protected/file to zero length without
 * opening it. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(truncate("protected/file", 0), "truncate protected/file");
	return 0;
}
