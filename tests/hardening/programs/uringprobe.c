// Makes the three io_uring calls with raw system calls (no liburing): io_uring_setup for a ring
// of 8 entries, then io_uring_enter and io_uring_register on the ring (or on descriptor -1 when
// there is none). Prints "setup=R enter=R register=R", R being OK or the errno's name.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char* ErrName(long r) {
  if (r >= 0) return "OK";
  switch (errno) {
    case ENOSYS:
      return "ENOSYS";
    case EPERM:
      return "EPERM";
    case EBADF:
      return "EBADF";
    case EINVAL:
      return "EINVAL";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    default:
      return strerror(errno);
  }
}

int main(void) {
  unsigned char params[120];  // struct io_uring_params, zeroed: default flags
  memset(params, 0, sizeof params);
  long ring = syscall(SYS_io_uring_setup, 8, params);
  printf("setup=%s", ErrName(ring));
  const int fd = ring >= 0 ? (int)ring : -1;
  long r = syscall(SYS_io_uring_enter, fd, 0, 0, 0, NULL, 0);
  printf(" enter=%s", ErrName(r));
  // IORING_UNREGISTER_BUFFERS (1) with nothing registered: ENXIO on a ring, EBADF without.
  r = syscall(SYS_io_uring_register, fd, 1, NULL, 0);
  printf(" register=%s\n", r >= 0 ? "OK" : errno == ENXIO ? "ENXIO" : ErrName(r));
  if (ring >= 0) close(fd);
  return 0;
}
