// The transactional file system on Berkeley DB (DESIGN.md §3). It knows nothing of processes or
// tracing: every operation takes a transaction and the caller's credentials and returns what
// Linux would return for the same call, as an errno in a Status.
//
// Paths are relative to the mount's root and start with "/": "/", "/a/b". They may contain ".",
// "..", repeated and trailing slashes, and have no limit on their length: PATH_MAX bounds a
// system call's argument, which the caller checks, not the path a walk from a deep working
// directory reaches; a name longer than NAME_MAX is ENAMETOOLONG when the walk reaches it.
// Symbolic links stored here are followed (40 at most, then
// ELOOP). A resolution that leaves the file system (an absolute link target, or ".." at the root,
// as on a real mount) ends with Status::Escape (error EXDEV, escaped_path() the way on) for the
// monitor to continue on the host.
//
// Modes passed to mknod/mkdir/open are the ones the caller asked for; `umask` is the caller's and
// masks them unless the new file's directory has a default ACL, whose entries mask them instead
// (as Linux does: posix_acl_create()).
//
// POSIX ACLs are the extended attributes system.posix_acl_access and system.posix_acl_default,
// with Linux's value format, rules and permission checks (acl.h, xattr_ops.cc).
#pragma once

#include <sys/stat.h>
#include <sys/statfs.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schema/cred.h"
#include "schema/records.h"
#include "schema/status.h"
#include "schema/transaction.h"

namespace amino::schema {

class Store;  // the environment and its databases (store.h)

struct Stat {
  FileId ino = 0;
  Attr attr;
};

struct DirEntry {
  std::string name;
  FileId ino = 0;
  unsigned char type = 0;  // DT_REG, DT_DIR, DT_LNK, ...
};

struct OpenResult {
  FileId id = 0;
  Stat stat;
  bool created = false;
  std::string path;  // the name it was opened by, after links (empty: O_TMPFILE, O_PATH)
};

// The root directory of a new file system. uid and gid -1: the caller's effective ids, as
// mkfs.ext4's root_owner does.
struct MkfsOptions {
  int64_t uid = -1;
  int64_t gid = -1;
  mode_t mode = 0755;         // permission bits (07777 at most)
  uint32_t format = kFormat;  // the layout (records.h); an older one only to test that it opens
};

struct OpenOptions {
  size_t cache_bytes = 128 << 20;  // Berkeley DB cache (see Store::Options)
  bool force_recovery = false;     // run recovery even if not needed (fails if others use it)
  bool zero_log = false;           // for flushed commits (see Store::Options)
};

class FileSystem {
 public:
  // Creates an empty file system in `dir`, which must be missing or empty: the directory gets
  // mode 0700 and every database file 0600 (the database is private to its owner); the root
  // directory of the file system is owned by the caller's effective uid and gid, mode 0755,
  // unless `options` says otherwise.
  static Status Mkfs(const std::string& dir, const MkfsOptions& options = {});
  // Opens an existing file system. Runs recovery when a previous user died; when no other
  // process has it open, also removes orphaned files (and clears stale open counts of older
  // databases)
  // (recovered_on_open() then says so), unless the last user closed it cleanly: with no
  // transaction and no open description left (see Store::clean_start()).
  static Result<std::unique_ptr<FileSystem>> Open(const std::string& dir,
                                                  const OpenOptions& options = {});
  ~FileSystem();

  // Transactions. A nested transaction is a child of `parent`.
  Result<Transaction> Begin(Transaction* parent = nullptr, TxnOptions options = {});
  // Runs `body` in a child of `parent` (or a top-level transaction): commits when it returns ok,
  // aborts otherwise; a top-level transaction that loses a conflict is retried.
  Status Run(Transaction* parent, TxnOptions options,
             const std::function<Status(Transaction&)>& body);
  Status Run(const std::function<Status(Transaction&)>& body) { return Run(nullptr, {}, body); }

