// Eight threads write disjoint regions of one file with pwrite (in small, interleaved chunks),
// and each its own file; the main thread then verifies every byte.
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kThreads = 8, kRegion = 256 * 1024, kChunk = 4096 };

static int shared_fd;

static void* worker(void* arg) {
  const int id = (int)(intptr_t)arg;
  unsigned char chunk[kChunk];
  for (int off = 0; off < kRegion; off += kChunk) {
    for (int i = 0; i < kChunk; ++i) chunk[i] = (unsigned char)(id * 31 + (off + i) / 7);
    if (pwrite(shared_fd, chunk, kChunk, (off_t)id * kRegion + off) != kChunk) {
      perror("pwrite");
      exit(100);
    }
  }
  char name[32];
  snprintf(name, sizeof name, "thread-%d.txt", id);
  FILE* f = fopen(name, "w");
  if (!f) {
    perror(name);
    exit(100);
  }
  for (int i = 0; i < 100; ++i) fprintf(f, "thread %d line %d\n", id, i);
  fclose(f);
  return NULL;
}

int main(void) {
  shared_fd = open("shared.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (shared_fd < 0) {
    perror("open");
    return 100;
  }
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; ++i) pthread_create(&t[i], NULL, worker, (void*)(intptr_t)i);
  for (int i = 0; i < kThreads; ++i) pthread_join(t[i], NULL);
  if (fsync(shared_fd) != 0) perror("fsync");
  unsigned char* all = malloc((size_t)kThreads * kRegion);
  ssize_t n = pread(shared_fd, all, (size_t)kThreads * kRegion, 0);
  printf("read back %zd bytes\n", n);
  int bad = 0;
  for (int id = 0; id < kThreads; ++id) {
    for (int off = 0; off < kRegion; ++off) {
      if (all[(size_t)id * kRegion + off] != (unsigned char)(id * 31 + off / 7)) ++bad;
    }
  }
  printf("%d wrong bytes\n", bad);
  free(all);
  close(shared_fd);
  return bad ? 1 : 0;
}
