// A thread's CPUs as the program sees them while it opens files (under the notify backend each
// open of a served file installs a descriptor, and the monitor may keep the caller on its own
// CPU meanwhile):
// - alone, the thread looks at its CPUs right after each open, and so does a child it forks;
// - one thread opens and closes a file over and over while another reads its CPUs all along,
//   by sched_getaffinity and from /proc;
// - the opening thread pins itself to one CPU, and widens itself again.
// Every look must find the CPUs the program gave.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kOpens = 1500 };

static cpu_set_t g_all;
static atomic_int g_tid;
static atomic_int g_done;
static atomic_int g_release;  // the watcher stopped looking: the opener may end

static void open_close(const char* name) {
  int fd = open(name, O_RDONLY);
  if (fd < 0) {
    perror(name);
    exit(100);
  }
  close(fd);
}

static int same_as(pid_t tid, const cpu_set_t* want) {
  cpu_set_t now;
  if (sched_getaffinity(tid, sizeof now, &now) != 0) return 0;
  return CPU_EQUAL(&now, want);
}

static void* opener(void* arg) {
  (void)arg;
  atomic_store(&g_tid, (int)syscall(SYS_gettid));
  for (int i = 0; i < kOpens; ++i) open_close("watched.txt");
  atomic_store(&g_done, 1);
  while (!atomic_load(&g_release)) sched_yield();
  return NULL;
}

// The "Cpus_allowed_list:" line of a thread's status file.
static void allowed_list(pid_t tid, char* out, size_t size) {
  char path[64], text[4096];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
  out[0] = '\0';
  int fd = open(path, O_RDONLY);
  if (fd < 0) return;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return;
  text[n] = '\0';
  const char* line = strstr(text, "Cpus_allowed_list:");
  if (!line) return;
  size_t len = strcspn(line, "\n");
  snprintf(out, size, "%.*s", (int)len, line);
}

int main(void) {
  int fd = open("watched.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "x\n", 2) != 2 || close(fd) != 0) {
    perror("watched.txt");
    return 100;
  }
  if (sched_getaffinity(0, sizeof g_all, &g_all) != 0) {
    perror("sched_getaffinity");
    return 100;
  }
  long alone = 0;
  for (int i = 0; i < 200; ++i) {
    open_close("watched.txt");
    if (!same_as(0, &g_all)) ++alone;
    if (i % 40 == 0) {
      pid_t child = fork();
      if (child == 0) _exit(same_as(0, &g_all) ? 0 : 1);
      int status;
      if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        ++alone;
      }
    }
  }
  printf("CPUs seen changed after an open, or in a child forked then: %ld times\n", alone);

  pthread_t t;
  pthread_create(&t, NULL, opener, NULL);
  while (atomic_load(&g_tid) == 0) sched_yield();
  const pid_t tid = atomic_load(&g_tid);
  char first[128], now[128];
  allowed_list(tid, first, sizeof first);
  long looks = 0, narrowed = 0;
  while (!atomic_load(&g_done)) {
    ++looks;
    if (!same_as(tid, &g_all)) ++narrowed;
    if (looks % 8 == 0) {
      allowed_list(tid, now, sizeof now);
      if (strcmp(now, first) != 0) ++narrowed;
    }
  }
  atomic_store(&g_release, 1);
  pthread_join(t, NULL);
  printf("CPUs seen changed while another thread opened: %ld times\n", narrowed);

  // The program's own choices stand: one CPU, then all of them again.
  int one = -1;
  for (int c = CPU_SETSIZE - 1; c >= 0; --c) {
    if (CPU_ISSET(c, &g_all)) one = c;
  }
  cpu_set_t single;
  CPU_ZERO(&single);
  CPU_SET(one, &single);
  if (sched_setaffinity(0, sizeof single, &single) != 0) perror("sched_setaffinity");
  open_close("watched.txt");
  printf("pinned to one CPU, kept after an open: %s\n", same_as(0, &single) ? "yes" : "no");
  if (sched_setaffinity(0, sizeof g_all, &g_all) != 0) perror("sched_setaffinity");
  for (int i = 0; i < 50; ++i) open_close("watched.txt");
  printf("all CPUs again, kept after opens: %s\n", same_as(0, &g_all) ? "yes" : "no");
  return alone == 0 && narrowed == 0 ? 0 : 1;
}
