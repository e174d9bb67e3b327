// exitgroup MODE: a process whose 8 threads loop on file calls (open/read/fstat/close, stat,
// pread, pwrite) ends while they are in those calls; 20 such processes in turn, each reaped and
// its status printed.
//   leader  the main thread calls exit(3) ~30 ms after every thread made a round of calls
//   thread  a thread that is not the leader calls exit_group(4) while the leader loops too
//   kill    the parent kills the process with SIGKILL ~30 ms after every thread made a round
// The threads only rewrite bytes a file already holds, so the tree left behind does not depend
// on where they were stopped.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kThreads = 8, kRounds = 20, kFileSize = 4096, kEndAfterMs = 30 };

static atomic_int started;  // threads that completed a round of calls

static void die(const char* what) {
  perror(what);
  exit(100);
}

static void fill(unsigned char* buf, int id) {
  for (int i = 0; i < kFileSize; ++i) buf[i] = (unsigned char)(id * 17 + i % 251);
}

static void file_name(char* name, size_t size, const char* prefix, int id) {
  snprintf(name, size, "%s-%d.dat", prefix, id);
}

// One round of file calls; any failure is reported through the process's exit status.
static void file_calls(int id) {
  char in[32], out[32];
  file_name(in, sizeof in, "in", id);
  file_name(out, sizeof out, "out", id);
  unsigned char buf[kFileSize], want[kFileSize];
  fill(want, id);
  int fd = open(in, O_RDONLY);
  if (fd < 0) _exit(101);
  struct stat st;
  if (read(fd, buf, sizeof buf) != kFileSize || memcmp(buf, want, kFileSize) != 0) _exit(102);
  if (fstat(fd, &st) != 0 || st.st_size != kFileSize) _exit(103);
  if (pread(fd, buf, 100, 1000) != 100 || memcmp(buf, want + 1000, 100) != 0) _exit(104);
  close(fd);
  if (stat(out, &st) != 0 || stat("no-such-file", &st) == 0) _exit(105);
  fd = open(out, O_WRONLY);
  if (fd < 0 || pwrite(fd, want, kFileSize, 0) != kFileSize) _exit(106);
  close(fd);
}

static int exit_thread = -1;  // the thread that ends the process in mode "thread"

static void* worker(void* arg) {
  const int id = (int)(intptr_t)arg;
  file_calls(id);
  atomic_fetch_add(&started, 1);
  if (id == exit_thread) {
    while (atomic_load(&started) < kThreads) file_calls(id);
    usleep(kEndAfterMs * 1000);
    syscall(SYS_exit_group, 4);
  }
  for (;;) file_calls(id);
  return NULL;
}

// The traced process: starts the threads; tells ready (if >= 0) once each made a round.
static void child(const char* mode, int ready) {
  exit_thread = strcmp(mode, "thread") == 0 ? kThreads / 2 : -1;
  pthread_t t;
  for (int i = 0; i < kThreads; ++i) {
    if (pthread_create(&t, NULL, worker, (void*)(intptr_t)i) != 0) _exit(107);
  }
  while (atomic_load(&started) < kThreads) file_calls(kThreads);
  if (ready >= 0 && write(ready, "r", 1) != 1) _exit(108);
  if (strcmp(mode, "leader") == 0) {
    usleep(kEndAfterMs * 1000);
    exit(3);
  }
  for (;;) file_calls(kThreads);
}

static const char* describe(int status) {
  static char text[64];
  if (WIFEXITED(status)) {
    snprintf(text, sizeof text, "exited %d", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    snprintf(text, sizeof text, "killed by %s", sigabbrev_np(WTERMSIG(status)));
  } else {
    snprintf(text, sizeof text, "status %#x", status);
  }
  return text;
}

int main(int argc, char** argv) {
  if (argc != 2 ||
      (strcmp(argv[1], "leader") && strcmp(argv[1], "thread") && strcmp(argv[1], "kill"))) {
    fprintf(stderr, "usage: exitgroup leader|thread|kill\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  unsigned char buf[kFileSize];
  for (int id = 0; id <= kThreads; ++id) {
    char name[32];
    fill(buf, id);
    for (int k = 0; k < 2; ++k) {
      file_name(name, sizeof name, k ? "out" : "in", id);
      int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || write(fd, buf, kFileSize) != kFileSize) die(name);
      close(fd);
    }
  }
  const int kill_it = strcmp(argv[1], "kill") == 0;
  for (int round = 1; round <= kRounds; ++round) {
    int p[2];
    if (pipe(p) != 0) die("pipe");
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
      close(p[0]);
      child(argv[1], kill_it ? p[1] : -1);
    }
    close(p[1]);
    if (kill_it) {
      char c;
      if (read(p[0], &c, 1) == 1) {
        usleep(kEndAfterMs * 1000);
        kill(pid, SIGKILL);
      }
    }
    close(p[0]);
    int status;
    while (waitpid(pid, &status, 0) != pid) {
      if (errno != EINTR) die("waitpid");
    }
    printf("round %d: %s\n", round, describe(status));
  }
  return 0;
}
