// readwait: a process outside any transaction never sees another transaction's uncommitted
// data. In each case the writer W runs a transaction on DIR/v and a reader R (forked before W
// begins, in no transaction) reads DIR/v; pipes order their steps.
//
//   before   R reads before W writes: the old content; W's write then goes through while R
//            waits for nothing, and after W's commit R reads the new content.
//   commit   W writes, R then reads: R's read must not return while W's transaction is open
//            (W checks R has answered nothing for HOLD seconds), returns once W commits, with
//            the new content.
//   abort    the same, but W aborts: R's read returns the old content.
//   opened   R opens DIR/v before W writes and reads through that descriptor after: it waits
//            for W's commit and returns the new content.
//   metadata W writes DIR/v and creates DIR/n; R then stats DIR/v and lists DIR: it never
//            waits for W (metadata keep versions): the old size, and no n, at once; after W's
//            commit the new size, and n.
//
//   pair     W writes DIR/v; R then renames and links DIR/v to a name in a host directory:
//            both fail with EXDEV, as they would natively (mv then copies), whether or not
//            they waited for W; never with a conflict's errno.
//
//   readwait DIR HOLD    runs the six cases; prints "<case>: ok (...)" for each.
// Exit status 0 when every check passed.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amino/amino.h"
#include "txnutil.h"

enum { kOld = 1, kNew = 2 };

static const char* path;
static double hold;

// R: waits for W's go, reads the file, reports which content it got and when. With
// `open_first`, it opens the file before W writes and reads through that descriptor after.
static int reader(void* arg, struct Link w) {
  const int open_first = *(int*)arg;
  set_who("readwait reader");
  amino_txn_t cur = 1;
  must(amino_current(&cur), "amino_current", "");
  if (cur != 0) fail("the reader is in transaction %llu", (unsigned long long)cur);
  int fd = -1;
  if (open_first) {
    fd = open(path, O_RDONLY);
    must(fd, "open", path);
    send_word(w.send, 0);  // opened
  }
  recv_word(w.recv);  // go
  char buf[64] = {0};
  ssize_t n;
  if (fd >= 0) {
    n = pread(fd, buf, sizeof buf - 1, 0);
  } else {
    n = read_file(path, buf, sizeof buf);
    if (n < 0) errno = (int)-n;
  }
  if (n < 0) fail("read %s: %s", path, err_name(errno));
  buf[n > 0 ? n : 0] = 0;
  int which = strcmp(buf, "old\n") == 0 ? kOld : strcmp(buf, "new\n") == 0 ? kNew : 0;
  if (!which) fail("read \"%s\" from %s: neither the old nor the new content", buf, path);
  double t = now_seconds();
  send_word(w.send, (uint64_t)which);
  send_word(w.send, (uint64_t)(t * 1e6));
  if (fd >= 0) close(fd);
  return 0;
}

// Whether R answered within `seconds`.
static int answered(int fd, double seconds) {
  struct pollfd pfd = {fd, POLLIN, 0};
  int r = poll(&pfd, 1, (int)(seconds * 1000));
  must(r, "poll", "the reader's pipe");
  return r == 1;
}

static const char* name(int which) { return which == kOld ? "the old content" : "the new content"; }

static void run_case(const char* what) {
  set_who("readwait %s", what);
  must(write_file(path, "old\n"), "write", path);
  int open_first = strcmp(what, "opened") == 0;
  struct Link r;
  int pid = spawn_linked(reader, &open_first, &r);
  if (open_first) recv_word(r.recv);
  const int read_first = strcmp(what, "before") == 0;
  if (read_first) {
    send_word(r.send, 1);
    uint64_t got = recv_word(r.recv);
    recv_word(r.recv);
    if (got != kOld) fail("a read before the transaction wrote got %s", name((int)got));
  }
  must(amino_begin(NULL), "amino_begin", "");
  must(write_file(path, "new\n"), "write", path);
  expect_content(path, "new\n");  // the transaction sees its own write
  if (!read_first) {
    send_word(r.send, 1);
    if (answered(r.recv, hold)) {
      uint64_t got = recv_word(r.recv);
      fail("the reader's read returned %s while the transaction was still open", name((int)got));
    }
  }
  const int abort = strcmp(what, "abort") == 0;
  const double t_end = now_seconds();
  must(abort ? amino_abort() : amino_commit(), abort ? "amino_abort" : "amino_commit", "");
  if (read_first) {
    printf("%s: ok (read before the write: the old content)\n", what);
  } else {
    uint64_t got = recv_word(r.recv);
    double t_read = (double)recv_word(r.recv) / 1e6;
    if (got != (abort ? kOld : kNew)) {
      fail("the read that waited for the %s returned %s", abort ? "abort" : "commit",
           name((int)got));
    }
    if (t_read < t_end) fail("the reader's read returned before the transaction ended");
    printf("%s: ok (the read waited %.1f s for the %s, returned %.3f s after it, %s)\n", what, hold,
           abort ? "abort" : "commit", t_read - t_end, name((int)got));
  }
  if (reap(pid) != 0) fail("the reader failed");
  expect_content(path, abort ? "old\n" : "new\n");
}

