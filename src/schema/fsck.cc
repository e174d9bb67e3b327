// The consistency checker. It reads every database once, in one read-only transaction, builds a
// per-file summary (memory proportional to the number of files, not to their data) and then
// checks the summary against the invariants. Every violation is reported, not only the first:
// a crash test that fails wants to see the whole damage.
//
// Scan order matters: Path first (depth order, so a parent directory is always seen before its
// entries), then Orphan, then Data (each file's InodeValue key is a prefix of its page keys, so
// it comes right before its pages and the file's size is known when its pages are checked), then
// Names and Xattr.
#include "schema/fsck.h"

#include <sys/stat.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "schema/acl.h"
#include "schema/fsck_summary.h"
#include "schema/records.h"
#include "schema/transaction.h"

namespace amino::schema {
namespace {

using namespace fsck_internal;

// A normalized absolute path: "/" or "/a/b" with no empty, "." or ".." components.
bool WellFormedPath(std::string_view p) {
  if (p.empty() || p[0] != '/') return false;
  if (p == "/") return true;
  size_t start = 1;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    std::string_view comp = p.substr(start, end - start);
    if (comp.empty() || comp == "." || comp == ".." || comp.size() > kNameMax) return false;
    start = end + 1;
  }
  return true;
}

class Checker {
 public:
  Checker(Store& store, DB_TXN* txn) : store_(store), txn_(txn) {}

  Status Run() {
    AMINO_RETURN_IF_ERROR(ScanPaths());
    AMINO_RETURN_IF_ERROR(ScanOrphans());
    AMINO_RETURN_IF_ERROR(ScanData());
    AMINO_RETURN_IF_ERROR(ScanNames());
    AMINO_RETURN_IF_ERROR(ScanXattrs());
    CheckFiles(files_, &violations_);
    return Status::Ok();
  }

  std::vector<Violation> TakeViolations() { return std::move(violations_); }

 private:
  void Report(std::string invariant, std::string detail) {
    violations_.push_back(Violation{std::move(invariant), std::move(detail)});
  }

  Status ScanPaths() {
    Cursor cur(store_.path(), txn_);
    AMINO_RETURN_IF_ERROR(cur.status());
    Cursor names(store_.names(), txn_);
    AMINO_RETURN_IF_ERROR(names.status());
    bool root_seen = false;
    for (Result<bool> more = cur.First();; more = cur.Next()) {
      if (!more.ok()) return more.status();
      if (!*more) break;
      std::string_view key = cur.key();
      std::string path = PathFromKey(key);
      if (key.size() < 3 || !WellFormedPath(path)) {
        Report("RECORD", "Path key " + Quote(path) + " is not a well-formed path");
        continue;
      }
      uint16_t depth = static_cast<uint16_t>((uint8_t(key[0]) << 8) | uint8_t(key[1]));
      if (depth != PathDepth(path)) {
        Report("RECORD", "Path key " + Quote(path) + " has depth " + std::to_string(depth) +
                             ", expected " + std::to_string(PathDepth(path)));
        continue;
      }
      PathValue v;
      if (!DecodePathValue(cur.value(), &v)) {
        Report("RECORD", "Path value of " + Quote(path) + " does not decode");
        continue;
      }
      uint32_t type = v.mode & S_IFMT;
      if (!ValidType(v.mode)) {
        Report("TYPE",
               "Path entry " + Quote(path) + " has invalid file type bits " + std::to_string(type));
      }
      if (v.id == kSuperblockId) {
        Report("UNIQID", "Path entry " + Quote(path) + " uses the reserved id 0");
        continue;
      }
      if (path == "/") {
        root_seen = true;
        if (v.id != kRootId) {
          Report("UNIQID", "root directory \"/\" has " + IdText(v.id) + ", expected id 1");
        }
        if (type != S_IFDIR) Report("TYPE", "root directory \"/\" is not a directory");
      } else {
        std::string parent(ParentPath(path));
        auto dir = dirs_.find(parent);
        if (dir == dirs_.end()) {
          Report("PARENT", "Path entry " + Quote(path) + ": parent " + Quote(parent) +
                               " is missing or not a directory");
        } else if (type == S_IFDIR) {
          files_[dir->second].subdirs++;
        }
      }
      if (type == S_IFDIR) dirs_.emplace(path, v.id);

      // Every name is indexed in Names under its id.
      Result<bool> indexed = names.SeekBoth(IdKey(v.id), path);
      if (!indexed.ok()) return indexed.status();
      if (!*indexed) {
        Report("REFCOUNT",
               "Path entry " + Quote(path) + " (" + IdText(v.id) + ") has no Names entry");
      }

      NoteName(path, v, type);
    }
    if (!root_seen) Report("PARENT", "root directory \"/\" is missing");
    return Status::Ok();
  }

