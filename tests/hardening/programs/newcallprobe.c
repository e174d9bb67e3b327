// Makes the x86-64 calls newer than the monitor on PATH with raw system calls: setxattrat
// (463: user.amino_probe = "1"), getxattrat (464), file_getattr (469), and two numbers no
// kernel has yet (470, 600), libamino's probe call, and through int $0x80 (i386 numbers, which
// are the same for these) file_getattr and io_uring_setup. Prints "setxattrat=R getxattrat=R
// file_getattr=R nr470=R nr600=R amino_probe=R i386_file_getattr=R i386_io_uring_setup=R", R
// being OK or the errno's name.
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "amino/amino.h"

struct XattrArgs {  // struct xattr_args (Linux 6.13)
  uint64_t value;
  uint32_t size;
  uint32_t flags;
};

// An i386 system call through int $0x80 (the kernel zeroes r8-r11 on the way back); sets errno.
static long Int80(long nr, long a, long b, long c, long d, long e) {
  long ret;
  register long r_esi __asm__("rsi") = d;
  register long r_edi __asm__("rdi") = e;
  __asm__ volatile("int $0x80"
                   : "=a"(ret)
                   : "a"(nr), "b"(a), "c"(b), "d"(c), "r"(r_esi), "r"(r_edi)
                   : "r8", "r9", "r10", "r11", "memory", "cc");
  if (ret < 0 && ret >= -4095) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
}

// OK, or the errno's name.
static const char* Result(long r) { return r >= 0 ? "OK" : strerrorname_np(errno); }

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: newcallprobe PATH\n");
    return 2;
  }
  const char* path = argv[1];
  char value[8] = "1";
  struct XattrArgs set = {(uint64_t)(uintptr_t)value, 1, 0};
  long r = syscall(463, AT_FDCWD, path, 0, "user.amino_probe", &set, sizeof set);
  printf("setxattrat=%s", Result(r));
  char got[8];
  struct XattrArgs get = {(uint64_t)(uintptr_t)got, sizeof got, 0};
  r = syscall(464, AT_FDCWD, path, 0, "user.amino_probe", &get, sizeof get);
  printf(" getxattrat=%s", Result(r));
  uint64_t attr[4] = {0};
  r = syscall(469, AT_FDCWD, path, attr, 24, 0);
  printf(" file_getattr=%s", Result(r));
  r = syscall(470, 0, 0, 0, 0, 0, 0);
  printf(" nr470=%s", Result(r));
  r = syscall(600, 0, 0, 0, 0, 0, 0);
  printf(" nr600=%s", Result(r));
  r = syscall(AMINO_SYS_PROBE);
  printf(" amino_probe=%s", r == AMINO_PROBE_ANSWER ? "ANSWERED" : Result(r));
  // i386 pointers: a page below 4 GiB.
  char* low =
      mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
  if (low == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  snprintf(low, 1024, "%s", path);
  // file_getattr(dfd, path, attr, size, at_flags): five arguments, as int $0x80 takes here.
  r = Int80(469, AT_FDCWD, (long)(uintptr_t)low, (long)(uintptr_t)(low + 1024), 24, 0);
  printf(" i386_file_getattr=%s", Result(r));
  // __NR_io_uring_setup(entries, params): 425 in both tables; params zeroed.
  memset(low + 2048, 0, 120);
  r = Int80(425, 8, (long)(uintptr_t)(low + 2048), 0, 0, 0);
  printf(" i386_io_uring_setup=%s\n", Result(r));
  return 0;
}
