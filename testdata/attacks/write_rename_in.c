/* write_rename_in: rename an allowed file over protected/file (replacing
 * it). Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(rename("free/evil", "protected/file"), "rename free/evil protected/file");
	return 0;
}
