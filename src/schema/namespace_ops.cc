// Names: creating, linking, removing and renaming files and directories; open and close.
#include <fcntl.h>
#include <linux/fs.h>

#include <random>

#include "schema/fs_internal.h"

namespace amino::schema {

using internal::IsOwnerOrPrivileged;
using internal::Node;
using internal::Now;
using internal::Ops;
using internal::Permitted;
using internal::Resolved;

namespace internal {

// Random ids (as in the paper) keep concurrent creators from contending on a counter.
static FileId RandomId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  FileId id;
  do {
    id = rng() >> 1;  // positive as a signed 64-bit ino
  } while (id <= kRootId);
  return id;
}

// A new file's attributes: the caller's ids, or the directory's group (set-group-ID), and the
// ACLs it takes from the directory's default ACL.
struct NewFile {
  Attr attr;
  Acl access;     // its access ACL (empty: none)
  Acl inherited;  // a new directory's own default ACL (empty: none)
};

static Result<NewFile> InitialAttr(Store& s, DB_TXN* t, const Cred& c, mode_t mode, mode_t umask,
                                   dev_t rdev, const Node& parent) {
  const Attr& parent_attr = parent.attr;
  NewFile f;
  Attr& a = f.attr;
  a.mode = mode;
  a.nlink = S_ISDIR(mode) ? 2 : 1;
  a.uid = c.uid;
  a.gid = c.gid;
  if (parent_attr.mode & S_ISGID) {
    a.gid = parent_attr.gid;
    if (S_ISDIR(mode)) {
      a.mode |= S_ISGID;
    } else if ((a.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) &&
               !c.in_group_or_fsetid(a.gid)) {
      a.mode &= ~S_ISGID;
    }
  }
  // posix_acl_create(): the directory's default ACL, when it has one, takes the umask's place.
  if (!S_ISLNK(mode)) {
    if (parent_attr.flags & kHasDefaultAcl) {
      AMINO_ASSIGN_OR_RETURN(f.inherited, LoadStoredAcl(s, t, parent.id, kAclDefaultName));
      f.access = f.inherited;
      if (!AclCreateMasq(&f.access, &a.mode)) f.access.clear();
      if (!S_ISDIR(mode)) f.inherited.clear();
    } else {
      a.mode &= ~(umask & 0777);
    }
  }
  a.rdev = rdev;
  a.atime = a.mtime = a.ctime = Now();
  return f;
}

// Stores `iv` under a fresh id.
Result<FileId> Ops::NewInode(DB_TXN* t, const InodeValue& iv) {
  for (;;) {
    FileId id = RandomId();
    Status st = s_.Put(s_.data(), t, IdKey(id), EncodeInodeValue(iv), DB_NOOVERWRITE);
    if (st.ok()) return id;
    if (st.kind() != Status::Kind::kErrno || st.error() != EEXIST) return st;
  }
}

Result<Node> Ops::CreateNode(DB_TXN* t, const Cred& c, std::string_view path, mode_t mode,
                             mode_t umask, dev_t rdev, const Node& parent) {
  AMINO_ASSIGN_OR_RETURN(NewFile f, InitialAttr(s_, t, c, mode, umask, rdev, parent));
  const Attr& a = f.attr;
  AMINO_ASSIGN_OR_RETURN(FileId id, NewInode(t, InodeValue{1, 0, std::nullopt}));
  Node n;
  n.id = id;
  n.where = Node::Where::kPlmd;
  n.path = std::string(path);
  n.pv = PathValue{id, a.mode, a};
  n.iv = InodeValue{1, 0, std::nullopt};
  n.attr = a;
  if (!f.access.empty()) AMINO_RETURN_IF_ERROR(StoreAcl(t, n, kAclAccessName, f.access));
  if (!f.inherited.empty()) AMINO_RETURN_IF_ERROR(StoreAcl(t, n, kAclDefaultName, f.inherited));
  n.pv.plmd = n.attr;
  AMINO_RETURN_IF_ERROR(PutPath(t, path, n.pv));
  AMINO_RETURN_IF_ERROR(s_.Put(s_.names(), t, IdKey(id), path));
  AMINO_RETURN_IF_ERROR(TouchDir(t, ParentPath(path), S_ISDIR(mode) ? 1 : 0, a.ctime));
  return n;
}

Result<Node> Ops::CreateUnnamed(DB_TXN* t, const Cred& c, mode_t mode, mode_t umask,
                                const Node& parent) {
  AMINO_ASSIGN_OR_RETURN(NewFile f, InitialAttr(s_, t, c, mode, umask, 0, parent));
  Node n;
  n.attr = f.attr;
  n.attr.nlink = 0;
  n.iv = InodeValue{0, 1, std::nullopt};
  AMINO_ASSIGN_OR_RETURN(n.id, NewInode(t, n.iv));
  n.where = Node::Where::kOrphan;
  if (!f.access.empty()) AMINO_RETURN_IF_ERROR(StoreAcl(t, n, kAclAccessName, f.access));
  AMINO_RETURN_IF_ERROR(s_.Put(s_.orphan(), t, IdKey(n.id), EncodeAttr(n.attr)));
  return n;
}

Status Ops::FreeFile(DB_TXN* t, FileId id) {
  {
    Cursor c(s_.data(), t);
    AMINO_RETURN_IF_ERROR(c.status());
    std::string prefix = IdKey(id);
    AMINO_ASSIGN_OR_RETURN(bool more, c.SeekRange(PageKey(id, 0)));
    while (more && c.key().size() == 16 && c.key().substr(0, 8) == prefix) {
      AMINO_RETURN_IF_ERROR(c.Delete());
      AMINO_ASSIGN_OR_RETURN(more, c.Next());
    }
  }
  {
    Cursor c(s_.xattr(), t);
    AMINO_RETURN_IF_ERROR(c.status());
    std::string prefix = IdKey(id);
    AMINO_ASSIGN_OR_RETURN(bool more, c.SeekRange(prefix));
    while (more && c.key().substr(0, 8) == prefix) {
      AMINO_RETURN_IF_ERROR(c.Delete());
      AMINO_ASSIGN_OR_RETURN(more, c.Next());
    }
  }
  AMINO_RETURN_IF_ERROR(s_.Del(s_.orphan(), t, IdKey(id)));
  return s_.Del(s_.data(), t, IdKey(id));
}

Status Ops::RemoveName(DB_TXN* t, Node& n, std::string_view path, const timespec& now) {
  AMINO_RETURN_IF_ERROR(s_.Del(s_.path(), t, PathKey(path)));
  AMINO_RETURN_IF_ERROR(s_.DelDup(s_.names(), t, IdKey(n.id), path));
  if (n.where == Node::Where::kPlmd) {
    AMINO_ASSIGN_OR_RETURN(n.iv, GetInode(t, n.id));
  }
  if (n.iv.link_count == 0) return Status::Storage(EUCLEAN, "link count underflow");
  n.iv.link_count--;
  n.attr.ctime = now;
  n.attr.nlink = n.is_dir() ? 0 : n.iv.link_count;
  if (n.iv.link_count >= 2) {
    n.iv.dlmd = n.attr;
    return PutInode(t, n.id, n.iv);
  }
  if (n.iv.link_count == 1) {
    // Back to one name: the metadata moves to the remaining name's Path record (demotion).
    AMINO_ASSIGN_OR_RETURN(std::optional<std::string> other, s_.Get(s_.names(), t, IdKey(n.id)));
    if (!other) return Status::Storage(EUCLEAN, "hard link without a remaining name");
    AMINO_ASSIGN_OR_RETURN(std::optional<PathValue> pv, GetPath(t, *other));
    if (!pv) return Status::Storage(EUCLEAN, "name index points to a missing path");
    pv->plmd = n.attr;
    AMINO_RETURN_IF_ERROR(PutPath(t, *other, *pv));
    n.iv.dlmd.reset();
    n.where = Node::Where::kPlmd;
    n.path = *other;
    n.pv = *pv;
    return PutInode(t, n.id, n.iv);
  }
  // Asked with the record taken for writing (open_holds.h).
  AMINO_RETURN_IF_ERROR(s_.Get(s_.data(), t, IdKey(n.id), DB_RMW).status());
  AMINO_ASSIGN_OR_RETURN(bool held, s_.holds().Held(n.id));
  if (held) {
    // Open somewhere: an orphan until the last close (open_count marks it for fsck and for
    // the clean-up after users that died).
    n.iv.open_count = 1;
    n.iv.dlmd.reset();
    n.where = Node::Where::kOrphan;
    n.path.clear();
    AMINO_RETURN_IF_ERROR(s_.Put(s_.orphan(), t, IdKey(n.id), EncodeAttr(n.attr)));
    return PutInode(t, n.id, n.iv);
  }
  return FreeFile(t, n.id);
}

}  // namespace internal

