// commit_loop N: N application transactions, each rewriting one of 50 files (f<i % 50> holds
// "<i>\n"), reporting "committed <i>" on standard output once amino_commit() has returned.
// Whatever a reader outside the traced tree has seen reported must survive any crash under
// the durabilities that promise it.
#include <amino/amino.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: commit_loop N\n");
    return 2;
  }
  const int n = atoi(argv[1]);
  for (int i = 1; i <= n; ++i) {
    if (amino_begin(NULL) != 0) {
      perror("amino_begin");
      return 1;
    }
    char name[32], text[32];
    snprintf(name, sizeof name, "f%d", i % 50);
    const int len = snprintf(text, sizeof text, "%d\n", i);
    const int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, text, (size_t)len) != len || close(fd) != 0) {
      perror(name);
      return 1;
    }
    if (amino_commit() != 0) {
      perror("amino_commit");
      return 1;
    }
    printf("committed %d\n", i);
    fflush(stdout);
  }
  return 0;
}
