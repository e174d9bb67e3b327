// errors: what each libamino call answers where transactions are not available, and the errors
// of misuse where they are.
//
//   errors none
//       amino_available() is 0 and leaves errno alone; every other call fails with ENOSYS.
//   errors served MP1 MP2 HOSTDIR
//       amino_available() is 1; amino_commit and amino_abort with no transaction fail with
//       ENOENT, amino_attach of an unknown id with ENOENT; in a transaction, amino_attach fails
//       with EBUSY; after a first call on MP1, calls on MP2 fail with EXDEV while MP1 still
//       works; a file written in HOSTDIR (outside the mounts) is not part of the transaction;
//       amino_suspend sets the transaction aside and amino_attach resumes it. After the
//       abort, MP1's files are gone and the host file is still there; outside the transaction
//       MP2 works again. Prints "served: ok".
//
// Exit status 0 when every check passed.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amino/amino.h"
#include "txnutil.h"

static int none(void) {
  set_who("errors none");
  errno = 12345;
  if (amino_available() != 0) fail("amino_available() is 1");
  if (errno != 12345) fail("amino_available() changed errno to %s", err_name(errno));
  amino_txn_t id = 7;
  must_fail(amino_begin(&id), ENOSYS, "amino_begin", "");
  if (id != 7) fail("a failed amino_begin stored an id");
  must_fail(amino_commit(), ENOSYS, "amino_commit", "");
  must_fail(amino_abort(), ENOSYS, "amino_abort", "");
  must_fail(amino_attach(1), ENOSYS, "amino_attach", "1");
  must_fail(amino_detach(), ENOSYS, "amino_detach", "");
  must_fail(amino_suspend(&id), ENOSYS, "amino_suspend", "");
  must_fail(amino_current(&id), ENOSYS, "amino_current", "");
  must_fail(amino_depth(), ENOSYS, "amino_depth", "");
  printf("none: ok\n");
  return 0;
}

static int served(const char* mp1, const char* mp2, const char* host) {
  set_who("errors served");
  char f1[4096], f2[4096], g[4096], h[4096];
  snprintf(f1, sizeof f1, "%s/f1", mp1);
  snprintf(f2, sizeof f2, "%s/f2", mp1);
  snprintf(g, sizeof g, "%s/g", mp2);
  snprintf(h, sizeof h, "%s/h", host);
  errno = 12345;
  if (amino_available() != 1) fail("amino_available() is 0 under amino run");
  if (errno != 12345) fail("amino_available() changed errno to %s", err_name(errno));
  must_fail(amino_commit(), ENOENT, "amino_commit", "with no transaction");
  must_fail(amino_abort(), ENOENT, "amino_abort", "with no transaction");
  must_fail(amino_attach(987654321), ENOENT, "amino_attach", "an unknown id");
  amino_txn_t id = 0, other = 0;
  must(amino_begin(&id), "amino_begin", "");
  must_fail(amino_attach(id), EBUSY, "amino_attach", "its own id with a transaction current");
  must_fail(amino_attach(987654321), EBUSY, "amino_attach", "with a transaction current");
  must(write_file(f1, "one\n"), "write", f1);
  int r = write_file(g, "other mount\n");
  if (r != -EXDEV) fail("write %s on a second mount gave %s; expected EXDEV", g, err_name(-r));
  struct stat st;
  must_fail(stat(mp2, &st), EXDEV, "stat", mp2);
  must(write_file(f2, "two\n"), "write", f2);  // the first mount still works
  must(write_file(h, "host\n"), "write", h);   // outside the mounts: not part of it
  must(amino_suspend(&other), "amino_suspend", "");
  if (other != id)
    fail("amino_suspend gave id %llu; the transaction is %llu", (unsigned long long)other,
         (unsigned long long)id);
  must(amino_current(&other), "amino_current", "");
  if (other != 0 || amino_depth() != 0) fail("a suspended transaction is still current");
  must(amino_attach(id), "amino_attach", "the suspended transaction");
  must(amino_current(&other), "amino_current", "");
  if (other != id || amino_depth() != 1) fail("amino_attach did not resume the transaction");
  expect_content(f1, "one\n");
  must(amino_abort(), "amino_abort", "");
  expect_content(f1, NULL);
  expect_content(f2, NULL);
  expect_content(h, "host\n");
  // The same mount switch after the transaction ended: no EXDEV outside a transaction.
  must(write_file(g, "other mount\n"), "write", g);
  printf("served: ok\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "none") == 0) return none();
  if (argc == 5 && strcmp(argv[1], "served") == 0) return served(argv[2], argv[3], argv[4]);
  fprintf(stderr, "usage: errors none | errors served MP1 MP2 HOSTDIR\n");
  return 2;
}
