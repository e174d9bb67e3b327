// Names: creating, linking, removing and renaming files and directories (opens: open_ops.cc).
#include <fcntl.h>
#include <linux/fs.h>

#include <random>

#include "schema/change_clock.h"
#include "schema/fs_internal.h"

namespace amino::schema {

using internal::CreationParent;
using internal::DirIsEmpty;
using internal::IsOwnerOrPrivileged;
using internal::MayDelete;
using internal::Node;
using internal::Now;
using internal::Ops;
using internal::Permitted;
using internal::Resolved;
using internal::ResolveEntry;

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
  AMINO_RETURN_IF_ERROR(s_.Room(kNewFileBytes));
  for (;;) {
    // A call of its own takes the next id of this process's run (its Inode record and pages
    // go beside those of the files it made before: the same few pages stay in the cache and
    // are written once, where random ids dirtied a page anywhere in the tree per file). A
    // transaction of the application's takes random ones, as before: two of them never
    // contend for the page their new files' records share.
    const bool in_run = s_.InCallOfItsOwn(t);
    FileId id = in_run ? s_.NextRunId(RandomId) : RandomId();
    Status st = s_.Put(s_.inode(), t, IdKey(id), EncodeInodeValue(iv), DB_NOOVERWRITE);
    if (st.ok()) return id;
    if (st.kind() != Status::Kind::kErrno || st.error() != EEXIST) return st;
    if (in_run) s_.EndRun();  // another run (or a random id) is there: start one elsewhere
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
  AMINO_RETURN_IF_ERROR(TouchDir(t, ParentPath(path), S_ISDIR(mode) ? 1 : 0));
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

Status Ops::FreeFile(DB_TXN* t, FileId id, bool orphan_record, std::optional<uint64_t> size) {
  if (size != 0) {
    Cursor c(s_.data(), t);
    AMINO_RETURN_IF_ERROR(c.status());
    c.KeysOnly();  // pages are only deleted
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
    c.KeysOnly();
    std::string prefix = IdKey(id);
    AMINO_ASSIGN_OR_RETURN(bool more, c.SeekRange(prefix));
    while (more && c.key().substr(0, 8) == prefix) {
      AMINO_RETURN_IF_ERROR(c.Delete());
      AMINO_ASSIGN_OR_RETURN(more, c.Next());
    }
  }
  if (orphan_record) AMINO_RETURN_IF_ERROR(s_.Del(s_.orphan(), t, IdKey(id)));
  return s_.Del(s_.inode(), t, IdKey(id));
}

Status Ops::RemoveName(DB_TXN* t, Node& n, std::string_view path) {
  AMINO_RETURN_IF_ERROR(s_.Del(s_.path(), t, PathKey(path)));
  AMINO_RETURN_IF_ERROR(s_.DelDup(s_.names(), t, IdKey(n.id), path));
  // A file with one name has its Data record read here, and taken for writing at once: the
  // last name's removal needs it so (below).
  const bool taken = n.where == Node::Where::kPlmd;
  if (taken) {
    AMINO_ASSIGN_OR_RETURN(n.iv, GetInode(t, n.id, DB_RMW));
  }
  if (n.iv.link_count == 0) return Status::Storage(EUCLEAN, "link count underflow");
  n.iv.link_count--;
  n.attr.ctime = ChangeTimeFor(n.id, n.attr.ctime);
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
  if (!taken) AMINO_RETURN_IF_ERROR(s_.Get(s_.inode(), t, IdKey(n.id), DB_RMW).status());
  AMINO_RETURN_IF_ERROR(s_.holds().Decide(n.id, t));
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
  return FreeFile(t, n.id, /*orphan_record=*/false, n.attr.size);  // it had a name until now
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

Status CheckSticky(const Attr& dir, const Attr& victim, const Cred& c) {
  if ((dir.mode & S_ISVTX) && c.uid != victim.uid && c.uid != dir.uid && !c.has(kCapFowner)) {
    return Status::Errno(EPERM);
  }
  return Status::Ok();
}

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

Result<bool> DirIsEmpty(Store& s, DB_TXN* t, std::string_view dir) {
  Cursor c(s.path(), t);
  AMINO_RETURN_IF_ERROR(c.status());
  std::string prefix = DirEntriesPrefix(dir);
  AMINO_ASSIGN_OR_RETURN(bool more, c.SeekRange(prefix));
  return !(more && c.key().substr(0, prefix.size()) == prefix);
}

// may_delete(): may `c` remove or replace `victim` from `dir`?
Status MayDelete(const Node& dir, const Node& victim, const Cred& c, bool is_dir) {
  if (!Permitted(dir, c, 3)) return Status::Errno(EACCES);
  AMINO_RETURN_IF_ERROR(CheckSticky(dir.attr, victim.attr, c));
  if (is_dir && !victim.is_dir()) return Status::Errno(ENOTDIR);
  if (!is_dir && victim.is_dir()) return Status::Errno(EISDIR);
  return Status::Ok();
}

}  // namespace internal

namespace {

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
  AMINO_RETURN_IF_ERROR(ops.store().Room(internal::kNewFileBytes));
  const timespec now = ChangeTimeFor(old.id, old.attr.ctime);
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
    return ops.TouchDir(t, r.parent, 0);
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
  return ops.TouchDir(t, r.parent, 0);
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
      break;
    case S_IFDIR:
      return Status::Errno(EPERM);
    default:
      return Status::Errno(EINVAL);
  }
  AMINO_ASSIGN_OR_RETURN(Resolved r, ResolveEntry(ops, t, c, path));
  AMINO_ASSIGN_OR_RETURN(Node parent, CreationParent(ops, t, c, r, false));
  bool device = S_ISCHR(mode) || S_ISBLK(mode);
  // After the name and the directory's permission (vfs_mknod: may_create, then CAP_MKNOD).
  if (device && !c.has(kCapMknod)) return Status::Errno(EPERM);
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
  AMINO_RETURN_IF_ERROR(ops.RemoveName(t, *r.node, r.path()));
  return ops.TouchDir(t, r.parent, -1);
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
  AMINO_RETURN_IF_ERROR(ops.RemoveName(t, *r.node, r.path()));
  return ops.TouchDir(t, r.parent, 0);
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

}  // namespace amino::schema
