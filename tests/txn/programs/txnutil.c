#include "txnutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char who_name[128] = "txn";

void set_who(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(who_name, sizeof who_name, fmt, ap);
  va_end(ap);
}

const char* who(void) { return who_name; }

static const char* work_dir = ".";

void set_dir(const char* dir) { work_dir = dir; }

const char* at(const char* fmt, ...) {
  static char bufs[8][4096];
  static int which;
  which = (which + 1) % 8;
  char rel[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rel, sizeof rel, fmt, ap);
  va_end(ap);
  snprintf(bufs[which], sizeof bufs[which], "%s/%s", work_dir, rel);
  return bufs[which];
}

void fail(const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "FAIL %s: %s\n", who_name, msg);
  fflush(stderr);
  exit(1);
}

const char* err_name(int err) {
  if (err == 0) return "OK";
  const char* name = strerrorname_np(err);
  return name ? name : "E?";
}

void must(long r, const char* call, const char* path) {
  if (r < 0) fail("%s %s: %s", call, path, err_name(errno));
}

void must_fail(long r, int want, const char* call, const char* path) {
  if (r >= 0) fail("%s %s succeeded; expected %s", call, path, err_name(want));
  if (errno != want) fail("%s %s: %s; expected %s", call, path, err_name(errno), err_name(want));
}

static int write_flags(const char* path, const char* text, int flags) {
  int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
  if (fd < 0) return -errno;
  size_t len = strlen(text);
  ssize_t n = write(fd, text, len);
  int err = n < 0 ? errno : (size_t)n != len ? EIO : 0;
  if (close(fd) != 0 && !err) err = errno;
  return -err;
}

int write_file(const char* path, const char* text) { return write_flags(path, text, O_TRUNC); }

int append_file(const char* path, const char* text) { return write_flags(path, text, O_APPEND); }

long read_file(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -errno;
  size_t len = 0;
  while (len + 1 < size) {
    ssize_t n = read(fd, buf + len, size - 1 - len);
    if (n < 0) {
      int err = errno;
      close(fd);
      return -err;
    }
    if (n == 0) break;
    len += (size_t)n;
  }
  buf[len] = 0;
  close(fd);
  return (long)len;
}

void expect_content(const char* path, const char* want) {
  char buf[4096];
  long n = read_file(path, buf, sizeof buf);
  if (!want) {
    if (n != -ENOENT) {
      fail("%s should not exist; read gave %s", path, n < 0 ? err_name((int)-n) : buf);
    }
    return;
  }
  if (n < 0) fail("read %s: %s (expected \"%s\")", path, err_name((int)-n), want);
  if (strcmp(buf, want) != 0) fail("%s holds \"%s\"; expected \"%s\"", path, buf, want);
}

long read_number(const char* path, long* value, int err_ok) {
  char buf[64], *end;
  long n = read_file(path, buf, sizeof buf);
  if (n < 0 && err_ok && -n == err_ok) return n;
  if (n < 0) fail("read %s: %s", path, err_name((int)-n));
  errno = 0;
  *value = strtol(buf, &end, 10);
  if (errno || end == buf || (*end && *end != '\n'))
    fail("%s holds \"%s\", not a number", path, buf);
  return 0;
}

int write_number(const char* path, long value) {
  char buf[32];
  snprintf(buf, sizeof buf, "%ld\n", value);
  return write_file(path, buf);
}

void send_word(int fd, uint64_t word) {
  if (write(fd, &word, sizeof word) != (ssize_t)sizeof word)
    fail("pipe write: %s", err_name(errno));
}

uint64_t recv_word(int fd) {
  uint64_t word;
  size_t got = 0;
  while (got < sizeof word) {
    ssize_t n = read(fd, (char*)&word + got, sizeof word - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("pipe read: %s", n == 0 ? "closed by the other side" : err_name(errno));
    got += (size_t)n;
  }
  return word;
}

double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int spawn(int (*fn)(void*), void* arg) {
  fflush(stdout);
  fflush(stderr);
  int pid = fork();
  if (pid < 0) fail("fork: %s", err_name(errno));
  if (pid == 0) {
    int status = fn(arg);
    fflush(stdout);
    _exit(status);
  }
  return pid;
}

int spawn_linked(int (*fn)(void*, struct Link), void* arg, struct Link* parent) {
  int down[2], up[2];
  if (pipe(down) != 0 || pipe(up) != 0) fail("pipe: %s", err_name(errno));
  fflush(stdout);
  fflush(stderr);
  int pid = fork();
  if (pid < 0) fail("fork: %s", err_name(errno));
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    int status = fn(arg, (struct Link){up[1], down[0]});
    fflush(stdout);
    _exit(status);
  }
  close(down[0]);
  close(up[1]);
  *parent = (struct Link){down[1], up[0]};
  return pid;
}

int reap(int pid) {
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail("waitpid %d: %s", pid, err_name(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