namespace {

// Resolves a path whose last component is the object of a namespace change (create, remove,
// rename, link): that component is never followed, and a trailing slash is only remembered.
Result<Resolved> ResolveEntry(Ops& ops, DB_TXN* t, const Cred& c, std::string_view path) {
  if (path.empty()) return Status::Errno(ENOENT);
  size_t end = path.size();
  while (end > 1 && path[end - 1] == '/') --end;
  bool trailing = end < path.size();
  AMINO_ASSIGN_OR_RETURN(Resolved r, ops.Resolve(t, c, path.substr(0, end), false));
  r.trailing_slash = trailing || r.trailing_slash;
  return r;
}

// Whether the last component of `path` is the only one over NAME_MAX.
bool OnlyLastNameTooLong(std::string_view path) {
  size_t end = path.size();
  while (end > 0 && path[end - 1] == '/') --end;
  const size_t start = path.rfind('/', end == 0 ? 0 : end - 1);
  const size_t last_begin = start == std::string_view::npos ? 0 : start + 1;
  if (end - last_begin <= kNameMax) return false;
  size_t at = 0;
  while (at < last_begin) {
    size_t next = path.find('/', at);
    if (next == std::string_view::npos || next > last_begin) next = last_begin;
    if (next - at > kNameMax) return false;
    at = next + 1;
  }
  return true;
}

Status CheckSticky(const Attr& dir, const Attr& victim, const Cred& c) {
  if ((dir.mode & S_ISVTX) && c.uid != victim.uid && c.uid != dir.uid && !c.has(kCapFowner)) {
    return Status::Errno(EPERM);
  }
  return Status::Ok();
}

// The common checks for creating the entry `r` names.
Result<Node> CreationParent(Ops& ops, DB_TXN* t, const Cred& c, const Resolved& r, bool is_dir) {
  if (r.last != Resolved::Last::kName || r.node) return Status::Errno(EEXIST);
  if (r.trailing_slash && !is_dir) return Status::Errno(ENOENT);
  AMINO_ASSIGN_OR_RETURN(std::optional<Node> parent, ops.LookupPath(t, r.parent));
  if (!parent) return Status::Errno(ENOENT);
  if (!Permitted(*parent, c, 3)) return Status::Errno(EACCES);
  if (is_dir && parent->attr.nlink >= kMaxLinks) return Status::Errno(EMLINK);
  return std::move(*parent);
}

// A new name `newpath` for the file `old` (link, linkat). A file without a name gets one only
// when `linkable` (opened with O_TMPFILE and not O_EXCL), as Linux's I_LINKABLE.
Status AddName(Ops& ops, DB_TXN* t, const Cred& c, Node old, std::string_view newpath,
               bool linkable) {
  AMINO_ASSIGN_OR_RETURN(Resolved r, ResolveEntry(ops, t, c, newpath));
  if (r.last != Resolved::Last::kName || r.node) return Status::Errno(EEXIST);
  if (r.trailing_slash) return Status::Errno(ENOENT);
  AMINO_ASSIGN_OR_RETURN(std::optional<Node> parent, ops.LookupPath(t, r.parent));
  if (!parent) return Status::Errno(ENOENT);
  // fs.protected_hardlinks (may_linkat) comes first: only the owner may link a file it could
  // not read and write, nor a special or set-id one.
  if (!IsOwnerOrPrivileged(old.attr, c)) {
    bool safe = S_ISREG(old.attr.mode) && !(old.attr.mode & S_ISUID) &&
                (old.attr.mode & (S_ISGID | S_IXGRP)) != (S_ISGID | S_IXGRP) &&
                Permitted(old, c, 6);
    if (!safe) return Status::Errno(EPERM);
  }
  if (!Permitted(*parent, c, 3)) return Status::Errno(EACCES);
  if (old.is_dir()) return Status::Errno(EPERM);
  if (old.where == Node::Where::kPlmd) {
    AMINO_ASSIGN_OR_RETURN(old.iv, ops.GetInode(t, old.id));
  }
  const timespec now = Now();
  const std::string path = r.path();
  if (old.where == Node::Where::kOrphan) {
    if (!linkable) return Status::Errno(ENOENT);
    // Its first name: the metadata moves from the Orphan record to the Path record.
    AMINO_RETURN_IF_ERROR(ops.store().Del(ops.store().orphan(), t, IdKey(old.id)));
    old.iv.link_count = 1;
    old.iv.open_count = 0;  // only orphans are marked open
    old.attr.nlink = 1;
    old.attr.ctime = now;
    AMINO_RETURN_IF_ERROR(ops.PutInode(t, old.id, old.iv));
    AMINO_RETURN_IF_ERROR(ops.PutPath(t, path, PathValue{old.id, old.attr.mode, old.attr}));
    AMINO_RETURN_IF_ERROR(ops.store().Put(ops.store().names(), t, IdKey(old.id), path));
    return ops.TouchDir(t, r.parent, 0, now);
  }
  if (old.iv.link_count >= kMaxLinks) return Status::Errno(EMLINK);
  if (old.where == Node::Where::kPlmd) {
    // A second name: the metadata moves from the Path record to the Data record (promotion).
    old.pv.plmd.reset();
    AMINO_RETURN_IF_ERROR(ops.PutPath(t, old.path, old.pv));
  }
  old.iv.link_count++;
  old.attr.nlink = old.iv.link_count;
  old.attr.ctime = now;
  old.iv.dlmd = old.attr;
  AMINO_RETURN_IF_ERROR(ops.PutInode(t, old.id, old.iv));
  AMINO_RETURN_IF_ERROR(ops.PutPath(t, path, PathValue{old.id, old.attr.mode, std::nullopt}));
  AMINO_RETURN_IF_ERROR(ops.store().Put(ops.store().names(), t, IdKey(old.id), path));
  return ops.TouchDir(t, r.parent, 0, now);
}

// open(dir, O_TMPFILE): a regular file without a name, open once.
Result<OpenResult> OpenUnnamed(Ops& ops, DB_TXN* t, const Cred& c, std::string_view dir, int flags,
                               mode_t mode, mode_t umask) {
  if ((flags & O_ACCMODE) == O_RDONLY) return Status::Errno(EINVAL);
  AMINO_ASSIGN_OR_RETURN(Node d, ops.ResolveExisting(t, c, dir, true));
  if (!d.is_dir()) return Status::Errno(ENOTDIR);
  if (!Permitted(d, c, 3)) return Status::Errno(EACCES);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.CreateUnnamed(t, c, S_IFREG | (mode & 07777), umask, d));
  OpenResult out;
  out.id = n.id;
  out.stat = Stat{n.id, n.attr};
  out.created = true;
  return out;
}

