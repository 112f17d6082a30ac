/* Writes an executable script and runs it at once, 2000 times, each in a
 * fresh child: open(O_CREAT, 0755), write, close, execv. Prints "fails N".
 * Under a supervisor that still holds its copy of the written file open
 * when the open returns, some execs fail with ETXTBSY. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
	int fails = 0;
	for (int i = 0; i < 2000; i++) {
		pid_t p = fork();
		if (p == 0) {
			int fd = open("s.sh", O_WRONLY | O_CREAT | O_TRUNC, 0755);
			if (fd < 0) _exit(4);
			write(fd, "#!/bin/true\n", 12);
			close(fd);
			char *argv[] = {"s.sh", 0};
			execv("./s.sh", argv);
			_exit(3);
		}
		int st;
		waitpid(p, &st, 0);
		if (st != 0) fails++;
		unlink("s.sh");
	}
	printf("fails %d\n", fails);
	return 0;
}
