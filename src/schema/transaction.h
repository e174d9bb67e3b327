// RAII Berkeley DB transactions: a transaction that goes out of scope uncommitted is aborted.
#pragma once

#include <cstdint>
#include <vector>

#include "schema/records.h"
#include "schema/status.h"

// Berkeley DB's transaction handle (<db.h> declares it so), named without exporting <db.h>.
struct __db_txn;
typedef struct __db_txn DB_TXN;

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
  // A top-level transaction that may take records from the store's read cache (read_cache.h);
  // its commit may then fail with a conflict, to be run again.
  bool cached = false;
  // A top-level transaction that reads the last committed state without taking locks
  // (Berkeley DB's snapshot isolation): it waits for nobody and holds up nobody. It must only
  // read: a write, or taking or giving up a hold on an open file, fails with a conflict.
  bool snapshot = false;
  // A top-level, cached transaction that begins no Berkeley DB transaction (the begin and
  // commit of an empty one cost about a microsecond): it may only take records from the read
  // cache. Anything else (a record not cached, a write, a lock) fails with a conflict, and the
  // caller runs the call again without it (FileSystem::DeferralRefused says it was that).
  // Where another cached transaction is under way it is an ordinary one.
  bool deferred = false;
};

class Store;

class Transaction {
 public:
  Transaction() = default;
  // `store`, when given, is told of each top-level commit (it checkpoints now and then).
  Transaction(DB_TXN* txn, Transaction* parent, Store* store = nullptr,
              uint64_t writes_at_begin = 0, bool deferred = false)
      : txn_(txn),
        parent_(parent),
        store_(store),
        writes_at_begin_(writes_at_begin),
        deferred_(deferred) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  Transaction(Transaction&& o) noexcept
      : txn_(o.txn_),
        parent_(o.parent_),
        store_(o.store_),
        writes_at_begin_(o.writes_at_begin_),
        deferred_(o.deferred_),
        holds_(std::move(o.holds_)) {
    o.txn_ = nullptr;
  }
  Transaction& operator=(Transaction&& o) noexcept;
  ~Transaction();

  Status Commit();
  Status Abort();
  // Before an answer that will not be committed (a call that failed): a conflict when records
  // it took from the store's read cache changed since it began (the caller runs it again).
  Status CheckCachedReads() const;
  bool active() const { return txn_ != nullptr; }
  // Whether anything was written since this transaction began (by it or a child; calls are
  // served one at a time, so nothing else writes meanwhile in this process).
  bool wrote() const;
  bool nested() const { return parent_ != nullptr; }
  // Begun with TxnOptions::deferred: raw() is the store's stand-in, no Berkeley DB transaction.
  bool deferred() const { return deferred_; }
  DB_TXN* raw() const { return txn_; }
  uint32_t id() const;
  // A hold on an open file taken (+1) or released (-1) in this transaction (OpenHolds): at
  // commit it passes to the parent, or stays once top-level; an abort undoes it.
  void NoteHold(FileId id, int delta) { holds_.push_back({id, delta}); }

 private:
  DB_TXN* txn_ = nullptr;
  Transaction* parent_ = nullptr;
  Store* store_ = nullptr;
  uint64_t writes_at_begin_ = 0;  // store_->WritesMade() when it began
  bool deferred_ = false;
  struct HoldChange {
    FileId id;
    int delta;
  };
  std::vector<HoldChange> holds_;
  Status UndoHolds();
  Status CommitDeferred(DB_TXN* t);
};

// Maps a Berkeley DB return code to a Status (DB_LOCK_DEADLOCK and DB_LOCK_NOTGRANTED become
// conflicts; everything else but 0 a storage failure).
Status DbStatus(int ret, const char* what);

}  // namespace amino::schema