unsigned char DirentType(uint32_t mode) { return static_cast<unsigned char>((mode >> 12) & 017); }

// Every Path record below `dir` (not `dir` itself), by increasing depth.
Status CollectSubtree(Store& s, DB_TXN* t, const std::string& dir,
                      std::vector<std::pair<std::string, std::string>>* out) {
  Cursor c(s.path(), t);
  AMINO_RETURN_IF_ERROR(c.status());
  std::string base = dir == "/" ? std::string() : dir;
  for (uint16_t depth = static_cast<uint16_t>(PathDepth(dir) + 1);; ++depth) {
    std::string prefix;
    prefix.push_back(static_cast<char>(depth >> 8));
    prefix.push_back(static_cast<char>(depth & 0xff));
    prefix += base + "/";
    size_t before = out->size();
    AMINO_ASSIGN_OR_RETURN(bool more, c.SeekRange(prefix));
    while (more && c.key().substr(0, prefix.size()) == prefix) {
      out->emplace_back(PathFromKey(c.key()), std::string(c.value()));
      AMINO_ASSIGN_OR_RETURN(more, c.Next());
    }
    // Every deeper entry has an ancestor at this depth: an empty level ends the subtree.
    if (out->size() == before) return Status::Ok();
  }
}

Result<bool> DirIsEmpty(Store& s, DB_TXN* t, std::string_view dir) {
  Cursor c(s.path(), t);
  AMINO_RETURN_IF_ERROR(c.status());
  std::string prefix = DirEntriesPrefix(dir);
  AMINO_ASSIGN_OR_RETURN(bool more, c.SeekRange(prefix));
  return !(more && c.key().substr(0, prefix.size()) == prefix);
}

