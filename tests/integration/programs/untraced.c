// untraced: a child made by a raw clone(CLONE_UNTRACED | SIGCHLD) (no new stack: it runs on a
// copy of the parent's, as after fork) creates untraced.txt and writes a line into it; the
// parent waits for it and prints the file. A monitor must not let such a child leave tracing.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(100);
}

int main(void) {
  static const char kText[] = "written by the CLONE_UNTRACED child\n";
  fflush(stdout);
  long pid = syscall(SYS_clone, CLONE_UNTRACED | SIGCHLD, 0, NULL, NULL, 0);
  if (pid < 0) die("clone");
  if (pid == 0) {
    int fd = open("untraced.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(10);
    if (write(fd, kText, sizeof kText - 1) != (ssize_t)(sizeof kText - 1)) _exit(11);
    if (close(fd) != 0) _exit(12);
    _exit(0);
  }
  int status;
  if (waitpid((pid_t)pid, &status, 0) != pid) die("waitpid");
  printf("child %s %d\n", WIFEXITED(status) ? "exited" : "killed by signal",
         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  char buf[128];
  int fd = open("untraced.txt", O_RDONLY);
  if (fd < 0) die("untraced.txt");
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0) die("read");
  close(fd);
  printf("untraced.txt: %.*s", (int)n, buf);
  return 0;
}
