// Shared by the files that implement FileSystem: where a file's metadata lives, path
// resolution, permission checks. Not part of the schema's interface.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "schema/acl.h"
#include "schema/filesystem.h"
#include "schema/store.h"

namespace amino::schema::internal {

// About what a new file or name adds to the databases (its records), for Store::Room.
inline constexpr uint64_t kNewFileBytes = 512;

// A file and the place its metadata is stored: the Path record of its only name (PLMD), its
// Data record (DLMD, hard-linked), or the Orphan db (no name, still open).
struct Node {
  enum class Where { kPlmd, kDlmd, kOrphan };
  FileId id = 0;
  Where where = Where::kPlmd;
  std::string path;  // the name the metadata is stored under (kPlmd) or the name resolved
  PathValue pv;      // the Path record of `path` (when there is one)
  InodeValue iv;     // the Data record
  Attr attr;         // the metadata, wherever it lives
  Acl acl;           // its access ACL, loaded with it when attr.flags has kHasAccessAcl

  bool is_dir() const { return S_ISDIR(attr.mode); }
  bool is_link() const { return S_ISLNK(attr.mode); }
};

// What a path names: the directory it is in, the last component, and the file, if it exists.
struct Resolved {
  enum class Last { kName, kDot, kDotDot, kRoot };
  std::string parent;  // canonical path of the containing directory
  std::string name;    // last component (empty for kRoot / kDot / kDotDot)
  Last last = Last::kName;
  bool trailing_slash = false;  // the path ended in "/": the file must be a directory
  std::optional<Node> node;
  std::string path() const { return last == Last::kName ? JoinPath(parent, name) : parent; }
};

// The time of a change that is not one file's (a new file's times): change_clock.h.
timespec Now();

// Permission bits: 4 read, 2 write, 1 execute/search; the access ACL where the file has one.
bool Permitted(const Node& n, const Cred& c, int mask);
bool IsOwnerOrPrivileged(const Attr& a, const Cred& c);
// A write or truncate (O_TRUNC too) by a caller without CAP_FSETID drops set-user-id, and
// set-group-id when it means "execute as the group" or the caller is not in the file's group.
void DropPrivileges(Attr& a, const Cred& c);

// The stored ACL `name` (kAclAccessName or kAclDefaultName) of a file whose flags say it has
// one: a missing or unreadable record is a damaged database (EUCLEAN), never an empty ACL.
Result<Acl> LoadStoredAcl(Store& s, DB_TXN* t, FileId id, std::string_view name);

class Ops {
 public:
  explicit Ops(Store& s) : s_(s) {}

  // Records.
  Result<std::optional<PathValue>> GetPath(DB_TXN* t, std::string_view path);
  Status PutPath(DB_TXN* t, std::string_view path, const PathValue& v);
  Result<InodeValue> GetInode(DB_TXN* t, FileId id, uint32_t flags = 0);  // DB_RMW: for writing
  // The same for a file that may be gone (freed): nullopt then; an unreadable one is damage.
  Result<std::optional<InodeValue>> FindInode(DB_TXN* t, FileId id);
  Status PutInode(DB_TXN* t, FileId id, const InodeValue& v);
  // The node a Path record names (loads the DLMD when needed).
  Result<Node> NodeAt(DB_TXN* t, std::string_view path, const PathValue& pv);
  Result<std::optional<Node>> LookupPath(DB_TXN* t, std::string_view path);
  // ENOENT (stale) if the file no longer exists.
  Result<Node> NodeById(DB_TXN* t, FileId id);
  // NodeById without the Data database (for a snapshot transaction); nullopt when the file's
  // attributes are there (hard links).
  Result<std::optional<Node>> NodeByIdInSnapshot(DB_TXN* t, FileId id);
  // Writes node.attr back where it lives.
  Status SaveAttr(DB_TXN* t, Node& node);
  // Touches mtime/ctime of a directory (after an entry was added or removed) and adjusts its
  // link count by `nlink_delta` (subdirectories); unwritten when that changes nothing
  // (change_clock.h).
  Status TouchDir(DB_TXN* t, std::string_view dir, int nlink_delta);

  // Path resolution (see filesystem.h). `follow`: follow a symbolic link in the last component.
  // `creating` (open with O_CREAT): a last component that must be a directory (a trailing
  // slash, also one a followed link brought) is EISDIR before it is looked up.
  Result<Resolved> Resolve(DB_TXN* t, const Cred& c, std::string_view path, bool follow,
                           bool creating = false);
  // Resolve and require the file to exist.
  Result<Node> ResolveExisting(DB_TXN* t, const Cred& c, std::string_view path, bool follow);

  // Creates a new file named `path` (its parent must exist and be checked by the caller) with
  // the requested `mode`: the parent's default ACL masks it when there is one (and becomes the
  // new file's access ACL, and a new directory's default ACL), `umask` otherwise.
  Result<Node> CreateNode(DB_TXN* t, const Cred& c, std::string_view path, mode_t mode,
                          mode_t umask, dev_t rdev, const Node& parent);
  // Loads the access ACL of a node whose flags say it has one.
  Status LoadAcl(DB_TXN* t, Node& n);
  // Stores `acl` as the attribute `name` (an empty one removes it) and sets the flag saying so;
  // the caller saves node.attr.
  Status StoreAcl(DB_TXN* t, Node& n, std::string_view name, const Acl& acl);
  // A file without a name, open once (open with O_TMPFILE): in the Orphan db from the start,
  // so that its last close, or recovery after a crash, frees it unless a link names it first.
  // Its mode and ACL are made as CreateNode makes them.
  Result<Node> CreateUnnamed(DB_TXN* t, const Cred& c, mode_t mode, mode_t umask,
                             const Node& parent);
  // Stores `iv` under a fresh id: the next of the process's run in a call of its own, else a
  // random one (Store::NextRunId).
  Result<FileId> NewInode(DB_TXN* t, const InodeValue& iv);
  // Removes one name of a file; frees or orphans the file when it was the last.
  Status RemoveName(DB_TXN* t, Node& node, std::string_view path);
  // Frees a file no name and no open description refer to: pages, xattrs, records.
  // `orphan_record`: it may have an Orphan record (it had no name before this transaction).
  // `size`: the file's size, where known (no page lies past the end of file, so an empty file
  // has none to look for).
  Status FreeFile(DB_TXN* t, FileId id, bool orphan_record = true,
                  std::optional<uint64_t> size = std::nullopt);
  // Deletes the pages of `id` at and past byte `from` and trims the page that holds it.
  Status TruncatePages(DB_TXN* t, FileId id, uint64_t from, uint64_t old_size, uint64_t* blocks);
  Status SetSize(DB_TXN* t, Node& node, uint64_t length, const timespec& now);

  Store& store() { return s_; }

 private:
  Store& s_;
};

// Resolves a path whose last component is the object of a namespace change (create, remove,
// rename, link): that component is never followed, and a trailing slash is only remembered.
Result<Resolved> ResolveEntry(Ops& ops, DB_TXN* t, const Cred& c, std::string_view path);

Result<bool> DirIsEmpty(Store& s, DB_TXN* t, std::string_view dir);

// may_delete(): may `c` remove or replace `victim` from `dir`?
Status MayDelete(const Node& dir, const Node& victim, const Cred& c, bool is_dir);

// The common checks for creating the entry `r` names: its parent directory (namespace_ops.cc).
Result<Node> CreationParent(Ops& ops, DB_TXN* t, const Cred& c, const Resolved& r, bool is_dir);

}  // namespace amino::schema::internal
