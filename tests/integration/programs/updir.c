// updir: walks from the cwd up to "/" by openat(fd, "..") on directory descriptors, as glibc's
// getcwd does when the path is longer than PATH_MAX, checking at each level that the
// descriptor is a directory, that /proc/self/fd names the directory the path says, and that
// fchdir to it makes getcwd say the same. On a mount the walk passes through the mount point
// to the host directories above it. Prints "ok" or what differed, exit status 1 then.
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int Fail(const char* what, const char* path, const char* got) {
  printf("%s at %s: %s\n", what, path, got);
  return 1;
}

int main(void) {
  char path[PATH_MAX], link[PATH_MAX], proc[64], cwd[PATH_MAX];
  if (!getcwd(path, sizeof path)) return Fail("getcwd", ".", "failed");
  int fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Fail("open", ".", "failed");
  for (;;) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) return Fail("fstat", path, "no directory");
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, link, sizeof link - 1);
    if (n < 0) return Fail("readlink", path, "failed");
    link[n] = '\0';
    if (strcmp(link, path) != 0) return Fail("/proc/self/fd", path, link);
    if (fchdir(fd) != 0) return Fail("fchdir", path, "failed");
    if (!getcwd(cwd, sizeof cwd)) return Fail("getcwd after fchdir", path, "failed");
    if (strcmp(cwd, path) != 0) return Fail("getcwd after fchdir", path, cwd);
    if (strcmp(path, "/") == 0) break;
    int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (up < 0) return Fail("openat ..", path, "failed");
    close(fd);
    fd = up;
    char* slash = strrchr(path, '/');
    if (slash == path) {
      path[1] = '\0';
    } else {
      *slash = '\0';
    }
  }
  printf("ok\n");
  return 0;
}
