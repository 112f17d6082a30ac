/* read_listing_fchdir: open the denied directory secret/ as a listing
 * (O_DIRECTORY, read-only: not judged when listings are free), fchdir()
 * into it and open "key" relative to the new working directory; then the
 * same with ~/.ssh and "id_test". Control: free/ the same way prints
 * ALLOWED. Judged by: the token on stdout. */
#include "common.h"
static void via(const char *dir, const char *name)
{
	int top = open(".", O_PATH | O_DIRECTORY);
	int d = check(open(dir, O_RDONLY | O_DIRECTORY), dir);
	if (d >= 0 && check(fchdir(d), "fchdir") == 0)
		dump_path(AT_FDCWD, name);
	if (top >= 0)
		check(fchdir(top), "fchdir back");
}
int main(void)
{
	char p[2048];
	const char *home = getenv("HOME");
	via("free", "a"); /* control */
	via("secret", "key");
	if (home) {
		snprintf(p, sizeof p, "%s/.ssh", home);
		via(p, "id_test");
	}
	return 0;
}
