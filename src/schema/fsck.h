// The consistency checker: the paper's seven integrity constraints over the raw databases, plus
// the structural rules the schema relies on. The oracle of the crash and fuzz tests.
#pragma once

#include <string>
#include <vector>

#include "schema/status.h"
#include "schema/store.h"

namespace amino::schema {

// The rules, by the name a Violation carries:
//   UNIQID              an id names one file: no two Path entries share it unless the file is a
//                       hard-linked non-directory; not both in Orphan and Path; never 0; "/" is 1.
//   REFCOUNT            link_count == Path entries of the id == its Names entries (the same
//                       paths); stat nlink == link_count (directories: 2 + subdirectories).
//   NOORPHANEDFILES     every file has a name or is open; link_count 0 exactly for Orphan
//                       entries; every Path and Orphan id has an InodeValue.
//   NOORPHANEDBLOCKS    every page and extended attribute belongs to an id with an InodeValue.
//   HARDLINKUSESDLMD    DLMD present exactly when link_count > 1, PLMD exactly when it is 1.
//   PAGESMATCHSIZE      no page at or past ceil(size / 4096); no page longer than 4096 bytes.
//   LASTPAGEMATCHESSIZE the page holding the end of file stops there.
//   PARENT              every path but "/" has a parent entry that is a directory; "/" exists.
//   TYPE                Path entries and the metadata agree on a valid file type.
//   BLOCKS              st_blocks == 8 x the stored pages (512-byte units of 4 KiB pages).
//   SYMLINK             a symbolic link's target (page 0) is non-empty and `size` bytes long.
//   ACL                 the metadata's ACL flags name exactly the file's system.posix_acl_*
//                       records, which hold valid ACLs; a default ACL only on a directory.
//   SUPERBLOCK          the superblock is present and of a supported format.
//   RECORD              a key or value does not decode.
struct Violation {
  std::string invariant;  // one of the names above
  std::string detail;     // which record, what was found, what was expected
};

// Checks every record in one read-only transaction. An empty vector means consistent. The scan
// takes read locks (degree 3), so on a file system in use it may wait for writers or lose a
// deadlock (a conflict status: run it again).
Result<std::vector<Violation>> Fsck(Store& store);

}  // namespace amino::schema
