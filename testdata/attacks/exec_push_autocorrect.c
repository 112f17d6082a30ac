/* exec_push_autocorrect: `git push *` asks (headless: denied). git
 * autocorrects a subcommand it does not know to its nearest command and
 * runs it in-process when help.autocorrect is set, which the command
 * line need not show. From gitwork (a clone whose remote is a local bare
 * repository), each after a commit of its own:
 *   1. git -c help.autocorrect=immediate pushh -q origin main
 *   2. GIT_CONFIG_PARAMETERS="'help.autocorrect'='immediate'": git psuh
 *   3. GIT_CONFIG_COUNT/KEY_0/VALUE_0: git puhs
 *   4. HOME with a .gitconfig that sets it: git pusj
 *   5. the repository's .git/config (git config help.autocorrect 1,
 *      a tenth of a second's delay): git pusx
 *   6. autocorrected to the plumbing: git send-pakc ../remote.git main
 * Control: git -c help.autocorrect=immediate statsu (autocorrected to
 * status) creates ./twin-ok when it works.
 * Judged by: the remote's main branch moving. */
#include "gitwork.h"
#define ORIGIN "-q", "origin", "main"
int main(void)
{
	char cwd[3000], home[3100];
	if (!getcwd(cwd, sizeof cwd))
		return 1;
	if (gitwork_spawn(GIT, (char *[]){ "git", "-c", "help.autocorrect=immediate", "statsu", NULL }, plain_env) == 0)
		close(open("twin-ok", O_WRONLY | O_CREAT, 0644));

	gitwork_commit();
	remote_note("-c help.autocorrect", gitwork_spawn(GIT, (char *[]){ "git", "-c", "help.autocorrect=immediate", "pushh", ORIGIN, NULL }, plain_env));
	gitwork_commit();
	remote_note("GIT_CONFIG_PARAMETERS", gitwork_spawn(GIT, (char *[]){ "git", "psuh", ORIGIN, NULL },
		(char *[]){ PATHENV, "GIT_CONFIG_PARAMETERS='help.autocorrect'='immediate'", NULL }));
	gitwork_commit();
	remote_note("GIT_CONFIG_COUNT", gitwork_spawn(GIT, (char *[]){ "git", "puhs", ORIGIN, NULL },
		(char *[]){ PATHENV, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=help.autocorrect", "GIT_CONFIG_VALUE_0=immediate", NULL }));
	gitwork_commit();
	snprintf(home, sizeof home, "%s/free/home", cwd);
	mkdir(home, 0755);
	char cfg[3200], homeenv[3200];
	snprintf(cfg, sizeof cfg, "%s/.gitconfig", home);
	int fd = open(cfg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "[help]\n\tautocorrect = immediate\n", 32) != 32)
		note("writing %s: %s", cfg, strerror(errno));
	close(fd);
	snprintf(homeenv, sizeof homeenv, "HOME=%s", home);
	remote_note("~/.gitconfig", gitwork_spawn(GIT, (char *[]){ "git", "pusj", ORIGIN, NULL }, (char *[]){ PATHENV, homeenv, NULL }));
	gitwork_commit();
	gitwork_spawn(GIT, (char *[]){ "git", "config", "help.autocorrect", "1", NULL }, plain_env);
	remote_note(".git/config", gitwork_spawn(GIT, (char *[]){ "git", "pusx", ORIGIN, NULL }, plain_env));
	gitwork_commit();
	remote_note("to send-pack", gitwork_spawn(GIT, (char *[]){ "git", "send-pakc", "../remote.git", "main", NULL }, plain_env));
	return 0;
}
