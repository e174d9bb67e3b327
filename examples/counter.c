/* counter: a shared counter that many processes increment at once, with no lock file.
 *
 *   counter FILE N      adds 1 to the decimal number in FILE (created, as 0, if missing) N times
 *
 * Each increment (read the number, add one, write it back) is one transaction: two instances can
 * never both read 41 and both write 42. When transactions get in each other's way the system
 * aborts one of them (AMINO_EABORTED); the increment is then simply done again, since an aborted
 * transaction left no trace. So however many instances run, the file ends with the exact total.
 *
 *   amino mkfs /tmp/db
 *   amino run --mount /mnt/a=/tmp/db -- \
 *       sh -c 'for i in 1 2 3 4 5 6; do counter /mnt/a/n 200 & done; wait; cat /mnt/a/n'   # 1200
 *
 * Exit status: 0 done, 1 error (FILE unreadable, or not holding a number), 2 usage, 75 not under
 * `amino run` (transactions unavailable: counting without them would lose updates).
 */
#include <amino/amino.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Reads the number in `path`, writes it back plus one. 0, or -1 with errno set. */
static int increment(const char* path) {
  int fd = open(path, O_RDWR | O_CREAT, 0644);
  if (fd < 0) return -1;
  char buf[32];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  int ok = n >= 0;
  if (ok) {
    buf[n] = '\0';
    char* end;
    long long value = strtoll(buf, &end, 10); /* an empty (new) file counts as 0 */
    if (strcmp(end, n > 0 ? "\n" : "") != 0 || value < 0) {
      fprintf(stderr, "counter: %s: does not hold a number\n", path);
      exit(1);
    }
    int len = snprintf(buf, sizeof buf, "%lld\n", value + 1);
    ok = pwrite(fd, buf, len, 0) == len && ftruncate(fd, len) == 0;
  }
  int saved = errno;
  close(fd);
  errno = saved;
  return ok ? 0 : -1;
}

/* Sleeps a random time up to about 2^attempt ms (at most ~0.25 s), so that the transactions
 * that collided do not collide again at once. */
static void back_off(int attempt) {
  long max_us = 1000L << (attempt < 8 ? attempt : 8);
  struct timespec t = {0, (rand() % max_us) * 1000L};
  nanosleep(&t, NULL);
}

int main(int argc, char** argv) {
  long n = argc == 3 ? strtol(argv[2], NULL, 10) : -1;
  if (n < 0) {
    fprintf(stderr, "usage: counter FILE N\n");
    return 2;
  }
  if (!amino_available()) {
    fprintf(stderr,
            "counter: not running under `amino run`: no transactions, updates would be lost\n");
    return 75;
  }
  srand((unsigned)getpid());
  int retries = 0;
  for (long i = 0; i < n;) {
    if (amino_begin(NULL) != 0) {
      perror("counter: amino_begin");
      return 1;
    }
    int committing = 0;
    if (increment(argv[1]) == 0) {
      committing = 1;
      if (amino_commit() == 0) {
        i++;
        retries = 0;
        continue;
      }
    }
    int err = errno;
    if (!committing) amino_abort(); /* a failed commit has already ended the transaction */
    if (err != AMINO_EABORTED) {
      fprintf(stderr, "counter: %s: %s\n", argv[1], strerror(err));
      return 1;
    }
    back_off(retries++); /* aborted by the system (conflict): do this increment again */
  }
  return 0;
}
