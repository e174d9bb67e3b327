#include "schema/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "schema/records.h"
#include "schema/store_env.h"
#include "schema/store_files.h"
#include "schema/txn_reads.h"

namespace amino::schema {

using namespace store_files;
using namespace store_env;

namespace {

// A checkpoint is taken once this much log (KiB) was written since the last one
// (NoteTopLevelCommit says why).
constexpr uint32_t kCheckpointKbytes = 64 * 1024;

std::optional<std::string_view> ViewOf(const std::optional<std::string>& value) {
  if (!value) return std::nullopt;
  return std::string_view(*value);
}

}  // namespace

// Long by design: the steps of opening (the users' lock, recovery when alone, the environment,
// the databases, the clean marker) must happen in this order; kept together so it shows.
Result<std::unique_ptr<Store>> Store::Open(const std::string& dir, const Options& options) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return Status::Storage(errno, dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return Status::Storage(ENOTDIR, dir + ": not a directory");
  if (!options.create) {
    for (const char* f : kDatabaseFiles) {
      const std::string path = dir + "/" + f;
      if (faccessat(AT_FDCWD, path.c_str(), R_OK | W_OK, AT_EACCESS) == 0) continue;
      if (errno == EACCES || errno == EPERM || errno == EROFS) {
        return PermissionDenied(dir, path, errno);
      }
      return Status::Storage(ENOENT, dir + ": not an Amino file system (no " + f + ")");
    }
  }

  std::unique_ptr<Store> s(new Store());
  s->dir_ = dir;
  s->damage_at_open_ = DamageSeen();
  s->space_ = std::make_unique<StoreSpace>(dir);
  s->space_->MakeRoomToOpen();
  bool sole = false;
  Result<int> lock = LockUsers(dir, &sole);
  if (!lock.ok()) {
    const int err = lock.status().error();
    if (err == EACCES || err == EPERM) return PermissionDenied(dir, dir + "/amino.lock", err);
    return lock.status();
  }
  s->users_lock_fd_ = *lock;
  if (options.force_recovery && !sole) {
    return Status::Storage(EBUSY, dir + ": in use by another process; recovery needs it alone");
  }
  s->sole_user_ = sole;

  // DB_REGISTER with DB_RECOVER recovers exactly when a registered process died. The sole user
  // recovers unconditionally first, unless the last user closed cleanly: that also rebuilds
  // the shared regions, so nothing cached by an earlier user (or copied along with the files)
  // is trusted.
  u_int32_t flags = DB_CREATE | DB_INIT_TXN | DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL |
                    DB_THREAD | DB_REGISTER | DB_RECOVER;
  if (sole) {
    // Whatever a user left behind is stale now; a file of one that died also means that the
    // marker, if any, must not be trusted.
    const bool marked = !options.create && TakeCleanMarker(dir);
    const std::vector<std::string> stale = UserFiles(dir);
    s->clean_start_ = marked && stale.empty() && !options.force_recovery;
    for (const std::string& f : stale) unlink(f.c_str());
  }
  AMINO_ASSIGN_OR_RETURN(s->user_file_, CreateUserFile(dir));
  if (sole && !options.create && !s->clean_start_) {
    int ret = Recover(dir, flags & ~DB_REGISTER, options.cache_bytes);
    if (ret != 0) {
      // Region files a crash left half-written (a machine that went down before their pages
      // reached the disk) can keep recovery from joining them. They are only the shared
      // memory of processes that are gone (this one is the sole user): made anew.
      RemoveRegionFiles(dir);
      ret = Recover(dir, flags & ~DB_REGISTER, options.cache_bytes);
    }
    if (ret != 0) return Fail(ret, dir + ": recovery");
  }
  AMINO_RETURN_IF_ERROR(CreateEnv(&s->env_, options.cache_bytes));
  DB_ENV* env = s->env_;
  if (options.zero_log || options.create) env->log_set_config(env, DB_LOG_ZERO, 1);
  int ret = env->open(env, dir.c_str(), flags, kFileMode);
  if (ret == EACCES || ret == EPERM) return PermissionDenied(dir, dir + ": open environment", ret);
  if (ret != 0) return Fail(ret, dir + ": open environment");
  s->holds_ = std::make_unique<OpenHolds>(env);
  s->checkpointer_ = std::make_unique<Checkpointer>(env, kCheckpointKbytes);
  Store* store = s.get();
  s->space_->SetReclaimer([store] {
    const bool deleted = store->data_deletes_.load() != store->data_deletes_counted_;
    store->Reclaim(store->space_->ReclaimDue() || deleted, 0);
  });
  auto cache = ReadCache::Open(dir);
  if (!cache.ok()) return cache.status();
  s->cache_ = std::move(*cache);
  MakeFilesPrivate(dir);

  // The metadata databases keep versions of their pages (DB_MULTIVERSION), so that a call that
  // met another transaction's lock may read their last committed state instead of waiting
  // (TxnOptions::snapshot). The Data database does not: a writer copies each page it changes
  // in a multiversion database, and its 64 KiB pages made a 4 KiB write 60% dearer.
  struct Spec {
    DB** handle;
    const char* file;
    u_int32_t pagesize;
    bool dupsort;
    bool versions;
  };
  const Spec specs[] = {
      {&s->path_, "path.db", 0, false, true},
      {&s->data_, "data.db", kDataPageSize, false, false},
      {&s->orphan_, "orphan.db", 0, false, true},
      {&s->names_, "names.db", 0, true, true},
      {&s->xattr_, "xattr.db", 0, false, true},
  };
  auto open_db = [&](const Spec& spec) -> Status {
    ret = db_create(spec.handle, env, 0);
    if (ret != 0) return Fail(ret, "db_create");
    DB* db = *spec.handle;
    if (spec.pagesize) db->set_pagesize(db, spec.pagesize);
    if (spec.dupsort) db->set_flags(db, DB_DUPSORT);
    db->app_private = s.get();  // cursor writes reach the read cache (Cursor::Delete)
    // Page checksums: a damaged page is an error, never silently wrong data.
    db->set_flags(db, DB_CHKSUM);
    u_int32_t oflags = DB_THREAD | DB_AUTO_COMMIT | (spec.versions ? DB_MULTIVERSION : 0) |
                       (options.create ? DB_CREATE | DB_EXCL : 0);
    ret = db->open(db, nullptr, spec.file, nullptr, DB_BTREE, oflags, kFileMode);
    if (ret != 0) return Fail(ret, dir + "/" + spec.file);
    return Status::Ok();
  };
  for (const Spec& spec : specs) AMINO_RETURN_IF_ERROR(open_db(spec));
  uint32_t format = options.format;
  if (!options.create) {
    // Without waiting: a transaction of another process that wrote beside the superblock (one
    // page of a small file system) must not hold up the start. That process opened the
    // database as an Amino file system, so its lock is as good an answer as the record.
    DB_TXN* t = nullptr;
    ret = env->txn_begin(env, nullptr, &t, DB_TXN_NOWAIT);
    if (ret != 0) return Fail(ret, dir + ": begin");
    auto sb = s->GetLocked(s->data_, t, IdKey(kSuperblockId));
    (void)t->abort(t);  // it only read
    if (!sb.ok() && !sb.status().is_conflict()) return sb.status();
    Superblock super;
    if (sb.ok() && sb.value() && SuperblockFormat(*sb.value()) > kFormat) {
      return Status::Storage(EPROTONOSUPPORT, dir + ": made by a newer Amino (layout " +
                                                  std::to_string(SuperblockFormat(*sb.value())) +
                                                  "; this one reads layouts 1 to " +
                                                  std::to_string(kFormat) + ")");
    }
    if (sb.ok() && (!sb.value() || !DecodeSuperblock(*sb.value(), &super))) {
      return Status::Storage(EINVAL, dir + ": not an Amino file system (bad superblock)");
    }
    // A superblock locked by another user's transaction: that user opened the file system with
    // its layout, whose files are on disk.
    const bool inode_file = access((dir + "/" + kInodeDatabase).c_str(), F_OK) == 0;
    format = sb.ok() ? super.format : (inode_file ? 2 : 1);
  }
  if (format >= 2) AMINO_RETURN_IF_ERROR(open_db({&s->inode_, kInodeDatabase, 0, false, true}));
  AMINO_RETURN_IF_ERROR(
      s->space_->Attach({s->path_, s->data_, s->orphan_, s->names_, s->xattr_, s->inode_}));
  return s;
}

Store::~Store() {
  checkpointer_.reset();
  bool clean = false;
  if (env_) {
    EndReader();
    // A file still held open here is released below; if it has no name left it stays an
    // orphan, which only the scan of a recovering opener frees.
    const bool checkpointed = data_ && Checkpoint().ok();
    clean = checkpointed && (!holds_ || holds_->files() == 0) && DamageSeen() == damage_at_open_;
    if (holds_) holds_->Clear();
    for (DB* db : {path_, data_, orphan_, names_, xattr_, inode_}) {
      if (!db) continue;
      // The checkpoint just wrote and flushed every page this process changed: a close need
      // not flush each file once more.
      const int ret = db->close(db, checkpointed ? DB_NOSYNC : 0);
      if (ret == DB_RUNRECOVERY) Abandon(db);
      if (ret != 0) clean = false;
    }
    // Fails when a transaction is still open.
    const int ret = env_->close(env_, 0);
    if (ret == DB_RUNRECOVERY) Abandon(env_);
    if (ret != 0) clean = false;
  }
  if (users_lock_fd_ >= 0) {
    if (clean && unlink(user_file_.c_str()) == 0) MarkCleanIfLast(dir_, users_lock_fd_);
    close(users_lock_fd_);
  }
}

Result<std::optional<std::string>> Store::Get(DB* db, DB_TXN* txn, std::string_view key,
                                              uint32_t flags) {
  // Reads with flags (DB_RMW takes the record for writing) always go to Berkeley DB.
  if (flags & DB_RMW) AMINO_RETURN_IF_ERROR(MayChange(txn));
  // A deferred transaction reads the cache only; what it read there is its own reads.
  const int db_index = txn && flags == 0 && !IsDeferred(txn) ? DbIndex(db) : -1;
  if (db_index >= 0) {
    if (const std::optional<std::string>* seen = TxnReads::Find(this, txn, db_index, key)) {
      return *seen;
    }
  }
  auto value = ReadThroughCache(db, txn, key, flags);
  if (db_index >= 0 && value.ok()) TxnReads::Remember(this, txn, db_index, key, *value);
  return value;
}

Result<std::optional<std::string>> Store::ReadThroughCache(DB* db, DB_TXN* txn,
                                                           std::string_view key, uint32_t flags) {
  const bool cacheable = cache_ && txn && txn == cache_txn_ && !cache_txn_wrote_ && flags == 0;
  const int index = cacheable ? DbIndex(db) : -1;
  if (index >= 0) {
    if (std::optional<ReadCache::Hit> hit = cache_->Find(index, key)) {
      // Kept from before this transaction: true only while nobody else commits.
      if (hit->reader != cache_txn_serial_) cache_txn_relied_ = true;
      return std::move(hit->value);
    }
  }
  AMINO_ASSIGN_OR_RETURN(DB_TXN * via, ReadVia(txn));
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> value, GetLocked(db, via, key, flags));
  if (index >= 0) {
    // A value another process committed since this transaction began: it must not meet values
    // cached from before (a name from one state, its record from another). Nothing cached
    // relied on yet: the cache is emptied and this transaction goes on from the new state.
    if (cache_->Shared() != cache_txn_began_) {
      if (cache_txn_relied_) return Status::Conflict("records this call read changed meanwhile");
      cache_txn_began_ = cache_->Refresh();
    }
    // Read under a lock (this transaction's, or the reader's for the read, when nobody held the
    // record for writing): committed, and true until someone writes it.
    cache_->Insert(index, key, ViewOf(value), cache_txn_serial_);
  }
  return value;
}

