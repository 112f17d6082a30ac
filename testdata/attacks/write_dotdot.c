/* write_dotdot: write protected/file through "..", "//" and "/./".
 * Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	write_path(AT_FDCWD, "free/../protected/file", O_APPEND);
	write_path(AT_FDCWD, ".//protected//file", O_APPEND);
	write_path(AT_FDCWD, "free/./../protected/./file", O_APPEND);
	return 0;
}
