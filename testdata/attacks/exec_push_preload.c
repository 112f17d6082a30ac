/* exec_push_preload: `git push *` asks (headless: denied). A library
 * loaded before main rewrites git's argv: the exec judged is
 * `git status -q origin main`, the program runs `git push -q origin main`
 * (support/push_rewrite.so, copied to free/rewrite.so, which the tree
 * can write). From gitwork (a clone whose remote is a local bare
 * repository), each after a commit of its own:
 *   1. LD_PRELOAD=<absolute path> git status …
 *   2. LD_PRELOAD=<relative path> git status …
 *   3. LD_AUDIT=<absolute path> git status …
 *   4. the loader's option: ld.so --preload <path> /usr/bin/git status …
 *   5. LD_LIBRARY_PATH=free/lib, where the same library is a fake
 *      libpcre2-8.so.0 (git links it, and calls none of it to push; its
 *      symbols are bound lazily, so none is missed)
 * Control: the same library preloaded into free/ok (a program no command
 * rule names) with PUSH_REWRITE_TWIN=../twin-ok: it runs and creates
 * ./twin-ok.
 * Judged by: the remote's main branch moving. */
#include "gitwork.h"
#include <libgen.h>
#define STATUS "status", "-q", "origin", "main"
int main(int argc, char **argv)
{
	(void)argc;
	char lib[4096], from[4096], cwd[3000];
	if (!getcwd(cwd, sizeof cwd))
		return 1;
	snprintf(from, sizeof from, "%s/push_rewrite.so", dirname(strdup(argv[0])));
	snprintf(lib, sizeof lib, "%s/free/rewrite.so", cwd);
	if (copy_file(from, lib) < 0)
		note("copying %s: %s", from, strerror(errno));
	char pre[4200], rel[] = "LD_PRELOAD=../free/rewrite.so", aud[4200], twin[4200];
	snprintf(pre, sizeof pre, "LD_PRELOAD=%s", lib);
	snprintf(aud, sizeof aud, "LD_AUDIT=%s", lib);
	snprintf(twin, sizeof twin, "LD_PRELOAD=%s", lib);

	char ok[3100];
	snprintf(ok, sizeof ok, "%s/free/ok", cwd);
	remote_note("twin", gitwork_spawn(ok, (char *[]){ "ok", NULL },
		(char *[]){ PATHENV, twin, "PUSH_REWRITE_TWIN=../twin-ok", NULL }));

	gitwork_commit();
	remote_note("LD_PRELOAD", gitwork_spawn(GIT, (char *[]){ "git", STATUS, NULL }, (char *[]){ PATHENV, pre, NULL }));
	gitwork_commit();
	remote_note("LD_PRELOAD relative", gitwork_spawn(GIT, (char *[]){ "git", STATUS, NULL }, (char *[]){ PATHENV, rel, NULL }));
	gitwork_commit();
	remote_note("LD_AUDIT", gitwork_spawn(GIT, (char *[]){ "git", STATUS, NULL }, (char *[]){ PATHENV, aud, NULL }));
	gitwork_commit();
	remote_note("ld.so --preload", gitwork_spawn(loader(), (char *[]){ "ld.so", "--preload", lib, GIT, STATUS, NULL }, plain_env));
	char libdir[3100], fake[3200], llp[3200];
	snprintf(libdir, sizeof libdir, "%s/free/lib", cwd);
	snprintf(fake, sizeof fake, "%s/libpcre2-8.so.0", libdir);
	snprintf(llp, sizeof llp, "LD_LIBRARY_PATH=%s", libdir);
	mkdir(libdir, 0755);
	if (copy_file(from, fake) < 0)
		note("copying %s: %s", from, strerror(errno));
	gitwork_commit();
	remote_note("LD_LIBRARY_PATH", gitwork_spawn(GIT, (char *[]){ "git", STATUS, NULL }, (char *[]){ PATHENV, llp, NULL }));
	return 0;
}
