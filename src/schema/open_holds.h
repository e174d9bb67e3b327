// Open file descriptions as Berkeley DB locks ("holds") instead of counts written to the Data
// database. Each process keeps, per file it has open, how many descriptions it holds and one
// shared lock on the file's hold object in the environment's lock region. Removing a file's last
// name asks whether anyone holds it: this process (its count), or another one (the process's
// locker asks, without waiting, for an exclusive lock on the object, which Berkeley DB grants
// to a locker that already shares it when nobody else does). Held, the file becomes an orphan;
// the last close anywhere frees it. Opening and closing thus write nothing: no log record and
// no commit that must reach the log.
//
// The rule that keeps the question's answer true: a hold is given up (Release, the last
// description of a process) only by a transaction that has read the file's Data record, and
// the question is asked (Held) only by one that holds the record for writing; both keep their
// lock until they end. A remover and a closer, or two closers of a file without a name, thus
// take turns, and exactly one of them sees the file unheld and frees it. A hold is taken
// without that lock: taking one never makes a file freed.
//
// Calls that read a snapshot (TxnOptions::snapshot) take and give up holds without those
// record locks: they see a past state, in which a file another transaction is removing may
// still have its name. The remover therefore also marks the file *decided* (Decide: a write
// lock on a second object, kept by its transaction until it ends) before it asks, and a
// snapshot reader first makes sure no decision is under way (Undecided: a read lock kept by its
// own transaction) and then how the file is as last committed (Store::CommittedState): a
// decision made since its snapshot began is then either visible or waits for it.
//
// Holds follow transactions: one taken or given up inside a transaction is undone if it aborts
// (Transaction keeps the list). Undoing a release takes the lock again before the aborting
// transaction lets go of the record, so nobody can free the file in between. A process that
// dies keeps its locks in the region until recovery rebuilds it; its orphans are freed then
// (FileSystem::Open).
#pragma once

#include <db.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "schema/records.h"
#include "schema/status.h"

namespace amino::schema {

class OpenHolds {
 public:
  explicit OpenHolds(DB_ENV* env) : env_(env) {}
  ~OpenHolds();  // lets go of every lock (call Clear() first to know whether any was held)
  OpenHolds(const OpenHolds&) = delete;
  OpenHolds& operator=(const OpenHolds&) = delete;

  // One more description of `id`.
  Status Acquire(FileId id);
  // One description fewer (false when this process held none); the caller's transaction has
  // read the file's Data record.
  bool Release(FileId id);
  // Undoes an Acquire (+1) or a Release (-1) of an aborted transaction.
  Status Undo(FileId id, int delta);

  // Whether any process holds `id` (this one included); the caller holds the file's Data
  // record for writing, and has called Decide.
  Result<bool> Held(FileId id);
  // Marks `id` decided on until the transaction `txn` ends; a conflict while a snapshot
  // reader looks at it (never waits). Files share decision marks by buckets of their ids.
  Status Decide(FileId id, DB_TXN* txn);
  // A snapshot reader's check, kept until `txn` ends: a conflict while a transaction that
  // decided on `id` is under way (never waits).
  Status Undecided(FileId id, DB_TXN* txn);
  // An application transaction's turn at `id`: transactions that open one file take turns, a
  // write lock until `txn` ends (a conflict, never a wait). Files share turns by buckets of
  // their ids, as decisions do; no record or page of a database is locked, so opens of
  // different files never wait for each other.
  Status TakeTurn(FileId id, DB_TXN* txn);
  // How many files this process holds.
  size_t files() const;
  // Releases every lock and forgets every count.
  void Clear();

 private:
  struct Entry {
    int64_t count = 0;  // descriptions held (uncommitted changes included)
    DB_LOCK lock{};
  };
  Status Locker();
  Status Lock(FileId id, Entry& e);
  // A lock on `id`'s decision object (or its turn object) for `txn`'s locker, or a conflict.
  Status LockDecision(FileId id, DB_TXN* txn, db_lockmode_t mode, const char* what,
                      bool turn = false);
  void Unlock(FileId id, Entry& e);

  DB_ENV* env_;
  u_int32_t locker_ = 0;
  mutable std::mutex mu_;
  std::unordered_map<FileId, Entry> held_;  // only files with count > 0, each locked
};

}  // namespace amino::schema
