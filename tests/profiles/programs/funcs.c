// A program whose functions a per-function profile watches (tests/profiles/function_test.py):
// each mode calls update(), which writes one file in DIR and returns what it is told, in the
// situations function rules must handle.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int lib_update(const char* dir, const char* name, int result);  // libfuncs.so

static const char* dir;

// Writes DIR/NAME (its name as content); -2 when the write failed with EDEADLK (the
// transaction was aborted by the system: the caller may call again), else `result`.
__attribute__((noinline)) int update(const char* name, int result) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return errno == EDEADLK ? -2 : -3;
  ssize_t n = write(fd, name, strlen(name));
  int err = errno;
  if (close(fd) != 0 && n >= 0) err = errno, n = -1;
  if (n < 0) return err == EDEADLK ? -2 : -3;
  return result;
}

// Writes rN, calls itself for N-1; the call for 2 fails.
__attribute__((noinline)) int rec(int n) {
  char name[16];
  snprintf(name, sizeof name, "r%d", n);
  if (update(name, 0) < 0) return -3;
  if (n > 0 && rec(n - 1) == -3) return -3;
  return n == 2 ? -1 : 0;
}

// tail_outer(name, result) ends by jumping to update(): a tail call, so update() returns
// straight to tail_outer's caller.
int tail_outer(const char* name, int result);
__asm__(
    ".globl tail_outer\n"
    ".type tail_outer, @function\n"
    "tail_outer:\n"
    "  push %rbp\n"
    "  pop %rbp\n"
    "  jmp update\n"
    ".size tail_outer, .-tail_outer\n");

static jmp_buf back;

// Writes its file, then leaves by longjmp.
__attribute__((noinline)) int jumper(const char* name) {
  update(name, 0);
  longjmp(back, 1);
}

static void* worker(void* arg) {
  const int k = (int)(long)arg;
  for (int i = 0; i < 10; ++i) {
    char name[32];
    snprintf(name, sizeof name, "t%d-%d", k, i);
    int r;
    while ((r = update(name, i % 2 ? -1 : 0)) == -2) usleep(1000);
    if (r == -3) {
      fprintf(stderr, "funcs: thread %d: update(%s) failed\n", k, name);
      exit(3);
    }
  }
  return NULL;
}

// Forks inside; the child writes `name`-child (by a shell it execs when `exec_child`) and
// exits; the parent waits, writes `name`-parent and returns `result`.
__attribute__((noinline)) int forker(const char* name, int exec_child, int result) {
  char child[64], parent[64];
  snprintf(child, sizeof child, "%s-child", name);
  snprintf(parent, sizeof parent, "%s-parent", name);
  pid_t pid = fork();
  if (pid == 0) {
    if (exec_child) {
      char cmd[4200];
      snprintf(cmd, sizeof cmd, "echo x > %s/%s", dir, child);
      execl("/bin/sh", "sh", "-c", cmd, (char*)NULL);
      _exit(127);
    }
    _exit(update(child, 0) < 0 ? 1 : 0);
  }
  int status;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return -3;
  }
  if (update(parent, 0) < 0) return -3;
  return result;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: funcs basic|recursive|threads|longjmp|fork|tailcall|library DIR\n");
    return 2;
  }
  dir = argv[2];
  const char* mode = argv[1];
  if (strcmp(mode, "basic") == 0) {
    // a committed, b aborted, c written outside any call.
    if (update("a", 0) != 0 || update("b", -1) != -1) return 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/c", dir);
    FILE* f = fopen(path, "w");
    if (!f || fputs("c", f) < 0 || fclose(f) != 0) return 1;
    return 0;
  }
  if (strcmp(mode, "recursive") == 0) return rec(3) == 0 ? 0 : 1;
  if (strcmp(mode, "threads") == 0) {
    pthread_t th[4];
    for (long k = 0; k < 4; ++k) pthread_create(&th[k], NULL, worker, (void*)k);
    for (int k = 0; k < 4; ++k) pthread_join(th[k], NULL);
    return 0;
  }
  if (strcmp(mode, "longjmp") == 0) {
    if (setjmp(back) == 0) jumper("j");
    return update("k", 0) == 0 ? 0 : 1;
  }
  if (strcmp(mode, "fork") == 0) {
    // Kept: f0's files; gone: f1's (its call fails), e1's (a child that execs a shell).
    if (forker("f0", 0, 0) != 0 || forker("f1", 0, -1) != -1 || forker("e1", 1, -1) != -1) {
      return 1;
    }
    return 0;
  }
  if (strcmp(mode, "tailcall") == 0) {
    return tail_outer("tc", 0) == 0 && tail_outer("td", -1) == -1 ? 0 : 1;
  }
  if (strcmp(mode, "library") == 0) {
    return lib_update(dir, "l0", 0) == 0 && lib_update(dir, "l1", -1) == -1 ? 0 : 1;
  }
  fprintf(stderr, "funcs: unknown mode %s\n", mode);
  return 2;
}
