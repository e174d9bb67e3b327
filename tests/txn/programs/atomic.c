// atomic: one transaction that changes a whole tree, then commits, aborts or dies.
//
//   atomic populate DIR N       (outside any transaction) DIR/keep/f0..f<N-1> with distinct
//                               contents and modes, DIR/sub/{a,b}, DIR/gone/{x,y}
//   atomic mutate DIR N MODE    in one transaction: mkdir new/ and create N/2 files in it, write,
//                               append, truncate and chmod files of keep/, rename files (within
//                               and across directories) and the directory sub/, unlink files,
//                               empty and remove gone/, add a symbolic and a hard link; checks it
//                               sees its own changes; then MODE: commit, abort, or kill
//                               (raise(SIGKILL) with the transaction open). MODE plain does the
//                               same without a transaction (natively: the expected tree).
//
// Exit status 0 when every call and check succeeded.
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amino/amino.h"
#include "txnutil.h"

static void put(const char* path, const char* text, mode_t mode) {
  must(write_file(path, text), "write", path);
  must(chmod(path, mode), "chmod", path);
}

static void make_dir(const char* path, mode_t mode) {
  must(mkdir(path, 0700), "mkdir", path);
  must(chmod(path, mode), "chmod", path);  // whatever the umask
}

static int populate(const char* dir, int n) {
  make_dir(dir, 0755);
  make_dir(at("keep"), 0755);
  for (int i = 0; i < n; i++) {
    char text[64];
    snprintf(text, sizeof text, "file %d original\n", i);
    put(at("keep/f%d", i), text, (i % 3 == 0) ? 0600 : (i % 3 == 1) ? 0644 : 0755);
  }
  make_dir(at("sub"), 0750);
  put(at("sub/a"), "a\n", 0644);
  put(at("sub/b"), "b\n", 0640);
  make_dir(at("gone"), 0755);
  put(at("gone/x"), "x\n", 0644);
  put(at("gone/y"), "y\n", 0644);
  return 0;
}

// Each step touches a different file of keep/, so that N >= 20 gives every kind of change.
static void mutate_tree(int n) {
  if (n < 20) fail("N must be at least 20");
  make_dir(at("new"), 0711);
  for (int i = 0; i < n / 2; i++) {
    char text[64];
    snprintf(text, sizeof text, "new file %d\n", i);
    put(at("new/n%d", i), text, 0640);
  }
  for (int i = 0; i < 6; i++) {
    const char* f = at("keep/f%d", i);
    must(i < 3 ? write_file(f, "overwritten\n") : append_file(f, "appended\n"), "write", f);
  }
  must(truncate(at("keep/f6"), 3), "truncate", at("keep/f6"));
  must(truncate(at("keep/f7"), 10000), "truncate", at("keep/f7"));  // grows with a hole
  must(chmod(at("keep/f8"), 0604), "chmod", at("keep/f8"));
  must(rename(at("keep/f9"), at("keep/r9")), "rename", at("keep/f9"));
  must(rename(at("keep/f10"), at("new/m10")), "rename", at("keep/f10"));
  must(rename(at("keep/f11"), at("keep/f12")), "rename over", at("keep/f11"));
  for (int i = 13; i < 16; i++) must(unlink(at("keep/f%d", i)), "unlink", at("keep/f%d", i));
  must(rename(at("sub"), at("sub2")), "rename", at("sub"));
  must(write_file(at("sub2/a"), "changed in the renamed directory\n"), "write", at("sub2/a"));
  must(unlink(at("gone/x")), "unlink", at("gone/x"));
  must(unlink(at("gone/y")), "unlink", at("gone/y"));
  must(rmdir(at("gone")), "rmdir", at("gone"));
  must(symlink("f16", at("keep/link")), "symlink", at("keep/link"));
  must(link(at("keep/f17"), at("keep/hard17")), "link", at("keep/hard17"));
  // Later files of keep/ (f18 and up) stay as they were.
}

// What mutate_tree did must be visible to the transaction that did it.
static void check_own_view(void) {
  expect_content(at("keep/f0"), "overwritten\n");
  expect_content(at("keep/f3"), "file 3 original\nappended\n");
  expect_content(at("keep/f6"), "fil");
  expect_content(at("keep/f9"), NULL);
  expect_content(at("keep/r9"), "file 9 original\n");
  expect_content(at("new/m10"), "file 10 original\n");
  expect_content(at("keep/f12"), "file 11 original\n");
  expect_content(at("keep/f13"), NULL);
  expect_content(at("sub/a"), NULL);
  expect_content(at("sub2/b"), "b\n");
  expect_content(at("new/n0"), "new file 0\n");
  expect_content(at("keep/link"), "file 16 original\n");
  struct stat st;
  must_fail(stat(at("gone"), &st), ENOENT, "stat", at("gone"));
}

int main(int argc, char** argv) {
  set_who("atomic %s", argc > 1 ? argv[1] : "");
  if (argc == 4 && strcmp(argv[1], "populate") == 0) {
    set_dir(argv[2]);
    return populate(argv[2], atoi(argv[3]));
  }
  if (argc != 5 || strcmp(argv[1], "mutate") != 0) {
    fprintf(stderr, "usage: atomic populate DIR N | atomic mutate DIR N commit|abort|kill|plain\n");
    return 2;
  }
  set_dir(argv[2]);
  const int n = atoi(argv[3]);
  const char* mode = argv[4];
  const int plain = strcmp(mode, "plain") == 0;
  if (!plain) {
    amino_txn_t id = 0;
    must(amino_begin(&id), "amino_begin", "");
    if (amino_depth() != 1) fail("amino_depth %d after amino_begin; expected 1", amino_depth());
  }
  mutate_tree(n);
  check_own_view();
  if (plain) return 0;
  if (strcmp(mode, "commit") == 0) {
    must(amino_commit(), "amino_commit", "");
    expect_content(at("keep/f0"), "overwritten\n");
  } else if (strcmp(mode, "abort") == 0) {
    must(amino_abort(), "amino_abort", "");
    expect_content(at("keep/f0"), "file 0 original\n");
    expect_content(at("new/n0"), NULL);
  } else if (strcmp(mode, "kill") == 0) {
    raise(SIGKILL);
    fail("still alive after raise(SIGKILL)");
  } else {
    fail("unknown mode %s", mode);
  }
  if (amino_depth() != 0) fail("amino_depth %d after the end; expected 0", amino_depth());
  return 0;
}
