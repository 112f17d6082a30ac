/* read_dotdot: reach the secret through non-canonical spellings: "..",
 * "//" and "/./" components, so a string comparison of the raw path
 * misses it. Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	dump_path(AT_FDCWD, "free/../secret/key");
	dump_path(AT_FDCWD, ".//secret//key");
	dump_path(AT_FDCWD, "free/./../secret/./key");
	return 0;
}
