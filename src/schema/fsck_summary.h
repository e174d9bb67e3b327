// What fsck's scans (fsck.cc) learn about each file id, and the invariants checked over that
// summary (fsck_invariants.cc). Internal to the schema.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/fsck.h"
#include "schema/records.h"

namespace amino::schema::fsck_internal {

// What the databases say about one file id.
struct FileSummary {
  // Path db.
  uint32_t paths = 0;
  uint32_t paths_with_plmd = 0;
  bool is_dir = false;     // some Path entry of this id is a directory
  uint32_t path_type = 0;  // S_IFMT bits of the first Path entry
  std::string first_path;
  std::string second_path;
  std::optional<Attr> plmd;  // of the first Path entry carrying one
  uint32_t subdirs = 0;      // entries of this directory that are directories
  // Orphan db.
  std::optional<Attr> orphan;
  // Data db.
  bool has_inode_key = false;  // present, even if it failed to decode
  std::optional<InodeValue> inode;
  uint64_t pages = 0;
  uint64_t page_bytes = 0;
  // Xattr db: kHasAccessAcl / kHasDefaultAcl for the ACL records present.
  uint32_t acls = 0;
};

std::string IdText(FileId id);
std::string Quote(std::string_view s);
// Whether the S_IFMT bits of `mode` are one of the seven file types.
bool ValidType(uint32_t mode);

// The stat information that governs the file: PLMD for one name, DLMD for several, the Orphan
// record for none; whatever exists when the record that should is missing; nullptr for none.
const Attr* EffectiveAttr(const FileSummary& f);
// "id N", with its first name or "(orphan)".
std::string Describe(FileId id, const FileSummary& f);

// Checks each file's summary against the invariants (UNIQID, REFCOUNT, NOORPHANEDFILES,
// HARDLINKUSESDLMD and the stat record itself), appending what is violated to *out.
void CheckFiles(const std::map<FileId, FileSummary>& files, std::vector<Violation>* out);

}  // namespace amino::schema::fsck_internal