  // One more name of file v.id in the summary.
  void NoteName(const std::string& path, const PathValue& v, uint32_t type) {
    FileSummary& f = files_[v.id];
    if (f.paths == 0) {
      f.first_path = path;
      f.path_type = type;
    } else {
      if (f.second_path.empty()) f.second_path = path;
      if (type != f.path_type) {
        Report("TYPE", "Path entries " + Quote(f.first_path) + " and " + Quote(path) + " of " +
                           IdText(v.id) + " disagree on the file type");
      }
    }
    f.paths++;
    if (type == S_IFDIR) f.is_dir = true;
    if (v.plmd) {
      f.paths_with_plmd++;
      if (!f.plmd) f.plmd = v.plmd;
    }
  }

  Status ScanOrphans() {
    Cursor cur(store_.orphan(), txn_);
    AMINO_RETURN_IF_ERROR(cur.status());
    for (Result<bool> more = cur.First();; more = cur.Next()) {
      if (!more.ok()) return more.status();
      if (!*more) break;
      FileId id;
      if (!ParseIdKey(cur.key(), &id)) {
        Report("RECORD", "Orphan key of " + std::to_string(cur.key().size()) + " bytes");
        continue;
      }
      Attr a;
      if (!DecodeAttr(cur.value(), &a)) {
        Report("RECORD", "Orphan value of " + IdText(id) + " does not decode");
        continue;
      }
      if (id == kSuperblockId) {
        Report("UNIQID", "Orphan entry uses the reserved id 0");
        continue;
      }
      files_[id].orphan = a;
    }
    return Status::Ok();
  }

  // The file records of format 2, in their own database.
  Status ScanInodes() {
    Cursor cur(store_.inode(), txn_);
    AMINO_RETURN_IF_ERROR(cur.status());
    for (Result<bool> more = cur.First();; more = cur.Next()) {
      if (!more.ok()) return more.status();
      if (!*more) break;
      FileId id;
      if (!ParseIdKey(cur.key(), &id) || id == kSuperblockId) {
        Report("RECORD", "Inode key of " + std::to_string(cur.key().size()) + " bytes");
        continue;
      }
      NoteInode(id, cur.value());
    }
    return Status::Ok();
  }

  // A file record: the file's summary, or nullptr when the record does not decode (reported).
  FileSummary* NoteInode(FileId id, std::string_view value) {
    FileSummary& f = files_[id];
    f.has_inode_key = true;
    InodeValue v;
    if (!DecodeInodeValue(value, &v)) {
      Report("RECORD", "InodeValue of " + IdText(id) + " does not decode");
      return nullptr;
    }
    f.inode = v;
    return &f;
  }

  Status ScanData() {
    const bool separate = store_.inode() != store_.data();
    if (separate) AMINO_RETURN_IF_ERROR(ScanInodes());
    Cursor cur(store_.data(), txn_);
    AMINO_RETURN_IF_ERROR(cur.status());
    bool superblock_seen = false;
    // The file whose InodeValue key was seen last; its pages follow it.
    std::optional<FileId> current;
    const FileSummary* current_file = nullptr;
    FileId paged = kSuperblockId;  // format 2: the file whose pages are being read
    bool paged_known = false;      // and whether it has a file record
    for (Result<bool> more = cur.First();; more = cur.Next()) {
      if (!more.ok()) return more.status();
      if (!*more) break;
      std::string_view key = cur.key();
      FileId id;
      uint64_t page;
      if (ParseIdKey(key, &id)) {
        current = id;
        current_file = nullptr;
        if (id == kSuperblockId) {
          superblock_seen = true;
          Superblock sb;
          if (!DecodeSuperblock(cur.value(), &sb)) {
            Report("SUPERBLOCK", "the superblock does not decode or has an unsupported format");
          }
          continue;
        }
        if (separate) {
          Report("RECORD", "InodeValue of " + IdText(id) + " in the Data database");
          continue;
        }
        current_file = NoteInode(id, cur.value());
      } else if (ParsePageKey(key, &id, &page)) {
        bool recorded;
        if (separate) {
          // The file record is in the Inode database; the pages of one file are together.
          if (id != paged) {
            paged = id;
            auto it = files_.find(id);
            paged_known = it != files_.end() && it->second.has_inode_key;
            current_file = paged_known && it->second.inode ? &it->second : nullptr;
          }
          recorded = paged_known && id != kSuperblockId;
        } else {
          recorded = current && *current == id && id != kSuperblockId;
        }
        if (!recorded) {
          Report("NOORPHANEDBLOCKS",
                 "page " + std::to_string(page) + " of " + IdText(id) + " has no InodeValue");
          continue;
        }
        if (!current_file) continue;  // the InodeValue is damaged: reported already
        FileSummary& f = files_[id];
        f.pages++;
        f.page_bytes += cur.value().size();
        CheckPage(id, f, page, cur.value().size());
      } else {
        Report("RECORD", "Data key of " + std::to_string(key.size()) + " bytes");
      }
    }
    if (!superblock_seen) Report("SUPERBLOCK", "the superblock is missing");
    return Status::Ok();
  }

