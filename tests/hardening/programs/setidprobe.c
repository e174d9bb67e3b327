// Run as a set-user-ID or set-group-ID program stored in a mount: prints its ids, its name
// (comm) and what /proc/self/exe names, then stays `hold` milliseconds (argv[1], default 0) so
// that the driver can look at the host while it runs.
// `setidprobe failexec PROGRAM` instead execs PROGRAM with a bad environment pointer (EFAULT)
// and prints the errno and how many of its descriptors name a set-id copy afterwards.
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int FailExec(const char* program) {
  char* argv[] = {(char*)program, NULL};
  // An unmapped page (the first): EFAULT, after the monitor prepared the copy. Through syscall()
  // so that the compiler does not look at it.
  syscall(SYS_execve, program, argv, (char**)(uintptr_t)8);
  const int err = errno;
  int leaked = 0;
  DIR* d = opendir("/proc/self/fd");
  struct dirent* e;
  while (d && (e = readdir(d))) {
    char path[300], target[4096];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (strstr(target, "amino-exec")) ++leaked;
  }
  if (d) closedir(d);
  printf("errno=%s leaked=%d\n", err == EFAULT ? "EFAULT" : strerror(err), leaked);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[1], "failexec") == 0) return FailExec(argv[2]);
  char exe[4096], comm[64] = "";
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  FILE* f = fopen("/proc/self/comm", "r");
  if (f) {
    if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = '\0';
    fclose(f);
  }
  printf("uid=%d euid=%d gid=%d egid=%d comm=%s exe=%s\n", (int)getuid(), (int)geteuid(),
         (int)getgid(), (int)getegid(), comm, exe);
  fflush(stdout);
  const long ms = argc > 1 ? atol(argv[1]) : 0;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
  return 0;
}
