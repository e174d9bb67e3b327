// Descriptors of files and directories removed while open: fstat through an open descriptor
// and through an O_PATH handle, and the O_PATH rules of fcntl and futimens. Each line states a
// result; the kernel is the oracle.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void result(const char* what, long r) {
  const int e = errno;
  printf("%-36s %s\n", what, r < 0 ? strerrorname_np(e) : "ok");
}

static void stat_line(const char* what, int r, const struct stat* st) {
  if (r < 0) {
    result(what, r);
    return;
  }
  printf("%-36s %s mode %o nlink %lu\n", what, S_ISDIR(st->st_mode) ? "dir" : "file",
         st->st_mode & 07777, (unsigned long)st->st_nlink);
}

int main(void) {
  struct stat st;

  // An O_PATH handle and an open file: both outlive the file's last name.
  int f = open("file", O_CREAT | O_RDWR, 0640);
  int fp = open("file", O_PATH);
  result("unlink file", unlink("file"));
  stat_line("fstat open file", fstat(f, &st), &st);
  stat_line("fstat O_PATH handle", fstat(fp, &st), &st);
  printf("%-36s 0%o\n", "F_GETFL of O_PATH", fcntl(fp, F_GETFL) & ~O_LARGEFILE);
  result("fcntl O_PATH F_GETLK", fcntl(fp, F_GETLK, &(struct flock){.l_type = F_RDLCK}));
  result("futimens O_PATH", futimens(fp, NULL));
  close(f);
  close(fp);

  // A directory removed while open.
  result("mkdir gone", mkdir("gone", 0750));
  int d = open("gone", O_RDONLY | O_DIRECTORY);
  int dp = open("gone", O_PATH | O_DIRECTORY);
  result("rmdir gone", rmdir("gone"));
  stat_line("fstat removed dir", fstat(d, &st), &st);
  stat_line("fstat O_PATH removed dir", fstat(dp, &st), &st);
  close(d);
  close(dp);
  return 0;
}
