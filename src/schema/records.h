// The on-disk records of the schema (DESIGN.md §3) and their byte encodings.
//
//   Path   key  PathKey(path) = u16 depth (BE) ‖ path bytes   ->  PathValue
//   Data   key  u64 id (BE)                                   ->  InodeValue
//          key  u64 id (BE) ‖ u64 page index (BE)             ->  page bytes (<= kTransferUnit)
//          key  u64 0 (BE)                                    ->  Superblock
//   Orphan key  u64 id (BE)                                   ->  Attr (the PLMD of a nameless
//   file) Names  key  u64 id (BE), sorted duplicates                ->  path bytes (every name of a
//   file) Xattr  key  u64 id (BE) ‖ attribute name                  ->  attribute value
//
// Prefixing each Path key with its depth gives the order "depth, then bytes" under Berkeley DB's
// default comparator, so each directory's entries are one contiguous range and every stock tool
// (db_verify, db_dump, db_load) reads the databases without custom code.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace amino::schema {

using FileId = uint64_t;

inline constexpr FileId kSuperblockId = 0;
inline constexpr FileId kRootId = 1;
inline constexpr uint32_t kTransferUnit = 4096;           // bytes of file data per Data record
inline constexpr uint32_t kDataPageSize = 64 * 1024;      // Berkeley DB page size of the Data db
inline constexpr uint64_t kMaxFileSize = 17592186040320;  // ext4's limit with 4 KiB blocks
inline constexpr uint32_t kMaxLinks = 65000;              // ext4's EMLINK limit
inline constexpr size_t kNameMax = 255;
inline constexpr size_t kPathMax = 4096;  // including the terminating NUL
inline constexpr size_t kXattrNameMax = 255;
inline constexpr size_t kXattrValueMax = 65536;
inline constexpr size_t kSymlinkMax = 4095;
inline constexpr uint32_t kStatfsMagic = 0x414d494e;  // "AMIN"

// The stat information of a file: path-local (PLMD) when it has one name, data-local (DLMD) when
// it has several, in the Orphan db when it has none but is still open.
struct Attr {
  uint32_t mode = 0;   // type and permission bits
  uint32_t nlink = 0;  // as stat(2) reports it: names for files, 2 + subdirectories for dirs
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t blocks = 0;  // 512-byte blocks of stored pages
  uint64_t rdev = 0;
  struct timespec atime {};
  struct timespec mtime {};
  struct timespec ctime {};
  // kHasAccessAcl / kHasDefaultAcl: which system.posix_acl_* records the file has, so that
  // permission checks and creations read no Xattr record for the files (nearly all) without.
  uint32_t flags = 0;
};

inline bool SameTime(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}
inline bool SameAttr(const Attr& a, const Attr& b) {
  return a.mode == b.mode && a.nlink == b.nlink && a.uid == b.uid && a.gid == b.gid &&
         a.size == b.size && a.blocks == b.blocks && a.rdev == b.rdev &&
         SameTime(a.atime, b.atime) && SameTime(a.mtime, b.mtime) && SameTime(a.ctime, b.ctime) &&
         a.flags == b.flags;
}

inline constexpr uint32_t kHasAccessAcl = 1;
inline constexpr uint32_t kHasDefaultAcl = 2;

struct PathValue {
  FileId id = 0;
  uint32_t mode = 0;         // type bits duplicated here so readdir gives d_type in one pass
  std::optional<Attr> plmd;  // present exactly when the file has one name
};

struct InodeValue {
  uint32_t link_count = 0;  // names in the Path db (1 for a directory)
  // 1 for an orphan (no name, open somewhere), else 0. Open descriptions themselves are
  // holds, locks in the environment (open_holds.h); databases written before that may hold
  // stale counts on named files, which mean nothing.
  uint32_t open_count = 0;
  std::optional<Attr> dlmd;  // present exactly when link_count > 1
};

// Layouts: 1, file records in the Data database beside the file pages (64 KiB pages, where
// removing a small record walks every entry of its page); 2, file records in inode.db.
inline constexpr uint32_t kFormat = 2;

struct Superblock {
  uint32_t format = kFormat;
  uint32_t transfer_unit = kTransferUnit;
  int64_t created = 0;  // seconds since the epoch
};

// Path keys.
uint16_t PathDepth(std::string_view path);  // "/" -> 0, "/a" -> 1, "/a/b" -> 2
std::string PathKey(std::string_view path);
std::string PathFromKey(std::string_view key);
// The first key of the directory's entries and the prefix every entry's key starts with.
std::string DirEntriesPrefix(std::string_view dir);
std::string JoinPath(std::string_view dir, std::string_view name);
std::string_view ParentPath(std::string_view path);  // of "/" is "/"
std::string_view BaseName(std::string_view path);    // of "/" is ""
bool IsSameOrDescendant(std::string_view path, std::string_view ancestor);

// Data and Names keys.
std::string IdKey(FileId id);
std::string PageKey(FileId id, uint64_t page);
std::string XattrKey(FileId id, std::string_view name);
bool ParseIdKey(std::string_view key, FileId* id);
bool ParsePageKey(std::string_view key, FileId* id, uint64_t* page);

// Values. Decoders return false on a malformed record (a damaged database).
std::string EncodeAttr(const Attr& a);
bool DecodeAttr(std::string_view in, Attr* a);
std::string EncodePathValue(const PathValue& v);
bool DecodePathValue(std::string_view in, PathValue* v);
// What a directory listing needs of a Path record, its file's id and type, with the record's
// shape checked (its length for the stat record it carries) but not every field decoded.
bool DecodePathEntry(std::string_view in, FileId* id, uint32_t* mode);
std::string EncodeInodeValue(const InodeValue& v);
bool DecodeInodeValue(std::string_view in, InodeValue* v);
std::string EncodeSuperblock(const Superblock& s);
// False also for a layout newer than kFormat, which this code cannot read.
bool DecodeSuperblock(std::string_view in, Superblock* s);
bool DecodeSuperblockOfAnyFormat(std::string_view in, Superblock* s);
// The layout a superblock names (0: not a superblock), whether this code reads it or not.
uint32_t SuperblockFormat(std::string_view in);

inline constexpr std::string_view kSuperblockMagic = "AMINOFS\x01";

}  // namespace amino::schema
