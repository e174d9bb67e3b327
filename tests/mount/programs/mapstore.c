// Stores through a MAP_SHARED mapping that starts inside the file, and msyncs only some of them.
//   mapstore FILE   makes FILE 64 KiB of '.', maps bytes 8192..40959, stores "SYNCED" at file
//                   offset 12298 (the mapping's second page) and "PENDING" at 28682 (its sixth),
//                   msyncs the second page alone (MS_SYNC), prints "ready" and keeps the mapping
//                   until its standard input ends, so that no close or exit writes anything back.
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 3;
  char dots[65536];
  memset(dots, '.', sizeof dots);
  if (pwrite(fd, dots, sizeof dots, 0) != (ssize_t)sizeof dots) return 4;
  char* map = mmap(NULL, 32768, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 8192);
  if (map == MAP_FAILED) return 5;
  memcpy(map + 4096 + 10, "SYNCED", 6);
  memcpy(map + 5 * 4096 + 10, "PENDING", 7);
  if (msync(map + 4096, 4096, MS_SYNC) != 0) return 6;
  printf("ready\n");
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  return munmap(map, 32768) == 0 && close(fd) == 0 ? 0 : 7;
}
