// Queued signals arriving while the program maps files: a child sends N real-time signals with
// sigqueue(), numbered 0..N-1, while the parent maps and unmaps a file in a loop (a call the
// monitor may serve by running calls of its own in the tracee). Every signal must arrive once,
// in order, with the sender's pid, SI_QUEUE and its value, as the kernel delivers them.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kSignals = 300 };

static volatile sig_atomic_t received;
static int values[kSignals];
static int codes[kSignals];
static pid_t senders[kSignals];

static void on_signal(int sig, siginfo_t* info, void* context) {
  (void)sig, (void)context;
  if (received < kSignals) {
    values[received] = info->si_value.sival_int;
    codes[received] = info->si_code;
    senders[received] = info->si_pid;
  }
  ++received;
}

int main(void) {
  int fd = open("mapped", O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "mapped file\n", 12) != 12) return 100;

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGRTMIN, &sa, NULL) != 0) return 101;

  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) return 102;
  if (child == 0) {
    // Spread the signals over the parent's mapping loop.
    for (int i = 0; i < kSignals; ++i) {
      union sigval v = {.sival_int = i};
      if (sigqueue(parent, SIGRTMIN, v) != 0) _exit(1);
      struct timespec pause = {0, 200000};
      nanosleep(&pause, NULL);
    }
    _exit(0);
  }

  long maps = 0;
  time_t deadline = time(NULL) + 60;
  while (received < kSignals && time(NULL) < deadline) {
    void* p = mmap(NULL, 12, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED || memcmp(p, "mapped file\n", 12) != 0) return 103;
    munmap(p, 12);
    ++maps;
  }
  int status;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return 104;

  int bad = 0;
  for (int i = 0; i < kSignals && i < received; ++i) {
    if (values[i] != i || codes[i] != SI_QUEUE || senders[i] != child) {
      if (bad++ < 5)
        printf("signal %d: value %d, si_code %d, from %s\n", i, values[i], codes[i],
               senders[i] == child ? "the sender" : "another process");
    }
  }
  printf("%d of %d signals received, %d out of order or with another origin\n", (int)received,
         kSignals, bad);
  close(fd);
  return bad || received != kSignals || maps == 0;
}
