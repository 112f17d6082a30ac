/* read_open_by_handle: open the secret by file handle, an open that takes
 * no path at all (needs CAP_DAC_READ_SEARCH, which root has). The handle
 * comes from name_to_handle_at() on the secret or, if that is refused,
 * from argv[1] ("TYPE:HEX", computed by the test outside the sandbox), so
 * refusing name_to_handle_at alone does not count as blocking.
 * Judged by: the token on stdout. */
#include "common.h"
int main(int argc, char **argv)
{
	struct file_handle *h = malloc(sizeof *h + MAX_HANDLE_SZ);
	int mnt;
	h->handle_bytes = MAX_HANDLE_SZ;
	if (check(name_to_handle_at(AT_FDCWD, "secret/key", h, &mnt, 0), "name_to_handle_at secret/key") < 0) {
		if (argc < 2)
			return 1;
		char *hex = strchr(argv[1], ':');
		if (!hex)
			return 1;
		h->handle_type = atoi(argv[1]);
		h->handle_bytes = 0;
		for (hex++; hex[0] && hex[1] && h->handle_bytes < MAX_HANDLE_SZ; hex += 2) {
			unsigned v;
			sscanf(hex, "%2x", &v);
			h->f_handle[h->handle_bytes++] = v;
		}
		note("using the handle from argv (%u bytes)", h->handle_bytes);
	}
	int mfd = open(".", O_RDONLY | O_DIRECTORY);
	int fd = check(open_by_handle_at(mfd, h, O_RDONLY), "open_by_handle_at");
	if (fd >= 0)
		dump(fd);
	return 0;
}
