// FIFOs and device nodes made in the working directory, used as natively: two processes talk
// through a FIFO whichever of them opens it first; O_NONBLOCK opens follow the FIFO rules; every
// name of a FIFO reaches the same pipe, and a new FIFO under an old name another; changes of a
// FIFO's permissions and owner apply to the opens after them; nodes made with mknod c 1 3 and
// c 1 5 are /dev/null and /dev/zero; opening a socket node fails. Runs as root (mknod of devices,
// opens as nobody). Each line states a result; the kernel is the oracle.
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(100);
}

static const char* err(long r) { return r < 0 ? strerrorname_np(errno) : "ok"; }

static void put(int fd, const char* s) {
  if (write(fd, s, strlen(s)) != (ssize_t)strlen(s)) die("write");
}

static int child_status(pid_t pid) {
  int st;
  if (waitpid(pid, &st, 0) != pid) die("waitpid");
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Everything up to end of file (every writer gone), as one line.
static void read_all(const char* what, int fd) {
  char buf[256];
  size_t got = 0;
  for (;;) {
    ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
    if (n < 0) die("read");
    if (n == 0 || got + (size_t)n == sizeof buf - 1) break;
    got += (size_t)n;
  }
  buf[got] = '\0';
  for (size_t i = 0; i < got; ++i) {
    if (buf[i] == '\n') buf[i] = '/';
  }
  printf("%-52s %s\n", what, buf);
}

// A writer process: opens `path` (blocking) after `delay_ms`, writes `text`, exits.
static pid_t writer(const char* path, long delay_ms, const char* text) {
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    pause_ms(delay_ms);
    int fd = open(path, O_WRONLY);
    if (fd < 0) _exit(1);
    put(fd, text);
    _exit(0);
  }
  return pid;
}

// A process as nobody opening `path` without waiting: 0 when it could, 1 for EACCES, 2 else.
static const char* as_nobody(const char* path, int flags) {
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    int fd = open(path, flags | O_NONBLOCK);
    _exit(fd >= 0 ? 0 : errno == EACCES ? 1 : 2);
  }
  switch (child_status(pid)) {
    case 0:
      return "ok";
    case 1:
      return "EACCES";
    default:
      return "unexpected";
  }
}

/* Long by design: a script of scenarios, each printing the lines the test compares with a
 * native run; kept in one function so the output's order is the source's. */
