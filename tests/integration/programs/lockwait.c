// lockwait: a process waits for a file lock another process holds (fcntl F_SETLKW, then flock
// without LOCK_NB) while a signal arrives:
//   no-restart  a handler without SA_RESTART: the wait fails with EINTR, the lock stays held
//   restart     a handler with SA_RESTART: the wait goes on and succeeds once the holder
//               releases, 300 ms after the handler ran
//   ignored     SIGALRM ignored: the wait is not disturbed
//   sigchld     a child exits (SIGCHLD, default action) during the wait: not disturbed
// Prints results and the order of events only; every step is sequenced through pipes, and the
// holder gives up its lock after 5 s whatever happens, so a wrong result never hangs.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kSignalMs = 150, kReleaseAfterSignalMs = 300, kIgnoredReleaseMs = 450, kSafetyMs = 5000 };

static const char kFile[] = "locked.dat";

static volatile sig_atomic_t handled;
static int signal_pipe = -1;  // the handler tells the holder that it ran

static void on_alarm(int sig) {
  (void)sig;
  ++handled;
  if (signal_pipe >= 0 && write(signal_pipe, "s", 1) != 1) _exit(101);
}

static void die(const char* what) {
  perror(what);
  exit(100);
}

static const char* result(int r, int err) { return r < 0 ? strerrorname_np(err) : "ok"; }

static void set_lock(int fd, int use_flock, int type, int wait) {
  if (use_flock) {
    int op = type == F_UNLCK ? LOCK_UN : LOCK_EX | (wait ? 0 : LOCK_NB);
    if (flock(fd, op) != 0) die("flock");
  } else {
    struct flock fl = {.l_type = (short)type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, wait ? F_SETLKW : F_SETLK, &fl) != 0) die("fcntl");
  }
}

// The waiting call under test.
static int wait_for_lock(int fd, int use_flock) {
  if (use_flock) return flock(fd, LOCK_EX);
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  return fcntl(fd, F_SETLKW, &fl);
}

// Waits up to ms for a byte on fd: 1 when one came, 0 on timeout.
static int await_byte(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int r;
  while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR) {
  }
  if (r <= 0) return 0;
  char c;
  return read(fd, &c, 1) == 1;
}

// The holder: locks, reports on ready, and releases delay_ms after a byte arrives on go (or
// after the safety time).
static pid_t start_holder(int use_flock, int delay_ms, int go, int ready) {
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid > 0) return pid;
  int fd = open(kFile, O_RDWR);
  if (fd < 0) die(kFile);
  set_lock(fd, use_flock, F_WRLCK, 0);
  if (write(ready, "r", 1) != 1) die("write");
  if (!await_byte(go, kSafetyMs)) printf("  holder: never told to release\n");
  usleep(delay_ms * 1000);
  printf("  holder: releasing\n");
  set_lock(fd, use_flock, F_UNLCK, 0);
  _exit(0);
}

static void arm(int ms) {
  struct itimerval it = {{0, 0}, {0, ms * 1000}};
  if (setitimer(ITIMER_REAL, &it, NULL) != 0) die("setitimer");
}

static void handle(void (*fn)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = flags;
  if (sigaction(SIGALRM, &sa, NULL) != 0) die("sigaction");
}

static const char* reap(pid_t pid) {
  int status;
  while (waitpid(pid, &status, 0) != pid) {
    if (errno != EINTR) die("waitpid");
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "exited 0" : "failed";
}

// Whether another process holds the lock, as seen from fd without waiting.
static const char* held_elsewhere(int fd, int use_flock, pid_t holder) {
  if (use_flock) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return "no, it was free";
    return errno == EWOULDBLOCK ? "yes" : strerrorname_np(errno);
  }
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  if (fcntl(fd, F_GETLK, &fl) != 0) return strerrorname_np(errno);
  if (fl.l_type != F_WRLCK) return "no";
  return fl.l_pid == holder ? "yes, a write lock by the holder" : "a write lock by another pid";
}

static void run_case(int use_flock, const char* how) {
  const char* call = use_flock ? "flock(LOCK_EX)" : "fcntl(F_SETLKW)";
  printf("%s, %s:\n", call, how);
  int ready[2], go[2], sig[2];
  if (pipe(ready) != 0 || pipe(go) != 0 || pipe(sig) != 0) die("pipe");
  const int no_restart = strcmp(how, "no-restart") == 0;
  const int restart = strcmp(how, "restart") == 0;
  const int ignored = strcmp(how, "ignored") == 0;
  const int sigchld = strcmp(how, "sigchld") == 0;
  // The holder releases: no-restart, when this process tells it after the failed wait;
  // restart, 300 ms after the handler ran; ignored and sigchld, 450 ms after the signal is
  // set off (150 ms before it comes).
  int delay_ms = kIgnoredReleaseMs;
  if (restart) delay_ms = kReleaseAfterSignalMs;
  if (no_restart) delay_ms = 0;
  pid_t holder = start_holder(use_flock, delay_ms, restart ? sig[0] : go[0], ready[1]);
  if (!await_byte(ready[0], kSafetyMs)) die("holder not ready");
  printf("  holder: locked\n");

  int fd = open(kFile, O_RDWR);
  if (fd < 0) die(kFile);
  handled = 0;
  signal_pipe = restart ? sig[1] : -1;
  pid_t kid = -1;
  if ((ignored || sigchld) && write(go[1], "g", 1) != 1) die("write");
  if (no_restart || restart) {
    handle(on_alarm, restart ? SA_RESTART : 0);
    arm(kSignalMs);
  } else if (ignored) {
    handle(SIG_IGN, 0);
    arm(kSignalMs);
  } else {
    handle(SIG_DFL, 0);
    kid = fork();
    if (kid < 0) die("fork");
    if (kid == 0) {
      usleep(kSignalMs * 1000);
      _exit(0);
    }
  }
  errno = 0;
  int r = wait_for_lock(fd, use_flock);
  int err = errno;
  arm(0);  // ignored or handled by now; never to fire after the handler is reset
  printf("  waiter: returned %d (%s), handler ran %d time(s)\n", r, result(r, err), (int)handled);
  if (r != 0) {
    printf("  waiter: lock still held elsewhere: %s\n", held_elsewhere(fd, use_flock, holder));
    if (write(go[1], "g", 1) != 1) die("write");
    r = wait_for_lock(fd, use_flock);
    printf("  waiter: waiting again returned %d (%s)\n", r, result(r, errno));
  }
  printf("  holder %s\n", reap(holder));
  if (kid > 0) printf("  child %s\n", reap(kid));
  set_lock(fd, use_flock, F_UNLCK, 0);
  close(fd);
  signal_pipe = -1;
  handle(SIG_DFL, 0);
  for (int i = 0; i < 2; ++i) {
    close(ready[i]);
    close(go[i]);
    close(sig[i]);
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int fd = open(kFile, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "lock me\n", 8) != 8) die(kFile);
  close(fd);
  static const char* const kHow[] = {"no-restart", "restart", "ignored", "sigchld"};
  for (int use_flock = 0; use_flock < 2; ++use_flock) {
    for (size_t i = 0; i < sizeof kHow / sizeof kHow[0]; ++i) run_case(use_flock, kHow[i]);
  }
  return 0;
}
