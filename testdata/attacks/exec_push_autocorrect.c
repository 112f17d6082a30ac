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
#include "common.h"
static const char *git = "/usr/bin/git";
#define PATHENV "PATH=/usr/local/bin:/usr/bin:/bin"
static char *plain[] = { PATHENV, NULL };
static int spawn(char *const argv[], char *const envp[])
{
	pid_t c = fork();
	if (c == 0) {
		if (chdir("gitwork") < 0)
			_exit(126);
		execve(git, argv, envp);
		note("exec %s: %s", git, strerror(errno));
		_exit(127);
	}
	int st = 0;
	waitpid(c, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
static void commit(void)
{
	spawn((char *[]){ "git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
		"commit", "-q", "--allow-empty", "-m", "next", NULL }, plain);
}
#define ORIGIN "-q", "origin", "main"
/* remote notes the remote's main branch after one way, so the log shows
 * which ways moved it (the test judges from outside, by the same file). */
static void remote(const char *way, int code)
{
	char buf[16] = "";
	int fd = open("remote.git/refs/heads/main", O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, 12);
		buf[n > 0 ? n : 0] = 0;
		close(fd);
	}
	note("%s: exit %d, remote main %s", way, code, buf);
}
int main(void)
{
	char cwd[3000], home[3100];
	if (!getcwd(cwd, sizeof cwd))
		return 1;
	if (spawn((char *[]){ "git", "-c", "help.autocorrect=immediate", "statsu", NULL }, plain) == 0)
		close(open("twin-ok", O_WRONLY | O_CREAT, 0644));

	commit();
	remote("-c help.autocorrect", spawn((char *[]){ "git", "-c", "help.autocorrect=immediate", "pushh", ORIGIN, NULL }, plain));
	commit();
	remote("GIT_CONFIG_PARAMETERS", spawn((char *[]){ "git", "psuh", ORIGIN, NULL },
		(char *[]){ PATHENV, "GIT_CONFIG_PARAMETERS='help.autocorrect'='immediate'", NULL }));
	commit();
	remote("GIT_CONFIG_COUNT", spawn((char *[]){ "git", "puhs", ORIGIN, NULL },
		(char *[]){ PATHENV, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=help.autocorrect", "GIT_CONFIG_VALUE_0=immediate", NULL }));
	commit();
	snprintf(home, sizeof home, "%s/free/home", cwd);
	mkdir(home, 0755);
	char cfg[3200], homeenv[3200];
	snprintf(cfg, sizeof cfg, "%s/.gitconfig", home);
	int fd = open(cfg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "[help]\n\tautocorrect = immediate\n", 32) != 32)
		note("writing %s: %s", cfg, strerror(errno));
	close(fd);
	snprintf(homeenv, sizeof homeenv, "HOME=%s", home);
	remote("~/.gitconfig", spawn((char *[]){ "git", "pusj", ORIGIN, NULL }, (char *[]){ PATHENV, homeenv, NULL }));
	commit();
	spawn((char *[]){ "git", "config", "help.autocorrect", "1", NULL }, plain);
	remote(".git/config", spawn((char *[]){ "git", "pusx", ORIGIN, NULL }, plain));
	commit();
	remote("to send-pack", spawn((char *[]){ "git", "send-pakc", "../remote.git", "main", NULL }, plain));
	return 0;
}
