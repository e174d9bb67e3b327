// What transaction profiles (profiles/profile_handler.h) ask of the handler that owns the
// application transactions: begin one for a thread, end one by id wherever it is current,
// share it with other tasks, and name the files behind served descriptors.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "monitor/process_table.h"

namespace amino::monitor {

class TxnControl {
 public:
  virtual ~TxnControl() = default;
  // Begins a transaction current for `t`, nested in its current one: its id, or -errno
  // (AMINO_EABORTED when the current one was aborted by the system).
  virtual long BeginFor(Thread& t) = 0;
  // Commits or aborts transaction `id`, aborting first whatever is still open inside it; every
  // task in it goes on in what it was nested in. 0, or -errno: AMINO_EABORTED when a commit
  // found it aborted by the system (nothing of it remains), ENOENT when it has ended.
  virtual long End(uint64_t id, bool commit) = 0;
  // Whether `tid`'s current transaction is `id` or nested in it.
  virtual bool Within(pid_t tid, uint64_t id) const = 0;
  // Makes `id` current for `tid` (which has none of its own).
  virtual void Join(pid_t tid, uint64_t id) = 0;
  // `tid` leaves `id`: its current becomes what `id` is nested in.
  virtual void Leave(pid_t tid, uint64_t id) = 0;
  // `sink` is told the id of each transaction the system aborts (a deadlock, a lock timeout),
  // from inside the call that found it: it must only take note.
  virtual void SetDoomedSink(std::function<void(uint64_t)> sink) = 0;
  // `tid`'s current transaction (0: none).
  virtual uint64_t CurrentOf(pid_t tid) const = 0;
  // `path` from `dirfd` (AT_FDCWD: the cwd) as `t` names it, made absolute and normal
  // (lexically: links are not followed); "" when the directory has no name.
  virtual std::string AbsolutePath(Thread& t, int dirfd, const std::string& path) = 0;
  // The path of `t`'s descriptor `fd` when it is a served file (through its mount point), and
  // whether it was opened for writing; false for any other descriptor.
  virtual bool ServedPath(Thread& t, int fd, std::string* path, bool* writing) const = 0;
};

}  // namespace amino::monitor