// Moves Path and Names records from one name to another.
Status MoveRecord(Store& s, DB_TXN* t, const std::string& from, const std::string& to,
                  const std::string& raw_value) {
  PathValue pv;
  if (!DecodePathValue(raw_value, &pv)) return Status::Storage(EUCLEAN, "damaged path " + from);
  AMINO_RETURN_IF_ERROR(s.Put(s.path(), t, PathKey(to), raw_value));
  AMINO_RETURN_IF_ERROR(s.DelDup(s.names(), t, IdKey(pv.id), from));
  return s.Put(s.names(), t, IdKey(pv.id), to);
}

// Renames `from` (and, for a directory, everything below it) to `to`, which must be free.
Status MoveTree(Store& s, DB_TXN* t, const std::string& from, const std::string& to) {
  std::vector<std::pair<std::string, std::string>> entries;
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> self, s.Get(s.path(), t, PathKey(from)));
  if (!self) return Status::Storage(EUCLEAN, "missing path " + from);
  entries.emplace_back(from, *self);
  AMINO_RETURN_IF_ERROR(CollectSubtree(s, t, from, &entries));
  for (const auto& [path, value] : entries) {
    AMINO_RETURN_IF_ERROR(s.Del(s.path(), t, PathKey(path)));
  }
  for (const auto& [path, value] : entries) {
    AMINO_RETURN_IF_ERROR(MoveRecord(s, t, path, to + path.substr(from.size()), value));
  }
  return Status::Ok();
}

Status TouchCtime(Ops& ops, DB_TXN* t, const std::string& path, const timespec& now) {
  AMINO_ASSIGN_OR_RETURN(std::optional<Node> n, ops.LookupPath(t, path));
  if (!n) return Status::Storage(EUCLEAN, "missing path " + path);
  n->attr.ctime = now;
  return ops.SaveAttr(t, *n);
}

