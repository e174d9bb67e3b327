// What open file descriptions share and what they do not: offsets shared by dup and fork,
// independent opens, O_APPEND, status flags vs descriptor flags, unlinked and renamed-over open
// files, mmap, O_TMPFILE, record and flock locks between processes, poll, sendfile and
// copy_file_range, directory descriptors. Each line states a result; the kernel is the oracle.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(100);
}

static void put(int fd, const char* s) {
  if (write(fd, s, strlen(s)) != (ssize_t)strlen(s)) die("write");
}

static void show(const char* what, const char* path) {
  char buf[256] = {0};
  int fd = open(path, O_RDONLY);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0) close(fd);
  for (ssize_t i = 0; i < n; ++i) {
    if (buf[i] == '\n') buf[i] = '/';
  }
  printf("%-40s %s\n", what, n < 0 ? strerrorname_np(errno) : buf);
}

static const char* err(long r) { return r < 0 ? strerrorname_np(errno) : "ok"; }

// A second thread that shares the descriptor table and waits until its pipe is closed.
static void* wait_for_eof(void* fd) {
  char c;
  while (read(*(int*)fd, &c, 1) > 0) {
  }
  return NULL;
}

static int child_status(pid_t pid) {
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Long by design: a script of scenarios, each printing the lines the test compares with a
 * native run; kept in one function so the output's order is the source's. */
int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);

  // dup shares the offset; a second open does not.
  int a = open("offsets.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
  int b = dup(a);
  put(a, "abc");
  put(b, "def");
  int c = open("offsets.txt", O_RDWR);
  put(c, "XY");
  printf("%-40s %ld %ld %ld\n", "offsets after writes (a, dup, other)", (long)lseek(a, 0, SEEK_CUR),
         (long)lseek(b, 0, SEEK_CUR), (long)lseek(c, 0, SEEK_CUR));
  lseek(a, 1, SEEK_SET);
  char two[3] = {0};
  if (read(b, two, 2) != 2) die("read");
  printf("%-40s %s\n", "read through dup after lseek", two);
  if (pread(c, two, 2, 4) != 2) die("pread");
  printf("%-40s %s, offset %ld\n", "pread leaves offset", two, (long)lseek(c, 0, SEEK_CUR));
  show("offsets.txt", "offsets.txt");

  // Status flags belong to the open file description, descriptor flags to the descriptor.
  fcntl(a, F_SETFL, O_APPEND);
  fcntl(a, F_SETFD, FD_CLOEXEC);
  printf("%-40s append %d, cloexec %d\n", "flags seen through dup",
         !!(fcntl(b, F_GETFL) & O_APPEND), !!(fcntl(b, F_GETFD) & FD_CLOEXEC));
  put(b, "+");
  show("appended through dup", "offsets.txt");

  // fcntl's copies: the lowest free number (or the lowest at or above a minimum), their own
  // close-on-exec flag, the offset shared with the original.
  close(b);
  int d0 = fcntl(a, F_DUPFD_CLOEXEC, 0);
  int d1 = fcntl(a, F_DUPFD, 0);
  int d2 = fcntl(a, F_DUPFD_CLOEXEC, 20);
  printf("%-40s %s %s %s\n", "fcntl copies at the lowest free number", d0 == b ? "reused" : "other",
         d1 > d0 ? "next" : "other", d2 == 20 ? "at 20" : "other");
  printf("%-40s %d %d %d\n", "  their close-on-exec flags", fcntl(d0, F_GETFD), fcntl(d1, F_GETFD),
         fcntl(d2, F_GETFD));
  lseek(d1, 2, SEEK_SET);
  printf("%-40s %ld %ld\n", "  offset moved through one, seen by two", (long)lseek(a, 0, SEEK_CUR),
         (long)lseek(d2, 0, SEEK_CUR));
  printf("%-40s %s\n", "  fcntl copy of a closed number",
         fcntl(d0 + 100, F_DUPFD, 0) < 0 ? strerrorname_np(errno) : "ok");
  close(d0);
  close(d1);
  close(d2);
  // At or above a minimum with a gap below it and taken numbers above it, while this thread
  // alone uses the table and then while a second thread shares it.
  for (int shared = 0; shared < 2; ++shared) {
    pthread_t idle;
    int hold[2];
    if (pipe(hold) != 0) die("pipe");
    if (shared && pthread_create(&idle, NULL, wait_for_eof, &hold[0]) != 0) die("pthread_create");
    int taken[4];
    for (int i = 0; i < 4; ++i) taken[i] = dup(c);  // a run of numbers in use
    close(taken[1]);                                // and a free one among them
    const int at = fcntl(a, F_DUPFD_CLOEXEC, taken[0] + 1);
    const int above = fcntl(a, F_DUPFD, taken[3]);
    char got[4] = {0};
    const ssize_t n = pread(above, got, 3, 0);
    printf("%-40s %s %s, flags %d %d, read %zd '%s'\n",
           shared ? "  with a minimum, table shared" : "  with a minimum, table alone",
           at == taken[1] ? "in the gap" : "elsewhere",
           above == taken[3] + 1 ? "next" : "elsewhere", fcntl(at, F_GETFD), fcntl(above, F_GETFD),
           n, got);
    close(at);
    close(above);
    for (int i = 0; i < 4; ++i) close(taken[i]);
    close(hold[1]);
    if (shared) pthread_join(idle, NULL);
    close(hold[0]);
  }
  printf("%-40s %s\n", "  minimum at the descriptor limit",
         fcntl(a, F_DUPFD, 1 << 30) < 0 ? strerrorname_np(errno) : "ok");
  b = dup(a);
  close(a);
  close(b);
  close(c);

  // fork shares the open file description: the child's writes move the parent's offset.
  int f = open("forked.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  put(f, "parent1\n");
  pid_t pid = fork();
  if (pid == 0) {
    put(f, "child\n");
    _exit(0);
  }
  child_status(pid);
  put(f, "parent2\n");
  close(f);
  show("forked.txt", "forked.txt");

  // O_APPEND writers in several processes: nothing is overwritten.
  int ap = open("append.txt", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  pid_t kids[4];
  for (int i = 0; i < 4; ++i) {
    kids[i] = fork();
    if (kids[i] == 0) {
      int own = open("append.txt", O_WRONLY | O_APPEND);
      for (int j = 0; j < 200; ++j) put(j % 2 ? own : ap, "0123456789\n");
      _exit(0);
    }
  }
  for (int i = 0; i < 4; ++i) child_status(kids[i]);
  struct stat st;
  fstat(ap, &st);
  printf("%-40s %lld\n", "append.txt size", (long long)st.st_size);
  close(ap);

  // An unlinked file stays readable through its descriptor; rename over an open file too.
  int u = open("unlinked.txt", O_RDWR | O_CREAT | O_TRUNC, 0600);
  put(u, "still here");
  unlink("unlinked.txt");
  fstat(u, &st);
  char buf[64] = {0};
  pread(u, buf, sizeof buf - 1, 0);
  printf("%-40s nlink %lu, size %lld, '%s'\n", "unlinked open file", (unsigned long)st.st_nlink,
         (long long)st.st_size, buf);
  close(u);
  int old = open("old.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
  put(old, "old contents");
  int fresh = open("new.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  put(fresh, "new");
  close(fresh);
  rename("new.txt", "old.txt");
  memset(buf, 0, sizeof buf);
  pread(old, buf, sizeof buf - 1, 0);
  printf("%-40s '%s'\n", "renamed-over file through old fd", buf);
  close(old);
  show("old.txt by name", "old.txt");

  // Shared mappings and read/write see each other.
  int m = open("mapped.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (ftruncate(m, 8192) != 0) die("ftruncate");
  char* map = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
  if (map == MAP_FAILED) {
    printf("%-40s %s\n", "mmap", strerrorname_np(errno));
  } else {
    memcpy(map + 4096, "via memory", 10);
    msync(map, 8192, MS_SYNC);
    memset(buf, 0, sizeof buf);
    pread(m, buf, 10, 4096);
    pwrite(m, "via write", 9, 100);
    printf("%-40s '%s' / '%.9s'\n", "mmap then read, write then mmap", buf, map + 100);
    munmap(map, 8192);
  }
  close(m);

  // O_TMPFILE, then given a name.
  int t = open(".", O_TMPFILE | O_RDWR, 0640);
  if (t < 0) {
    printf("%-40s %s\n", "O_TMPFILE", strerrorname_np(errno));
  } else {
    put(t, "anonymous at first\n");
    long r = linkat(t, "", AT_FDCWD, "from-tmpfile.txt", AT_EMPTY_PATH);
    printf("%-40s %s\n", "linkat(O_TMPFILE fd)", err(r));
    close(t);
  }

  // Record locks and flock locks conflict between processes.
  int l = open("locked.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
  put(l, "0123456789");
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 5};
  printf("%-40s %s\n", "F_SETLK bytes 0-4", err(fcntl(l, F_SETLK, &fl)));
  if (flock(l, LOCK_EX) != 0) die("flock");
  int go_pipe[2], tried_pipe[2];
  if (pipe(go_pipe) != 0 || pipe(tried_pipe) != 0) die("pipe");
  pid = fork();
  if (pid == 0) {
    int l2 = open("locked.txt", O_RDWR);
    struct flock want = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 2, .l_len = 1};
    int r1 = fcntl(l2, F_SETLK, &want);
    int e1 = errno;
    struct flock probe = want;
    fcntl(l2, F_GETLK, &probe);
    want.l_start = 7;
    int r2 = fcntl(l2, F_SETLK, &want);
    printf("%-40s %s, holder is %s, bytes 7: %s\n", "child F_SETLK byte 2",
           r1 < 0 ? strerrorname_np(e1) : "ok",
           probe.l_type == F_WRLCK && probe.l_pid == getppid() ? "the parent" : "unknown",
           r2 < 0 ? strerrorname_np(errno) : "ok");
    int r3 = flock(l2, LOCK_EX | LOCK_NB);
    printf("%-40s %s\n", "child flock(LOCK_EX) while parent holds", err(r3));
    put(tried_pipe[1], "t");
    char go;
    if (read(go_pipe[0], &go, 1) != 1) _exit(1);
    printf("%-40s %s\n", "child flock after parent unlocked", err(flock(l2, LOCK_EX | LOCK_NB)));
    _exit(0);
  }
  char tried;
  if (read(tried_pipe[0], &tried, 1) != 1) die("read");
  flock(l, LOCK_UN);
  put(go_pipe[1], "g");
  child_status(pid);
  // Record locks belong to the process: a second descriptor of the same file does not
  // conflict with them, and closing any descriptor of the file releases them all.
  int l3 = open("locked.txt", O_RDWR);
  struct flock mine = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 1, .l_len = 2};
  printf("%-40s %s\n", "F_SETLK via a second open, same process", err(fcntl(l3, F_SETLK, &mine)));
  close(l3);
  pid = fork();
  if (pid == 0) {
    int l4 = open("locked.txt", O_RDWR);
    struct flock all = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    printf("%-40s %s\n", "child locks all after parent's close", err(fcntl(l4, F_SETLK, &all)));
    fflush(stdout);
    _exit(0);
  }
  child_status(pid);
  // So does a dup2 onto a descriptor of the file, and a close_range over one.
  for (int how = 0; how < 2; how++) {
    int l5 = open("locked.txt", O_RDWR);
    if (fcntl(l5, F_SETLK, &mine) != 0) die("F_SETLK");
    if (how == 0) {
      int z = open("/dev/null", O_RDONLY);
      if (dup2(z, l5) != l5) die("dup2");
      close(z);
      close(l5);
    } else if (syscall(SYS_close_range, l5, l5, 0) != 0) {
      die("close_range");
    }
    pid = fork();
    if (pid == 0) {
      int l6 = open("locked.txt", O_RDWR);
      struct flock all = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
      printf("%-40s %s\n",
             how ? "child locks all after close_range" : "child locks all after dup2 onto",
             err(fcntl(l6, F_SETLK, &all)));
      fflush(stdout);
      _exit(0);
    }
    child_status(pid);
  }
  close(l);

  // dup2 of an O_PATH descriptor onto a file's descriptor: that number now stands for the
  // FIFO.
  if (mkfifo("opath.fifo", 0600) != 0) die("mkfifo");
  int opath = open("opath.fifo", O_PATH);
  int onto = open("locked.txt", O_RDWR);
  printf("%-40s %s\n", "dup2(O_PATH FIFO, file)", err(dup2(opath, onto) == onto ? 0 : -1));
  struct stat became;
  printf("%-40s %s\n", "  the number is the FIFO now",
         fstat(onto, &became) == 0 && S_ISFIFO(became.st_mode) ? "yes" : "no");
  close(onto);
  close(opath);

  // poll: a regular file is always ready; an empty pipe is not readable.
  int p[2];
  if (pipe(p) != 0) die("pipe");
  int r = open("offsets.txt", O_RDONLY);
  struct pollfd pfd[2] = {{r, POLLIN, 0}, {p[0], POLLIN, 0}};
  int n = poll(pfd, 2, 50);
  printf("%-40s %d: file %#x, pipe %#x\n", "poll", n, pfd[0].revents, pfd[1].revents);
  close(p[0]);
  close(p[1]);

  // Kernel-side copies between descriptors.
  int out = open("copied.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  off_t off = 0;
  printf("%-40s %zd\n", "sendfile", sendfile(out, r, &off, 100));
  loff_t in_off = 1;
  printf("%-40s %zd\n", "copy_file_range", copy_file_range(r, &in_off, out, NULL, 3, 0));
  close(out);
  close(r);
  show("copied.txt", "copied.txt");

  // sendfile from a file into itself, just past where it reads: each round of the kernel's
  // copy reads what the round before wrote, so the copy feeds itself.
  int self = open("self.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
  put(self, "abcde");
  int self_in = open("self.txt", O_RDONLY);
  off_t self_off = 4;
  const ssize_t fed = sendfile(self, self_in, &self_off, 8);
  printf("%-40s %zd off=%lld\n", "sendfile into itself", fed, (long long)self_off);
  close(self_in);
  close(self);
  show("self.txt", "self.txt");

  // Directory descriptors: relative opens, fchdir, fstatat.
  mkdir("dir", 0755);
  int d = open("dir", O_RDONLY | O_DIRECTORY);
  int inside = openat(d, "inner.txt", O_WRONLY | O_CREAT | O_EXCL, 0600);
  put(inside, "inner");
  close(inside);
  printf("%-40s %s\n", "openat O_EXCL again",
         err(openat(d, "inner.txt", O_WRONLY | O_CREAT | O_EXCL, 0600)));
  printf("%-40s %s\n", "mkdirat", err(mkdirat(d, "sub", 0700)));
  printf("%-40s %s\n", "renameat", err(renameat(d, "inner.txt", d, "sub/moved.txt")));
  if (fchdir(d) != 0) die("fchdir");
  show("after fchdir: sub/moved.txt", "sub/moved.txt");
  printf("%-40s %s\n", "unlinkat(dir, AT_REMOVEDIR) not empty",
         err(unlinkat(AT_FDCWD, "sub", AT_REMOVEDIR)));
  if (chdir("..") != 0) die("chdir");
  close(d);
  return 0;
}