void Store::KeepReads(DB* db, DB_TXN* txn, std::span<const ReadCache::Record> records) {
  if (!cache_ || !txn || txn != cache_txn_ || cache_txn_wrote_) return;
  const int index = DbIndex(db);
  // Another process committed since this transaction began: its reads are not mixed with
  // what the cache holds (ReadThroughCache), and this one is simply not kept.
  if (index < 0 || cache_->Shared() != cache_txn_began_) return;
  cache_->InsertMany(index, records, cache_txn_serial_);
}

Result<std::optional<std::string>> Store::GetLocked(DB* db, DB_TXN* txn, std::string_view key) {
  return GetLocked(db, txn, key, 0);
}

Result<std::optional<std::string>> Store::GetLocked(DB* db, DB_TXN* txn, std::string_view key,
                                                    uint32_t flags) {
  AMINO_RETURN_IF_ERROR(MayRead(db, txn));
  DBT k = Dbt(key);
  DBT v = MallocDbt();
  int ret = db->get(db, txn, &k, &v, flags);
  std::optional<std::string> value;
  if (ret == 0) {
    value = TakeDbt(v);
  } else if (ret != DB_NOTFOUND && ret != DB_KEYEMPTY) {
    return Fail(ret, "get");
  }
  return value;
}

Result<std::optional<size_t>> Store::GetPart(DB* db, DB_TXN* txn, std::string_view key,
                                             uint32_t from, void* buf, uint32_t len) {
  AMINO_ASSIGN_OR_RETURN(txn, ReadVia(txn));
  AMINO_RETURN_IF_ERROR(MayRead(db, txn));
  DBT k = Dbt(key);
  DBT v;
  std::memset(&v, 0, sizeof v);
  v.data = buf;
  v.ulen = len;
  v.doff = from;
  v.dlen = len;
  v.flags = DB_DBT_USERMEM | DB_DBT_PARTIAL;
  const int ret = db->get(db, txn, &k, &v, 0);
  if (ret == DB_NOTFOUND || ret == DB_KEYEMPTY) return std::optional<size_t>();
  if (ret != 0) return Fail(ret, "get");
  return std::optional<size_t>(v.size);
}

