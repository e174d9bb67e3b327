// A shared library function a per-function profile watches: writes DIR/NAME, returns
// `result` (-3 when the file could not be written).
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int lib_update(const char* dir, const char* name, int result) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -3;
  ssize_t n = write(fd, name, strlen(name));
  if (close(fd) != 0 || n < 0) return -3;
  return result;
}
