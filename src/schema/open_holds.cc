#include "schema/open_holds.h"

#include <cstring>
#include <string>

namespace amino::schema {
namespace {

// The lock object of `id`'s holds (tag "amino.ho"), of decisions on them ("amino.de") or of the
// turns of transactions that open it ("amino.tu"): a name no lock Berkeley DB takes itself can
// have (its page and record locks are DB_LOCK_ILOCK structures of another length).
struct HoldObject {
  enum Kind { kHold, kDecision, kTurn };
  char tag[8] = {'a', 'm', 'i', 'n', 'o', '.', 'h', 'o'};
  unsigned char id[8];
  explicit HoldObject(FileId file, Kind kind = kHold) {
    if (kind == kDecision) tag[6] = 'd', tag[7] = 'e';
    if (kind == kTurn) tag[6] = 't', tag[7] = 'u';
    for (int i = 0; i < 8; ++i) id[i] = static_cast<unsigned char>(file >> (56 - 8 * i));
  }
  DBT dbt() {
    DBT d;
    std::memset(&d, 0, sizeof d);
    d.data = this;
    d.size = sizeof *this;
    return d;
  }
};

Status LockStatus(int ret, const char* what) {
  return Status::Storage(ret > 0 ? ret : EIO, std::string(what) + ": " + db_strerror(ret));
}

}  // namespace

OpenHolds::~OpenHolds() { Clear(); }

Status OpenHolds::Locker() {
  if (locker_ != 0) return Status::Ok();
  int ret = env_->lock_id(env_, &locker_);
  return ret == 0 ? Status::Ok() : LockStatus(ret, "lock_id");
}

Status OpenHolds::Lock(FileId id, Entry& e) {
  AMINO_RETURN_IF_ERROR(Locker());
  // Waits only for another process's question (Held), which lets go at once.
  HoldObject obj(id);
  DBT d = obj.dbt();
  int ret = env_->lock_get(env_, locker_, 0, &d, DB_LOCK_READ, &e.lock);
  return ret == 0 ? Status::Ok() : LockStatus(ret, "hold a file open: lock_get");
}

void OpenHolds::Unlock(FileId id, Entry& e) {
  (void)env_->lock_put(env_, &e.lock);
  held_.erase(id);
}

Status OpenHolds::Acquire(FileId id) {
  std::lock_guard<std::mutex> g(mu_);
  auto [it, fresh] = held_.try_emplace(id);
  if (fresh) {
    if (Status st = Lock(id, it->second); !st.ok()) {
      held_.erase(it);
      return st;
    }
  }
  ++it->second.count;
  return Status::Ok();
}

bool OpenHolds::Release(FileId id) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = held_.find(id);
  if (it == held_.end()) return false;
  if (--it->second.count == 0) Unlock(id, it->second);
  return true;
}

Status OpenHolds::Undo(FileId id, int delta) {
  if (delta < 0) return Acquire(id);  // a release undone
  (void)Release(id);                  // an acquire undone
  return Status::Ok();
}

Result<bool> OpenHolds::Held(FileId id) {
  std::lock_guard<std::mutex> g(mu_);
  if (held_.count(id)) return true;
  AMINO_RETURN_IF_ERROR(Locker());
  // Granted to this process's locker unless another locker shares the object.
  HoldObject obj(id);
  DBT d = obj.dbt();
  DB_LOCK probe;
  int ret = env_->lock_get(env_, locker_, DB_LOCK_NOWAIT, &d, DB_LOCK_WRITE, &probe);
  if (ret == DB_LOCK_NOTGRANTED) return true;
  if (ret != 0) return LockStatus(ret, "ask whether a file is open: lock_get");
  (void)env_->lock_put(env_, &probe);
  return false;
}

Status OpenHolds::LockDecision(FileId id, DB_TXN* txn, db_lockmode_t mode, const char* what,
                               bool turn) {
  // One object for the files of one of 65,536 buckets (ids are random): a transaction that
  // removes a million files keeps a bounded number of locks, and a snapshot reader rarely
  // meets another file's decision.
  HoldObject obj(id & 0xffff, turn ? HoldObject::kTurn : HoldObject::kDecision);
  DBT d = obj.dbt();
  DB_LOCK lock;
  // Kept by the transaction's locker: let go of (or passed to its parent) when it ends.
  const u_int32_t locker = txn->id(txn);
  // A deferred transaction (TxnOptions::deferred) has none: the call runs again in a real one.
  if (locker == 0) return Status::Conflict("a call without a Berkeley DB transaction cannot lock");
  int ret = env_->lock_get(env_, locker, DB_LOCK_NOWAIT, &d, mode, &lock);
  if (ret == DB_LOCK_NOTGRANTED) return Status::Conflict(what);
  return ret == 0 ? Status::Ok() : LockStatus(ret, "lock_get");
}

Status OpenHolds::Decide(FileId id, DB_TXN* txn) {
  return LockDecision(id, txn, DB_LOCK_WRITE, "a call reading a snapshot looks at the file");
}

Status OpenHolds::Undecided(FileId id, DB_TXN* txn) {
  return LockDecision(id, txn, DB_LOCK_READ, "another transaction is removing the file");
}

Status OpenHolds::TakeTurn(FileId id, DB_TXN* txn) {
  return LockDecision(id, txn, DB_LOCK_WRITE, "another transaction has the file open", true);
}

size_t OpenHolds::files() const {
  std::lock_guard<std::mutex> g(mu_);
  return held_.size();
}

void OpenHolds::Clear() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [id, e] : held_) (void)env_->lock_put(env_, &e.lock);
  held_.clear();
  if (locker_ != 0) (void)env_->lock_id_free(env_, locker_);
  locker_ = 0;
}

}  // namespace amino::schema