int Store::DbIndex(DB* db) const {
  if (db == path_) return 0;
  if (db == data_) return 1;
  if (db == orphan_) return 2;
  if (db == names_) return 3;
  if (db == xattr_) return 4;
  if (db == inode_ && db) return 5;
  return -1;
}

void Store::NoteWrite(DB* db, std::string_view key) {
  const int index = DbIndex(db);
  if (index >= 0) TxnReads::Forget(index, key);
  if (!cache_) return;
  if (index >= 0) {
    cache_->Forget(index, key);
    std::lock_guard<std::mutex> lock(cache_txn_writes_mu_);
    std::erase_if(cache_txn_writes_,
                  [&](const Written& w) { return w.db == index && w.key == key; });
  }
  if (cache_txn_) cache_txn_wrote_ = true;  // what it reads next may be uncommitted
}

void Store::NoteWritten(DB* db, DB_TXN* txn, std::string_view key,
                        std::optional<std::string_view> value) {
  if (!cache_ || !txn || txn != cache_txn_) return;
  // The records every call reads (a file's name and attributes); pages and extended
  // attributes are read where they are needed, and the Names database holds duplicates.
  const int index = DbIndex(db);
  if (db != path_ && db != orphan_ && db != inode_) return;
  std::lock_guard<std::mutex> lock(cache_txn_writes_mu_);
  cache_txn_writes_.push_back(
      {index, std::string(key), value ? std::optional<std::string>(*value) : std::nullopt});
}

