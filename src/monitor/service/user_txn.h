// Application transactions (libamino, `amino txn`; DESIGN.md §4): which transaction is current
// for each thread, nesting, sharing between threads and processes, and the Berkeley DB
// transactions behind them.
//
// A UserTxn is bound to a mount at its first file call there: it then owns a Berkeley DB
// transaction (a child of its parent's), and each serviced call of an attached thread runs as a
// child of that one. Attachment is ownership: a thread holds its current transaction (and
// suspended ones), a child holds its parent; when no one holds a transaction any more it is
// aborted. Locks are never waited for: a call that conflicts is parked and asked again; when
// transactions wait for each other, or a call waits too long, one of them is doomed (aborted
// now; its calls and its commit fail with AMINO_EABORTED until the application ends it).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "monitor/service/mount_fs.h"
#include "monitor/service/served_file.h"
#include "schema/status.h"
#include "schema/transaction.h"

namespace amino::monitor::service {

struct UserTxn {
  enum class State { kActive, kDoomed, kEnded };
  uint64_t id = 0;
  std::shared_ptr<UserTxn> parent;
  uid_t owner = 0;
  int depth = 1;
  State state = State::kActive;
  MountFs* mfs = nullptr;                    // bound at the first call on a mount
  std::unique_ptr<schema::Transaction> txn;  // once bound; a child of parent->txn
  std::vector<std::weak_ptr<UserTxn>> children;
  // Descriptions opened in this transaction: their open count is undone if it aborts.
  std::vector<std::weak_ptr<ServedFile>> opened;
  // Files opened in this transaction whose last description was closed while another
  // transaction held their record: closed when this one commits (in its parent, or on their
  // own once it is a root), forgotten if it aborts (the abort undoes their opens).
  std::vector<schema::FileId> deferred_closes;
  // Threads whose calls wait for a lock, and since when (deadlock detection; roots only).
  struct Wait {
    std::chrono::steady_clock::time_point first, last;  // first and latest conflict
  };
  std::unordered_map<pid_t, Wait> waiting;

  UserTxn() = default;
  UserTxn(const UserTxn&) = delete;
  UserTxn& operator=(const UserTxn&) = delete;
  ~UserTxn();  // aborts it if still open (no one holds it any more)

  UserTxn& root() { return parent ? parent->root() : *this; }
  // Aborts the Berkeley DB transactions of this one and its descendants (deepest first) and
  // undoes the open counts they held; `state` becomes `to`.
  void AbortTree(State to);
};

class TxnManager {
 public:
  using Clock = std::chrono::steady_clock;

  // `flush_user_commits`: top-level user commits are flushed to disk (--durability sync and
  // commit). `lock_timeout`: how long a call may wait for a lock before its transaction is
  // aborted.
  TxnManager(bool flush_user_commits, Clock::duration lock_timeout)
      : flush_user_commits_(flush_user_commits), lock_timeout_(lock_timeout) {}

  // Pseudo-calls: >= 0 or -errno (include/amino/amino.h). `euid` is the caller's.
  long Begin(pid_t tid, uid_t euid);
  long Commit(pid_t tid);
  long Abort(pid_t tid);
  long Attach(pid_t tid, uid_t euid, uint64_t id);
  long Detach(pid_t tid);
  long Suspend(pid_t tid);
  long Current(pid_t tid) const;
  long Depth(pid_t tid) const;

  // For profiles (txn_control.h): ends transaction `id` wherever it is current, aborting what
  // is still open inside it first (0 or -errno); whether `tid` is in `id`; makes `id` current
  // for `tid`; takes `tid` out of `id`.
  long End(uint64_t id, bool commit);
  bool Within(pid_t tid, uint64_t id) const;
  void Join(pid_t tid, uint64_t id);
  void Leave(pid_t tid, uint64_t id);
  // Told the id of each transaction the system aborts (a deadlock's victim, a lock waited for
  // too long), right after.
  void SetDoomedSink(std::function<void(uint64_t)> sink) { doomed_sink_ = std::move(sink); }

  // Task life cycle: a new process inherits its creator's current transaction, a new thread
  // starts with none; a task that ends detaches.
  void OnNewTask(pid_t parent, pid_t child, bool thread);
  void OnTaskExit(pid_t tid);

  // The transaction a call by `tid` on mount `m` runs in as a child: its current one, bound to
  // `m` (begun now if needed), or null when it has none. Errors: AMINO_EABORTED (doomed),
  // EXDEV (bound to another mount), or the database's.
  schema::Result<schema::Transaction*> ParentFor(pid_t tid, MountFs& m);
  // A call of `tid` conflicted: true when it must fail with AMINO_EABORTED (its transaction was
  // chosen to end a deadlock, or it waited past the lock timeout, in a transaction or not);
  // otherwise it waits (is parked).
  // A doomed transaction releases its locks at once.
  bool OnConflict(pid_t tid);
  // A call of `tid` went through: it no longer waits.
  void OnProgress(pid_t tid);
  // The same for a call made outside any transaction (cheap when nobody waits).
  void OnPlainProgress(pid_t tid) {
    if (!plain_waits_.empty()) plain_waits_.erase(tid);
  }
  // `tid` opened a description (its count taken) in its current transaction.
  void NoteOpened(pid_t tid, const std::shared_ptr<ServedFile>& file);
  // Whether any user transaction is open (closes may then have to wait).
  bool any_open() const { return !registry_.empty(); }

 private:
  std::shared_ptr<UserTxn> CurrentOf(pid_t tid) const;
  struct ThreadTxns {
    std::shared_ptr<UserTxn> current;
    std::vector<std::shared_ptr<UserTxn>> suspended;
  };

  // Ends `txn` for every thread attached to it: their current one becomes its parent.
  void Unlink(const std::shared_ptr<UserTxn>& txn);
  schema::Status Bind(UserTxn& txn, MountFs& m);
  schema::Status CommitOne(UserTxn& txn);
  // Commits `txn` (its nested ones ended) and takes every thread out of it: 0, or -errno
  // (AMINO_EABORTED for a conflict) with the transaction aborted.
  long CommitAndUnlink(const std::shared_ptr<UserTxn>& txn);
  bool DeadlockAmongWaiters(MountFs& m, UserTxn** victim);
  void Prune();

  bool flush_user_commits_;
  Clock::duration lock_timeout_;
  uint64_t next_id_ = 1;
  std::unordered_map<pid_t, ThreadTxns> threads_;
  // Since when each thread's call outside any transaction has been waiting for a lock.
  std::unordered_map<pid_t, Clock::time_point> plain_waits_;
  std::unordered_map<uint64_t, std::weak_ptr<UserTxn>> registry_;
  std::function<void(uint64_t)> doomed_sink_;
};

}  // namespace amino::monitor::service
