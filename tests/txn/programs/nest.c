// nest: nested transactions, checked from inside and (by the driver) from outside.
//
//   nest DIR    DIR must exist and hold "base" containing "base\n". Three scenarios:
//     keep      P writes p1; child C1 writes c1 and overwrites p1, then aborts: P still has
//               its own p1 and no c1. C2 writes c2 and begins C3 (depth 3), which writes c3;
//               both commit into P, which sees c2 and c3; P commits: p1, c2, c3 remain.
//     undo      Q writes q1; its child writes q2 and overwrites base, commits; Q aborts:
//               q1, q2 and the change of base are gone.
//     busy      R writes r1 and forks a process, which inherits R (same id, depth 1) and
//               begins a child of R there, writing r2; R's commit fails with EBUSY while that
//               child is open and succeeds once it has committed and the process has exited.
//   amino_depth and amino_current are checked after every begin, commit and abort.
//
// Exit status 0 when every check passed.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amino/amino.h"
#include "txnutil.h"

// The current transaction must be `id` (0: none) at nesting depth `depth`.
static void expect_current(amino_txn_t id, int depth, const char* when) {
  amino_txn_t cur = 99;
  must(amino_current(&cur), "amino_current", when);
  int d = amino_depth();
  must(d, "amino_depth", when);
  if (cur != id || d != depth) {
    fail("%s: current transaction %llu at depth %d; expected %llu at depth %d", when,
         (unsigned long long)cur, d, (unsigned long long)id, depth);
  }
}

static amino_txn_t begin(amino_txn_t parent, int depth, const char* when) {
  amino_txn_t id = 0;
  must(amino_begin(&id), "amino_begin", when);
  if (id == 0 || id == parent) fail("%s: amino_begin gave id %llu", when, (unsigned long long)id);
  expect_current(id, depth, when);
  return id;
}

static void keep(void) {
  set_who("nest keep");
  amino_txn_t p = begin(0, 1, "begin P");
  must(write_file(at("p1"), "parent\n"), "write", at("p1"));
  amino_txn_t c1 = begin(p, 2, "begin C1");
  must(write_file(at("c1"), "child 1\n"), "write", at("c1"));
  must(write_file(at("p1"), "changed by child 1\n"), "write", at("p1"));
  expect_content(at("p1"), "changed by child 1\n");
  must(amino_abort(), "amino_abort", "C1");
  expect_current(p, 1, "after aborting C1");
  expect_content(at("p1"), "parent\n");
  expect_content(at("c1"), NULL);
  amino_txn_t c2 = begin(p, 2, "begin C2");
  if (c2 == c1) fail("C2 got the id of the ended C1");
  must(write_file(at("c2"), "child 2\n"), "write", at("c2"));
  begin(c2, 3, "begin C3");
  must(write_file(at("c3"), "grandchild 3\n"), "write", at("c3"));
  must(amino_commit(), "amino_commit", "C3");
  expect_current(c2, 2, "after committing C3");
  expect_content(at("c3"), "grandchild 3\n");
  must(amino_commit(), "amino_commit", "C2");
  expect_current(p, 1, "after committing C2");
  expect_content(at("c2"), "child 2\n");
  expect_content(at("c3"), "grandchild 3\n");
  must(amino_commit(), "amino_commit", "P");
  expect_current(0, 0, "after committing P");
  expect_content(at("p1"), "parent\n");
  expect_content(at("c1"), NULL);
}

static void undo(void) {
  set_who("nest undo");
  amino_txn_t q = begin(0, 1, "begin Q");
  must(write_file(at("q1"), "parent\n"), "write", at("q1"));
  begin(q, 2, "begin Q's child");
  must(write_file(at("q2"), "child\n"), "write", at("q2"));
  must(write_file(at("base"), "changed by the child\n"), "write", at("base"));
  must(amino_commit(), "amino_commit", "Q's child");
  expect_current(q, 1, "after committing Q's child");
  expect_content(at("q2"), "child\n");
  must(amino_abort(), "amino_abort", "Q");
  expect_current(0, 0, "after aborting Q");
  expect_content(at("q1"), NULL);
  expect_content(at("q2"), NULL);
  expect_content(at("base"), "base\n");
}

static int busy_child(void* arg, struct Link l) {
  const amino_txn_t parent = *(amino_txn_t*)arg;
  set_who("nest busy (forked process)");
  expect_current(parent, 1, "in the forked process");
  begin(parent, 2, "begin in the forked process");
  must(write_file(at("r2"), "child in another process\n"), "write", at("r2"));
  send_word(l.send, 1);
  recv_word(l.recv);  // the parent has tried to commit
  must(amino_commit(), "amino_commit", "the forked process's child");
  expect_current(parent, 1, "after committing in the forked process");
  return 0;  // exiting detaches from R
}

static void busy(void) {
  set_who("nest busy");
  amino_txn_t r = begin(0, 1, "begin R");
  must(write_file(at("r1"), "parent\n"), "write", at("r1"));
  struct Link child;
  int pid = spawn_linked(busy_child, &r, &child);
  recv_word(child.recv);
  must_fail(amino_commit(), EBUSY, "amino_commit", "R with a child open in another process");
  expect_current(r, 1, "after the refused commit");
  send_word(child.send, 1);
  int status = reap(pid);
  if (status != 0) fail("the forked process failed (status %d)", status);
  expect_content(at("r2"), "child in another process\n");
  must(amino_commit(), "amino_commit", "R");
  expect_current(0, 0, "after committing R");
  expect_content(at("r1"), "parent\n");
  expect_content(at("r2"), "child in another process\n");
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: nest DIR\n");
    return 2;
  }
  set_dir(argv[1]);
  keep();
  printf("keep: ok\n");
  undo();
  printf("undo: ok\n");
  busy();
  printf("busy: ok\n");
  return 0;
}