void Store::BeginTopLevel(DB_TXN* txn, bool cached, bool snapshot) {
  space_->Notice();
  // Here, where this thread holds no lock yet: the calls of a full file system all fail, so
  // none may commit to make room.
  if (space_->low()) Reclaim(space_->ReclaimDue(), 4 << 10);
  if (snapshot) {
    snapshot_txn_ = txn;
    snapshot_refused_ = false;
  }
  if (!cached || !cache_ || cache_txn_) return;
  cache_txn_ = txn;
  ++cache_txn_serial_;
  cache_txn_began_ = cache_->Refresh();
  cache_txn_wrote_ = false;
  cache_txn_relied_ = false;
}

bool Store::CachedReadsHold(DB_TXN* txn) const {
  return !cache_ || txn != cache_txn_ || !cache_txn_relied_ || cache_->Shared() == cache_txn_began_;
}

Status Store::BeforeTopLevelCommit(DB_TXN* txn, uint64_t writes_at_begin) {
  if (!cache_) return Status::Ok();
  if (!CachedReadsHold(txn)) {
    cache_->Clear();
    return Status::Conflict("records this call read changed meanwhile");
  }
  if (WritesMade() != writes_at_begin) cache_->Advance();
  return Status::Ok();
}

void Store::EndTopLevel(DB_TXN* txn, bool committed) {
  if (txn == cache_txn_) {
    // Committed, and this process moved the generation for it (BeforeTopLevelCommit): the
    // values are what another process would now read, until the generation moves again.
    std::lock_guard<std::mutex> lock(cache_txn_writes_mu_);
    if (committed) {
      for (const Written& w : cache_txn_writes_) cache_->Insert(w.db, w.key, ViewOf(w.value), 0);
    }
    cache_txn_writes_.clear();
    cache_txn_ = nullptr;
  }
  if (txn == snapshot_txn_) snapshot_txn_ = nullptr;
  if (IsDeferred(txn)) deferred_busy_ = false;
}

