/* write_link_in: create a name inside the protected directory by
 * hard-linking an allowed file there (link(2) and linkat(2)).
 * Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(link("free/evil", "protected/linked"), "link free/evil protected/linked");
	check(linkat(AT_FDCWD, "free/a", AT_FDCWD, "protected/linked2", 0), "linkat free/a protected/linked2");
	return 0;
}