// R of the metadata case: for each word (1: look; 0: stop) sends DIR/v's size and whether DIR
// lists n.
static int looker(void* arg, struct Link w) {
  const char* dir = arg;
  set_who("readwait looker");
  while (recv_word(w.recv) != 0) {
    struct stat st;
    must(stat(path, &st), "stat", path);
    DIR* d = opendir(dir);
    if (!d) fail("opendir %s: %s", dir, err_name(errno));
    uint64_t listed = 0;
    for (struct dirent* e; (e = readdir(d));) listed |= strcmp(e->d_name, "n") == 0;
    closedir(d);
    send_word(w.send, (uint64_t)st.st_size);
    send_word(w.send, listed);
  }
  return 0;
}

// Asks the looker and checks its answer comes within HOLD seconds (it must not wait for W).
static void look(struct Link r, uint64_t size, uint64_t listed, const char* when) {
  send_word(r.send, 1);
  if (!answered(r.recv, hold * 20)) fail("a stat and a listing %s did not answer", when);
  const uint64_t got_size = recv_word(r.recv), got_listed = recv_word(r.recv);
  if (got_size != size || got_listed != listed) {
    fail("%s: size %llu and n %s, not size %llu and n %s", when, (unsigned long long)got_size,
         got_listed ? "listed" : "missing", (unsigned long long)size,
         listed ? "listed" : "missing");
  }
}

static void metadata_case(const char* dir) {
  set_who("readwait metadata");
  char n[4200];
  snprintf(n, sizeof n, "%s/n", dir);
  must(write_file(path, "old\n"), "write", path);
  struct Link r;
  int pid = spawn_linked(looker, (void*)dir, &r);
  must(amino_begin(NULL), "amino_begin", "");
  must(write_file(path, "newer\n"), "write", path);
  must(write_file(n, "n\n"), "write", n);
  look(r, 4, 0, "while the transaction was open");
  must(amino_commit(), "amino_commit", "");
  look(r, 6, 1, "after the commit");
  send_word(r.send, 0);
  if (reap(pid) != 0) fail("the looker failed");
  printf(
      "metadata: ok (the old size and no new name at once while the transaction was open, "
      "the new ones after its commit)\n");
}

// R of the pair case: on a word, renames and links DIR/v into a host directory and sends the
// two errnos (0 for a success).
static int mover(void* arg, struct Link w) {
  const char* host_dir = arg;
  set_who("readwait mover");
  char to[4200];
  snprintf(to, sizeof to, "%s/moved", host_dir);
  recv_word(w.recv);
  const int renamed = rename(path, to) == 0 ? 0 : errno;
  const int linked = link(path, to) == 0 ? 0 : errno;
  send_word(w.send, (uint64_t)renamed);
  send_word(w.send, (uint64_t)linked);
  return 0;
}

static void pair_case(void) {
  set_who("readwait pair");
  char host_dir[] = "/tmp/readwait-XXXXXX";
  if (!mkdtemp(host_dir)) fail("mkdtemp %s: %s", host_dir, err_name(errno));
  must(write_file(path, "old\n"), "write", path);
  struct Link r;
  int pid = spawn_linked(mover, host_dir, &r);
  must(amino_begin(NULL), "amino_begin", "");
  must(write_file(path, "new\n"), "write", path);
  send_word(r.send, 1);
  const int early = answered(r.recv, hold);
  must(amino_commit(), "amino_commit", "");
  const int renamed = (int)recv_word(r.recv), linked = (int)recv_word(r.recv);
  if (reap(pid) != 0) fail("the mover failed");
  if (renamed != EXDEV || linked != EXDEV) {
    fail(
        "rename and link of v into a host directory beside a transaction that wrote it: %s "
        "and %s, not EXDEV",
        renamed ? err_name(renamed) : "done", linked ? err_name(linked) : "done");
  }
  expect_content(path, "new\n");
  if (rmdir(host_dir) != 0) fail("rmdir %s: %s", host_dir, err_name(errno));
  printf("pair: ok (rename and link into a host directory: EXDEV, %s)\n",
         early ? "at once" : "after the commit");
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: readwait DIR HOLD\n");
    return 2;
  }
  static char p[4096];
  snprintf(p, sizeof p, "%s/v", argv[1]);
  path = p;
  hold = atof(argv[2]);
  run_case("before");
  run_case("commit");
  run_case("abort");
  run_case("opened");
  pair_case();
  metadata_case(argv[1]);
  return 0;
}
