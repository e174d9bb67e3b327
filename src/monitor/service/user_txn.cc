#include "monitor/service/user_txn.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "amino/amino.h"

namespace amino::monitor::service {

UserTxn::~UserTxn() {
  if (state != State::kEnded) AbortTree(State::kEnded);
}

void UserTxn::AbortTree(State to) {
  for (auto& weak : children) {
    if (auto child = weak.lock(); child && child->state != State::kEnded) child->AbortTree(to);
  }
  const bool undone = txn != nullptr;
  if (txn) (void)txn->Abort();
  txn.reset();
  if (undone && mfs) ++mfs->txn_ends;
  if (undone && mfs && mfs->after_abort) mfs->after_abort();
  for (auto& weak : opened) {
    if (auto f = weak.lock()) {
      f->counted = false;  // the count this transaction took is undone
      f->opened_in.reset();
    }
  }
  opened.clear();
  deferred_closes.clear();
  waiting.clear();
  state = to;
}

long TxnManager::Begin(pid_t tid, uid_t euid) {
  ThreadTxns& th = threads_[tid];
  auto txn = std::make_shared<UserTxn>();
  txn->id = next_id_++;
  txn->owner = euid;
  if (th.current) {
    if (th.current->state == UserTxn::State::kDoomed) return -AMINO_EABORTED;
    txn->parent = th.current;
    txn->depth = th.current->depth + 1;
    txn->mfs = th.current->mfs;  // a child works on its parent's mount
    th.current->children.push_back(txn);
  }
  registry_[txn->id] = txn;
  th.current = txn;
  return static_cast<long>(txn->id);
}

schema::Status TxnManager::CommitOne(UserTxn& txn) {
  if (!txn.txn) return schema::Status::Ok();  // nothing done in it
  schema::Status st = txn.txn->Commit();
  txn.txn.reset();
  if (txn.mfs) ++txn.mfs->txn_ends;  // committed or, failing, aborted: its locks went
  if (!st.ok()) return st;
  if (txn.parent) {
    // The parent now holds the counts of what was opened here.
    for (auto& weak : txn.opened) {
      if (auto f = weak.lock()) {
        f->opened_in = txn.parent;
        txn.parent->opened.push_back(f);
      }
    }
  } else {
    // Flushed or not by the commit itself: the root was begun with the mode's durability.
    for (auto& weak : txn.opened) {
      if (auto f = weak.lock()) f->opened_in.reset();
    }
  }
  txn.opened.clear();
  std::vector<schema::FileId>& closes =
      txn.parent ? txn.parent->deferred_closes : txn.mfs->deferred_closes;
  closes.insert(closes.end(), txn.deferred_closes.begin(), txn.deferred_closes.end());
  txn.deferred_closes.clear();
  return st;
}

long TxnManager::Commit(pid_t tid) {
  auto it = threads_.find(tid);
  if (it == threads_.end() || !it->second.current) return -ENOENT;
  std::shared_ptr<UserTxn> txn = it->second.current;
  const long depth = txn->depth;
  if (txn->state == UserTxn::State::kDoomed) {
    Unlink(txn);
    return -AMINO_EABORTED;
  }
  for (auto& weak : txn->children) {
    if (auto child = weak.lock(); child && child->state != UserTxn::State::kEnded) return -EBUSY;
  }
  const long r = CommitAndUnlink(txn);
  return r < 0 ? r : depth;
}

long TxnManager::Abort(pid_t tid) {
  auto it = threads_.find(tid);
  if (it == threads_.end() || !it->second.current) return -ENOENT;
  std::shared_ptr<UserTxn> txn = it->second.current;
  const long depth = txn->depth;
  txn->AbortTree(UserTxn::State::kEnded);
  Unlink(txn);
  return depth;
}

void TxnManager::Unlink(const std::shared_ptr<UserTxn>& txn) {
  if (txn->state != UserTxn::State::kEnded) txn->AbortTree(UserTxn::State::kEnded);
  for (auto& [tid, th] : threads_) {
    // A thread inside a descendant (nested in another thread) is inside it too.
    for (UserTxn* u = th.current.get(); u; u = u->parent.get()) {
      if (u == txn.get()) {
        th.current = txn->parent;
        break;
      }
    }
    std::erase_if(th.suspended, [&](const std::shared_ptr<UserTxn>& s) {
      for (UserTxn* u = s.get(); u; u = u->parent.get()) {
        if (u == txn.get()) return true;
      }
      return false;
    });
  }
  registry_.erase(txn->id);
  Prune();
}

long TxnManager::End(uint64_t id, bool commit) {
  auto r = registry_.find(id);
  std::shared_ptr<UserTxn> txn = r == registry_.end() ? nullptr : r->second.lock();
  if (!txn || txn->state == UserTxn::State::kEnded) return -ENOENT;
  for (auto& weak : txn->children) {
    if (auto child = weak.lock(); child && child->state != UserTxn::State::kEnded) {
      child->AbortTree(UserTxn::State::kEnded);
      Unlink(child);
    }
  }
  if (txn->state == UserTxn::State::kDoomed) {
    Unlink(txn);
    return -AMINO_EABORTED;
  }
  if (!commit) {
    Unlink(txn);  // aborts it
    return 0;
  }
  return CommitAndUnlink(txn);
}

long TxnManager::CommitAndUnlink(const std::shared_ptr<UserTxn>& txn) {
  schema::Status st = CommitOne(*txn);
  if (!st.ok()) {
    // A commit that fails has aborted the transaction (Berkeley DB resolves the handle).
    txn->AbortTree(UserTxn::State::kEnded);
    Unlink(txn);
    if (st.is_conflict()) return -AMINO_EABORTED;
    // The file system holding the database is full: its log found no room for the commit.
    if (st.error() == ENOSPC || st.error() == EDQUOT) return -st.error();
    return -EIO;
  }
  txn->state = UserTxn::State::kEnded;
  Unlink(txn);
  return 0;
}

bool TxnManager::Within(pid_t tid, uint64_t id) const {
  for (UserTxn* u = CurrentOf(tid).get(); u; u = u->parent.get()) {
    if (u->id == id) return true;
  }
  return false;
}

void TxnManager::Join(pid_t tid, uint64_t id) {
  auto r = registry_.find(id);
  std::shared_ptr<UserTxn> txn = r == registry_.end() ? nullptr : r->second.lock();
  if (txn && txn->state != UserTxn::State::kEnded) threads_[tid].current = txn;
}

void TxnManager::Leave(pid_t tid, uint64_t id) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) return;
  for (UserTxn* u = it->second.current.get(); u; u = u->parent.get()) {
    if (u->id == id) {
      it->second.current = u->parent;
      return;
    }
  }
}

