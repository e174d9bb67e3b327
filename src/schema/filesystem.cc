// Creating, opening and recovering a file system; transactions.
#include "schema/filesystem.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "schema/fs_internal.h"

namespace amino::schema {

using internal::Now;
using internal::Ops;

namespace {

// The database directory: created, or an existing empty one taken, and made private to its
// owner (0700) whatever the umask.
Status MakeEmptyDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0) {
    if (errno != EEXIST) return Status::Storage(errno, dir + ": " + std::strerror(errno));
    DIR* d = opendir(dir.c_str());
    if (!d) return Status::Storage(errno, dir + ": " + std::strerror(errno));
    bool empty = true;
    while (dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) empty = false;
    }
    closedir(d);
    if (!empty) return Status::Storage(ENOTEMPTY, dir + ": directory is not empty");
  }
  if (chmod(dir.c_str(), 0700) != 0) {
    return Status::Storage(errno, dir + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

// Clears what dead processes left: open counts and files that were open but had no name.
Status CleanUpAfterDeadUsers(Store& s, Transaction& txn) {
  Ops ops(s);
  DB_TXN* t = txn.raw();
  std::vector<FileId> stale;
  {
    Cursor c(s.inode(), t);
    AMINO_RETURN_IF_ERROR(c.status());
    AMINO_ASSIGN_OR_RETURN(bool more, c.SeekRange(IdKey(kRootId)));
    std::string previous;
    while (more) {
      // Each step must move forward; a damaged tree that sends the cursor back is an error,
      // not a loop.
      if (!previous.empty() && std::string_view(previous) >= c.key()) {
        return Status::Storage(EUCLEAN, "damaged Data database: keys out of order");
      }
      previous.assign(c.key());
      FileId id;
      uint64_t page;
      if (ParseIdKey(c.key(), &id)) {
        InodeValue iv;
        if (DecodeInodeValue(c.value(), &iv) && iv.open_count > 0) stale.push_back(id);
        // Skip the file's pages: the next record of interest is the next file's.
        AMINO_ASSIGN_OR_RETURN(more, c.SeekRange(PageKey(id, UINT64_MAX) + '\0'));
      } else if (ParsePageKey(c.key(), &id, &page)) {
        AMINO_ASSIGN_OR_RETURN(more, c.SeekRange(PageKey(id, UINT64_MAX) + '\0'));
      } else {
        AMINO_ASSIGN_OR_RETURN(more, c.Next());
      }
    }
  }
  for (FileId id : stale) {
    AMINO_ASSIGN_OR_RETURN(InodeValue iv, ops.GetInode(t, id));
    iv.open_count = 0;
    if (iv.link_count == 0) {
      AMINO_RETURN_IF_ERROR(ops.FreeFile(t, id));
    } else {
      AMINO_RETURN_IF_ERROR(ops.PutInode(t, id, iv));
    }
  }
  // Orphans whose Data record was already gone would be a damaged database; fsck reports them.
  return Status::Ok();
}

}  // namespace

FileSystem::FileSystem(std::string dir, std::unique_ptr<Store> store)
    : dir_(std::move(dir)), store_(std::move(store)) {}

FileSystem::~FileSystem() = default;

Status FileSystem::Mkfs(const std::string& dir, const MkfsOptions& options) {
  if ((options.mode & ~07777) != 0) return Status::Errno(EINVAL);
  if (options.format < 1 || options.format > kFormat) return Status::Errno(EINVAL);
  AMINO_RETURN_IF_ERROR(MakeEmptyDir(dir));
  Store::Options so;
  so.create = true;
  so.format = options.format;
  AMINO_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Open(dir, so));
  FileSystem fs(dir, std::move(store));
  Status st = fs.Run([&](Transaction& txn) -> Status {
    DB_TXN* t = txn.raw();
    Ops ops(*fs.store_);
    Superblock sb;
    sb.format = options.format;
    sb.created = Now().tv_sec;
    AMINO_RETURN_IF_ERROR(
        fs.store_->Put(fs.store_->data(), t, IdKey(kSuperblockId), EncodeSuperblock(sb)));
    Attr a;
    a.mode = S_IFDIR | (options.mode & 07777);
    a.uid = options.uid >= 0 ? static_cast<uint32_t>(options.uid) : geteuid();
    a.gid = options.gid >= 0 ? static_cast<uint32_t>(options.gid) : getegid();
    a.nlink = 2;
    a.atime = a.mtime = a.ctime = Now();
    PathValue pv{kRootId, a.mode, a};
    AMINO_RETURN_IF_ERROR(ops.PutPath(t, "/", pv));
    AMINO_RETURN_IF_ERROR(ops.PutInode(t, kRootId, InodeValue{1, 0, std::nullopt}));
    return fs.store_->Put(fs.store_->names(), t, IdKey(kRootId), "/");
  });
  if (!st.ok()) return st;
  AMINO_RETURN_IF_ERROR(fs.store_->Checkpoint());
  return Status::Ok();
}