// may_delete(): may `c` remove or replace `victim` from `dir`?
Status MayDelete(const Node& dir, const Node& victim, const Cred& c, bool is_dir) {
  if (!Permitted(dir, c, 3)) return Status::Errno(EACCES);
  AMINO_RETURN_IF_ERROR(CheckSticky(dir.attr, victim.attr, c));
  if (is_dir && !victim.is_dir()) return Status::Errno(ENOTDIR);
  if (!is_dir && victim.is_dir()) return Status::Errno(EISDIR);
  return Status::Ok();
}

}  // namespace

Result<Stat> FileSystem::Mknod(Transaction& txn, const Cred& c, std::string_view path, mode_t mode,
                               dev_t rdev, mode_t umask) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  switch (mode & S_IFMT) {
    case 0:
      mode |= S_IFREG;
      break;
    case S_IFREG:
    case S_IFIFO:
    case S_IFSOCK:
      break;
    case S_IFCHR:
    case S_IFBLK:
      if (!c.has(kCapMknod)) return Status::Errno(EPERM);
      break;
    case S_IFDIR:
      return Status::Errno(EPERM);
    default:
      return Status::Errno(EINVAL);
  }
  AMINO_ASSIGN_OR_RETURN(Resolved r, ResolveEntry(ops, t, c, path));
  AMINO_ASSIGN_OR_RETURN(Node parent, CreationParent(ops, t, c, r, false));
  bool device = S_ISCHR(mode) || S_ISBLK(mode);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.CreateNode(t, c, r.path(), mode & (S_IFMT | 07777), umask,
                                                device ? rdev : 0, parent));
  return Stat{n.id, n.attr};
}

Result<Stat> FileSystem::Mkdir(Transaction& txn, const Cred& c, std::string_view path, mode_t mode,
                               mode_t umask) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Resolved r, ResolveEntry(ops, t, c, path));
  AMINO_ASSIGN_OR_RETURN(Node parent, CreationParent(ops, t, c, r, true));
  // mkdir keeps only the permission and sticky bits; set-group-id comes from the parent.
  AMINO_ASSIGN_OR_RETURN(
      Node n, ops.CreateNode(t, c, r.path(), S_IFDIR | (mode & 01777), umask, 0, parent));
  return Stat{n.id, n.attr};
}

Status FileSystem::Rmdir(Transaction& txn, const Cred& c, std::string_view path) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Resolved r, ResolveEntry(ops, t, c, path));
  switch (r.last) {
    case Resolved::Last::kDot:
      return Status::Errno(EINVAL);
    case Resolved::Last::kDotDot:
      return Status::Errno(ENOTEMPTY);
    case Resolved::Last::kRoot:
      return Status::Errno(EBUSY);
    case Resolved::Last::kName:
      break;
  }
  if (!r.node) return Status::Errno(ENOENT);
  AMINO_ASSIGN_OR_RETURN(std::optional<Node> parent, ops.LookupPath(t, r.parent));
  if (!parent) return Status::Errno(ENOENT);
  AMINO_RETURN_IF_ERROR(MayDelete(*parent, *r.node, c, true));
  AMINO_ASSIGN_OR_RETURN(bool empty, DirIsEmpty(*store_, t, r.path()));
  if (!empty) return Status::Errno(ENOTEMPTY);
  timespec now = Now();
  AMINO_RETURN_IF_ERROR(ops.RemoveName(t, *r.node, r.path(), now));
  return ops.TouchDir(t, r.parent, -1, now);
}

Status FileSystem::Unlink(Transaction& txn, const Cred& c, std::string_view path) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Resolved r, ResolveEntry(ops, t, c, path));
  if (r.last != Resolved::Last::kName) return Status::Errno(EISDIR);
  if (!r.node) return Status::Errno(ENOENT);
  if (r.trailing_slash) return Status::Errno(r.node->is_dir() ? EISDIR : ENOTDIR);
  AMINO_ASSIGN_OR_RETURN(std::optional<Node> parent, ops.LookupPath(t, r.parent));
  if (!parent) return Status::Errno(ENOENT);
  AMINO_RETURN_IF_ERROR(MayDelete(*parent, *r.node, c, false));
  timespec now = Now();
  AMINO_RETURN_IF_ERROR(ops.RemoveName(t, *r.node, r.path(), now));
  return ops.TouchDir(t, r.parent, 0, now);
}

Status FileSystem::Link(Transaction& txn, const Cred& c, std::string_view oldpath,
                        std::string_view newpath, bool follow_old) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node old, ops.ResolveExisting(t, c, oldpath, follow_old));
  return AddName(ops, t, c, std::move(old), newpath, false);
}

Status FileSystem::LinkFile(Transaction& txn, const Cred& c, FileId id, std::string_view newpath,
                            bool linkable) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  auto old = ops.NodeById(t, id);
  if (!old.ok()) return old.status().error() == ESTALE ? Status::Errno(ENOENT) : old.status();
  return AddName(ops, t, c, std::move(*old), newpath, linkable);
}

