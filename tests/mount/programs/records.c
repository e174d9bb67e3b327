#include "records.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kMagic = 0x52434d41 };  // "AMCR"

static uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void record_make(struct Record* r, uint32_t writer, uint32_t seq, uint32_t file) {
  r->magic = kMagic;
  r->writer = writer;
  r->seq = seq;
  r->file = file;
  for (int i = 0; i < kPayloadSize; ++i) r->payload[i] = (uint8_t)(writer * 131u + seq * 7u + i);
  r->sum = fnv1a((const uint8_t*)r, offsetof(struct Record, sum));
}

int record_valid(const struct Record* r) {
  if (r->magic != kMagic) return 0;
  for (int i = 0; i < kPayloadSize; ++i) {
    if (r->payload[i] != (uint8_t)(r->writer * 131u + r->seq * 7u + i)) return 0;
  }
  return r->sum == fnv1a((const uint8_t*)r, offsetof(struct Record, sum));
}

struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

int list_dir(const char* dir, char* buf, size_t size, int* complete) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  // One call sees one state of the directory (the kernel holds the directory's lock for it; an
  // Amino mount serves it in one transaction), so the names it returns are a snapshot.
  static char raw[65536];
  long n = syscall(SYS_getdents64, fd, raw, sizeof raw);
  if (n < 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  static char more[4096];
  long m = syscall(SYS_getdents64, fd, more, sizeof more);
  *complete = m == 0;
  close(fd);
  int count = 0;
  size_t used = 0;
  buf[0] = 0;
  for (long off = 0; off < n;) {
    struct linux_dirent64* d = (struct linux_dirent64*)(raw + off);
    off += d->d_reclen;
    if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..")) continue;
    size_t len = strlen(d->d_name);
    if (used + len + 2 > size) return -ENAMETOOLONG;
    memcpy(buf + used, d->d_name, len);
    used += len;
    buf[used++] = '\n';
    buf[used] = 0;
    ++count;
  }
  return count;
}

long read_whole(const char* path, uint8_t** out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  size_t cap = 65536, len = 0;
  uint8_t* buf = malloc(cap);
  if (!buf) abort();
  for (;;) {
    if (cap - len < 4096) {
      cap *= 2;
      buf = realloc(buf, cap);
      if (!buf) abort();
    }
    ssize_t r = read(fd, buf + len, 4096);
    if (r < 0) {
      int e = errno;
      free(buf);
      close(fd);
      return -e;
    }
    if (r == 0) break;
    len += (size_t)r;
  }
  close(fd);
  *out = buf;
  return (long)len;
}

void log_line(int fd, const char* text, size_t len) {
  if (write(fd, text, len) != (ssize_t)len) {
    perror("log write");
    _exit(99);
  }
}

double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
