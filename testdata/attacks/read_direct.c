/* read_direct: open the secret by its absolute path and print it.
 * Judged by: the secret's token on stdout. */
#include "common.h"
int main(void)
{
	char p[4096];
	if (!getcwd(p, sizeof p - 16))
		return 1;
	strcat(p, "/secret/key");
	dump_path(AT_FDCWD, p);
	return 0;
}
