// fsck's invariant checks over the per-file summary its scans built (fsck_summary.h).
#include <sys/stat.h>

#include "schema/fsck_summary.h"

namespace amino::schema::fsck_internal {

std::string IdText(FileId id) { return "id " + std::to_string(id); }

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

bool ValidType(uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
    case S_IFDIR:
    case S_IFLNK:
    case S_IFCHR:
    case S_IFBLK:
    case S_IFIFO:
    case S_IFSOCK:
      return true;
    default:
      return false;
  }
}

const Attr* EffectiveAttr(const FileSummary& f) {
  uint32_t links = f.inode ? f.inode->link_count : f.paths;
  const Attr* by_links = links > 1    ? (f.inode && f.inode->dlmd ? &*f.inode->dlmd : nullptr)
                         : links == 1 ? (f.plmd ? &*f.plmd : nullptr)
                                      : (f.orphan ? &*f.orphan : nullptr);
  if (by_links) return by_links;
  if (f.inode && f.inode->dlmd) return &*f.inode->dlmd;
  if (f.plmd) return &*f.plmd;
  if (f.orphan) return &*f.orphan;
  return nullptr;
}

std::string Describe(FileId id, const FileSummary& f) {
  std::string s = IdText(id);
  if (f.paths > 0)
    s += " (" + Quote(f.first_path) + ")";
  else if (f.orphan)
    s += " (orphan)";
  return s;
}

namespace {

class InvariantChecker {
 public:
  explicit InvariantChecker(std::vector<Violation>* out) : out_(out) {}

  void CheckFiles(const std::map<FileId, FileSummary>& files) {
    for (const auto& [id, f] : files) {
      std::string who = Describe(id, f);
      // When the id is shared by something that is not one of this file's names, the counts
      // below do not describe one file: the UNIQID report says it all.
      bool foreign_id = CheckUniqueId(id, f, who);
      if (!f.has_inode_key) {
        if (f.paths > 0 || f.orphan) Report("NOORPHANEDFILES", who + " has no InodeValue");
        continue;
      }
      if (!f.inode) continue;  // does not decode: reported already
      if (!foreign_id) CheckRefCount(f, who);
      if (const Attr* a = EffectiveAttr(f)) CheckMetadata(f, *a, who);
      CheckNamedOrOpen(f, who);
      CheckMetadataPlace(f, who);
    }
  }

  // UNIQID. Returns whether the id is used by more than one file.
  bool CheckUniqueId(FileId id, const FileSummary& f, const std::string& who) {
    bool shared = false;
    if (f.is_dir && f.paths > 1) {
      shared = true;
      Report("UNIQID", "directory " + IdText(id) + " has " + std::to_string(f.paths) +
                           " Path entries (" + Quote(f.first_path) + ", " + Quote(f.second_path) +
                           ")");
    }
    if (f.orphan && f.paths > 0) {
      shared = true;
      Report("UNIQID", who + " is both in the Orphan db and in the Path db");
    }
    uint32_t links = f.inode ? f.inode->link_count : 0;
    if (f.inode && !f.is_dir && f.paths > 1 && links <= 1) {
      shared = true;
      Report("UNIQID", who + " is used by " + std::to_string(f.paths) + " Path entries (" +
                           Quote(f.first_path) + ", " + Quote(f.second_path) +
                           ") but is not a hard link (link_count " + std::to_string(links) + ")");
    }
    return shared;
  }

  // REFCOUNT: the link count matches the names (Names and Path agree: checked in the scans).
  void CheckRefCount(const FileSummary& f, const std::string& who) {
    uint32_t links = f.inode->link_count;
    if (links != f.paths) {
      Report("REFCOUNT", who + " has link_count " + std::to_string(links) + " but " +
                             std::to_string(f.paths) + " Path entries");
    }
  }