  // Writes a checkpoint and removes log files no longer needed.
  Status Checkpoint();
  // Writes every committed transaction's log records to disk (what fsync of a file promises
  // under the asynchronous durability modes).
  Status FlushLog();
  const std::string& dir() const { return dir_; }
  bool recovered_on_open() const { return recovered_on_open_; }
  Store& store() { return *store_; }
  // How often calls were answered from the read cache (read_cache.h), and how often not.
  struct CacheStats {
    uint64_t hits = 0;
    uint64_t misses = 0;
  };
  CacheStats ReadCacheStats() const;
  // Whether the last transaction begun with TxnOptions::snapshot failed because the call
  // wanted to change something (a write, a hold taken or given up where that needs a lock).
  bool SnapshotRefusedChange() const;
  // Whether the last transaction begun with TxnOptions::deferred failed because the call
  // needed Berkeley DB (a record not in the read cache, a write, a lock).
  bool DeferralRefused() const;

  // --- Calls on paths ---------------------------------------------------------------------
  Result<Stat> GetStat(Transaction& t, const Cred& c, std::string_view path, bool follow = true);
  // access(2) with R_OK/W_OK/X_OK/F_OK; `c` is the real uid/gid for access, effective for faccessat
  // with AT_EACCESS.
  Status Access(Transaction& t, const Cred& c, std::string_view path, int mode, bool follow = true);
  // With O_TMPFILE, `path` is a directory and the file opened has no name (an orphan freed at
  // its last Close) until LinkFile gives it one.
  Result<OpenResult> Open(Transaction& t, const Cred& c, std::string_view path, int flags,
                          mode_t mode = 0, mode_t umask = 0);
  // Regular files, FIFOs, sockets, devices (root).
  Result<Stat> Mknod(Transaction& t, const Cred& c, std::string_view path, mode_t mode,
                     dev_t rdev = 0, mode_t umask = 0);
  Result<Stat> Mkdir(Transaction& t, const Cred& c, std::string_view path, mode_t mode,
                     mode_t umask = 0);
  Status Rmdir(Transaction& t, const Cred& c, std::string_view path);
  Status Unlink(Transaction& t, const Cred& c, std::string_view path);
  Status Link(Transaction& t, const Cred& c, std::string_view oldpath, std::string_view newpath,
              bool follow_old = false);
  // linkat(fd, "", ..., AT_EMPTY_PATH): a new name for the open file `id`. One without a name
  // gets it only when `linkable` (opened with O_TMPFILE, not O_EXCL, never linked since); ENOENT
  // otherwise, as for a file that is gone.
  Status LinkFile(Transaction& t, const Cred& c, FileId id, std::string_view newpath,
                  bool linkable);
  Status Symlink(Transaction& t, const Cred& c, std::string_view target, std::string_view linkpath);
  Result<std::string> Readlink(Transaction& t, const Cred& c, std::string_view path);
  // flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE.
  Status Rename(Transaction& t, const Cred& c, std::string_view oldpath, std::string_view newpath,
                unsigned flags = 0);
  Status Chmod(Transaction& t, const Cred& c, std::string_view path, mode_t mode,
               bool follow = true);
  // (uid_t)-1 / (gid_t)-1 leave that id unchanged.
  Status Chown(Transaction& t, const Cred& c, std::string_view path, uid_t uid, gid_t gid,
               bool follow = true);
  // times[0] = atime, times[1] = mtime; tv_nsec may be UTIME_NOW or UTIME_OMIT; nullptr = now.
  Status Utimens(Transaction& t, const Cred& c, std::string_view path, const timespec* times,
                 bool follow = true);
  Status Truncate(Transaction& t, const Cred& c, std::string_view path, int64_t length);
  Result<std::string> GetXattr(Transaction& t, const Cred& c, std::string_view path,
                               std::string_view name, bool follow = true);
  // flags: 0, XATTR_CREATE or XATTR_REPLACE.
  Status SetXattr(Transaction& t, const Cred& c, std::string_view path, std::string_view name,
                  std::string_view value, int flags, bool follow = true);
  Result<std::vector<std::string>> ListXattr(Transaction& t, const Cred& c, std::string_view path,
                                             bool follow = true);
  Status RemoveXattr(Transaction& t, const Cred& c, std::string_view path, std::string_view name,
                     bool follow = true);
  Result<struct statfs> StatFs(Transaction& t);

