// deadlock: transactions that wait for each other, or for one that does not end.
//
//   deadlock setup DIR FILLERS
//       DIR/a/x and DIR/b/y, with at least 2 * FILLERS files (long names, a page of data
//       each) placed so that the records of x, of y and of their directories lie far enough
//       apart in the databases that transactions writing x and y take no common lock
//       (Berkeley DB locks pages, not records; see setup()).
//   deadlock cycle DIR END
//       T1 begins and writes a/x; then T2 begins and writes b/y (neither waits); then, on one
//       signal, T1 writes b/y and T2 writes a/x: each waits for the other. Exactly one must get
//       AMINO_EABORTED from that write (the victim), then from a later write (b/z) and a read
//       (a/x), and it ends its transaction with END: `commit` (which must fail with
//       AMINO_EABORTED) or `abort` (which must succeed); the other's write goes through and it
//       commits. a/x and b/y then hold the winner's writes and b/z does not exist.
//       Prints "cycle: T<n> (the younger|older, id I) was aborted after <s> s, T<m> committed
//       (its write waited <s> s)".
//   deadlock timeout DIR HOLD
//       T1 begins, writes a/x and sleeps HOLD seconds before committing; T2 then begins and
//       writes a/x, which waits for T1's lock: run with `amino run --lock-timeout L` (L < HOLD),
//       it fails with AMINO_EABORTED after about L seconds, as does T2's commit; a/x holds T1's.
//       Prints "timeout: the waiting write failed after <s> s".
//   deadlock suspended DIR
//       T begins, writes a/x and is suspended by its own thread, which then writes a/x outside
//       any transaction: that write waits for T's lock, which nobody can release. Run with
//       `amino run --lock-timeout L`, it fails with EDEADLK after about L seconds instead of
//       hanging; T, attached again, commits. Prints "suspended: the plain write failed after
//       <s> s".
//
// Exit status 0 when every check passed.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amino/amino.h"
#include "txnutil.h"

enum { kMaxFillers = 1024, kCandidates = 16, kBetween = 300 };

static uint64_t filler_ids[kMaxFillers];
static int fillers;

static uint64_t inode(const char* path) {
  struct stat st;
  must(stat(path, &st), "stat", path);
  return (uint64_t)st.st_ino;
}

// `count` more files DIR/a/<prefix><200 letters><i>, a page of data each.
static void fill(char prefix, int count) {
  static char page[4097];
  memset(page, 'f', 4096);
  char name[256];
  name[0] = prefix;
  memset(name + 1, 'q', 200);
  for (int i = 0; i < count && fillers < kMaxFillers; i++) {
    snprintf(name + 201, sizeof name - 201, "%04d", fillers);
    const char* path = at("a/%s", name);
    must(write_file(path, page), "write", path);
    filler_ids[fillers++] = inode(path);
  }
}

static int fillers_between(uint64_t lo, uint64_t hi) {
  int n = 0;
  for (int i = 0; i < fillers; i++) n += filler_ids[i] > lo && filler_ids[i] < hi;
  return n;
}

// Berkeley DB locks pages: x and y must share none. In path.db, records are ordered by path:
// fillers "a/f..." keep x away from its directories' records, "a/z..." from y. In inode.db and
// data.db, by file id (st_ino shows it), which the schema draws at random or, for calls outside
// transactions, consecutively in runs: x and y are the candidates with the lowest and highest
// id, with at least kBetween fillers between them: more
// than two 4 KiB pages of file records (about 32 bytes each; an open takes its file's record
// for writing) and of 64 KiB pages of data (a 4 KiB page of data each).
static int setup(int count) {
  set_who("deadlock setup");
  must(mkdir(at("a"), 0755), "mkdir", at("a"));
  must(mkdir(at("b"), 0755), "mkdir", at("b"));
  fill('f', count);
  uint64_t ids[kCandidates];
  for (int i = 0; i < kCandidates; i++) {
    must(write_file(at("a/c%d", i), "x0\n"), "write", at("a/c%d", i));
    ids[i] = inode(at("a/c%d", i));
    // Consecutive ids put the fillers made between two candidates between their ids.
    fill('z', kBetween / (kCandidates - 1) + 1);
  }
  int lo = 0, hi = 0;
  for (int i = 1; i < kCandidates; i++) {
    if (ids[i] < ids[lo]) lo = i;
    if (ids[i] > ids[hi]) hi = i;
  }
  while (fillers_between(ids[lo], ids[hi]) < kBetween) {
    if (fillers >= kMaxFillers) fail("no %d fillers between the ids of x and y", kBetween);
    fill('z', 16);
  }
  must(rename(at("a/c%d", lo), at("a/x")), "rename", at("a/x"));
  must(write_file(at("a/c%d", hi), "y0\n"), "write", at("a/c%d", hi));
  must(rename(at("a/c%d", hi), at("b/y")), "rename", at("b/y"));
  for (int i = 0; i < kCandidates; i++) {
    if (i != lo && i != hi) must(unlink(at("a/c%d", i)), "unlink", at("a/c%d", i));
  }
  fill('z', count);
  printf("setup: %d fillers, %d between x and y in id order\n", fillers,
         fillers_between(ids[lo], ids[hi]));
  return 0;
}

