// Three ways to write under a mount point's host directory that no file call the monitor
// serves describes, each made by the kernel itself:
//   coverprobe chroot DIR NAME  chroot to DIR (the mount point's parent), then create /NAME/f
//   coverprobe bind MP OTHER    a mount namespace of its own, MP bound on OTHER, create OTHER/f
//   coverprobe core MP          a child with its cwd in MP dies of SIGSEGV with core dumps on
// Prints "chroot=R", "bind=R" (R: OK or the errno's name) or "core=dumped" / "core=none".
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

// OK, or the errno's name.
static const char* Result(int ok) { return ok ? "OK" : strerrorname_np(errno); }

static int Create(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 0;
  int ok = write(fd, "escaped\n", 8) == 8;
  close(fd);
  return ok;
}

int main(int argc, char** argv) {
  char path[4096];
  if (argc == 4 && strcmp(argv[1], "chroot") == 0) {
    if (chroot(argv[2]) != 0 || chdir("/") != 0) {
      printf("chroot=%s\n", Result(0));
      return 0;
    }
    snprintf(path, sizeof path, "/%s/f", argv[3]);
    printf("chroot=%s\n", Result(Create(path)));
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "bind") == 0) {
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount(argv[2], argv[3], NULL, MS_BIND, NULL) != 0) {
      printf("bind=%s\n", Result(0));
      return 0;
    }
    snprintf(path, sizeof path, "%s/f", argv[3]);
    printf("bind=%s\n", Result(Create(path)));
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "core") == 0) {
    pid_t child = fork();
    if (child == 0) {
      struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
      setrlimit(RLIMIT_CORE, &unlimited);
      if (chdir(argv[2]) != 0) _exit(1);
      signal(SIGSEGV, SIG_DFL);
      raise(SIGSEGV);
      _exit(2);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("core=%s\n", WIFSIGNALED(status) && WCOREDUMP(status) ? "dumped" : "none");
    return 0;
  }
  fprintf(stderr, "usage: coverprobe chroot DIR NAME | bind MP OTHER | core MP\n");
  return 2;
}
