// Opens (O_CREAT | O_APPEND), appends one byte to and closes PATH, N times, while a second
// thread flips the one byte at OFFSET of the path buffer between CHAR_A and CHAR_B. A monitor
// that reads the path, classifies it and then lets the kernel read it again may be told one
// path and have the kernel use the other. Prints "opens=N ok=K erofs=R other=E" (R: refused
// by a read-only file system; E: any other error).
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[4096];
static size_t offset;
static char a, b;
static atomic_int stop;
static atomic_long flips;

static void* Flip(void* arg) {
  (void)arg;
  volatile char* p = path + offset;
  // As long in one state as in the other, so that a flipper stopped anywhere leaves either.
  for (long i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); ++i) {
    *p = i & 1 ? b : a;
    atomic_fetch_add_explicit(&flips, 1, memory_order_relaxed);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: pathrace PATH OFFSET CHAR_A CHAR_B N\n");
    return 2;
  }
  snprintf(path, sizeof path, "%s", argv[1]);
  offset = strtoul(argv[2], NULL, 10);
  a = argv[3][0], b = argv[4][0];
  const long n = strtol(argv[5], NULL, 10);
  if (offset >= strlen(path)) {
    fprintf(stderr, "pathrace: OFFSET is past the path\n");
    return 2;
  }
  pthread_t flipper;
  pthread_create(&flipper, NULL, Flip, NULL);
  // The flipper is running before the first open; on a CPU the two threads share (a loaded
  // machine), the opens make room for it now and then, so that the flips reach some of them.
  while (atomic_load(&flips) == 0) sched_yield();
  long ok = 0, erofs = 0, other = 0;
  for (long i = 0; i < n; ++i) {
    if (i % 256 == 255) sched_yield();
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EROFS) {
        ++erofs;
      } else {
        ++other;
      }
      continue;
    }
    if (write(fd, "x", 1) == 1) ++ok;
    close(fd);
  }
  atomic_store(&stop, 1);
  pthread_join(flipper, NULL);
  printf("opens=%ld ok=%ld erofs=%ld other=%ld\n", n, ok, erofs, other);
  return 0;
}
