// foreign_abi: system calls of other ABIs made from 64-bit code.
//   int $0x80 with i386 numbers: getpid, open/read/close of in.txt by a relative path, open of a
//   missing file, mkdir, open(O_CREAT)/write/close of out32.txt, open/close of /dev/null
//   (32-bit pointers: the arguments live in a MAP_32BIT mapping)
//   the x32 bit (0x40000000) on getpid, openat, mkdir (ENOSYS when the kernel has no x32)
// Prints every result, errno values by name.
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
  kI386Read = 3,
  kI386Write = 4,
  kI386Open = 5,
  kI386Close = 6,
  kI386Getpid = 20,
  kI386Mkdir = 39,
};
#define X32_BIT 0x40000000L

// An i386 system call through int $0x80; the kernel zeroes r8-r11 on the way back.
static long int80(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("int $0x80"
                   : "=a"(ret)
                   : "a"(nr), "b"(a), "c"(b), "d"(c)
                   : "r8", "r9", "r10", "r11", "memory", "cc");
  return ret;
}

// A kernel return value as text: the number, or the errno name.
static const char* show(long r) {
  static char text[4][64];
  static int next;
  char* s = text[next++ % 4];
  if (r < 0 && r >= -4095) {
    snprintf(s, 64, "-%s", strerrorname_np((int)-r));
  } else {
    snprintf(s, 64, "%ld", r);
  }
  return s;
}

// The same for a libc syscall() result.
static const char* show_libc(long r) { return show(r < 0 ? -errno : r); }

static char* low;  // a page below 4 GiB for i386 pointers

static uint32_t low_string(size_t off, const char* s) {
  strcpy(low + off, s);
  return (uint32_t)(uintptr_t)(low + off);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
  if (low == MAP_FAILED) {
    perror("mmap(MAP_32BIT)");
    return 100;
  }
  if ((uintptr_t)low >= 0x100000000ULL) {
    printf("MAP_32BIT gave a mapping above 4 GiB\n");
    return 100;
  }

  printf("int 0x80 getpid is getpid(): %s\n",
         int80(kI386Getpid, 0, 0, 0) == getpid() ? "yes" : "no");
  long fd = int80(kI386Open, low_string(0, "in.txt"), O_RDONLY, 0);
  printf("int 0x80 open(\"in.txt\", O_RDONLY) = %s\n", show(fd));
  char* buf = low + 1024;
  long n = int80(kI386Read, fd, (long)(uintptr_t)buf, 100);
  printf("int 0x80 read = %s: %.*s", show(n), n > 0 ? (int)n : 0, buf);
  printf("int 0x80 close = %s\n", show(int80(kI386Close, fd, 0, 0)));
  printf("int 0x80 read of the closed descriptor = %s\n",
         show(int80(kI386Read, fd, (long)(uintptr_t)buf, 100)));
  printf("int 0x80 open(\"missing.txt\") = %s\n",
         show(int80(kI386Open, low_string(0, "missing.txt"), O_RDONLY, 0)));
  printf("int 0x80 mkdir(\"dir32\", 0750) = %s\n",
         show(int80(kI386Mkdir, low_string(0, "dir32"), 0750, 0)));
  // i386 O_CREAT, O_TRUNC and O_WRONLY have the same values as x86-64's.
  fd = int80(kI386Open, low_string(0, "out32.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0640);
  printf("int 0x80 open(\"out32.txt\", O_WRONLY|O_CREAT|O_TRUNC, 0640) = %s\n", show(fd));
  printf("int 0x80 write = %s\n",
         show(int80(kI386Write, fd, low_string(2048, "written through int 0x80\n"), 25)));
  printf("int 0x80 close = %s\n", show(int80(kI386Close, fd, 0, 0)));
  // A file outside the working directory (and outside any Amino mount).
  fd = int80(kI386Open, low_string(0, "/dev/null"), O_RDONLY, 0);
  printf("int 0x80 open(\"/dev/null\", O_RDONLY) = %s\n", show(fd));
  printf("int 0x80 close = %s\n", show(int80(kI386Close, fd, 0, 0)));

  errno = 0;
  long r = syscall(X32_BIT | SYS_getpid);
  printf("x32 getpid: %s\n", r == getpid() ? "getpid()" : show_libc(r));
  errno = 0;
  r = syscall(X32_BIT | SYS_openat, AT_FDCWD, "in.txt", O_RDONLY);
  printf("x32 openat(\"in.txt\") = %s\n", show_libc(r));
  if (r >= 0) close((int)r);
  errno = 0;
  printf("x32 mkdir(\"dirx32\") = %s\n", show_libc(syscall(X32_BIT | SYS_mkdir, "dirx32", 0755)));
  errno = 0;
  r = syscall(X32_BIT | SYS_openat, AT_FDCWD, "outx32.txt", O_WRONLY | O_CREAT, 0644);
  printf("x32 openat(\"outx32.txt\", O_CREAT) = %s\n", show_libc(r));
  if (r >= 0) close((int)r);
  return 0;
}
