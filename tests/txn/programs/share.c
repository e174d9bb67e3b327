// share: one transaction shared by unrelated processes through amino_attach.
//
//   share DIR commit|detach
//       B is forked before A begins (so it inherits nothing). A begins, writes DIR/a and sends
//       the id through a pipe; B attaches, sees A's uncommitted DIR/a and writes DIR/b; A sees
//       B's DIR/b; B detaches. Then A commits (commit) or detaches too (detach: the last
//       detach aborts it, and the id can no longer be attached). A process started afterwards
//       checks that both files exist (commit) or neither does (detach).
//   share perm DIR
//       A (root) begins and writes DIR/p; a process that switched to uid 65534 before A began
//       gets EPERM from amino_attach, a root process attaches; a transaction begun by uid
//       65534 can be attached by another process of that uid.
//
// Exit status 0 when every check passed.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amino/amino.h"
#include "txnutil.h"

enum { kNobody = 65534 };

static amino_txn_t current(void) {
  amino_txn_t id = 99;
  must(amino_current(&id), "amino_current", "");
  return id;
}

static int process_b(void* unused, struct Link a) {
  (void)unused;
  set_who("share B");
  amino_txn_t id = recv_word(a.recv);
  if (current() != 0) {
    fail("B, forked before A began, has transaction %llu", (unsigned long long)current());
  }
  must(amino_attach(id), "amino_attach", "A's transaction");
  if (current() != id) {
    fail("after amino_attach(%llu) the current one is %llu", (unsigned long long)id,
         (unsigned long long)current());
  }
  expect_content(at("a"), "from A\n");
  must(write_file(at("b"), "from B\n"), "write", at("b"));
  send_word(a.send, 1);
  recv_word(a.recv);  // A has seen DIR/b
  must(amino_detach(), "amino_detach", "");
  if (current() != 0) {
    fail("after amino_detach the current one is %llu", (unsigned long long)current());
  }
  send_word(a.send, 2);
  return 0;
}

static int third(void* arg) {
  const int committed = *(int*)arg;
  set_who("share third process");
  if (current() != 0) {
    fail("the third process is in transaction %llu", (unsigned long long)current());
  }
  expect_content(at("a"), committed ? "from A\n" : NULL);
  expect_content(at("b"), committed ? "from B\n" : NULL);
  return 0;
}

static int shared(int commit) {
  set_who("share A");
  struct Link b;
  int pid = spawn_linked(process_b, NULL, &b);
  amino_txn_t id = 0;
  must(amino_begin(&id), "amino_begin", "");
  must(write_file(at("a"), "from A\n"), "write", at("a"));
  send_word(b.send, id);
  recv_word(b.recv);  // B wrote DIR/b
  expect_content(at("b"), "from B\n");
  send_word(b.send, 1);
  recv_word(b.recv);  // B detached
  if (reap(pid) != 0) fail("process B failed");
  if (current() != id) fail("A's current transaction changed when B detached");
  expect_content(at("b"), "from B\n");  // B's work stays in the transaction
  if (commit) {
    must(amino_commit(), "amino_commit", "");
  } else {
    must(amino_detach(), "amino_detach", "");
    must_fail(amino_attach(id), ENOENT, "amino_attach", "the transaction after its last detach");
    must_fail(amino_commit(), ENOENT, "amino_commit", "after detaching");
  }
  if (reap(spawn(third, &commit)) != 0) fail("the third process's check failed");
  printf("%s: ok\n", commit ? "commit" : "detach");
  return 0;
}

static void become_nobody(void) {
  must(setresgid(kNobody, kNobody, kNobody), "setresgid", "65534");
  must(setresuid(kNobody, kNobody, kNobody), "setresuid", "65534");
}

static int unprivileged_attach(void* unused, struct Link a) {
  (void)unused;
  set_who("share perm (uid 65534)");
  become_nobody();
  amino_txn_t id = recv_word(a.recv);
  must_fail(amino_attach(id), EPERM, "amino_attach", "root's transaction as uid 65534");
  if (current() != 0) {
    fail("the refused attach left transaction %llu current", (unsigned long long)current());
  }
  send_word(a.send, 1);
  return 0;
}

// Attaches to the transaction whose id arrives and detaches again.
static int attach_detach(void* unused, struct Link a) {
  (void)unused;
  set_who("share perm (uid %d attaching)", (int)geteuid());
  amino_txn_t id = recv_word(a.recv);
  must(amino_attach(id), "amino_attach", "a transaction of the same uid, or as root");
  must(amino_detach(), "amino_detach", "");
  send_word(a.send, 1);
  return 0;
}

static int nobody_pair(void* unused) {
  (void)unused;
  set_who("share perm (uid 65534 begins)");
  become_nobody();
  struct Link other;
  int pid = spawn_linked(attach_detach, NULL, &other);  // as 65534 too: it inherits that
  amino_txn_t id = 0;
  must(amino_begin(&id), "amino_begin", "as uid 65534");
  send_word(other.send, id);
  recv_word(other.recv);
  if (reap(pid) != 0) fail("a process of uid 65534 could not attach to that uid's transaction");
  must(amino_abort(), "amino_abort", "");
  return 0;
}

static int perm(void) {
  set_who("share perm");
  struct Link nobody, root;
  int u = spawn_linked(unprivileged_attach, NULL, &nobody);
  int r = spawn_linked(attach_detach, NULL, &root);
  amino_txn_t id = 0;
  must(amino_begin(&id), "amino_begin", "");
  must(write_file(at("p"), "root's\n"), "write", at("p"));
  send_word(nobody.send, id);
  recv_word(nobody.recv);
  if (reap(u) != 0) fail("the unprivileged attach check failed");
  send_word(root.send, id);
  recv_word(root.recv);
  if (reap(r) != 0) fail("a root process could not attach to root's transaction");
  must(amino_abort(), "amino_abort", "");
  if (reap(spawn(nobody_pair, NULL)) != 0) fail("the same-uid attach check failed");
  printf("perm: ok\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "perm") == 0) {
    set_dir(argv[2]);
    return perm();
  }
  if (argc != 3 || (strcmp(argv[2], "commit") != 0 && strcmp(argv[2], "detach") != 0)) {
    fprintf(stderr, "usage: share DIR commit|detach | share perm DIR\n");
    return 2;
  }
  set_dir(argv[1]);
  return shared(strcmp(argv[2], "commit") == 0);
}