Result<std::unique_ptr<FileSystem>> FileSystem::Open(const std::string& dir,
                                                     const OpenOptions& options) {
  Store::Options so;
  so.cache_bytes = options.cache_bytes;
  so.force_recovery = options.force_recovery;
  so.zero_log = options.zero_log;
  AMINO_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Open(dir, so));
  std::unique_ptr<FileSystem> fs(new FileSystem(dir, std::move(store)));
  if (fs->store_->sole_user()) {
    if (!fs->store_->clean_start()) {
      AMINO_RETURN_IF_ERROR(
          fs->Run([&](Transaction& txn) { return CleanUpAfterDeadUsers(*fs->store_, txn); }));
      fs->recovered_on_open_ = true;
    }
    AMINO_RETURN_IF_ERROR(fs->store_->ShareWithOthers());
  }
  return fs;
}

Result<Transaction> FileSystem::Begin(Transaction* parent, TxnOptions options) {
  u_int32_t flags = 0;
  switch (options.durability) {
    case Durability::kNoSync:
      flags |= DB_TXN_NOSYNC;
      break;
    case Durability::kWriteNoSync:
      flags |= DB_TXN_WRITE_NOSYNC;
      break;
    case Durability::kSync:
      flags |= DB_TXN_SYNC;
      break;
  }
  if (options.nowait) flags |= DB_TXN_NOWAIT;
  const bool snapshot = options.snapshot && !parent;
  if (parent && parent->deferred()) {
    // Its children would need its locker: the call runs again in a real transaction.
    (void)store_->MayChange(parent->raw());
    return Status::Conflict("a deferred transaction cannot have children");
  }
  if (options.deferred && options.cached && !parent && !snapshot) {
    if (DB_TXN* stand_in = store_->BeginDeferred()) {
      store_->BeginTopLevel(stand_in, true, false);
      return Transaction(stand_in, nullptr, store_.get(), store_->WritesMade(), true);
    }
  }
  if (snapshot) flags |= DB_TXN_SNAPSHOT;
  DB_TXN* txn = nullptr;
  DB_ENV* env = store_->env();
  int ret = env->txn_begin(env, parent ? parent->raw() : nullptr, &txn, flags);
  if (ret != 0) return DbStatus(ret, "begin transaction");
  // A snapshot's reads are of a state that may already be past: none of them goes into the
  // read cache, whose values must be true until someone writes them.
  if (!parent) store_->BeginTopLevel(txn, options.cached && !snapshot, snapshot);
  return Transaction(txn, parent, store_.get(), store_->WritesMade());
}

Status FileSystem::Run(Transaction* parent, TxnOptions options,
                       const std::function<Status(Transaction&)>& body) {
  constexpr int kMaxAttempts = 100;
  for (int attempt = 1;; ++attempt) {
    AMINO_ASSIGN_OR_RETURN(Transaction txn, Begin(parent, options));
    Status st = body(txn);
    if (st.ok()) st = txn.Commit();
    if (st.ok()) return st;
    (void)txn.Abort();
    // Only a top-level transaction can be retried here: a nested one's conflict dooms its parent.
    if (!st.is_conflict() || parent || attempt == kMaxAttempts) return st;
    std::this_thread::sleep_for(std::chrono::microseconds(50 * attempt));
  }
}

Status FileSystem::Checkpoint() { return store_->Checkpoint(); }

Status FileSystem::FlushLog() {
  DB_ENV* env = store_->env();
  return DbStatus(env->log_flush(env, nullptr), "flush the log");
}

bool FileSystem::SnapshotRefusedChange() const { return store_->snapshot_refused(); }

bool FileSystem::DeferralRefused() const { return store_->deferral_refused(); }

FileSystem::CacheStats FileSystem::ReadCacheStats() const {
  const ReadCache* cache = store_->read_cache();
  if (!cache) return {};
  return {cache->hits(), cache->misses()};
}

}  // namespace amino::schema