Status FileSystem::Symlink(Transaction& txn, const Cred& c, std::string_view target,
                           std::string_view linkpath) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  if (target.empty()) return Status::Errno(ENOENT);
  if (target.size() > kSymlinkMax) return Status::Errno(ENAMETOOLONG);
  AMINO_ASSIGN_OR_RETURN(Resolved r, ResolveEntry(ops, t, c, linkpath));
  AMINO_ASSIGN_OR_RETURN(Node parent, CreationParent(ops, t, c, r, false));
  AMINO_ASSIGN_OR_RETURN(Node n, ops.CreateNode(t, c, r.path(), S_IFLNK | 0777, 0, 0, parent));
  AMINO_RETURN_IF_ERROR(store_->Put(store_->data(), t, PageKey(n.id, 0), target));
  n.attr.size = target.size();
  n.attr.blocks = kTransferUnit / 512;
  return ops.SaveAttr(t, n);
}

Result<std::string> FileSystem::Readlink(Transaction& txn, const Cred& c, std::string_view path) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(t, c, path, false));
  if (!n.is_link()) return Status::Errno(EINVAL);
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> target,
                         store_->Get(store_->data(), t, PageKey(n.id, 0)));
  if (!target) return Status::Storage(EUCLEAN, "symbolic link without a target");
  // Reading a link is an access to it (do_readlinkat's touch_atime), under relatime.
  AMINO_RETURN_IF_ERROR(TouchAtime(txn, n.id).status());
  return std::move(*target);
}

Status FileSystem::Rename(Transaction& txn, const Cred& c, std::string_view oldpath,
                          std::string_view newpath, unsigned flags) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  const bool noreplace = flags & RENAME_NOREPLACE;
  const bool exchange = flags & RENAME_EXCHANGE;
  if ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) || (noreplace && exchange)) {
    return Status::Errno(EINVAL);
  }
  AMINO_ASSIGN_OR_RETURN(Resolved ro, ResolveEntry(ops, t, c, oldpath));
  Result<Resolved> rn_found = ResolveEntry(ops, t, c, newpath);
  if (!rn_found.ok() && rn_found.status().error() == ENAMETOOLONG && OnlyLastNameTooLong(newpath)) {
    // Linux looks the new name up in its directory only after the old one: a missing old
    // name is reported first.
    if (ro.last != Resolved::Last::kName) return Status::Errno(EBUSY);
    if (!ro.node) return Status::Errno(ENOENT);
  }
  if (!rn_found.ok()) return rn_found.status();
  Resolved& rn = *rn_found;
  if (ro.last != Resolved::Last::kName) return Status::Errno(EBUSY);
  if (rn.last != Resolved::Last::kName) return Status::Errno(noreplace ? EEXIST : EBUSY);
  if (!ro.node) return Status::Errno(ENOENT);
  if (noreplace && rn.node) return Status::Errno(EEXIST);
  if (exchange && !rn.node) return Status::Errno(ENOENT);
  Node& src = *ro.node;
  const std::string from = ro.path();
  const std::string to = rn.path();
  if (!src.is_dir()) {
    if (ro.trailing_slash) return Status::Errno(ENOTDIR);
    if (!exchange && rn.trailing_slash) return Status::Errno(ENOTDIR);
  }
  if (exchange && !rn.node->is_dir() && rn.trailing_slash) return Status::Errno(ENOTDIR);
  if (IsSameOrDescendant(rn.parent, from)) return Status::Errno(EINVAL);
  if (rn.node && IsSameOrDescendant(ro.parent, to)) {
    return Status::Errno(exchange ? EINVAL : ENOTEMPTY);
  }
  if (rn.node && rn.node->id == src.id) return Status::Ok();  // two names of one file

  AMINO_ASSIGN_OR_RETURN(std::optional<Node> old_dir, ops.LookupPath(t, ro.parent));
  AMINO_ASSIGN_OR_RETURN(std::optional<Node> new_dir, ops.LookupPath(t, rn.parent));
  if (!old_dir || !new_dir) return Status::Errno(ENOENT);
  AMINO_RETURN_IF_ERROR(MayDelete(*old_dir, src, c, src.is_dir()));
  if (rn.node) {
    AMINO_RETURN_IF_ERROR(
        MayDelete(*new_dir, *rn.node, c, exchange ? rn.node->is_dir() : src.is_dir()));
  } else if (!Permitted(*new_dir, c, 3)) {
    return Status::Errno(EACCES);
  }
  const bool moves_parent = ro.parent != rn.parent;
  if (moves_parent) {
    // A directory that changes parent has its ".." rewritten: that needs write permission on it.
    if (src.is_dir() && !Permitted(src, c, 2)) return Status::Errno(EACCES);
    if (exchange && rn.node->is_dir() && !Permitted(*rn.node, c, 2)) {
      return Status::Errno(EACCES);
    }
  }
  timespec now = Now();

  if (exchange) {
    Node& dst = *rn.node;
    // The new parent gains `delta` subdirectories, the old one loses them.
    int delta = (src.is_dir() ? 1 : 0) - (dst.is_dir() ? 1 : 0);
    if (moves_parent && delta > 0 && new_dir->attr.nlink >= kMaxLinks) return Status::Errno(EMLINK);
    if (moves_parent && delta < 0 && old_dir->attr.nlink >= kMaxLinks) return Status::Errno(EMLINK);
    // Swap through a name no file can have (it contains no valid component).
    std::string parking = to + std::string(1, '\0') + "exchange";
    AMINO_RETURN_IF_ERROR(MoveTree(*store_, t, to, parking));
    AMINO_RETURN_IF_ERROR(MoveTree(*store_, t, from, to));
    AMINO_RETURN_IF_ERROR(MoveTree(*store_, t, parking, from));
    AMINO_RETURN_IF_ERROR(TouchCtime(ops, t, to, now));
    AMINO_RETURN_IF_ERROR(TouchCtime(ops, t, from, now));
    if (moves_parent) {
      AMINO_RETURN_IF_ERROR(ops.TouchDir(t, ro.parent, -delta, now));
      return ops.TouchDir(t, rn.parent, delta, now);
    }
    return ops.TouchDir(t, ro.parent, 0, now);
  }

  int old_delta = src.is_dir() ? -1 : 0;
  int new_delta = src.is_dir() ? 1 : 0;
  if (rn.node) {
    Node& victim = *rn.node;
    if (victim.is_dir()) {
      AMINO_ASSIGN_OR_RETURN(bool empty, DirIsEmpty(*store_, t, to));
      if (!empty) return Status::Errno(ENOTEMPTY);
      new_delta -= 1;
    }
    AMINO_RETURN_IF_ERROR(ops.RemoveName(t, victim, to, now));
  } else if (moves_parent && src.is_dir() && new_dir->attr.nlink >= kMaxLinks) {
    return Status::Errno(EMLINK);
  }
  AMINO_RETURN_IF_ERROR(MoveTree(*store_, t, from, to));
  AMINO_RETURN_IF_ERROR(TouchCtime(ops, t, to, now));
  if (moves_parent) {
    AMINO_RETURN_IF_ERROR(ops.TouchDir(t, ro.parent, old_delta, now));
    return ops.TouchDir(t, rn.parent, new_delta, now);
  }
  return ops.TouchDir(t, ro.parent, old_delta + new_delta, now);
}

