// Calls that never fail with EINTR natively must not fail with it under the monitor: a signal
// whose handler lacks SA_RESTART arrives (SIGCHLD of children that exit at once, as a shell
// sees) while the program opens, stats, duplicates and closes files in a loop. A call held by
// the monitor when the signal comes must run after the handler, as if the signal had arrived
// just before it. Prints the number of rounds and of signals handled; fails on any EINTR.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kRounds = 400 };

static volatile sig_atomic_t handled;

static void on_child(int sig) {
  (void)sig;
  ++handled;
}

static int fail(const char* what) {
  printf("%s: %s\n", what, strerror(errno));
  return 1;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_child;
  sa.sa_flags = 0;  // no SA_RESTART: an interrupted wait would fail with EINTR
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGCHLD, &sa, NULL) != 0) return fail("sigaction");

  int pipes_closed = 0;
  for (int round = 0; round < kRounds; ++round) {
    const pid_t child = fork();
    if (child < 0) return fail("fork");
    if (child == 0) _exit(0);
    // The calls race with the child's exit and its SIGCHLD.
    int p[2];
    if (pipe(p) != 0) return fail("pipe");
    if (close(p[1]) != 0) return fail("close");
    char byte;
    if (read(p[0], &byte, 1) != 0) return fail("read at end of file");  // no writer left
    if (close(p[0]) != 0) return fail("close");
    ++pipes_closed;
    int fd = open("file", O_RDWR | O_CREAT, 0644);
    if (fd < 0) return fail("open");
    struct stat st;
    if (fstat(fd, &st) != 0) return fail("fstat");
    if (stat("file", &st) != 0) return fail("stat");
    int copy = dup(fd);
    if (copy < 0) return fail("dup");
    if (close(copy) != 0 || close(fd) != 0) return fail("close");
    if (unlink("file") != 0) return fail("unlink");
    // Reap without waiting on a signal: waitpid itself may give way to the handler natively.
    while (waitpid(child, NULL, 0) < 0) {
      if (errno != EINTR) return fail("waitpid");
    }
  }
  printf("%d rounds, %d pipes closed, signals handled: %s\n", kRounds, pipes_closed,
         handled > 0 ? "some" : "none");
  return 0;
}
