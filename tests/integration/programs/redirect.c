// Shell-style redirections done by hand with dup2, fork and exec: a file as stdout, a pipe
// between two programs, a file as stdin, 2>&1, and close-on-exec descriptors across exec.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(100);
}

// Runs argv in a child whose descriptors 0, 1, 2 are in_fd, out_fd, err_fd (-1: inherited).
static int spawn(char* const argv[], int in_fd, int out_fd, int err_fd) {
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    if (in_fd >= 0 && dup2(in_fd, 0) < 0) die("dup2 0");
    if (out_fd >= 0 && dup2(out_fd, 1) < 0) die("dup2 1");
    if (err_fd >= 0 && dup2(err_fd, 2) < 0) die("dup2 2");
    execv(argv[0], argv);
    die("execv");
  }
  int status;
  if (waitpid(pid, &status, 0) != pid) die("waitpid");
  return status;
}

int main(void) {
  // > out.txt
  int out = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) die("open out.txt");
  char* echo[] = {"/bin/echo", "hello from a child", NULL};
  printf("echo > out.txt: status %d\n", spawn(echo, -1, out, -1));
  close(out);

  // ls -1 dir | sort -r > sorted.txt, the pipe made by hand.
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) die("pipe");
  int sorted = open("sorted.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (sorted < 0) die("open sorted.txt");
  pid_t ls = fork();
  if (ls == 0) {
    dup2(p[1], 1);
    char* argv[] = {"/bin/ls", "-1", "dir", NULL};
    execv(argv[0], argv);
    die("execv ls");
  }
  pid_t sort = fork();
  if (sort == 0) {
    dup2(p[0], 0);
    dup2(sorted, 1);
    char* argv[] = {"/usr/bin/sort", "-r", NULL};
    execv(argv[0], argv);
    die("execv sort");
  }
  close(p[0]);
  close(p[1]);
  close(sorted);
  int st1, st2;
  waitpid(ls, &st1, 0);
  waitpid(sort, &st2, 0);
  printf("ls | sort -r > sorted.txt: status %d %d\n", st1, st2);

  // wc -c < in.txt >> count.txt (appending twice).
  for (int i = 0; i < 2; ++i) {
    int in = open("in.txt", O_RDONLY | O_CLOEXEC);
    int count = open("count.txt", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (in < 0 || count < 0) die("open in/count");
    char* wc[] = {"/usr/bin/wc", "-c", NULL};
    printf("wc -c < in.txt >> count.txt: status %d\n", spawn(wc, in, count, -1));
    close(in);
    close(count);
  }

  // sh -c '...' > merged.txt 2>&1
  int merged = open("merged.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  char* sh[] = {"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 4", NULL};
  int st = spawn(sh, -1, merged, merged);
  printf("sh > merged.txt 2>&1: exited %d with %d\n", WIFEXITED(st), WEXITSTATUS(st));
  close(merged);

  // A descriptor survives exec unless it is close-on-exec.
  int keep = open("in.txt", O_RDONLY);
  if (dup2(keep, 7) != 7) die("dup2 7");
  int cloexec = fcntl(keep, F_DUPFD_CLOEXEC, 8);
  if (cloexec != 8) die("F_DUPFD_CLOEXEC");
  char* probe[] = {"/bin/sh", "-c",
                   "for fd in 7 8; do if [ -e /proc/self/fd/$fd ]; then echo fd $fd open; "
                   "else echo fd $fd closed; fi; done; head -c 5 <&7; echo",
                   NULL};
  fflush(stdout);
  spawn(probe, -1, -1, -1);
  return 0;
}
