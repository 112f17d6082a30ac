/* read_linkat_empty_path: get an O_PATH fd on the secret and give it an
 * allowed name with linkat(fd, "", ..., AT_EMPTY_PATH) (root has the
 * CAP_DAC_READ_SEARCH it needs), then read that name.
 * Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	int fd = check(open("secret/key", O_PATH), "open secret/key O_PATH");
	if (fd < 0)
		return 1;
	check(linkat(fd, "", AT_FDCWD, "free/linked", AT_EMPTY_PATH), "linkat AT_EMPTY_PATH free/linked");
	dump_path(AT_FDCWD, "free/linked");
	return 0;
}