  // The stat record against the rest: nlink (REFCOUNT), type, blocks, symbolic-link target.
  void CheckMetadata(const FileSummary& f, const Attr& a, const std::string& who) {
    uint32_t links = f.inode->link_count;
    uint32_t type = a.mode & S_IFMT;
    uint32_t want = links == 0 ? 0 : type == S_IFDIR ? 2 + f.subdirs : links;
    if (a.nlink != want) {
      Report("REFCOUNT", who + " has stat nlink " + std::to_string(a.nlink) + ", expected " +
                             std::to_string(want) +
                             (type == S_IFDIR && links > 0 ? " (2 + subdirectories)" : ""));
    }
    if (f.paths > 0 && type != f.path_type) {
      Report("TYPE", who + ": the Path entry says file type " + std::to_string(f.path_type) +
                         ", the metadata " + std::to_string(type));
    }
    if (!ValidType(a.mode)) {
      Report("TYPE", who + " has invalid file type bits " + std::to_string(type));
    }
    // The flags say which ACL records the file has; only a directory has a default ACL.
    if (a.flags != f.acls) {
      Report("ACL", who + " has ACL flags " + std::to_string(a.flags) + " but ACL records " +
                        std::to_string(f.acls));
    }
    if ((f.acls & kHasDefaultAcl) && type != S_IFDIR) {
      Report("ACL", who + " has a default ACL but is not a directory");
    }
    if ((f.acls & kHasAccessAcl) && type == S_IFLNK) {
      Report("ACL", who + " is a symbolic link with an access ACL");
    }
    // st_blocks counts the stored pages, 4 KiB each.
    if (a.blocks != f.pages * (kTransferUnit / 512)) {
      Report("BLOCKS", who + " has st_blocks " + std::to_string(a.blocks) + " but " +
                           std::to_string(f.pages) + " stored pages");
    }
    // A symbolic link's target is its page 0, exactly `size` bytes long.
    if (type == S_IFLNK && (a.size == 0 || a.size > kSymlinkMax)) {
      Report("SYMLINK",
             who + " is a symbolic link with a target of " + std::to_string(a.size) + " bytes");
    } else if (type == S_IFLNK && f.page_bytes != a.size) {
      Report("SYMLINK", who + " is a symbolic link of size " + std::to_string(a.size) +
                            " whose stored target holds " + std::to_string(f.page_bytes) +
                            " bytes");
    }
  }

  // NOORPHANEDFILES: a file has a name or is open, and is in the Orphan db exactly when it has
  // no name.
  void CheckNamedOrOpen(const FileSummary& f, const std::string& who) {
    uint32_t links = f.inode->link_count;
    if (links == 0 && f.inode->open_count == 0) {
      Report("NOORPHANEDFILES", who + " has neither a name nor an open file description");
    }
    if (links == 0 && !f.orphan) {
      Report("NOORPHANEDFILES", who + " has link_count 0 but is not in the Orphan db");
    }
    if (links > 0 && f.orphan && f.paths == 0) {
      Report("NOORPHANEDFILES",
             who + " is in the Orphan db but has link_count " + std::to_string(links));
    }
    if (links > 0 && f.paths == 0 && !f.orphan) {
      Report("NOORPHANEDFILES", who + " has link_count " + std::to_string(links) +
                                    " but no name and is not in the Orphan db");
    }
  }

  // HARDLINKUSESDLMD: the metadata lives in the DLMD exactly when the file has several names,
  // in the PLMD of its name exactly when it has one.
  void CheckMetadataPlace(const FileSummary& f, const std::string& who) {
    uint32_t links = f.inode->link_count;
    if ((links > 1) != f.inode->dlmd.has_value()) {
      Report("HARDLINKUSESDLMD", who + " has link_count " + std::to_string(links) +
                                     (f.inode->dlmd ? " and a DLMD" : " but no DLMD"));
    }
    if (links == 1 ? f.paths_with_plmd != f.paths : f.paths_with_plmd > 0) {
      Report("HARDLINKUSESDLMD", who + " has link_count " + std::to_string(links) + " and " +
                                     std::to_string(f.paths_with_plmd) + " of " +
                                     std::to_string(f.paths) + " Path entries carry a PLMD");
    }
  }

 private:
  void Report(std::string invariant, std::string detail) {
    out_->push_back(Violation{std::move(invariant), std::move(detail)});
  }

  std::vector<Violation>* out_;
};

}  // namespace

void CheckFiles(const std::map<FileId, FileSummary>& files, std::vector<Violation>* out) {
  InvariantChecker(out).CheckFiles(files);
}

}  // namespace amino::schema::fsck_internal