struct Party {
  int n;  // 1 or 2
  const char *first, *second;
};

// What the victim must see once the system aborted its transaction, and how it ends it.
static void as_victim(int end_with_commit) {
  char buf[64];
  int w = write_file(at("b/z"), "victim\n");
  if (w != -AMINO_EABORTED) {
    fail("write %s after the abort gave %s; expected EDEADLK", at("b/z"), err_name(-w));
  }
  long r = read_file(at("a/x"), buf, sizeof buf);
  if (r != -AMINO_EABORTED) {
    fail("read %s after the abort gave %s; expected EDEADLK", at("a/x"),
         r < 0 ? err_name((int)-r) : buf);
  }
  if (end_with_commit) {
    must_fail(amino_commit(), AMINO_EABORTED, "amino_commit", "the victim");
  } else {
    must(amino_abort(), "amino_abort", "the victim");
  }
  if (amino_depth() != 0) fail("the victim is still at depth %d after ending", amino_depth());
}

static int end_with_commit;

static int party(void* arg, struct Link coordinator) {
  struct Party* p = arg;
  set_who("deadlock T%d", p->n);
  recv_word(coordinator.recv);  // my turn to begin
  amino_txn_t id;
  must(amino_begin(&id), "amino_begin", "");
  char mine[16];
  snprintf(mine, sizeof mine, "T%d\n", p->n);
  int r = write_file(at("%s", p->first), mine);
  if (r == -AMINO_EABORTED) {
    fail(
        "the first write, of %s, waited for the other transaction until it was aborted: the "
        "two files share a lock (setup did not separate them)",
        p->first);
  }
  must(r, "write", at("%s", p->first));
  send_word(coordinator.send, id);
  recv_word(coordinator.recv);  // both hold their first file
  double t0 = now_seconds();
  r = write_file(at("%s", p->second), mine);
  double elapsed = now_seconds() - t0;
  if (r == -AMINO_EABORTED) {
    as_victim(end_with_commit);
    send_word(coordinator.send, 1);
  } else {
    must(r, "write", at("%s", p->second));
    must(amino_commit(), "amino_commit", "the survivor");
    send_word(coordinator.send, 0);
  }
  send_word(coordinator.send, (uint64_t)(elapsed * 1e6));
  return 0;
}

