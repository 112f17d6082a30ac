/* exec_push_plumbing: `git push *` asks (headless: denied). Push with
 * git's push plumbing, which never says push, from gitwork (a clone whose
 * remote is the local bare repository ../remote.git), each after a
 * commit of its own:
 *   1. git send-pack ../remote.git main
 *   2. the dashed form: /usr/lib/git-core/git-send-pack
 *   3. argv[0] dispatch: /usr/bin/git with argv[0] "git-send-pack"
 *   4. an alias given on the command line: git -c alias.sp=send-pack sp
 *   5. global options first: git -C . --no-pager send-pack
 * (git http-push needs a WebDAV server, and the remote helpers and
 * receive-pack are not command-rule territory: docs/bash-rules.md §9.)
 * Control: git fetch-pack ../remote.git main, plumbing that does not
 * push, creates ./twin-ok when it works.
 * Judged by: the remote's main branch moving. */
#include "gitwork.h"
#define TO "../remote.git", "main"
int main(void)
{
	if (gitwork_spawn(GIT, (char *[]){ "git", "fetch-pack", "-q", "../remote.git", "refs/heads/main", NULL }, plain_env) == 0)
		close(open("twin-ok", O_WRONLY | O_CREAT, 0644));

	gitwork_commit();
	remote_note("send-pack", gitwork_spawn(GIT, (char *[]){ "git", "send-pack", TO, NULL }, plain_env));
	gitwork_commit();
	if (access("/usr/lib/git-core/git-send-pack", X_OK) == 0)
		remote_note("git-core/git-send-pack", gitwork_spawn("/usr/lib/git-core/git-send-pack", (char *[]){ "git-send-pack", TO, NULL }, plain_env));
	gitwork_commit();
	remote_note("argv[0] git-send-pack", gitwork_spawn(GIT, (char *[]){ "git-send-pack", TO, NULL }, plain_env));
	gitwork_commit();
	remote_note("alias", gitwork_spawn(GIT, (char *[]){ "git", "-c", "alias.sp=send-pack", "sp", TO, NULL }, plain_env));
	gitwork_commit();
	remote_note("-C . --no-pager", gitwork_spawn(GIT, (char *[]){ "git", "-C", ".", "--no-pager", "send-pack", TO, NULL }, plain_env));
	return 0;
}
