#include "schema/transaction.h"

#include <string>

#include "schema/store.h"

namespace amino::schema {

Status DbStatus(int ret, const char* what) {
  if (ret == 0) return Status::Ok();
  if (ret == DB_LOCK_DEADLOCK || ret == DB_LOCK_NOTGRANTED) {
    return Status::Conflict(std::string(what) + ": " + db_strerror(ret));
  }
  return Status::Storage(ret > 0 ? ret : EIO, std::string(what) + ": " + db_strerror(ret));
}

Transaction& Transaction::operator=(Transaction&& o) noexcept {
  if (this != &o) {
    if (txn_) (void)Abort();
    txn_ = o.txn_;
    parent_ = o.parent_;
    store_ = o.store_;
    opens_ = o.opens_;
    o.txn_ = nullptr;
  }
  return *this;
}

Transaction::~Transaction() {
  if (txn_) (void)Abort();
}

Status Transaction::Commit() {
  if (!txn_) return Status::Storage(EINVAL, "commit of a finished transaction");
  DB_TXN* t = txn_;
  txn_ = nullptr;  // commit resolves the handle whether it succeeds or not
  Status st = DbStatus(t->commit(t, 0), "commit");
  if (st.ok() && parent_) parent_->opens_ += opens_;
  if (st.ok() && !parent_ && store_) store_->NoteTopLevelCommit(opens_);
  return st;
}

Status Transaction::Abort() {
  if (!txn_) return Status::Ok();
  DB_TXN* t = txn_;
  txn_ = nullptr;
  return DbStatus(t->abort(t), "abort");
}

}  // namespace amino::schema