long TxnManager::Attach(pid_t tid, uid_t euid, uint64_t id) {
  ThreadTxns& th = threads_[tid];
  if (th.current) return -EBUSY;
  for (auto it = th.suspended.begin(); it != th.suspended.end(); ++it) {
    if ((*it)->id == id) {
      th.current = *it;
      th.suspended.erase(it);
      return 0;
    }
  }
  auto r = registry_.find(id);
  std::shared_ptr<UserTxn> txn = r == registry_.end() ? nullptr : r->second.lock();
  if (!txn || txn->state == UserTxn::State::kEnded) return -ENOENT;
  if (euid != 0 && euid != txn->owner) return -EPERM;
  th.current = txn;
  return 0;
}

long TxnManager::Detach(pid_t tid) {
  auto it = threads_.find(tid);
  if (it == threads_.end() || !it->second.current) return -ENOENT;
  std::shared_ptr<UserTxn> txn = std::move(it->second.current);
  it->second.current.reset();
  txn.reset();  // aborted here when this thread was the last attached
  Prune();
  return 0;
}

long TxnManager::Suspend(pid_t tid) {
  auto it = threads_.find(tid);
  if (it == threads_.end() || !it->second.current) return -ENOENT;
  const long id = static_cast<long>(it->second.current->id);
  it->second.suspended.push_back(it->second.current);
  it->second.current.reset();
  return id;
}

long TxnManager::Current(pid_t tid) const {
  auto it = threads_.find(tid);
  if (it == threads_.end() || !it->second.current) return 0;
  return static_cast<long>(it->second.current->id);
}

long TxnManager::Depth(pid_t tid) const {
  auto it = threads_.find(tid);
  if (it == threads_.end() || !it->second.current) return 0;
  return it->second.current->depth;
}

void TxnManager::OnNewTask(pid_t parent, pid_t child, bool thread) {
  if (thread) return;
  auto it = threads_.find(parent);
  if (it == threads_.end() || !it->second.current) return;
  threads_[child].current = it->second.current;
}

void TxnManager::OnTaskExit(pid_t tid) {
  plain_waits_.erase(tid);
  auto it = threads_.find(tid);
  if (it == threads_.end()) return;
  for (auto& [id, weak] : registry_) {
    if (auto txn = weak.lock()) txn->root().waiting.erase(tid);
  }
  ThreadTxns gone = std::move(it->second);
  threads_.erase(it);
  gone = {};  // transactions no one else holds are aborted here
  Prune();
}

void TxnManager::Prune() {
  std::erase_if(registry_, [](const auto& entry) { return entry.second.expired(); });
}

