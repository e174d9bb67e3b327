// The cost of a function call under a per-function profile (bench/profiles/run): calls
// work() N times and prints the ns per call. work() either does nothing (the breakpoints' own
// cost) or writes 4 KiB to a file in DIR (a transaction that does something).
//
//   funcall_bench empty|write N [DIR]
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fd = -1;
static char block[4096];

__attribute__((noinline)) int work(int write_it) {
  if (write_it && pwrite(fd, block, sizeof block, 0) != (ssize_t)sizeof block) return -1;
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3 || (strcmp(argv[1], "empty") != 0 && strcmp(argv[1], "write") != 0)) {
    fprintf(stderr, "usage: funcall_bench empty|write N [DIR]\n");
    return 2;
  }
  const int write_it = strcmp(argv[1], "write") == 0;
  const long n = atol(argv[2]);
  if (write_it) {
    if (argc < 4) return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/funcall.dat", argv[3]);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      perror(path);
      return 1;
    }
    memset(block, 'x', sizeof block);
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; ++i) {
    if (work(write_it) != 0) {
      perror("work");
      return 1;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  const double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
  printf("%.1f\n", ns / (double)n);
  return 0;
}