Result<Store::Committed> Store::CommittedState(FileId id) {
  DB_TXN* txn = nullptr;
  int ret = env_->txn_begin(env_, nullptr, &txn, DB_TXN_SNAPSHOT);
  if (ret != 0) return Fail(ret, "begin a snapshot");
  Committed state = Committed::kGone;
  auto named = GetLocked(names_, txn, IdKey(id), 0);
  Status st = named.status();
  if (st.ok() && *named) {
    state = Committed::kNamed;
  } else if (st.ok()) {
    auto orphan = GetLocked(orphan_, txn, IdKey(id), 0);
    st = orphan.status();
    if (st.ok() && *orphan) state = Committed::kNameless;
  }
  ret = txn->abort(txn);  // it only read
  if (!st.ok()) return st;
  if (ret != 0) return Fail(ret, "end a snapshot");
  return state;
}

DB_TXN* Store::BeginDeferred() {
  if (!cache_ || cache_txn_ || deferred_busy_) return nullptr;
  // The reader holds no lock between calls, logs nothing and reads no snapshot, so it pins
  // neither log files nor page versions; it is renewed now and then all the same.
  constexpr uint32_t kReaderCalls = 4096;
  if (reader_ && ++reader_calls_ >= kReaderCalls) EndReader();
  // Whatever reaches for its locker finds none (OpenHolds refuses locker 0).
  deferred_handle_.id = [](DB_TXN*) -> u_int32_t { return 0; };
  deferred_busy_ = true;
  deferral_refused_ = false;
  return &deferred_handle_;
}

Result<DB_TXN*> Store::ReadVia(DB_TXN* txn) {
  if (!IsDeferred(txn)) return txn;
  if (!reader_) {
    const int ret = env_->txn_begin(env_, nullptr, &reader_, DB_READ_COMMITTED | DB_TXN_NOWAIT);
    if (ret != 0) {
      reader_ = nullptr;
      return Fail(ret, "begin the deferred calls' reader");
    }
    reader_calls_ = 0;
  }
  cache_txn_relied_ = true;  // read past any lock: good only while the generation holds
  return reader_;
}

void Store::EndReader() {
  if (!reader_) return;
  // It wrote nothing and holds no lock: the commit only ends it.
  if (reader_->commit(reader_, DB_TXN_NOSYNC) == DB_RUNRECOVERY) NoteDamage();
  reader_ = nullptr;
}

Status Store::MayChange(DB_TXN* txn) const {
  if (IsDeferred(txn) || (txn && txn == reader_)) {
    deferral_refused_ = true;
    return Status::Conflict("a call served from the read cache needs a transaction to change");
  }
  if (txn && txn == snapshot_txn_) {
    snapshot_refused_ = true;
    return Status::Conflict("a call that reads a snapshot cannot change anything");
  }
  return Status::Ok();
}

Status Store::MayRead(DB* db, DB_TXN* txn) const {
  if (IsDeferred(txn)) {
    deferral_refused_ = true;
    return Status::Conflict("a call served from the read cache needs a transaction to read");
  }
  if (db == data_ && txn && txn == snapshot_txn_) {
    snapshot_refused_ = true;
    return Status::Conflict("a call that reads a snapshot cannot read the Data database");
  }
  return Status::Ok();
}

void Store::NoteDamage() { NoteDamageSeen(); }

Status Store::Put(DB* db, DB_TXN* txn, std::string_view key, std::string_view value,
                  uint32_t flags) {
  AMINO_RETURN_IF_ERROR(MayChange(txn));
  ++writes_;
  NoteWrite(db, key);
  DBT k = Dbt(key);
  DBT v = Dbt(value);
  int ret = db->put(db, txn, &k, &v, flags);
  if (ret == DB_KEYEXIST) return Status::Errno(EEXIST);
  if (ret != 0) return Fail(ret, "put");
  NoteWritten(db, txn, key, value);
  return Status::Ok();
}

Status Store::Del(DB* db, DB_TXN* txn, std::string_view key) {
  AMINO_RETURN_IF_ERROR(MayChange(txn));
  ++writes_;
  if (db == data_) data_deletes_.fetch_add(1, std::memory_order_relaxed);
  NoteWrite(db, key);
  DBT k = Dbt(key);
  int ret = db->del(db, txn, &k, 0);
  if (ret != 0 && ret != DB_NOTFOUND) return Fail(ret, "del");
  NoteWritten(db, txn, key, std::nullopt);
  return Status::Ok();
}

Status Store::DelDup(DB* db, DB_TXN* txn, std::string_view key, std::string_view value) {
  Cursor c(db, txn);
  AMINO_RETURN_IF_ERROR(c.status());
  AMINO_ASSIGN_OR_RETURN(bool found, c.SeekBoth(key, value));
  if (!found) return Status::Ok();
  return c.Delete();
}

