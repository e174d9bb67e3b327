// Signal handlers interrupting blocking calls: read() on an empty pipe and nanosleep(), with and
// without SA_RESTART. Prints what each call returned, which must not depend on being traced.
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static void on_alarm(int sig) {
  (void)sig;
  ++handled;
}

static void arm(int restart, int ms) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart ? SA_RESTART : 0;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 0}, {0, ms * 1000}};
  setitimer(ITIMER_REAL, &it, NULL);
}

static const char* result(long r) { return r < 0 ? strerrorname_np(errno) : "ok"; }

// A child that writes one byte into the pipe after `ms` milliseconds.
static pid_t writer(int fd, int ms) {
  pid_t pid = fork();
  if (pid == 0) {
    usleep(ms * 1000);
    if (write(fd, "x", 1) != 1) _exit(1);
    _exit(0);
  }
  return pid;
}

static void test_read(int restart) {
  int p[2];
  if (pipe(p) != 0) exit(100);
  handled = 0;
  pid_t w = writer(p[1], 400);
  arm(restart, 100);
  char c = '?';
  errno = 0;
  ssize_t n = read(p[0], &c, 1);
  printf("read %s: returned %zd (%s), handler ran %d time(s), byte '%c'\n",
         restart ? "with SA_RESTART" : "without SA_RESTART", n, result(n), (int)handled,
         n == 1 ? c : '-');
  waitpid(w, NULL, 0);
  close(p[0]);
  close(p[1]);
}

static void test_nanosleep(int restart) {
  handled = 0;
  arm(restart, 100);
  struct timespec req = {5, 0}, rem = {0, 0};
  errno = 0;
  int r = nanosleep(&req, &rem);
  printf("nanosleep %s: returned %d (%s), handler ran %d time(s), remaining %s\n",
         restart ? "with SA_RESTART" : "without SA_RESTART", r, result(r), (int)handled,
         rem.tv_sec >= 3 && rem.tv_sec < 5 ? "between 3 and 5 s" : "out of range");
}

static void test_blocked(void) {
  // A blocked signal does not interrupt; it is delivered when unblocked.
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGALRM);
  sigprocmask(SIG_BLOCK, &set, &old);
  handled = 0;
  arm(0, 50);
  struct timespec req = {0, 200 * 1000 * 1000};
  int r = nanosleep(&req, NULL);
  printf("nanosleep with SIGALRM blocked: returned %d, handler ran %d time(s)\n", r, (int)handled);
  sigprocmask(SIG_SETMASK, &old, NULL);
  printf("after unblocking: handler ran %d time(s)\n", (int)handled);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  test_read(0);
  test_read(1);
  test_nanosleep(0);
  test_nanosleep(1);
  test_blocked();
  return 0;
}
