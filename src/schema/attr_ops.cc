// stat, access and the attribute-changing calls: chmod, chown, utimens; statfs.
#include <sys/statvfs.h>

#include "schema/change_clock.h"
#include "schema/fs_internal.h"
#include "schema/store_space.h"

namespace amino::schema {

using internal::IsOwnerOrPrivileged;
using internal::Node;
using internal::Now;
using internal::Ops;
using internal::Permitted;

namespace {

Status ChmodNode(Ops& ops, DB_TXN* t, const Cred& c, Node& n, mode_t mode) {
  if (n.is_link()) return Status::Errno(EOPNOTSUPP);
  if (!IsOwnerOrPrivileged(n.attr, c)) return Status::Errno(EPERM);
  mode &= 07777;
  if (!c.in_group_or_fsetid(n.attr.gid)) mode &= ~S_ISGID;
  const Attr before = n.attr;
  n.attr.mode = (n.attr.mode & S_IFMT) | mode;
  n.attr.ctime = ChangeTimeFor(n.id, n.attr.ctime);
  if (n.attr.flags & kHasAccessAcl) {
    // posix_acl_chmod(): the ACL's owner, mask and other entries follow the mode.
    Acl acl = n.acl;
    AclChmod(&acl, mode);
    AMINO_RETURN_IF_ERROR(ops.StoreAcl(t, n, kAclAccessName, acl));
  }
  // The mode it had, within the tick of the last change: nothing to write.
  if (SameAttr(before, n.attr)) return Status::Ok();
  return ops.SaveAttr(t, n);
}

Status ChownNode(Ops& ops, DB_TXN* t, const Cred& c, Node& n, uid_t uid, gid_t gid) {
  const bool set_uid = uid != static_cast<uid_t>(-1);
  const bool set_gid = gid != static_cast<gid_t>(-1);
  // chown_ok(), chgrp_ok(): the owner may keep the owner and give the file one of its
  // groups; CAP_CHOWN anything.
  if (!c.has(kCapChown)) {
    if (set_uid && (uid != n.attr.uid || c.uid != n.attr.uid)) return Status::Errno(EPERM);
    if (set_gid && (c.uid != n.attr.uid || (gid != n.attr.gid && !c.in_group(gid)))) {
      return Status::Errno(EPERM);
    }
  }
  // chown drops set-user-id, and set-group-id where it means "execute as the group" or the
  // caller is outside the file's group, even when no id changes; only the owner may cause that.
  uint32_t mode = n.attr.mode;
  if (!n.is_dir() && !n.is_link()) {
    mode &= ~S_ISUID;
    if ((mode & S_ISGID) && ((mode & S_IXGRP) || !c.in_group_or_fsetid(n.attr.gid))) {
      mode &= ~S_ISGID;
    }
  }
  if (mode != n.attr.mode && !IsOwnerOrPrivileged(n.attr, c)) return Status::Errno(EPERM);
  const Attr before = n.attr;
  n.attr.mode = mode;
  if (set_uid) n.attr.uid = uid;
  if (set_gid) n.attr.gid = gid;
  n.attr.ctime = ChangeTimeFor(n.id, n.attr.ctime);
  // The owners it had, within the tick of the last change: nothing to write.
  if (SameAttr(before, n.attr)) return Status::Ok();
  return ops.SaveAttr(t, n);
}

bool ValidTime(const timespec& ts) {
  return ts.tv_nsec == UTIME_NOW || ts.tv_nsec == UTIME_OMIT ||
         (ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000);
}

Status UtimensNode(Ops& ops, DB_TXN* t, const Cred& c, Node& n, const timespec* times) {
  if (times && (!ValidTime(times[0]) || !ValidTime(times[1]))) return Status::Errno(EINVAL);
  if (times && times[0].tv_nsec == UTIME_OMIT && times[1].tv_nsec == UTIME_OMIT) {
    return Status::Ok();
  }
  const bool only_now =
      !times || ((times[0].tv_nsec == UTIME_NOW || times[0].tv_nsec == UTIME_OMIT) &&
                 (times[1].tv_nsec == UTIME_NOW || times[1].tv_nsec == UTIME_OMIT));
  if (!IsOwnerOrPrivileged(n.attr, c)) {
    if (!only_now) return Status::Errno(EPERM);
    if (!Permitted(n, c, 2)) return Status::Errno(EACCES);
  }
  // "Now" is the change's own time, as the kernel's current_time().
  timespec now = ChangeTimeFor(n.id, n.attr.ctime);
  auto pick = [&](const timespec* ts, timespec* field) {
    if (!ts || ts->tv_nsec == UTIME_NOW) {
      *field = now;
    } else if (ts->tv_nsec != UTIME_OMIT) {
      *field = *ts;
    }
  };
  pick(times ? &times[0] : nullptr, &n.attr.atime);
  pick(times ? &times[1] : nullptr, &n.attr.mtime);
  n.attr.ctime = now;
  return ops.SaveAttr(t, n);
}

}  // namespace

Result<Stat> FileSystem::GetStat(Transaction& txn, const Cred& c, std::string_view path,
                                 bool follow) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(txn.raw(), c, path, follow));
  NoteTimesSeen(n.id);
  return Stat{n.id, n.attr};
}