Status Store::ShareWithOthers() {
  struct flock fl {};
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 1;
  fl.l_type = F_RDLCK;  // converting an OFD lock is atomic: no opener can slip in between
  if (fcntl(users_lock_fd_, F_OFD_SETLK, &fl) != 0) {
    return Status::Storage(errno, dir_ + "/amino.lock: " + std::strerror(errno));
  }
  return Status::Ok();
}

Status Store::Checkpoint() {
  int ret = env_->txn_checkpoint(env_, 0, 0, 0);
  if (ret != 0) return Fail(ret, "checkpoint");
  char** list = nullptr;
  ret = env_->log_archive(env_, &list, DB_ARCH_REMOVE);
  if (list) free(list);
  return ret == 0 ? Status::Ok() : Fail(ret, "log_archive");
}

void Store::NoteTopLevelCommit() {
  // A checkpoint only when 64 MiB of log accumulated; asked every 256 commits to keep it cheap,
  // and taken by a thread of its own where there is a CPU for it (checkpointer.h).
  // A checkpoint writes (and checksums) every dirty page, so its cost is the cache's dirty
  // working set: rarer checkpoints write a hot page once for many commits. Recovery replays at
  // most that much log.
  // Asked too after every 16 MiB that calls added: a few large writes fill log files without
  // many commits, and a log file goes only after a checkpoint.
  if (commits_since_checkpoint_.fetch_add(1, std::memory_order_relaxed) % 256 == 255 ||
      added_ - added_at_checkpoint_ > (16u << 20)) {
    added_at_checkpoint_ = added_;
    checkpointer_->Ask();
  }
}

void Store::Reclaim(bool count, uint32_t log_kbytes) {
  // Log files recovery no longer needs go once a checkpoint is taken: while the file system is
  // full, one after every 4 MiB of log (removals log what they remove), so that the log turns
  // over within the room left.
  if (env_->txn_checkpoint(env_, log_kbytes, 0, 0) == 0) {
    char** list = nullptr;
    if (env_->log_archive(env_, &list, DB_ARCH_REMOVE) == 0 && list) free(list);
  }
  if (!count) return;
  u_int32_t page = 0;
  if (data_->get_pagesize(data_, &page) != 0 || page == 0) return;
  // Pages removals freed inside the Data database: counted by walking it, which only a full
  // file system pays for, at most every half second. Calls use them in place (Room counts
  // them); they go back to the file system only when moving pages to the front is affordable.
  // Each step is a transaction that gives way to any lock held (an application
  // transaction's), and is simply tried again later.
  DB_TXN* t = nullptr;
  if (env_->txn_begin(env_, nullptr, &t, DB_TXN_NOWAIT) != 0) return;
  DB_BTREE_STAT* st = nullptr;
  const uint64_t deletes = data_deletes_.load();
  if (data_->stat(data_, t, &st, 0) != 0) {
    (void)t->abort(t);
    return;
  }
  const uint64_t free_pages = st->bt_free, used_pages = st->bt_pagecnt - st->bt_free;
  ::free(st);
  data_deletes_counted_ = deletes;
  space_->NoteFreeInside(free_pages * page);
  // A moved page is logged whole, with its place in the free list: at most as many pages move
  // as are free or in use, and a step runs only when that, twice over, fits in half of what
  // the file system has beyond the room kept for removals (which log what they remove). Pages
  // are moved, never merged: merging rewrote most of a dense tree (116 MiB of log to give
  // back 9 MiB).
  const uint64_t moved = std::min(free_pages, used_pages) * page;
  const uint64_t room = StoreSpace::FreeBytes(dir_), kept = space_->Kept();
  if (free_pages == 0 || room < kept || 2 * moved > (room - kept) / 2) {
    (void)t->commit(t, 0);
    return;
  }
  DB_COMPACT c;
  std::memset(&c, 0, sizeof c);
  c.compact_fillpercent = 1;
  if (data_->compact(data_, t, nullptr, nullptr, &c, DB_FREE_SPACE, nullptr) != 0) {
    (void)t->abort(t);
    return;
  }
  if (t->commit(t, 0) != 0) return;
  const uint64_t given_back = std::min<uint64_t>(free_pages, c.compact_pages_truncated);
  space_->NoteFreeInside((free_pages - given_back) * page);
  space_->ForgetClaims();
}
}  // namespace amino::schema
