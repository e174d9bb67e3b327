// System calls with bad arguments: invalid pointers, an over-long path, a path that runs into
// an unmapped page, bad descriptors. Each line names the call and what it returned; a monitor
// must return the same errors as the kernel and survive.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

static void report(const char* what, long r) {
  if (r < 0) {
    printf("%-44s -1 %s\n", what, strerrorname_np(errno));
  } else {
    printf("%-44s %ld\n", what, r);
  }
}

#define CALL(what, expr)  \
  do {                    \
    errno = 0;            \
    report(what, (expr)); \
  } while (0)

/* Long by design: a script of bad inputs, each reporting one line; the output's order is the
 * source's. */
int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  void* bad = (void*)16;
  void* kernel = (void*)0xffffffffff600000ul;  // not a user address
  struct stat st;

  CALL("openat(bad path)", syscall(SYS_openat, AT_FDCWD, bad, O_RDONLY));
  CALL("openat(NULL path)", syscall(SYS_openat, AT_FDCWD, NULL, O_RDONLY));
  CALL("openat(kernel address)", syscall(SYS_openat, AT_FDCWD, kernel, O_RDONLY));
  CALL("open(bad path)", syscall(SYS_open, bad, O_RDONLY));
  CALL("newfstatat(bad path)", syscall(SYS_newfstatat, AT_FDCWD, bad, &st, 0));
  CALL("newfstatat(good path, bad buf)", syscall(SYS_newfstatat, AT_FDCWD, "file.txt", bad, 0));
  CALL("stat(good path, bad buf)", syscall(SYS_stat, "file.txt", bad));
  CALL("lstat(bad path)", syscall(SYS_lstat, bad, &st));
  CALL("statx(good path, bad buf)", syscall(SYS_statx, AT_FDCWD, "file.txt", 0, 0x7ff, bad));
  CALL("access(bad path)", syscall(SYS_access, bad, R_OK));
  CALL("mkdir(bad path)", syscall(SYS_mkdir, bad, 0755));
  CALL("unlink(bad path)", syscall(SYS_unlink, bad));
  CALL("rename(good, bad)", syscall(SYS_rename, "file.txt", bad));
  CALL("readlink(good path, bad buf)", syscall(SYS_readlink, "link", bad, 64));
  CALL("chdir(bad path)", syscall(SYS_chdir, bad));

  int fd = open("file.txt", O_RDWR);
  CALL("read(fd, bad buf)", syscall(SYS_read, fd, bad, 10));
  CALL("write(fd, bad buf)", syscall(SYS_write, fd, bad, 10));
  CALL("pread64(fd, bad buf)", syscall(SYS_pread64, fd, bad, 10, 0));
  CALL("fstat(fd, bad buf)", syscall(SYS_fstat, fd, bad));
  CALL("getdents64(dir, bad buf)",
       syscall(SYS_getdents64, open(".", O_RDONLY | O_DIRECTORY), bad, 4096));
  char ok[16] = {0};
  CALL("read(fd) still works", syscall(SYS_read, fd, ok, 5));
  printf("  content: %s\n", ok);

  // Path lengths: 5000 bytes is over PATH_MAX; a 300-byte component is over NAME_MAX.
  char* longpath = malloc(5001);
  memset(longpath, 'a', 5000);
  longpath[5000] = 0;
  CALL("openat(5000-byte path)", syscall(SYS_openat, AT_FDCWD, longpath, O_RDONLY));
  CALL("mkdir(5000-byte path)", syscall(SYS_mkdir, longpath, 0755));
  CALL("newfstatat(5000-byte path)", syscall(SYS_newfstatat, AT_FDCWD, longpath, &st, 0));
  longpath[300] = 0;
  CALL("openat(300-byte name, O_CREAT)",
       syscall(SYS_openat, AT_FDCWD, longpath, O_WRONLY | O_CREAT, 0644));
  // 4095 bytes of "d/d/d/..." stays within PATH_MAX but names no file.
  for (int i = 0; i < 4094; ++i) longpath[i] = i % 2 ? '/' : 'd';
  longpath[4094] = 'd';
  longpath[4095] = 0;
  CALL("openat(4095-byte path)", syscall(SYS_openat, AT_FDCWD, longpath, O_RDONLY));
  free(longpath);

  // An unterminated path that ends where the mapping ends.
  long page = sysconf(_SC_PAGESIZE);
  char* map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(map + page, page);
  memset(map, 'b', page);
  char* tail = map + page - 100;
  CALL("openat(unterminated path at mapping end)", syscall(SYS_openat, AT_FDCWD, tail, O_RDONLY));
  CALL("mkdir(unterminated path at mapping end)", syscall(SYS_mkdir, tail, 0755));
  CALL("newfstatat(unterminated, at mapping end)", syscall(SYS_newfstatat, AT_FDCWD, tail, &st, 0));
  CALL("openat(whole page, no terminator)", syscall(SYS_openat, AT_FDCWD, map, O_RDONLY));
  // A read whose buffer runs off the mapping: a partial read or EFAULT, as the kernel decides.
  CALL("read(fd, buffer crossing the mapping end)",
       syscall(SYS_pread64, fd, map + page - 2, 10, 0));

  // Bad descriptors.
  CALL("read(-1)", syscall(SYS_read, -1, ok, 1));
  CALL("read(9999)", syscall(SYS_read, 9999, ok, 1));
  CALL("write(1234)", syscall(SYS_write, 1234, "x", 1));
  CALL("fstat(777)", syscall(SYS_fstat, 777, &st));
  CALL("close(777)", syscall(SYS_close, 777));
  CALL("dup2(777, 5)", syscall(SYS_dup2, 777, 5));
  CALL("openat(777, relative path)", syscall(SYS_openat, 777, "file.txt", O_RDONLY));
  CALL("openat(777, absolute path)", syscall(SYS_openat, 777, "/dev/null", O_RDONLY));
  CALL("openat(regular file as dirfd)", syscall(SYS_openat, fd, "x", O_RDONLY));
  CALL("getdents64(regular file)", syscall(SYS_getdents64, fd, ok, sizeof ok));
  int rd = open("file.txt", O_RDONLY);
  CALL("write(read-only fd)", syscall(SYS_write, rd, "x", 1));
  CALL("lseek(fd, -5, SEEK_SET)", syscall(SYS_lseek, rd, (off_t)-5, SEEK_SET));
  CALL("read(fd, count 0)", syscall(SYS_read, rd, bad, 0));
  close(rd);
  CALL("read(closed fd)", syscall(SYS_read, rd, ok, 1));
  // The times are copied before the path is looked at; a NULL path with a descriptor is the
  // descriptor itself.
  CALL("utimes(empty path, bad times)", syscall(SYS_utimes, "", bad));
  CALL("utime(missing, bad times)", syscall(SYS_utime, "missing", bad));
  struct timeval tv[2] = {{1000, 0}, {2000, 0}};
  CALL("futimesat(fd, NULL, times)", syscall(SYS_futimesat, fd, NULL, tv));
  fstat(fd, &st);
  printf("%-44s %lld\n", "its mtime", (long long)st.st_mtime);
  close(fd);
  printf("still alive\n");
  return 0;
}
