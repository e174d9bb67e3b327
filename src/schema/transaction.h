// RAII Berkeley DB transactions: a transaction that goes out of scope uncommitted is aborted.
#pragma once

#include <db.h>

#include "schema/status.h"

namespace amino::schema {

// How a top-level commit reaches stable storage.
enum class Durability {
  kNoSync,       // log stays in memory: lost if the process dies (DB_TXN_NOSYNC)
  kWriteNoSync,  // log written to the OS: survives a process crash, not a machine crash
  kSync,         // log flushed to disk: survives a machine crash
};

struct TxnOptions {
  Durability durability = Durability::kWriteNoSync;
  // Fail with a conflict instead of waiting for a lock (for callers that serve many clients from
  // one thread and must never block on one of them).
  bool nowait = false;
};

class Store;

class Transaction {
 public:
  Transaction() = default;
  // `store`, when given, is told of each top-level commit (it checkpoints now and then).
  Transaction(DB_TXN* txn, Transaction* parent, Store* store = nullptr)
      : txn_(txn), parent_(parent), store_(store) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  Transaction(Transaction&& o) noexcept
      : txn_(o.txn_), parent_(o.parent_), store_(o.store_), opens_(o.opens_) {
    o.txn_ = nullptr;
  }
  Transaction& operator=(Transaction&& o) noexcept;
  ~Transaction();

  Status Commit();
  Status Abort();
  bool active() const { return txn_ != nullptr; }
  bool nested() const { return parent_ != nullptr; }
  DB_TXN* raw() const { return txn_; }
  uint32_t id() const { return txn_ ? txn_->id(txn_) : 0; }
  // Open descriptions counted (+1) or released (-1) in the schema by this transaction: at
  // commit they pass to the parent, or to the store once top-level (aborted, they vanish as
  // the counts do).
  void CountOpens(int64_t delta) { opens_ += delta; }

 private:
  DB_TXN* txn_ = nullptr;
  Transaction* parent_ = nullptr;
  Store* store_ = nullptr;
  int64_t opens_ = 0;
};

// Maps a Berkeley DB return code to a Status (DB_LOCK_DEADLOCK and DB_LOCK_NOTGRANTED become
// conflicts; everything else but 0 a storage failure).
Status DbStatus(int ret, const char* what);

}  // namespace amino::schema
