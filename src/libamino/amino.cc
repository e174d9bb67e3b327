// libamino: each function is one pseudo-system call that `amino run` intercepts
// (include/amino/amino.h). librvm, when the program links it, is kept in step: its functions are
// weak references, null when it is absent.
#include "amino/amino.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

extern "C" {
int rvm_begin(void) __attribute__((weak));
int rvm_commit(void) __attribute__((weak));
int rvm_abort(void) __attribute__((weak));
int rvm_abort_to(int depth) __attribute__((weak));
int rvm_depth(void) __attribute__((weak));
}

namespace {

// The raw call: >= 0, or -errno (the kernel's ENOSYS without a monitor).
long Pseudo(long nr, long a0 = 0) {
  long r = syscall(nr, a0);
  return r < 0 ? -errno : r;
}

int Fail(long r) {
  errno = static_cast<int>(-r);
  return -1;
}

bool WithRvm() { return rvm_begin && rvm_commit && rvm_abort && rvm_abort_to && rvm_depth; }

}  // namespace

extern "C" {

int amino_available(void) {
  const int saved = errno;
  const bool yes = Pseudo(AMINO_SYS_PROBE) == AMINO_PROBE_ANSWER;
  errno = saved;
  return yes ? 1 : 0;
}

int amino_begin(amino_txn_t* id) {
  long r = Pseudo(AMINO_SYS_BEGIN, AMINO_TARGET_SELF);
  if (r < 0) return Fail(r);
  if (WithRvm() && rvm_begin() != 0) {
    // Memory cannot follow: the file-system transaction is not begun either.
    (void)Pseudo(AMINO_SYS_ABORT, AMINO_TARGET_SELF);
    errno = ENOMEM;
    return -1;
  }
  if (id) *id = static_cast<amino_txn_t>(r);
  return 0;
}

int amino_commit(void) {
  // With librvm, memory follows the outcome: the depth is needed to rewind after a failed
  // commit (a transaction the system aborted ends with AMINO_EABORTED).
  const long depth = WithRvm() ? Pseudo(AMINO_SYS_DEPTH, AMINO_TARGET_SELF) : 0;
  long r = Pseudo(AMINO_SYS_COMMIT, AMINO_TARGET_SELF);
  if (depth > 0 && rvm_depth() >= depth) {
    if (r > 0) {
      (void)rvm_commit();
    } else if (r == -AMINO_EABORTED) {
      (void)rvm_abort_to(static_cast<int>(depth) - 1);
    }
  }
  return r < 0 ? Fail(r) : 0;
}

int amino_abort(void) {
  long r = Pseudo(AMINO_SYS_ABORT, AMINO_TARGET_SELF);
  if (r < 0) return Fail(r);
  // r is the aborted transaction's depth: memory rewinds to the level below it.
  if (WithRvm() && rvm_depth() >= r) (void)rvm_abort_to(static_cast<int>(r) - 1);
  return 0;
}

int amino_attach(amino_txn_t id) {
  long r = Pseudo(AMINO_SYS_ATTACH, static_cast<long>(id));
  return r < 0 ? Fail(r) : 0;
}

int amino_detach(void) {
  long r = Pseudo(AMINO_SYS_DETACH);
  return r < 0 ? Fail(r) : 0;
}

int amino_suspend(amino_txn_t* id) {
  long r = Pseudo(AMINO_SYS_SUSPEND);
  if (r < 0) return Fail(r);
  if (id) *id = static_cast<amino_txn_t>(r);
  return 0;
}

int amino_current(amino_txn_t* id) {
  long r = Pseudo(AMINO_SYS_CURRENT, AMINO_TARGET_SELF);
  if (r < 0) return Fail(r);
  if (id) *id = static_cast<amino_txn_t>(r);
  return 0;
}

int amino_depth(void) {
  long r = Pseudo(AMINO_SYS_DEPTH, AMINO_TARGET_SELF);
  return r < 0 ? Fail(r) : static_cast<int>(r);
}

}  // extern "C"