static int cycle(void) {
  set_who("deadlock cycle");
  must(write_file(at("a/x"), "x0\n"), "write", at("a/x"));
  must(write_file(at("b/y"), "y0\n"), "write", at("b/y"));
  int pid[2];
  struct Party parties[2] = {{1, "a/x", "b/y"}, {2, "b/y", "a/x"}};
  struct Link t[2];
  for (int i = 0; i < 2; i++) pid[i] = spawn_linked(party, &parties[i], &t[i]);
  uint64_t ids[2];
  for (int i = 0; i < 2; i++) {  // T1 begins first: T2 is the younger
    send_word(t[i].send, 1);
    ids[i] = recv_word(t[i].recv);
  }
  for (int i = 0; i < 2; i++) send_word(t[i].send, 2);
  uint64_t lost[2];
  double took[2];
  for (int i = 0; i < 2; i++) {
    lost[i] = recv_word(t[i].recv);
    took[i] = (double)recv_word(t[i].recv) / 1e6;
    if (reap(pid[i]) != 0) fail("T%d failed", i + 1);
  }
  if (lost[0] + lost[1] != 1) {
    fail("%s of the two transactions in the cycle were aborted; expected exactly one",
         lost[0] ? "both" : "neither");
  }
  int v = lost[0] ? 0 : 1, w = 1 - v;
  char winner[16];
  snprintf(winner, sizeof winner, "T%d\n", w + 1);
  expect_content(at("a/x"), winner);
  expect_content(at("b/y"), winner);
  expect_content(at("b/z"), NULL);
  printf(
      "cycle: T%d (the %s, id %llu) was aborted after %.4f s, T%d committed (its write waited "
      "%.4f s)\n",
      v + 1, ids[v] > ids[w] ? "younger" : "older", (unsigned long long)ids[v], took[v], w + 1,
      took[w]);
  return 0;
}

static double hold;

static int holder(void* unused, struct Link t2) {
  (void)unused;
  set_who("deadlock timeout T1");
  must(amino_begin(NULL), "amino_begin", "");
  must(write_file(at("a/x"), "T1\n"), "write", at("a/x"));
  send_word(t2.send, 1);
  usleep((useconds_t)(hold * 1e6));  // holds the lock, waiting for nothing Amino knows about
  must(amino_commit(), "amino_commit", "the holder");
  return 0;
}

static int timeout(void) {
  set_who("deadlock timeout T2");
  must(write_file(at("a/x"), "x0\n"), "write", at("a/x"));
  struct Link t1;
  int pid = spawn_linked(holder, NULL, &t1);
  recv_word(t1.recv);
  must(amino_begin(NULL), "amino_begin", "");
  double t0 = now_seconds();
  int r = write_file(at("a/x"), "T2\n");
  double elapsed = now_seconds() - t0;
  if (r != -AMINO_EABORTED) {
    fail(
        "the write waiting for the sleeping transaction's lock gave %s after %.3f s; expected "
        "EDEADLK",
        err_name(-r), elapsed);
  }
  must_fail(amino_commit(), AMINO_EABORTED, "amino_commit", "after the lock timeout");
  if (reap(pid) != 0) fail("the holder failed");
  expect_content(at("a/x"), "T1\n");
  printf("timeout: the waiting write failed after %.3f s\n", elapsed);
  return 0;
}

static int suspended(void) {
  set_who("deadlock suspended");
  must(write_file(at("a/x"), "x0\n"), "write", at("a/x"));
  must(amino_begin(NULL), "amino_begin", "");
  must(write_file(at("a/x"), "T\n"), "write", at("a/x"));
  amino_txn_t id = 0;
  must(amino_suspend(&id), "amino_suspend", "");
  double t0 = now_seconds();
  int r = write_file(at("a/x"), "plain\n");
  double elapsed = now_seconds() - t0;
  if (r != -EDEADLK) {
    fail(
        "the plain write waiting for the suspended transaction's lock gave %s after %.3f s; "
        "expected EDEADLK",
        r == 0 ? "success" : err_name(-r), elapsed);
  }
  must(amino_attach(id), "amino_attach", "the suspended transaction");
  must(amino_commit(), "amino_commit", "the suspended transaction");
  expect_content(at("a/x"), "T\n");
  printf("suspended: the plain write failed after %.3f s\n", elapsed);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 3) set_dir(argv[2]);
  if (argc == 4 && strcmp(argv[1], "setup") == 0) return setup(atoi(argv[3]));
  if (argc == 4 && strcmp(argv[1], "cycle") == 0) {
    end_with_commit = strcmp(argv[3], "commit") == 0;
    return cycle();
  }
  if (argc == 3 && strcmp(argv[1], "suspended") == 0) return suspended();
  if (argc == 4 && strcmp(argv[1], "timeout") == 0) {
    hold = atof(argv[3]);
    return timeout();
  }
  fprintf(stderr,
          "usage: deadlock setup DIR FILLERS | deadlock cycle DIR commit|abort | deadlock "
          "timeout DIR HOLD | deadlock suspended DIR\n");
  return 2;
}
