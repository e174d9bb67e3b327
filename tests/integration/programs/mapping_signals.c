// Mappings made while signals rain on the mapper: a child sends SIGUSR1 to the parent without
// pause while the parent maps a file of the scratch directory (private and shared, with
// PROT_EXEC too, as a loader does) and a file outside it (this program), and checks each
// mapping's bytes. mmap never fails with EINTR, so every mapping must succeed with the file's
// bytes, whatever the handler (installed without SA_RESTART) interrupts. Prints the counts of
// mappings made and wrong, and whether signals arrived.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kSize = 3 * 4096 + 100, kRounds = 1500 };

static volatile sig_atomic_t signals;

static void on_usr1(int sig) {
  (void)sig;
  ++signals;
}

static char pattern[kSize];

static int check_map(int fd, int prot, int flags, const char* want, size_t n) {
  char* p = mmap(NULL, n, prot, flags, fd, 0);
  if (p == MAP_FAILED) {
    printf("mmap failed: %s\n", strerror(errno));
    return 1;
  }
  const int bad = memcmp(p, want, n) != 0;
  munmap(p, n);
  return bad;
}

int main(int argc, char** argv) {
  (void)argc;
  for (int i = 0; i < kSize; ++i) pattern[i] = (char)('a' + (i * 7 + i / 4096) % 26);
  int fd = open("mapped.bin", O_RDWR | O_CREAT | O_TRUNC, 0755);
  if (fd < 0 || write(fd, pattern, kSize) != kSize) return 100;
  int self = open(argv[0], O_RDONLY);
  char elf[4];
  if (self < 0 || pread(self, elf, 4, 0) != 4) return 101;

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;  // no SA_RESTART: a call the kernel may restart must still finish
  if (sigaction(SIGUSR1, &sa, NULL) != 0) return 102;
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) return 103;
  if (child == 0) {
    for (;;) {
      if (kill(parent, SIGUSR1) != 0) _exit(0);
      usleep(20);
    }
  }
  int made = 0, wrong = 0;
  for (int round = 0; round < kRounds; ++round) {
    wrong += check_map(fd, PROT_READ, MAP_PRIVATE, pattern, kSize);
    wrong += check_map(fd, PROT_READ | PROT_EXEC, MAP_PRIVATE, pattern, kSize);
    wrong += check_map(fd, PROT_READ | PROT_WRITE, MAP_SHARED, pattern, kSize);
    wrong += check_map(self, PROT_READ, MAP_PRIVATE, elf, sizeof elf);
    made += 4;
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  printf("mappings=%d wrong=%d signals=%s\n", made, wrong, signals > 0 ? "yes" : "no");
  return wrong != 0;
}