int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  umask(022);

  printf("%-52s %s\n", "mkfifo fifo", err(mkfifo("fifo", 0644)));
  struct stat st;
  if (stat("fifo", &st) != 0) die("stat fifo");
  printf("%-52s %s %o\n", "stat fifo", S_ISFIFO(st.st_mode) ? "fifo" : "other", st.st_mode & 07777);

  // O_NONBLOCK: a writer needs a reader, a reader needs no one.
  int fd = open("fifo", O_WRONLY | O_NONBLOCK);
  printf("%-52s %s\n", "O_WRONLY|O_NONBLOCK, no reader", err(fd));
  int r = open("fifo", O_RDONLY | O_NONBLOCK);
  printf("%-52s %s\n", "O_RDONLY|O_NONBLOCK, no writer", err(r));
  char c;
  printf("%-52s %ld\n", "read with no writer (end of file)", (long)read(r, &c, 1));
  int w = open("fifo", O_WRONLY | O_NONBLOCK);
  printf("%-52s %s\n", "O_WRONLY|O_NONBLOCK with a reader", err(w));
  put(w, "one pipe");
  close(w);
  read_all("reader gets what was written, then end of file", r);
  close(r);

  // O_RDWR never waits: the opener is its own reader and writer.
  int rw = open("fifo", O_RDWR);
  printf("%-52s %s\n", "O_RDWR alone", err(rw));
  put(rw, "round trip");
  char buf[32] = {0};
  printf("%-52s %.*s\n", "read back through O_RDWR", (int)read(rw, buf, sizeof buf - 1), buf);
  close(rw);

  // Blocking opens: each waits for the other side, whichever comes first.
  pid_t pid = writer("fifo", 300, "reader first\n");
  r = open("fifo", O_RDONLY);
  printf("%-52s %s\n", "reader waits for a later writer", err(r));
  read_all("reader got", r);
  close(r);
  printf("%-52s %d\n", "writer exit", child_status(pid));

  pid = writer("fifo", 0, "writer first\n");
  pause_ms(300);
  r = open("fifo", O_RDONLY);
  printf("%-52s %s\n", "reader finds the waiting writer", err(r));
  read_all("reader got", r);
  close(r);
  printf("%-52s %d\n", "writer exit", child_status(pid));

  // Three writers in turn, one reader: the pipe is the same for every opener.
  r = open("fifo", O_RDONLY | O_NONBLOCK);
  int keep = open("fifo", O_WRONLY);  // no end of file between the writers
  const char* texts[] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i)
    printf("%-52s %d\n", "writer exit", child_status(writer("fifo", 0, texts[i])));
  close(keep);
  fcntl(r, F_SETFL, 0);
  read_all("one reader, three writers", r);
  close(r);

  // Another name of the same FIFO reaches the same pipe; a new FIFO under the old name does not.
  printf("%-52s %s\n", "rename fifo fifo2", err(rename("fifo", "fifo2")));
  printf("%-52s %s\n", "link fifo2 fifo3", err(link("fifo2", "fifo3")));
  r = open("fifo2", O_RDONLY | O_NONBLOCK);
  w = open("fifo3", O_WRONLY | O_NONBLOCK);
  printf("%-52s %s\n", "writer through the other name", err(w));
  put(w, "hard link");
  close(w);
  read_all("reader through the first name got", r);
  printf("%-52s %s\n", "unlink fifo3", err(unlink("fifo3")));
  printf("%-52s %s\n", "mkfifo fifo3 (a new one)", err(mkfifo("fifo3", 0644)));
  w = open("fifo3", O_WRONLY | O_NONBLOCK);
  printf("%-52s %s\n", "new fifo3 has no reader", err(w));
  printf("%-52s %s\n", "unlink fifo2 (its reader stays)", err(unlink("fifo2")));
  close(r);

  // Permissions are checked at each open against the FIFO's current mode and owner.
  printf("%-52s %s\n", "mkfifo perm 600", err(mkfifo("perm", 0600)));
  r = open("perm", O_RDONLY | O_NONBLOCK);
  printf("%-52s %s\n", "root opens", err(r));
  close(r);
  printf("%-52s %s\n", "nobody opens for reading", as_nobody("perm", O_RDONLY));
  printf("%-52s %s\n", "chmod 604 perm", err(chmod("perm", 0604)));
  printf("%-52s %s\n", "nobody opens for reading", as_nobody("perm", O_RDONLY));
  printf("%-52s %s\n", "chown nobody perm, chmod 400",
         err(chown("perm", 65534, 65534) != 0 ? -1 : chmod("perm", 0400)));
  printf("%-52s %s\n", "nobody opens for reading", as_nobody("perm", O_RDONLY));
  printf("%-52s %s\n", "nobody opens for writing", as_nobody("perm", O_WRONLY));
  printf("%-52s %s\n", "chmod 066 perm (owner has no bits)", err(chmod("perm", 066)));
  printf("%-52s %s\n", "nobody opens for reading", as_nobody("perm", O_RDONLY));

  // Device nodes: the devices themselves.
  printf("%-52s %s\n", "mknod null c 1 3", err(mknod("null", S_IFCHR | 0666, makedev(1, 3))));
  printf("%-52s %s\n", "mknod zero c 1 5", err(mknod("zero", S_IFCHR | 0666, makedev(1, 5))));
  if (stat("null", &st) != 0) die("stat null");
  printf("%-52s %s %u,%u\n", "stat null", S_ISCHR(st.st_mode) ? "char" : "other", major(st.st_rdev),
         minor(st.st_rdev));
  fd = open("null", O_WRONLY | O_TRUNC);
  printf("%-52s %s\n", "open null for writing", err(fd));
  printf("%-52s %ld\n", "write 11 bytes to null", (long)write(fd, "into nowhere", 11));
  close(fd);
  fd = open("null", O_RDONLY);
  printf("%-52s %ld\n", "read from null", (long)read(fd, buf, sizeof buf));
  close(fd);
  memset(buf, 'x', sizeof buf);
  fd = open("zero", O_RDONLY);
  long n = read(fd, buf, 16);
  int zeros = 0;
  for (int i = 0; i < 16; ++i) zeros += buf[i] == 0;
  printf("%-52s %ld bytes, %d zeros\n", "read from zero", n, zeros);
  close(fd);
  printf("%-52s %s\n", "chmod 600 null", err(chmod("null", 0600)));
  printf("%-52s %s\n", "nobody opens null for writing", as_nobody("null", O_WRONLY));
  printf("%-52s %s\n", "chmod 666 null", err(chmod("null", 0666)));
  printf("%-52s %s\n", "nobody opens null for writing", as_nobody("null", O_WRONLY));

  // A socket node has nothing to open.
  printf("%-52s %s\n", "mknod sock (socket)", err(mknod("sock", S_IFSOCK | 0666, 0)));
  printf("%-52s %s\n", "open sock", err(open("sock", O_RDONLY)));
  return 0;
}