// An open description holds its file (open_holds.h): nothing is written.
Status FileSystem::Hold(Transaction& txn, FileId id) {
  if (txn.nested()) {
    // Inside an application transaction the open takes the file's record for writing until
    // the transaction ends, as a written open count did: transactions that open one file take
    // turns. Otherwise readers that keep their transactions open could hold off a writer
    // forever (a call that meets a lock does not queue for it: the monitor retries it later).
    AMINO_RETURN_IF_ERROR(store_->Get(store_->data(), txn.raw(), IdKey(id), DB_RMW).status());
  }
  AMINO_RETURN_IF_ERROR(store_->holds().Acquire(id));
  txn.NoteHold(id, 1);
  // A remover asks whether the file is held with its record taken for writing: a read lock on
  // the record until this transaction ends makes the two take turns even when the path that
  // led here came from the read cache (no lock on the name then).
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> record,
                         store_->GetLocked(store_->data(), txn.raw(), IdKey(id)));
  if (!record) return Status::Errno(ESTALE);  // freed meanwhile
  return Status::Ok();
}

Result<OpenResult> FileSystem::Open(Transaction& txn, const Cred& c, std::string_view path,
                                    int flags, mode_t mode, mode_t umask) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  if ((flags & O_TMPFILE) == O_TMPFILE) {
    AMINO_ASSIGN_OR_RETURN(OpenResult out, OpenUnnamed(ops, t, c, path, flags, mode, umask));
    AMINO_RETURN_IF_ERROR(Hold(txn, out.id));
    return out;
  }
  if (flags & O_PATH) {
    // A handle, held like any other open description (fstat of it after the file's last name
    // is gone still works): only the walk's search permission is needed.
    AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(t, c, path, !(flags & O_NOFOLLOW)));
    if ((flags & O_DIRECTORY) && !n.is_dir()) return Status::Errno(ENOTDIR);
    AMINO_RETURN_IF_ERROR(Hold(txn, n.id));
    return OpenResult{n.id, Stat{n.id, n.attr}, false};
  }
  const bool creat = flags & O_CREAT;
  if (creat && (flags & O_DIRECTORY)) return Status::Errno(EINVAL);
  const bool excl = creat && (flags & O_EXCL);
  const bool follow = !excl && !(flags & O_NOFOLLOW);
  AMINO_ASSIGN_OR_RETURN(Resolved r, ops.Resolve(t, c, path, follow, creat));
  OpenResult out;
  if (!r.node) {
    if (!creat) return Status::Errno(ENOENT);
    if (r.trailing_slash) return Status::Errno(EISDIR);
    AMINO_ASSIGN_OR_RETURN(Node parent, CreationParent(ops, t, c, r, false));
    AMINO_ASSIGN_OR_RETURN(
        Node n, ops.CreateNode(t, c, r.path(), S_IFREG | (mode & 07777), umask, 0, parent));
    r.node = std::move(n);
    out.created = true;
  } else {
    Node& n = *r.node;
    if (excl) return Status::Errno(EEXIST);
    if (creat && n.is_dir()) return Status::Errno(EISDIR);
    if ((flags & O_DIRECTORY) && !n.is_dir()) return Status::Errno(ENOTDIR);
    if (n.is_link()) return Status::Errno(ELOOP);
    int acc = flags & O_ACCMODE;
    int mask = acc == O_RDONLY ? 4 : acc == O_WRONLY ? 2 : 6;
    if (flags & O_TRUNC) mask |= 2;
    if (n.is_dir() && (mask & 2)) return Status::Errno(EISDIR);
    if (!Permitted(n, c, mask)) return Status::Errno(EACCES);
    if (S_ISSOCK(n.attr.mode)) return Status::Errno(ENXIO);
    if ((flags & O_TRUNC) && S_ISREG(n.attr.mode)) {
      AMINO_RETURN_IF_ERROR(ops.SetSize(t, n, 0, Now()));
    }
  }
  Node& n = *r.node;
  AMINO_RETURN_IF_ERROR(Hold(txn, n.id));
  out.id = n.id;
  out.stat = Stat{n.id, n.attr};
  return out;
}

