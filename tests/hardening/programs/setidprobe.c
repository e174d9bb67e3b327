// Run as a set-user-ID or set-group-ID program stored in a mount: prints its ids and what
// /proc/self/exe names, then stays `hold` milliseconds (argv[1], default 0) so that the driver
// can look at the host while it runs.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  printf("uid=%d euid=%d gid=%d egid=%d exe=%s\n", (int)getuid(), (int)geteuid(), (int)getgid(),
         (int)getegid(), exe);
  fflush(stdout);
  const long ms = argc > 1 ? atol(argv[1]) : 0;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
  return 0;
}
