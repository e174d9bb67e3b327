// Descriptors of files and directories removed while open: fstat through an open descriptor
// and through an O_PATH handle, and the O_PATH rules of fcntl and futimens; a removed working
// directory and where its ".." leads. Each line states a
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
  // ext4 seeks in a removed directory as in an empty file, no longer as in a hashed one.
  printf("%-36s %lld\n", "lseek removed dir 4096 SEEK_END", (long long)lseek(d, 4096, SEEK_END));
  result("lseek removed dir SEEK_DATA", lseek(d, 0, SEEK_DATA));
  result("lseek removed dir SEEK_HOLE", lseek(d, 0, SEEK_HOLE));
  result("lseek removed dir past the largest file", lseek(d, 1LL << 62, SEEK_SET));
  close(d);
  close(dp);

  // A working directory removed under the process: "." still names it and ".." the directory
  // that held it, as for a removed directory's descriptor.
  char buf[4096];
  int top = open(".", O_PATH | O_DIRECTORY);
  result("mkdir up", mkdir("up", 0750));
  result("mkdir up/cwd", mkdir("up/cwd", 0750));
  result("mkdir up/gone", mkdir("up/gone", 0750));
  int g = open("up/gone", O_RDONLY | O_DIRECTORY);
  result("chdir up/cwd", chdir("up/cwd"));
  result("rmdir ../cwd", rmdir("../cwd"));
  result("rmdir ../gone", rmdir("../gone"));
  stat_line("stat . (removed cwd)", stat(".", &st), &st);
  result("getcwd (removed cwd)", getcwd(buf, sizeof buf) ? 0 : -1);
  result("open ../marker O_CREAT", open("../marker", O_CREAT | O_WRONLY, 0640));
  result("open x O_CREAT (removed cwd)", open("x", O_CREAT | O_WRONLY, 0640));
  stat_line("stat ..", stat("..", &st), &st);
  stat_line("stat ./../marker", stat("./../marker", &st), &st);
  stat_line("fstatat removed dir ..", fstatat(g, "..", &st, 0), &st);
  stat_line("fstatat removed dir ../marker", fstatat(g, "../marker", &st, 0), &st);
  // "." of a removed directory is the directory: it can be stat'ed, opened, and made the cwd.
  stat_line("fstatat removed dir .", fstatat(g, ".", &st, 0), &st);
  stat_line("fstatat removed dir ./.", fstatat(g, "./.", &st, 0), &st);
  stat_line("fstatat removed cwd AT_EMPTY_PATH", fstatat(AT_FDCWD, "", &st, AT_EMPTY_PATH), &st);
  int again = openat(g, ".", O_RDONLY | O_DIRECTORY);
  result("openat removed dir .", again);
  stat_line("fstat of it", fstat(again, &st), &st);
  char link[64], name[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", again);
  const ssize_t n = readlink(link, name, sizeof name - 1);
  name[n > 0 ? n : 0] = '\0';
  printf("%-36s %s\n", "its link names",
         strstr(name, "/up/gone (deleted)") ? "up/gone (deleted)" : name);
  close(again);
  result("openat removed dir . O_CREAT", openat(g, ".", O_CREAT | O_RDONLY, 0640));
  result("chdir . (removed cwd)", chdir("."));
  result("getcwd still fails", getcwd(buf, sizeof buf) ? 0 : -1);
  result("fchdir removed dir", fchdir(g));
  stat_line("stat . (the other removed dir)", stat(".", &st), &st);
  stat_line("stat ../marker from it", stat("../marker", &st), &st);
  result("chdir ..", chdir(".."));
  result("getcwd ends in /up",
         getcwd(buf, sizeof buf) && strlen(buf) >= 3 && strcmp(buf + strlen(buf) - 3, "/up") == 0
             ? 0
             : (errno = EINVAL, -1));
  stat_line("stat marker", stat("marker", &st), &st);
  result("fchdir top", fchdir(top));
  close(g);
  close(top);
  return 0;
}