Status FileSystem::Close(Transaction& txn, FileId id) {
  // The hold is given up only after the file's record is read, and so locked until this
  // transaction ends; the question whether anyone else holds it is asked with the record taken
  // for writing (open_holds.h).
  DB_TXN* t = txn.raw();
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> raw,
                         store_->GetLocked(store_->data(), t, IdKey(id)));
  InodeValue iv;
  if (raw && !DecodeInodeValue(*raw, &iv)) return Status::Storage(EUCLEAN, "damaged Data record");
  const bool nameless = raw && iv.link_count == 0;
  if (nameless) {
    AMINO_RETURN_IF_ERROR(store_->Get(store_->data(), t, IdKey(id), DB_RMW).status());
  }
  if (!store_->holds().Release(id)) return Status::Errno(EBADF);
  txn.NoteHold(id, -1);
  if (!nameless) return Status::Ok();  // named, or freed already, or its creation was undone
  AMINO_ASSIGN_OR_RETURN(bool held, store_->holds().Held(id));
  if (held) return Status::Ok();
  Ops ops(*store_);
  return ops.FreeFile(t, id);
}

Status FileSystem::Reopen(Transaction& txn, FileId id) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(std::optional<InodeValue> found, ops.FindInode(t, id));
  if (!found) return Status::Errno(ESTALE);
  return Hold(txn, id);
}

Result<std::vector<DirEntry>> FileSystem::ReadDir(Transaction& txn, FileId dir,
                                                  std::string_view after, size_t max) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node d, ops.NodeById(t, dir));
  if (!d.is_dir()) return Status::Errno(ENOTDIR);
  std::vector<DirEntry> out;
  if (d.where == Node::Where::kOrphan) return out;  // removed while open: empty
  std::string prefix = DirEntriesPrefix(d.path);
  Cursor cur(store_->path(), t);
  AMINO_RETURN_IF_ERROR(cur.status());
  std::string start = prefix;
  if (!after.empty()) {
    start.append(after);
    start.push_back('\0');  // the first name after `after`
  }
  AMINO_ASSIGN_OR_RETURN(bool more, cur.SeekRange(start));
  while (more && out.size() < max && cur.key().substr(0, prefix.size()) == prefix) {
    PathValue pv;
    if (!DecodePathValue(cur.value(), &pv)) return Status::Storage(EUCLEAN, "damaged path");
    out.push_back(
        DirEntry{std::string(cur.key().substr(prefix.size())), pv.id, DirentType(pv.mode)});
    AMINO_ASSIGN_OR_RETURN(more, cur.Next());
  }
  return out;
}

Result<std::vector<std::string>> FileSystem::Names(Transaction& txn, FileId id) {
  Cursor cur(store_->names(), txn.raw());
  AMINO_RETURN_IF_ERROR(cur.status());
  std::vector<std::string> out;
  std::string key = IdKey(id);
  AMINO_ASSIGN_OR_RETURN(bool more, cur.SeekRange(key));
  while (more && cur.key() == key) {
    out.emplace_back(cur.value());
    AMINO_ASSIGN_OR_RETURN(more, cur.NextDup());
  }
  return out;
}

}  // namespace amino::schema