  // --- Calls on open files (the id returned by Open) -------------------------------------
  // The caller checked the access mode at open; these check only what Linux checks on an fd.
  Status Close(Transaction& t, FileId id);
  // One more open of file `id`, which has a name or is open: what a working directory holds,
  // so that a removed one lives on until it is left (closed with Close).
  Status Reopen(Transaction& t, FileId id);
  Result<Stat> FStat(Transaction& t, FileId id);
  // Access's check on an open file (faccessat with AT_EMPTY_PATH, execveat of a descriptor).
  Status FAccess(Transaction& t, const Cred& c, FileId id, int mode);
  // An access to the file's data (a read, a listing, a mapping) on a relatime mount, Linux's
  // default: atime becomes now when it is not later than mtime or ctime, or is a day old.
  // Nothing else changes (not ctime). Returns whether atime was written.
  Result<bool> TouchAtime(Transaction& t, FileId id);
  // Whether an access now would write atime (TouchAtime's test alone, writing nothing).
  Result<bool> AtimeDue(Transaction& t, FileId id);
  // The symbolic links that path walks in this file system followed since it was last
  // asked. Linux touches a followed link's access time (as TouchAtime) whatever becomes of the
  // call, so the caller touches them, in another transaction when the call's was aborted.
  std::vector<FileId> TakeFollowedLinks();
  Result<size_t> Read(Transaction& t, FileId id, uint64_t offset, void* buf, size_t len);
  Result<size_t> Write(Transaction& t, const Cred& c, FileId id, uint64_t offset, const void* buf,
                       size_t len);
  // O_APPEND: writes at the end of file; returns the offset the data was written at.
  Result<uint64_t> Append(Transaction& t, const Cred& c, FileId id, const void* buf, size_t len);
  Status FTruncate(Transaction& t, const Cred& c, FileId id, int64_t length);
  Status FChmod(Transaction& t, const Cred& c, FileId id, mode_t mode);
  Status FChown(Transaction& t, const Cred& c, FileId id, uid_t uid, gid_t gid);
  Status FUtimens(Transaction& t, const Cred& c, FileId id, const timespec* times);
  Result<std::string> FGetXattr(Transaction& t, const Cred& c, FileId id, std::string_view name);
  Status FSetXattr(Transaction& t, const Cred& c, FileId id, std::string_view name,
                   std::string_view value, int flags);
  Result<std::vector<std::string>> FListXattr(Transaction& t, const Cred& c, FileId id);
  Status FRemoveXattr(Transaction& t, const Cred& c, FileId id, std::string_view name);
  // lseek SEEK_DATA / SEEK_HOLE: ENXIO at or past the end of file.
  Result<uint64_t> SeekData(Transaction& t, FileId id, uint64_t offset);
  Result<uint64_t> SeekHole(Transaction& t, FileId id, uint64_t offset);
  // Entries of an open directory after the name `after` ("" = from the start), at most `max`;
  // "." and ".." are not included (the caller adds them). Fewer than `max` (none included) is
  // the end.
  Result<std::vector<DirEntry>> ReadDir(Transaction& t, FileId dir, std::string_view after,
                                        size_t max);
  // Every name of a file (its hard links), as paths from the root; empty for an orphan.
  Result<std::vector<std::string>> Names(Transaction& t, FileId id);

 private:
  class Impl;
  FileSystem(std::string dir, std::unique_ptr<Store> store);
  std::string dir_;
  std::unique_ptr<Store> store_;
  // `made_here`: the file was created by `txn`, whose write lock on its record already keeps
  // any remover waiting.
  Status Hold(Transaction& txn, FileId id, bool made_here = false);
  bool recovered_on_open_ = false;
  friend class Impl;
};

}  // namespace amino::schema