schema::Status TxnManager::Bind(UserTxn& txn, MountFs& m) {
  if (txn.txn) return schema::Status::Ok();
  if (txn.parent) AMINO_RETURN_IF_ERROR(Bind(*txn.parent, m));
  schema::TxnOptions options;
  options.durability = txn.parent            ? m.durability
                       : flush_user_commits_ ? schema::Durability::kSync
                                             : m.durability;
  options.nowait = true;
  auto begun = m.fs->Begin(txn.parent ? txn.parent->txn.get() : nullptr, options);
  if (!begun.ok()) return begun.status();
  txn.txn = std::make_unique<schema::Transaction>(std::move(*begun));
  txn.mfs = &m;
  return schema::Status::Ok();
}

std::shared_ptr<UserTxn> TxnManager::CurrentOf(pid_t tid) const {
  auto it = threads_.find(tid);
  return it == threads_.end() ? nullptr : it->second.current;
}

schema::Result<schema::Transaction*> TxnManager::ParentFor(pid_t tid, MountFs& m) {
  std::shared_ptr<UserTxn> txn = CurrentOf(tid);
  if (!txn) return static_cast<schema::Transaction*>(nullptr);
  if (txn->state == UserTxn::State::kDoomed) return schema::Status::Errno(AMINO_EABORTED);
  for (UserTxn* u = txn.get(); u; u = u->parent.get()) {
    if (u->mfs && u->mfs != &m) return schema::Status::Errno(EXDEV);
  }
  AMINO_RETURN_IF_ERROR(Bind(*txn, m));
  return txn->txn.get();
}

bool TxnManager::OnConflict(pid_t tid) {
  std::shared_ptr<UserTxn> txn = CurrentOf(tid);
  const Clock::time_point now = Clock::now();
  if (!txn || !txn->txn) {
    // A per-call transaction holds no locks while it waits, so it is in no cycle the monitor
    // can see; but what it waits for may never end (a transaction its own thread suspended,
    // one of another `amino run` that waits for this caller). Bounded like any wait.
    auto [entry, first] = plain_waits_.emplace(tid, now);
    if (now - entry->second <= lock_timeout_) return false;
    plain_waits_.erase(entry);
    std::fprintf(stderr,
                 "amino: thread %d waited longer than the lock timeout for a lock held by a "
                 "transaction; its call fails with EDEADLK\n",
                 static_cast<int>(tid));
    return true;
  }
  UserTxn& root = txn->root();
  auto [entry, first] = root.waiting.emplace(tid, UserTxn::Wait{now, now});
  entry->second.last = now;
  if (root.mfs) {
    UserTxn* victim = nullptr;
    if (DeadlockAmongWaiters(*root.mfs, &victim) && victim) {
      victim->AbortTree(UserTxn::State::kDoomed);
      if (doomed_sink_) doomed_sink_(victim->id);
      if (victim == &root) return true;
      return false;  // its locks are gone: this call is asked again
    }
  }
  if (now - entry->second.first > lock_timeout_) {
    root.AbortTree(UserTxn::State::kDoomed);
    if (doomed_sink_) doomed_sink_(root.id);
    return true;
  }
  return false;
}

bool TxnManager::DeadlockAmongWaiters(MountFs& m, UserTxn** victim) {
  // Only open user transactions hold locks while their callers wait (a per-call transaction
  // is aborted at its conflict). When every open transaction on this mount has a caller
  // waiting, none of them can make progress within this monitor: they wait for each other.
  // The youngest is aborted. (A transaction of another `amino run` on the same database may be
  // what they wait for; the lock timeout covers waits that end by themselves too late.)
  int open = 0;
  UserTxn* youngest = nullptr;
  for (auto& [id, weak] : registry_) {
    auto txn = weak.lock();
    if (!txn || txn->parent || txn->state != UserTxn::State::kActive || txn->mfs != &m ||
        !txn->txn) {
      continue;
    }
    ++open;
    // A caller waits while its call keeps being asked again (every few hundred microseconds);
    // one that gave way to a signal stops being asked.
    const bool waits = std::any_of(txn->waiting.begin(), txn->waiting.end(), [](const auto& w) {
      return Clock::now() - w.second.last < std::chrono::milliseconds(100);
    });
    if (!waits) return false;
    if (!youngest || txn->id > youngest->id) youngest = txn.get();
  }
  if (open < 2) return false;
  *victim = youngest;
  return true;
}

void TxnManager::OnProgress(pid_t tid) {
  plain_waits_.erase(tid);
  if (std::shared_ptr<UserTxn> txn = CurrentOf(tid)) txn->root().waiting.erase(tid);
}

void TxnManager::NoteOpened(pid_t tid, const std::shared_ptr<ServedFile>& file) {
  std::shared_ptr<UserTxn> txn = CurrentOf(tid);
  if (!txn || !txn->txn || !file->counted) return;
  txn->opened.push_back(file);
  file->opened_in = txn;
}

}  // namespace amino::monitor::service
