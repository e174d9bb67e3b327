// The files of a database directory besides Berkeley DB's own (store.cc): who uses it
// (amino.lock, amino.user.*), whether its last user closed it cleanly (amino.clean), and its
// permissions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/status.h"

namespace amino::schema::store_files {

// The database is private to its owner: its directory is 0700 (FileSystem::Mkfs) and every file
// in it 0600, whatever the umask, since data.db and the log hold every stored file's bytes.
inline constexpr int kFileMode = 0600;

// The databases of a file system.
inline constexpr const char* kDatabaseFiles[] = {"path.db", "data.db", "orphan.db", "names.db",
                                                 "xattr.db"};
// And of a file system of format 2 or later (records.h).
inline constexpr const char* kInodeDatabase = "inode.db";

// One OFD lock on the first byte of DBDIR/amino.lock tells whether other processes use the
// file system: each user holds it shared; an opener that can take it exclusively is alone and
// may run recovery and clean up after dead users before converting to shared (atomically).
Result<int> LockUsers(const std::string& dir, bool* sole);

// The marker names the boot it was written in and the very files it vouches for: device, inode,
// size and modification time of each database. After a restart of the machine the regions
// (shared memory in files the kernel may have written back only in part) are not trusted; a
// copy, a snapshot mounted elsewhere, a restored backup or a damaged (truncated) file no longer
// matches. Each is then recovered as before.
std::string DatabaseIdentities(const std::string& dir);

// Removes the marker for good before the file system is used: if it came back after a crash
// of the machine, the next opener would skip a recovery it needs. True when there was one and
// it still describes the database files.
bool TakeCleanMarker(const std::string& dir);

// The users' files DBDIR/amino.user.* (each user has one from its open until its clean close).
std::vector<std::string> UserFiles(const std::string& dir);

// This process's user file; its path.
Result<std::string> CreateUserFile(const std::string& dir);

// Called with the environment closed. Upgrading this process's shared lock to an exclusive
// one succeeds only when no other process uses the file system; openers wait meanwhile.
void MarkCleanIfLast(const std::string& dir, int users_lock_fd);

// The environment's region files (__db.001 ..., __db.register), for the sole user only.
void RemoveRegionFiles(const std::string& dir);

// Files Berkeley DB creates with its own modes (__db.register is 0660 less the umask), and those
// of a database made before files were private, lose every bit beyond 0600 when this process
// owns them.
void MakeFilesPrivate(const std::string& dir);

// A database this process may not use: says whose it is and what to do, instead of a bare
// "Permission denied" or "not an Amino file system".
Status PermissionDenied(const std::string& dir, const std::string& what, int err);

// Berkeley DB's region files (__db.NNN: the cache, locks, log buffer and transactions) in
// `dir`: their sizes and the bytes the file system holds for them.
struct RegionSizes {
  int files = 0;
  uint64_t bytes = 0;      // st_size, summed
  uint64_t allocated = 0;  // st_blocks * 512, summed
};
RegionSizes RegionSizesIn(const std::string& dir);

}  // namespace amino::schema::store_files
