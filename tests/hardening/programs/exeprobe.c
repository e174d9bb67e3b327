// Whether a program may read the file it runs: prints "exe=R dumpable=N" (R: OK or the errno's
// name of opening /proc/self/exe for reading; N: prctl's PR_GET_DUMPABLE, which the kernel
// clears for a program its caller may run but not read).
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(void) {
  const int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  const char* exe = fd >= 0 ? "OK" : strerrorname_np(errno);
  printf("exe=%s dumpable=%d\n", exe, prctl(PR_GET_DUMPABLE));
  return 0;
}
