#include "schema/transaction.h"

#include <db.h>

#include <string>

#include "schema/store.h"
#include "schema/txn_reads.h"

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
    writes_at_begin_ = o.writes_at_begin_;
    deferred_ = o.deferred_;
    holds_ = std::move(o.holds_);
    o.txn_ = nullptr;
  }
  return *this;
}

Status Transaction::UndoHolds() {
  Status first = Status::Ok();
  if (store_) {
    // Newest first: an open and a close of one file undo to where they started.
    for (auto h = holds_.rbegin(); h != holds_.rend(); ++h) {
      Status st = store_->holds().Undo(h->id, h->delta);
      if (first.ok()) first = st;
    }
  }
  holds_.clear();
  return first;
}

Transaction::~Transaction() {
  if (txn_) (void)Abort();
}

Status Transaction::Commit() {
  if (!txn_) return Status::Storage(EINVAL, "commit of a finished transaction");
  DB_TXN* t = txn_;
  txn_ = nullptr;  // commit resolves the handle whether it succeeds or not
  const bool top = !parent_ && store_;
  if (deferred_) return CommitDeferred(t);
  if (top) {
    if (Status stale = store_->BeforeTopLevelCommit(t, writes_at_begin_); !stale.ok()) {
      (void)UndoHolds();
      TxnReads::End(t);
      (void)t->abort(t);
      store_->EndTopLevel(t);
      return stale;
    }
  }
  TxnReads::End(t);
  Status st = DbStatus(t->commit(t, 0), "commit");
  if (top) store_->EndTopLevel(t, st.ok());
  if (st.ok() && parent_) {
    parent_->holds_.insert(parent_->holds_.end(), holds_.begin(), holds_.end());
    holds_.clear();
  } else if (st.ok()) {
    holds_.clear();
  } else {
    (void)UndoHolds();  // a failed commit aborted the transaction
  }
  if (st.ok() && !parent_ && store_) store_->NoteTopLevelCommit();
  return st;
}

Status Transaction::CommitDeferred(DB_TXN* t) {
  // Nothing to make durable: only whether what it took from the cache is still so.
  Status held = store_->BeforeTopLevelCommit(t, writes_at_begin_);
  if (!held.ok()) (void)UndoHolds();
  holds_.clear();
  store_->EndTopLevel(t, held.ok());
  return held;
}

uint32_t Transaction::id() const { return txn_ && !deferred_ ? txn_->id(txn_) : 0; }

bool Transaction::wrote() const { return store_ && store_->WritesMade() != writes_at_begin_; }

Status Transaction::CheckCachedReads() const {
  if (txn_ && !parent_ && store_ && !store_->CachedReadsHold(txn_)) {
    return Status::Conflict("records this call read changed meanwhile");
  }
  return Status::Ok();
}

Status Transaction::Abort() {
  if (!txn_) return Status::Ok();
  DB_TXN* t = txn_;
  txn_ = nullptr;
  // Before the abort lets go of the records that the undone releases needed (open_holds.h).
  Status undone = UndoHolds();
  if (deferred_) {
    store_->EndTopLevel(t);
    return undone;
  }
  TxnReads::End(t);
  Status st = DbStatus(t->abort(t), "abort");
  if (!parent_ && store_) store_->EndTopLevel(t);
  return st.ok() ? undone : st;
}

}  // namespace amino::schema
