/* read_listing_ssh: list ~/.ssh (an O_DIRECTORY read-only open, not
 * judged when listings are free) and open the key it holds relative to
 * that directory fd. Control: free/ the same way prints ALLOWED.
 * Judged by: the token (in ~/.ssh/id_test) on stdout. */
#include "common.h"
int main(void)
{
	char p[2048];
	const char *home = getenv("HOME");
	if (!home)
		return 1;
	int f = check(open("free", O_RDONLY | O_DIRECTORY), "open free O_DIRECTORY");
	if (f >= 0)
		dump_path(f, "a");
	snprintf(p, sizeof p, "%s/.ssh", home);
	int d = check(open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW), "open ~/.ssh O_DIRECTORY");
	if (d < 0)
		return 1;
	dump_path(d, "id_test");
	return 0;
}
