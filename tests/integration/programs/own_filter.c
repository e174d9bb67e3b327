// own_filter MODE: a program that installs its own seccomp filter (no_new_privs, then a raw BPF
// program), then works with files.
//   errno  mkdir/mkdirat fail with EPERM and symlink/symlinkat with EROFS (SECCOMP_RET_ERRNO);
//          ordinary file I/O (create, write, read back, fstat, rename, unlink) works as before
//   trace  getppid gets SECCOMP_RET_TRACE, which without a tracer of the program's own fails
//          with ENOSYS; other calls are unaffected
// Prints every result, errno values by name.
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define RETURN(action) BPF_STMT(BPF_RET | BPF_K, (action))
// If the call number is nr, return action; otherwise fall through.
#define ON(nr, action) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), RETURN(action)

static const char* result(long r) { return r < 0 ? strerrorname_np(errno) : "ok"; }

static void install(const struct sock_filter* code, size_t len) {
  struct sock_fprog prog = {.len = (unsigned short)len, .filter = (struct sock_filter*)code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    perror("prctl(PR_SET_NO_NEW_PRIVS)");
    exit(100);
  }
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
    perror("seccomp(SECCOMP_SET_MODE_FILTER)");
    exit(100);
  }
  printf("filter installed\n");
}

static void file_io(void) {
  static const char kText[] = "written after the filter\n";
  int fd = open("data.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
  printf("open(data.txt, O_CREAT): %s\n", result(fd));
  if (fd < 0) return;
  printf("write: %zd\n", write(fd, kText, sizeof kText - 1));
  char buf[64] = {0};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  printf("pread: %zd: %s", n, buf);
  struct stat st;
  int r = fstat(fd, &st);
  printf("fstat: %s, size %lld\n", result(r), (long long)st.st_size);
  printf("close: %s\n", result(close(fd)));
  printf("rename(data.txt, kept.txt): %s\n", result(rename("data.txt", "kept.txt")));
  fd = open("scratch.txt", O_WRONLY | O_CREAT | O_EXCL, 0600);
  printf("open(scratch.txt, O_EXCL): %s\n", result(fd));
  if (fd >= 0) close(fd);
  printf("unlink(scratch.txt): %s\n", result(unlink("scratch.txt")));
  printf("stat(scratch.txt): %s\n", result(stat("scratch.txt", &st)));
}

static int errno_mode(void) {
  const struct sock_filter code[] = {
      LOAD(arch),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      RETURN(SECCOMP_RET_ALLOW),
      LOAD(nr),
      ON(SYS_mkdir, SECCOMP_RET_ERRNO | EPERM),
      ON(SYS_mkdirat, SECCOMP_RET_ERRNO | EPERM),
      ON(SYS_symlink, SECCOMP_RET_ERRNO | EROFS),
      ON(SYS_symlinkat, SECCOMP_RET_ERRNO | EROFS),
      RETURN(SECCOMP_RET_ALLOW),
  };
  printf("mkdir(before) before the filter: %s\n", result(mkdir("before", 0755)));
  install(code, sizeof code / sizeof code[0]);
  errno = 0;
  printf("mkdir(denied): %s\n", result(mkdir("denied", 0755)));
  printf("mkdirat(denied): %s\n", result(mkdirat(AT_FDCWD, "denied", 0755)));
  printf("symlink(kept.txt, link): %s\n", result(symlink("kept.txt", "link")));
  printf("rmdir(before): %s\n", result(rmdir("before")));
  file_io();
  return 0;
}

static int trace_mode(void) {
  const struct sock_filter code[] = {
      LOAD(arch),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      RETURN(SECCOMP_RET_ALLOW),
      LOAD(nr),
      ON(SYS_getppid, SECCOMP_RET_TRACE | 0x1234),
      RETURN(SECCOMP_RET_ALLOW),
  };
  install(code, sizeof code / sizeof code[0]);
  errno = 0;
  long r = syscall(SYS_getppid);
  printf("getppid: %s\n", r < 0 ? strerrorname_np(errno) : "a pid");
  file_io();
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc == 2 && strcmp(argv[1], "errno") == 0) return errno_mode();
  if (argc == 2 && strcmp(argv[1], "trace") == 0) return trace_mode();
  fprintf(stderr, "usage: own_filter errno|trace\n");
  return 2;
}
