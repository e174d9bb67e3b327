// The Berkeley DB environment of one file system and its five databases, with typed primitives
// over string keys and values. Used by FileSystem, fsck and the tools; knows no file semantics.
#pragma once

#include <db.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema/checkpointer.h"
#include "schema/open_holds.h"
#include "schema/read_cache.h"
#include "schema/records.h"
#include "schema/status.h"
#include "schema/store_space.h"

namespace amino::schema {

class Store {
 public:
  struct Options {
    bool create = false;             // create the environment and databases (mkfs)
    size_t cache_bytes = 128 << 20;  // the monitor's size too: the first opener sets it
    bool force_recovery = false;     // run recovery even if another process seems alive
    // With `create`: the layout made (records.h, Superblock::format). Tests make format 1.
    uint32_t format = kFormat;
    // New log files are written with zeros when made (DB_LOG_ZERO), as `create` does for the
    // first: a commit flushed to a log that grows makes the file system commit its size too,
    // a second write per flush; within a file already written it flushes the log alone.
    bool zero_log = false;
  };
  // Opens the environment in `dir`. When no other process has it open, runs recovery and says
  // so through sole_user(); the caller then clears state left by dead processes.
  static Result<std::unique_ptr<Store>> Open(const std::string& dir, const Options& options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  DB_ENV* env() const { return env_; }
  DB* path() const { return path_; }
  DB* data() const { return data_; }
  DB* orphan() const { return orphan_; }
  DB* names() const { return names_; }
  DB* xattr() const { return xattr_; }
  // Where the file records (InodeValue, under IdKey) are: their own database with small pages
  // since format 2; in format 1, beside the file pages in the Data database.
  DB* inode() const { return inode_ ? inode_ : data_; }
  uint32_t format() const { return inode_ ? 2 : 1; }
  // True when no other process had the file system open when this one opened it: state left by
  // dead users (open counts, orphans) may then be cleared. Until ShareWithOthers() is called,
  // other openers wait.
  bool sole_user() const { return sole_user_; }
  // True when this sole user found the file system closed cleanly by the last user: recovery
  // was not needed, and no dead user left open counts or orphans behind.
  bool clean_start() const { return clean_start_; }
  Status ShareWithOthers();
  const std::string& dir() const { return dir_; }

  // nullopt when the key is absent. A call of its own may be answered from the read cache
  // (read_cache.h), without a lock.
  Result<std::optional<std::string>> Get(DB* db, DB_TXN* txn, std::string_view key,
                                         uint32_t flags = 0);
  // Get through Berkeley DB, whose lock on the record the transaction keeps until it ends: for
  // protocols that rest on the lock itself, not only on the value (open_holds.h).
  Result<std::optional<std::string>> GetLocked(DB* db, DB_TXN* txn, std::string_view key);
  // Records a call of its own read another way (a cursor's bulk read, under the same page
  // locks as a Get) are kept in the read cache as a Get would keep them: a listing's entries
  // are what the calls after it (stat of each entry) look up.
  void KeepReads(DB* db, DB_TXN* txn, std::span<const ReadCache::Record> records);
  // Bytes [from, from + len) of the record at `key`, copied into `buf` straight from Berkeley
  // DB's page (not cached): how many the record had there, or nullopt when the key is absent.
  Result<std::optional<size_t>> GetPart(DB* db, DB_TXN* txn, std::string_view key, uint32_t from,
                                        void* buf, uint32_t len);
  Status Put(DB* db, DB_TXN* txn, std::string_view key, std::string_view value, uint32_t flags = 0);
  // Ok also when the key was absent.
  Status Del(DB* db, DB_TXN* txn, std::string_view key);
  // Deletes one duplicate (key, value) of a sorted-duplicates database; ok if absent.
  Status DelDup(DB* db, DB_TXN* txn, std::string_view key, std::string_view value);

  // How many writes (puts and deletes) this store has made so far: a caller that compares it
  // before and after an operation knows whether the operation changed anything here.
  uint64_t WritesMade() const { return writes_; }
  // Symbolic links that path walks in this store followed (resolve.cc), until taken: Linux
  // touches a followed link's access time whatever becomes of the call.
  void NoteFollowedLink(FileId id) { followed_.push_back(id); }
  std::vector<FileId> TakeFollowedLinks() { return std::exchange(followed_, {}); }
  // Says that damage was found (fsck's violations, a record that does not decode): the file
  // system is then not marked clean at close. Failures of Berkeley DB calls count already.
  static void NoteDamage();

  // Top-level transactions (read_cache.h). `cached`: this one may read from the cache (at most
  // one at a time does; the others read through Berkeley DB). Returns the generation it began at.
  void BeginTopLevel(DB_TXN* txn, bool cached, bool snapshot = false);
  // A conflict when `txn` is a snapshot transaction (TxnOptions::snapshot), which must not
  // write or change holds; else Ok.
  Status MayChange(DB_TXN* txn) const;
  // A conflict when `txn` is a snapshot transaction and `db` the Data database, which keeps no
  // page versions: its reads would be of the present, not of the snapshot.
  Status MayRead(DB* db, DB_TXN* txn) const;
  bool InSnapshot(DB_TXN* txn) const { return txn && txn == snapshot_txn_; }
  // The stand-in handle of a deferred transaction (TxnOptions::deferred), or nullptr when one
  // is under way already or there is no read cache. Never passed to Berkeley DB: MayRead and
  // MayChange refuse it (deferral_refused() then says so), its id is 0 (no locker).
  DB_TXN* BeginDeferred();
  // The transaction a deferred transaction's reads of the database go through: one of the
  // store's own, kept across calls, that reads committed records (DB_READ_COMMITTED: a read
  // lock lasts the read) and never waits for a lock (DB_TXN_NOWAIT: another transaction's
  // write lock is a conflict). What a call reads so is as good as what it took from the cache:
  // true at its commit only while the generation holds, which the deferred commit checks
  // (read_cache.h). Such a call thus begins and commits no Berkeley DB transaction of its own.
  // Reads that must keep their lock (GetLocked) and every change are still refused it. Any
  // other `txn` is returned as it is.
  Result<DB_TXN*> ReadVia(DB_TXN* txn);
  bool IsDeferred(DB_TXN* txn) const { return txn && txn == &deferred_handle_; }
  // Whether the last deferred transaction was refused something only a real one can do.
  bool deferral_refused() const { return deferral_refused_; }
  // Whether `txn` is a call of its own (the cached top-level transaction), not part of an
  // application's transaction.
  bool InCallOfItsOwn(DB_TXN* txn) const { return txn && txn == cache_txn_; }
  // New file ids for calls of their own come in runs: consecutive ids from a random start
  // (`random`), until EndRun or the ids' end.
  FileId NextRunId(FileId (*random)()) {
    if (run_next_ == 0 || run_next_ >= kRunIdEnd) run_next_ = random();
    return run_next_++;
  }
  void EndRun() { run_next_ = 0; }
  // Whether the last snapshot transaction was refused a change (MayChange).
  bool snapshot_refused() const { return snapshot_refused_; }
  // Whether file `id` exists as last committed, and with a name or not (from the Names and
  // Orphan databases, in a snapshot transaction of its own: no lock, no wait).
  enum class Committed { kGone, kNamed, kNameless };
  Result<Committed> CommittedState(FileId id);
  // Before its commit: fails with a conflict (the transaction must then be aborted) when it
  // relied on the cache and another process committed since it began; advances the generation
  // when the transaction (or, conservatively, anything since `writes_at_begin`) wrote.
  Status BeforeTopLevelCommit(DB_TXN* txn, uint64_t writes_at_begin);
  // After its commit (`committed`) or abort. The records a committed transaction that read from
  // the cache wrote go into the cache: the next call finds them there.
  void EndTopLevel(DB_TXN* txn, bool committed = false);
  // Whether what `txn` took from the cache is still what is committed (always, for others).
  bool CachedReadsHold(DB_TXN* txn) const;
  ReadCache* read_cache() { return cache_.get(); }
  const ReadCache* read_cache() const { return cache_.get(); }
  // A write of `key` of `db` (Put, Del and cursor deletes call it): the cache forgets the key,
  // and the transaction reading from the cache, if one runs (the write is its own or its
  // child's: calls are served one at a time), stops doing so.
  void NoteWrite(DB* db, std::string_view key);

  // Ok, or ENOSPC when the file system holding the database is full (store_space.h): asked by
  // every operation that adds about `bytes`, before it writes.
  Status Room(uint64_t bytes) {
    added_ += bytes;
    return space_->Room(bytes);
  }
  const StoreSpace& space() const { return *space_; }

  Status Checkpoint();
  // Called after each top-level commit; checkpoints every so often so the log stays bounded.
  void NoteTopLevelCommit();
  // The files this process holds open (see open_holds.h).
  OpenHolds& holds() { return *holds_; }

 private:
  Store() = default;
  std::string dir_;
  DB_ENV* env_ = nullptr;
  DB* path_ = nullptr;
  DB* data_ = nullptr;
  DB* orphan_ = nullptr;
  DB* names_ = nullptr;
  DB* xattr_ = nullptr;
  DB* inode_ = nullptr;  // format 2 and later
  int users_lock_fd_ = -1;
  bool sole_user_ = false;
  bool clean_start_ = false;
  uint64_t damage_at_open_ = 0;
  std::atomic<uint32_t> commits_since_checkpoint_{0};
  std::unique_ptr<Checkpointer> checkpointer_;  // stopped first when the store closes
  std::unique_ptr<OpenHolds> holds_;
  std::unique_ptr<StoreSpace> space_;
  uint64_t added_ = 0;  // bytes calls added (Room), for the checkpoint's timing
  uint64_t added_at_checkpoint_ = 0;
  // On a full file system: the log files that can go back once a checkpoint is past
  // `log_kbytes` of log (0: any); with `count`, the Data database's free pages are counted
  // (StoreSpace::NoteFreeInside) and go back to the file system when that is affordable.
  void Reclaim(bool count, uint32_t log_kbytes);
  // Records deleted from the Data database (pages they may have freed), and how many when its
  // free pages were last counted.
  std::atomic<uint64_t> data_deletes_{0};
  uint64_t data_deletes_counted_ = 0;
  int DbIndex(DB* db) const;
  Result<std::optional<std::string>> GetLocked(DB* db, DB_TXN* txn, std::string_view key,
                                               uint32_t flags);
  // Get past what the transaction read already (txn_reads.h).
  Result<std::optional<std::string>> ReadThroughCache(DB* db, DB_TXN* txn, std::string_view key,
                                                      uint32_t flags);
  std::unique_ptr<ReadCache> cache_;
  DB_TXN* cache_txn_ = nullptr;    // the transaction that may read from the cache
  uint64_t cache_txn_began_ = 0;   // the generation it began at
  uint64_t cache_txn_serial_ = 0;  // counts the cached transactions begun
  bool cache_txn_wrote_ = false;   // it wrote: it reads past the cache from then on
  bool cache_txn_relied_ = false;  // it took a value from the cache
  // What the cached transaction wrote with Put and Del (the Path, Orphan and Inode records of
  // files): the cache takes these once it commits. A key written any other way (a cursor, a
  // child transaction) is dropped from here (NoteWrite), and only forgotten by the cache.
  struct Written {
    int db;
    std::string key;
    std::optional<std::string> value;  // nullopt: deleted
  };
  std::vector<Written> cache_txn_writes_;
  std::mutex cache_txn_writes_mu_;  // NoteWrite may come from any thread
  void NoteWritten(DB* db, DB_TXN* txn, std::string_view key,
                   std::optional<std::string_view> value);
  DB_TXN* snapshot_txn_ = nullptr;  // the snapshot transaction under way (only reads)
  mutable bool snapshot_refused_ = false;
  void EndReader();
  DB_TXN deferred_handle_{};  // BeginDeferred's stand-in: zeroed but for its id function
  DB_TXN* reader_ = nullptr;  // ReadVia's; renewed every so many deferred calls
  uint32_t reader_calls_ = 0;
  bool deferred_busy_ = false;
  mutable bool deferral_refused_ = false;
  std::string user_file_;  // DBDIR/amino.user.*, removed at a clean close
  uint64_t writes_ = 0;
  static constexpr FileId kRunIdEnd = FileId{1} << 63;  // ids are positive as signed inos
  FileId run_next_ = 0;                                 // 0: no run under way
  std::vector<FileId> followed_;
  friend class Cursor;  // its deletes are writes too
};

// RAII cursor.
class Cursor {
 public:
  Cursor(DB* db, DB_TXN* txn, uint32_t flags = 0);
  ~Cursor();
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;
  Status status() const { return open_status_; }
  // Positions at the first key >= `key` (DB_SET_RANGE). false at the end.
  Result<bool> SeekRange(std::string_view key);
  // Positions at exactly (key, value) in a duplicates database (DB_GET_BOTH). false if absent.
  Result<bool> SeekBoth(std::string_view key, std::string_view value);
  Result<bool> First();
  Result<bool> Next();
  Result<bool> NextDup();
  // Positions at exactly `key`, taking the record for writing (DB_RMW) but copying none of its
  // value: false when it is absent. For a record about to be replaced whole (ReplaceCurrent).
  Result<bool> SeekToReplace(std::string_view key);
  // Replaces the value of the record the cursor is at (DB_CURRENT: no second search).
  Status ReplaceCurrent(std::string_view value);
  // Replaces bytes [offset, offset + bytes.size()) of the current record's value, which grows
  // (with zeros up to `offset`) where it is shorter; the rest stays (DB_DBT_PARTIAL).
  Status ReplaceInCurrent(uint32_t offset, std::string_view bytes);
  Status Delete();
  // From now on the cursor's moves copy no values (value() is empty): for a walk that only
  // deletes.
  void KeysOnly();
  // Bulk reads (DB_MULTIPLE_KEY): one search fills a buffer with the records from the first
  // key >= `key` on, as many as fit (one page's worth; each NextBatch twice the last, up to 64
  // KiB), at a small part of the cost of a move per record; the locks taken are the same page
  // locks. Each record then comes from NextInBatch. false at the end of the database.
  Result<bool> SeekRangeBatch(std::string_view key);
  // The records after the last one of the batch; false at the end.
  Result<bool> NextBatch();
  // The next record of the batch in `key` and `value` (valid until the next batch), or false
  // when the batch is used up.
  bool NextInBatch(std::string_view* key, std::string_view* value);
  // The record the cursor is at, in the cursor's own buffers: valid until its next move.
  std::string_view key() const { return {static_cast<const char*>(k_.data), k_.size}; }
  std::string_view value() const { return {static_cast<const char*>(v_.data), v_.size}; }

 private:
  Result<bool> Get(uint32_t op);
  Result<bool> GetBatch(uint32_t op);
  Status PutCurrent(DBT& value);  // a write of the current record (ReplaceCurrent, ...InCurrent)
  DBC* dbc_ = nullptr;
  DBT k_, v_;                          // DB_DBT_REALLOC buffers, reused across calls
  std::unique_ptr<uint32_t[]> batch_;  // bulk buffer (aligned for the batch's offsets)
  DBT batch_dbt_{};                    // its ulen: the size the last batch asked for
  u_int32_t batch_cap_ = 0;            // the buffer's size
  u_int32_t batch_least_ = 0;          // room for the largest record met
  void* batch_at_ = nullptr;           // DB_MULTIPLE_KEY_NEXT's position; nullptr: used up
  Status open_status_;
};

}  // namespace amino::schema
