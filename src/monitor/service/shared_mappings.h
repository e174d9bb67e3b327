// Shared mappings (MAP_SHARED) of files in an Amino mount. The kernel maps one host file per
// mapped file, its mapping file, into every process that maps the file shared, so that their
// stores reach each other at once, as in one page cache (SQLite's WAL index, for one, is such
// a file). The schema stays the file's content for every call the monitor serves:
// - the mapping file is filled from the schema when the file is first mapped shared;
// - what the monitor writes to the file (write, truncate, fallocate, copies) is copied into it;
// - what processes stored through their mappings is written back to the schema before the
//   monitor reads or changes the file, at msync, fsync and close, when a process ends and when
//   `amino run` ends.
// Stores through a mapping belong to no application transaction (they are written back in
// transactions of their own), and two `amino run` on one database have a mapping file each.
// A write-back reads the whole mapping file but asks the schema only about pages it has not
// seen since they were last in step: each page's hash as last written back (or found equal) is
// kept, a page whose bytes still hash the same is skipped, and one that changed is written
// without reading the stored one. The monitor's own changes to the file make the pages they
// touch unknown again (compared with the schema at the next write-back).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "monitor/service/file_view.h"
#include "monitor/service/mount_fs.h"
#include "monitor/service/page_marks.h"
#include "schema/filesystem.h"

namespace amino::monitor::service {

class SharedMappings {
 public:
  struct Mapping {
    std::string path;  // where the tracee opens it (a private directory of the monitor)
    int fd = -1;       // the monitor's descriptor (read-write)
    dev_t dev = 0;     // the mapping file's device and inode, as the tracee's mappings show them
    ino_t ino = 0;
    // The marks of the pages known to be in step with the schema (page_marks.h).
    PageMarks marks;
    FileView view;  // the monitor's view of the mapping file (what write-backs read)
  };

  SharedMappings() = default;
  SharedMappings(const SharedMappings&) = delete;
  SharedMappings& operator=(const SharedMappings&) = delete;
  ~SharedMappings();

  // The mapping file of `id` in `m`, made and filled from the schema on first use. A lock
  // conflict comes back as kConflict (the caller parks).
  CallOutcome Get(MountFs& m, schema::FileId id, const Mapping** out);
  // The mapping file of `id` in `m`, if it has one.
  const Mapping* Find(const MountFs& m, schema::FileId id) const;
  bool empty() const { return files_.empty(); }

  // Stores made through mappings of `id` (or of every mapped file) to the schema; only those
  // in bytes [from, to) of the file when a range is given.
  CallOutcome WriteBack(MountFs& m, schema::FileId id, uint64_t from = 0, uint64_t to = UINT64_MAX);
  // Every mapped file; conflicts are left for the next occasion. Returns the mounts written to.
  std::vector<MountFs*> WriteBackAll();
  // msync(addr, len) in process `pid`: the stores in the parts of mapping files that the range
  // maps (file_vmas.h; every mapped file when the process's mappings cannot be read). Returns
  // the mounts written to.
  std::vector<MountFs*> WriteBackMapped(pid_t pid, uint64_t addr, uint64_t len);
  // madvise(addr, len, MADV_REMOVE) in process `pid`, before the kernel runs it: it will punch
  // a hole in the mapping files the range maps (up to a mapping it refuses: RemovableUpTo),
  // and those bytes of the files read as zeros in the schema too, as they do in every mapping.
  // A lock conflict comes back as kConflict (the caller parks; doing it again changes nothing).
  CallOutcome RemoveMapped(pid_t pid, uint64_t addr, uint64_t len);
  // The monitor wrote `len` bytes at `at` of `id`, or set its size: the mapping file follows.
  // (Writes made in an application transaction are seen by mappers at once: mappings are not
  // isolated. After an abort, RefreshAll brings the mount's mapping files back to the schema,
  // dropping stores not yet written back rather than bringing aborted bytes back.)
  void Wrote(const MountFs& m, schema::FileId id, uint64_t at, const char* data, size_t len);
  void Resized(const MountFs& m, schema::FileId id, uint64_t size);
  // fallocate removed (COLLAPSE_RANGE) or opened (INSERT_RANGE, zeros) `len` bytes at `at`,
  // moving the bytes after them: the mapping file moves its own the same way.
  void Collapsed(const MountFs& m, schema::FileId id, uint64_t at, uint64_t len);
  void Inserted(const MountFs& m, schema::FileId id, uint64_t at, uint64_t len);
  // The mapping file of `id`, or of every file mapped in `m`, filled again from the schema
  // (after changes the monitor cannot follow byte by byte: fallocate, an abort).
  void Refresh(MountFs& m, schema::FileId id);
  void RefreshAll(MountFs& m);

  // Makes `fd` openable by `uid`/`gid` for the time of an open made in the tracee (a no-op
  // unless the monitor runs as root), and gives it back.
  static void LendTo(int fd, uid_t uid, gid_t gid);
  static void TakeBack(int fd);

 private:
  using Key = std::pair<const MountFs*, schema::FileId>;
  // A write-back's buffers: the chunk's bytes, the schema's, and what it learned (page, mark).
  struct Buffers {
    std::vector<char> mine, stored;  // a chunk each
    std::vector<std::pair<uint64_t, uint64_t>> learned;
  };
  // Bytes [pos, pos + len) of the file (`len` at most a chunk, within one): the pages that differ
  // from what the schema held when last in step are written, and what it learns noted.
  static schema::Status WriteBackChunk(MountFs& m, schema::Transaction& txn, schema::FileId id,
                                       Mapping& mapping, uint64_t pos, size_t len, Buffers& b);
  // The page marks of bytes [pos, pos + len) of a mapping file (`len` at most a chunk), read
  // through its view or, where that fails, copied into `bytes` (then *copied). false when the
  // file is shorter than that now.
  static bool MarkChunk(Mapping& mapping, uint64_t pos, size_t len, char* bytes, uint64_t* marks,
                        bool* copied);
  // Bytes [pos, pos + len) of a mapping file into `bytes`, zeros after them to the page's end.
  static bool CopyChunk(Mapping& mapping, uint64_t pos, size_t len, char* bytes);
  // Copies schema bytes [from, to) of the file into its mapping file, and its size.
  CallOutcome CopyIn(MountFs& m, schema::FileId id, int fd, uint64_t from, uint64_t to);
  Mapping* FindMutable(const MountFs& m, schema::FileId id);
  // The mapping file whose device and inode a tracee's mapping shows.
  std::map<Key, Mapping>::iterator FindByInode(dev_t dev, ino_t ino);
  std::string MakeDirectory();

  std::string dir_;
  uint64_t made_ = 0;
  std::map<Key, Mapping> files_;
};

}  // namespace amino::monitor::service
