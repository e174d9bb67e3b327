// Tries to take hold of a process: pidfd_open + pidfd_getfd on every descriptor number below
// 1024, PTRACE_ATTACH, process_vm_readv. `monitorprobe tracer` aims at the caller's tracer (the
// Amino monitor: TracerPid in /proc/self/status, else the parent); `monitorprobe PID` at PID.
// Prints one line of key=value results and exits 0; the driver judges them.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char* ErrName(int err) {
  switch (err) {
    case 0:
      return "OK";
    case EPERM:
      return "EPERM";
    case EACCES:
      return "EACCES";
    case ESRCH:
      return "ESRCH";
    case EBADF:
      return "EBADF";
    case EFAULT:
      return "EFAULT";
    case ENOSYS:
      return "ENOSYS";
    case EIO:
      return "EIO";
    default:
      return strerror(err);
  }
}

static pid_t Tracer(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  pid_t pid = 0;
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "TracerPid:", 10) == 0) pid = (pid_t)atoi(line + 10);
  }
  if (f) fclose(f);
  return pid > 0 ? pid : getppid();
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: monitorprobe tracer|PID\n");
    return 2;
  }
  const pid_t pid = strcmp(argv[1], "tracer") == 0 ? Tracer() : (pid_t)atoi(argv[1]);
  printf("pid=%d", (int)pid);

  // The owner of /proc/PID/mem: root when the process is not dumpable.
  char path[64];
  struct stat st;
  snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
  printf(" proc_owner=%ld", stat(path, &st) == 0 ? (long)st.st_uid : -1L);

  long pidfd = syscall(SYS_pidfd_open, pid, 0);
  printf(" pidfd_open=%s", ErrName(pidfd < 0 ? errno : 0));
  int taken = 0, eperm = 0, ebadf = 0, other = 0;
  if (pidfd >= 0) {
    for (int fd = 0; fd < 1024; ++fd) {
      long got = syscall(SYS_pidfd_getfd, (int)pidfd, fd, 0);
      if (got >= 0) {
        ++taken;
        close((int)got);
      } else if (errno == EPERM) {
        ++eperm;
      } else if (errno == EBADF) {
        ++ebadf;
      } else {
        ++other;
      }
    }
    close((int)pidfd);
  }
  printf(" getfd_taken=%d getfd_eperm=%d getfd_ebadf=%d getfd_other=%d", taken, eperm, ebadf,
         other);
  fflush(stdout);  // a monitor that was taken may stop answering: the driver sees this much

  errno = 0;
  long r = ptrace(PTRACE_ATTACH, pid, 0, 0);
  printf(" ptrace_attach=%s", ErrName(r == 0 ? 0 : errno));
  if (r == 0) {
    int status;
    waitpid(pid, &status, __WALL);
    ptrace(PTRACE_DETACH, pid, 0, 0);
  }

  // A readable address of the target: its first mapping when /proc/PID/maps says; the kernel
  // checks access before it looks at the address, so EPERM means refused whatever the address.
  unsigned long addr = 0x400000;
  snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
  FILE* maps = fopen(path, "r");
  if (maps) {
    if (fscanf(maps, "%lx", &addr) != 1) addr = 0x400000;
    fclose(maps);
  }
  char buf[16];
  struct iovec local = {buf, sizeof buf};
  struct iovec remote = {(void*)addr, sizeof buf};
  ssize_t n = syscall(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0);
  printf(" vm_readv=%s\n", ErrName(n >= 0 ? 0 : errno));
  return 0;
}