Result<Stat> FileSystem::FStat(Transaction& txn, FileId id) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  NoteTimesSeen(n.id);
  return Stat{n.id, n.attr};
}

Status FileSystem::Access(Transaction& txn, const Cred& c, std::string_view path, int mode,
                          bool follow) {
  if (mode & ~(R_OK | W_OK | X_OK)) return Status::Errno(EINVAL);
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(txn.raw(), c, path, follow));
  if (mode == F_OK) return Status::Ok();
  return Permitted(n, c, mode) ? Status::Ok() : Status::Errno(EACCES);
}

Status FileSystem::FAccess(Transaction& txn, const Cred& c, FileId id, int mode) {
  if (mode & ~(R_OK | W_OK | X_OK)) return Status::Errno(EINVAL);
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  if (mode == F_OK) return Status::Ok();
  return Permitted(n, c, mode) ? Status::Ok() : Status::Errno(EACCES);
}

Status FileSystem::Chmod(Transaction& txn, const Cred& c, std::string_view path, mode_t mode,
                         bool follow) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(txn.raw(), c, path, follow));
  return ChmodNode(ops, txn.raw(), c, n, mode);
}

Status FileSystem::FChmod(Transaction& txn, const Cred& c, FileId id, mode_t mode) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  return ChmodNode(ops, txn.raw(), c, n, mode);
}

Status FileSystem::Chown(Transaction& txn, const Cred& c, std::string_view path, uid_t uid,
                         gid_t gid, bool follow) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(txn.raw(), c, path, follow));
  return ChownNode(ops, txn.raw(), c, n, uid, gid);
}

Status FileSystem::FChown(Transaction& txn, const Cred& c, FileId id, uid_t uid, gid_t gid) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  return ChownNode(ops, txn.raw(), c, n, uid, gid);
}

Status FileSystem::Utimens(Transaction& txn, const Cred& c, std::string_view path,
                           const timespec* times, bool follow) {
  // Linux checks the times, and returns early when both are omitted, before the path.
  if (times && (!ValidTime(times[0]) || !ValidTime(times[1]))) return Status::Errno(EINVAL);
  if (times && times[0].tv_nsec == UTIME_OMIT && times[1].tv_nsec == UTIME_OMIT) {
    return Status::Ok();
  }
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(txn.raw(), c, path, follow));
  return UtimensNode(ops, txn.raw(), c, n, times);
}

namespace {

// relatime_need_update() in fs/inode.c.
bool RelatimeDue(const Attr& a, const timespec& now) {
  auto not_after = [](const timespec& x, const timespec& y) {
    return x.tv_sec < y.tv_sec || (x.tv_sec == y.tv_sec && x.tv_nsec <= y.tv_nsec);
  };
  constexpr time_t kDay = 24 * 60 * 60;
  return not_after(a.atime, a.mtime) || not_after(a.atime, a.ctime) ||
         now.tv_sec - a.atime.tv_sec >= kDay;
}

}  // namespace

Result<bool> FileSystem::TouchAtime(Transaction& txn, FileId id) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  const timespec now = Now();
  if (!RelatimeDue(n.attr, now)) return false;
  n.attr.atime = now;
  AMINO_RETURN_IF_ERROR(ops.SaveAttr(txn.raw(), n));
  return true;
}

Result<bool> FileSystem::AtimeDue(Transaction& txn, FileId id) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  return RelatimeDue(n.attr, Now());
}

std::vector<FileId> FileSystem::TakeFollowedLinks() { return store_->TakeFollowedLinks(); }

Status FileSystem::FUtimens(Transaction& txn, const Cred& c, FileId id, const timespec* times) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  return UtimensNode(ops, txn.raw(), c, n, times);
}

Result<struct statfs> FileSystem::StatFs(Transaction&) {
  struct statvfs host;
  if (statvfs(dir_.c_str(), &host) != 0) {
    return Status::Storage(errno, dir_ + ": statvfs failed");
  }
  struct statfs out {};
  out.f_type = kStatfsMagic;
  out.f_bsize = kTransferUnit;
  out.f_frsize = kTransferUnit;
  auto scale = [&](fsblkcnt_t n) { return n * host.f_frsize / kTransferUnit; };
  out.f_blocks = scale(host.f_blocks);
  // What calls may still add: the space the database keeps for removals (store_space.h) is
  // not free to them; the free pages removals left inside it are.
  const fsblkcnt_t kept = store_->space().Kept() / host.f_frsize;
  const fsblkcnt_t inside = store_->space().free_inside() / host.f_frsize;
  auto usable = [&](fsblkcnt_t n) { return (n > kept ? n - kept : 0) + inside; };
  out.f_bfree = scale(usable(host.f_bfree));
  out.f_bavail = scale(usable(host.f_bavail));
  out.f_files = host.f_files;
  out.f_ffree = host.f_ffree;
  out.f_namelen = kNameMax;
  uint64_t fsid = host.f_fsid;
  out.f_fsid.__val[0] = static_cast<int>(fsid & 0xffffffff);
  out.f_fsid.__val[1] = static_cast<int>(fsid >> 32);
  return out;
}

}  // namespace amino::schema