  void CheckPage(FileId id, const FileSummary& f, uint64_t page, size_t len) {
    const Attr* a = EffectiveAttr(f);
    std::string what = "page " + std::to_string(page) + " of " + Describe(id, f);
    if (len > kTransferUnit) {
      Report("PAGESMATCHSIZE", what + " holds " + std::to_string(len) + " bytes, more than " +
                                   std::to_string(kTransferUnit));
    }
    if (!a) return;  // no stat record to compare with: reported as a missing record
    if (S_ISDIR(a->mode)) {
      Report("PAGESMATCHSIZE", what + ": a directory holds no data pages");
      return;
    }
    uint64_t size = a->size;
    uint64_t pages_in_size = size / kTransferUnit + (size % kTransferUnit != 0);
    if (page >= pages_in_size) {
      Report("PAGESMATCHSIZE",
             what + " lies past the end of the file (size " + std::to_string(size) + ")");
    } else if (page == size / kTransferUnit && len <= kTransferUnit && len > size % kTransferUnit) {
      Report("LASTPAGEMATCHESSIZE", what + " holds " + std::to_string(len) +
                                        " bytes but the file ends " +
                                        std::to_string(size % kTransferUnit) + " bytes into it");
    }
  }

  Status ScanNames() {
    Cursor cur(store_.names(), txn_);
    AMINO_RETURN_IF_ERROR(cur.status());
    for (Result<bool> more = cur.First();; more = cur.Next()) {
      if (!more.ok()) return more.status();
      if (!*more) break;
      FileId id;
      if (!ParseIdKey(cur.key(), &id)) {
        Report("RECORD", "Names key of " + std::to_string(cur.key().size()) + " bytes");
        continue;
      }
      std::string path(cur.value());
      if (id == kSuperblockId) {
        Report("UNIQID", "Names entry " + Quote(path) + " uses the reserved id 0");
        continue;
      }
      // Each Names entry must be a Path entry of the same id. Together with the check in
      // ScanPaths (every Path entry is in Names) this makes the two sets equal.
      auto got = store_.Get(store_.path(), txn_, PathKey(path));
      if (!got.ok()) return got.status();
      PathValue v;
      if (!got->has_value()) {
        Report("REFCOUNT",
               "Names entry " + Quote(path) + " of " + IdText(id) + " has no Path entry");
      } else if (DecodePathValue(**got, &v) && v.id != id) {
        Report("REFCOUNT", "Names entry " + Quote(path) + " of " + IdText(id) +
                               " names a Path entry of " + IdText(v.id));
      }
    }
    return Status::Ok();
  }

  Status ScanXattrs() {
    Cursor cur(store_.xattr(), txn_);
    AMINO_RETURN_IF_ERROR(cur.status());
    for (Result<bool> more = cur.First();; more = cur.Next()) {
      if (!more.ok()) return more.status();
      if (!*more) break;
      std::string_view key = cur.key();
      FileId id;
      if (key.size() <= 8 || !ParseIdKey(key.substr(0, 8), &id)) {
        Report("RECORD", "Xattr key of " + std::to_string(key.size()) + " bytes");
        continue;
      }
      std::string name(key.substr(8));
      auto f = files_.find(id);
      if (f == files_.end() || !f->second.has_inode_key) {
        Report("NOORPHANEDBLOCKS",
               "extended attribute " + Quote(name) + " of " + IdText(id) + " has no InodeValue");
        continue;
      }
      if (name == kAclAccessName || name == kAclDefaultName) {
        f->second.acls |= name == kAclAccessName ? kHasAccessAcl : kHasDefaultAcl;
        Result<Acl> acl = ParseAcl(cur.value());
        if (!acl.ok() || acl->empty()) {
          Report("ACL",
                 "extended attribute " + Quote(name) + " of " + IdText(id) + " is not a valid ACL");
        }
      }
    }
    return Status::Ok();
  }

  Store& store_;
  DB_TXN* txn_;
  std::map<FileId, FileSummary> files_;
  std::unordered_map<std::string, FileId> dirs_;  // directory path -> id
  std::vector<Violation> violations_;
};

}  // namespace

Result<std::vector<Violation>> Fsck(Store& store) {
  DB_TXN* raw = nullptr;
  AMINO_RETURN_IF_ERROR(
      DbStatus(store.env()->txn_begin(store.env(), nullptr, &raw, 0), "fsck: txn_begin"));
  Transaction txn(raw, nullptr);  // read-only: aborted when it goes out of scope
  Checker checker(store, raw);
  AMINO_RETURN_IF_ERROR(checker.Run());
  AMINO_RETURN_IF_ERROR(txn.Abort());
  return checker.TakeViolations();
}

}  // namespace amino::schema
