// libamino and librvm together under `amino run`: a program keeps an in-memory index of the files
// it writes (a linked list allocated with rvm_alloc in a recoverable region). amino_abort() must
// bring back both the files and the index, at every nesting level; amino_commit() keeps both.
// Run in a directory on an Amino mount; exits 0 when every check holds, else prints the first
// failed check and exits 1. Natively (no monitor) it checks that nothing begins: amino_begin
// fails with ENOSYS and no RVM transaction is left open.
#include <amino/amino.h>
#include <amino/rvm.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct entry {
  struct entry* next;
  char name[32];
  int value;
};

static rvm_region* region;

#define CHECK(cond, ...)                \
  do {                                  \
    if (!(cond)) {                      \
      printf("FAILED: " __VA_ARGS__);   \
      printf(" (line %d)\n", __LINE__); \
      exit(1);                          \
    }                                   \
  } while (0)

static struct entry* head(void) { return rvm_get_root(region); }

// Writes file `name` holding `value` and records it in the index.
static void add(const char* name, int value) {
  char text[32];
  int len = snprintf(text, sizeof text, "%d\n", value);
  int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0 && write(fd, text, (size_t)len) == len && close(fd) == 0, "write %s", name);
  struct entry* e = rvm_alloc(region, sizeof *e);
  CHECK(e != NULL, "rvm_alloc: %s", strerror(errno));
  snprintf(e->name, sizeof e->name, "%s", name);
  e->value = value;
  e->next = head();
  CHECK(rvm_set_root(region, e) == 0, "rvm_set_root");
}

// The index lists exactly the files `names` (in that order, newest first) and each file holds
// the value the index says.
static void expect(const char* what, const char* names[], int n) {
  struct entry* e = head();
  for (int i = 0; i < n; ++i, e = e->next) {
    CHECK(e != NULL && strcmp(e->name, names[i]) == 0, "%s: index entry %d is not %s", what, i,
          names[i]);
    char buf[32] = {0};
    int fd = open(e->name, O_RDONLY);
    CHECK(fd >= 0 && read(fd, buf, sizeof buf - 1) > 0, "%s: %s is missing", what, e->name);
    close(fd);
    CHECK(atoi(buf) == e->value, "%s: %s holds %s, the index says %d", what, e->name, buf,
          e->value);
  }
  CHECK(e == NULL, "%s: the index has more than %d entries", what, n);
}

static int exists(const char* name) { return access(name, F_OK) == 0; }

int main(void) {
  if (!amino_available()) {
    CHECK(amino_begin(NULL) == -1 && errno == ENOSYS, "amino_begin without a monitor");
    CHECK(rvm_depth() == 0, "an RVM transaction was begun without a file-system one");
    printf("no monitor: amino_begin fails with ENOSYS and begins nothing\n");
    return 0;
  }
  CHECK(rvm_map(1 << 20, 0, &region) == 0, "rvm_map");

  // Committed: both the file and the index entry stay.
  CHECK(amino_begin(NULL) == 0 && rvm_depth() == 1, "begin: rvm depth %d", rvm_depth());
  add("a", 1);
  CHECK(amino_commit() == 0 && rvm_depth() == 0, "commit");
  const char* after_a[] = {"a"};
  expect("after commit", after_a, 1);

  // Aborted: new files, a rewritten file and the index entries all go back.
  CHECK(amino_begin(NULL) == 0, "begin");
  add("b", 2);
  add("c", 3);
  add("a", 10);
  CHECK(amino_abort() == 0 && rvm_depth() == 0, "abort");
  expect("after abort", after_a, 1);
  CHECK(!exists("b") && !exists("c"), "aborted files remain");

  // Nested: the child's abort rewinds only the child; the parent's abort rewinds a committed
  // child too.
  CHECK(amino_begin(NULL) == 0, "begin parent");
  add("d", 4);
  CHECK(amino_begin(NULL) == 0 && rvm_depth() == 2 && amino_depth() == 2, "begin child");
  add("e", 5);
  CHECK(amino_abort() == 0 && rvm_depth() == 1 && amino_depth() == 1, "abort child");
  const char* after_child[] = {"d", "a"};
  expect("after the child's abort", after_child, 2);
  CHECK(!exists("e"), "the aborted child's file remains");
  CHECK(amino_begin(NULL) == 0, "begin second child");
  add("f", 6);
  CHECK(amino_commit() == 0 && rvm_depth() == 1, "commit child");
  const char* after_second[] = {"f", "d", "a"};
  expect("after the child's commit", after_second, 3);
  CHECK(amino_abort() == 0 && rvm_depth() == 0, "abort parent");
  expect("after the parent's abort", after_a, 1);
  CHECK(!exists("d") && !exists("f"), "the aborted parent's files remain");

  printf("files and index rewound together: commit, abort, nested abort and commit\n");
  return 0;
}
