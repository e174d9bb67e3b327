// Extended attributes: one Xattr record per (file, name). Namespaces user., trusted. and
// security. as Linux checks them, and of system. the two POSIX ACLs, with the rules of
// fs/posix_acl.c (others in system.: EOPNOTSUPP). An ACL's record holds the value getxattr
// returns; the file's flags say which of the two it has (records.h).
#include <sys/xattr.h>

#include "schema/change_clock.h"
#include "schema/fs_internal.h"

namespace amino::schema {

namespace internal {

Result<Acl> LoadStoredAcl(Store& s, DB_TXN* t, FileId id, std::string_view name) {
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> raw, s.Get(s.xattr(), t, XattrKey(id, name)));
  Result<Acl> acl = raw ? ParseAcl(*raw) : Result<Acl>(Status::Errno(ENODATA));
  if (!acl.ok() || acl->empty()) {
    return Status::Storage(EUCLEAN, std::string("damaged ") +
                                        (name == kAclAccessName ? "access" : "default") +
                                        " ACL of " + std::to_string(id));
  }
  return acl;
}

Status Ops::LoadAcl(DB_TXN* t, Node& n) {
  n.acl.clear();
  if (!(n.attr.flags & kHasAccessAcl)) return Status::Ok();
  AMINO_ASSIGN_OR_RETURN(n.acl, LoadStoredAcl(s_, t, n.id, kAclAccessName));
  return Status::Ok();
}

Status Ops::StoreAcl(DB_TXN* t, Node& n, std::string_view name, const Acl& acl) {
  const bool access = name == kAclAccessName;
  const uint32_t flag = access ? kHasAccessAcl : kHasDefaultAcl;
  if (access) n.acl = acl;
  const std::string key = XattrKey(n.id, name);
  if (acl.empty()) {
    n.attr.flags &= ~flag;
    return s_.Del(s_.xattr(), t, key);
  }
  n.attr.flags |= flag;
  return s_.Put(s_.xattr(), t, key, EncodeAcl(acl));
}

}  // namespace internal

using internal::IsOwnerOrPrivileged;
using internal::Node;
using internal::Now;
using internal::Ops;
using internal::Permitted;

namespace {

enum class Space { kUser, kTrusted, kSecurity, kAcl, kOther };

// A name's namespace, and the errno the name itself earns once the permission check has passed
// (xattr_resolve_name() comes after xattr_permission(): a bare prefix is EINVAL, an unknown one
// EOPNOTSUPP).
struct Named {
  Space space;
  int deferred = 0;
};

Result<Named> Namespace(std::string_view name) {
  if (name.empty() || name.size() > kXattrNameMax) return Status::Errno(ERANGE);
  if (name == kAclAccessName || name == kAclDefaultName) return Named{Space::kAcl};
  struct Prefix {
    std::string_view text;
    Space space;
  };
  static constexpr Prefix kPrefixes[] = {
      {"user.", Space::kUser}, {"trusted.", Space::kTrusted}, {"security.", Space::kSecurity}};
  for (const Prefix& p : kPrefixes) {
    if (name.substr(0, p.text.size()) == p.text) {
      return Named{p.space, name.size() == p.text.size() ? EINVAL : 0};
    }
  }
  // system.* passes the permission check whatever it names.
  if (name.substr(0, 7) == "system.") return Status::Errno(EOPNOTSUPP);
  return Named{Space::kOther, EOPNOTSUPP};
}

// xattr_permission(): `write` for set/remove, read otherwise.
Status CheckAccess(const Node& n, const Cred& c, Space space, bool write) {
  switch (space) {
    case Space::kTrusted:
      if (!c.has(kCapSysAdmin)) return Status::Errno(write ? EPERM : ENODATA);
      return Status::Ok();
    case Space::kSecurity:
      if (write && !c.has(kCapSysAdmin)) return Status::Errno(EPERM);
      return Status::Ok();
    case Space::kAcl:  // reading needs nothing; writing: SetAcl
      return Status::Ok();
    case Space::kOther:
      return Permitted(n, c, write ? 2 : 4) ? Status::Ok() : Status::Errno(EACCES);
    case Space::kUser:
      if (!S_ISREG(n.attr.mode) && !S_ISDIR(n.attr.mode)) {
        return Status::Errno(write ? EPERM : ENODATA);
      }
      if (write && S_ISDIR(n.attr.mode) && (n.attr.mode & S_ISVTX) &&
          !IsOwnerOrPrivileged(n.attr, c)) {
        return Status::Errno(EPERM);
      }
      return Permitted(n, c, write ? 2 : 4) ? Status::Ok() : Status::Errno(EACCES);
  }
  return Status::Ok();
}

// vfs_set_acl()'s checks, after the value was parsed: `acl` empty removes.
Status MaySetAcl(const Node& n, const Cred& c, std::string_view name, const Acl& acl,
                 bool* nothing_to_do) {
  *nothing_to_do = false;
  if (n.is_link()) return Status::Errno(EOPNOTSUPP);
  if (name == kAclDefaultName && !n.is_dir()) {
    // Only directories have a default ACL: removing one elsewhere succeeds at doing nothing.
    if (!acl.empty()) return Status::Errno(EACCES);
    *nothing_to_do = true;
    return Status::Ok();
  }
  if (!IsOwnerOrPrivileged(n.attr, c)) return Status::Errno(EPERM);
  return Status::Ok();
}

// Sets (or, with an empty `acl`, removes) an ACL. An access ACL the mode can say stores nothing
// and only sets the mode (posix_acl_update_mode); setting one changes the mode's permission bits
// and may drop set-group-id.
Status SetAcl(Ops& ops, DB_TXN* t, const Cred& c, Node& n, std::string_view name, Acl acl) {
  bool nothing_to_do;
  AMINO_RETURN_IF_ERROR(MaySetAcl(n, c, name, acl, &nothing_to_do));
  if (nothing_to_do) return Status::Ok();
  const uint32_t flag = name == kAclAccessName ? kHasAccessAcl : kHasDefaultAcl;
  bool changed = (n.attr.flags & flag) != 0;
  if (name == kAclAccessName && !acl.empty()) {
    uint32_t mode = n.attr.mode;
    if (!AclToMode(acl, &mode)) acl.clear();
    if (!c.in_group_or_fsetid(n.attr.gid)) mode &= ~S_ISGID;
    n.attr.mode = mode;
    changed = true;
  } else if (!acl.empty()) {
    changed = true;
  }
  if (!changed) return Status::Ok();  // removing an ACL the file does not have
  AMINO_RETURN_IF_ERROR(ops.StoreAcl(t, n, name, acl));
  n.attr.ctime = ChangeTimeFor(n.id, n.attr.ctime);
  return ops.SaveAttr(t, n);
}

Result<std::string> Get(Store& s, DB_TXN* t, const Cred& c, const Node& n, std::string_view name) {
  AMINO_ASSIGN_OR_RETURN(Named named, Namespace(name));
  const Space space = named.space;
  if (space == Space::kAcl && n.is_link()) return Status::Errno(EOPNOTSUPP);
  AMINO_RETURN_IF_ERROR(CheckAccess(n, c, space, false));
  if (named.deferred) return Status::Errno(named.deferred);
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> v, s.Get(s.xattr(), t, XattrKey(n.id, name)));
  if (!v) return Status::Errno(ENODATA);
  return std::move(*v);
}

Status Set(Store& s, Ops& ops, DB_TXN* t, const Cred& c, Node& n, std::string_view name,
           std::string_view value, int flags) {
  if (flags & ~(XATTR_CREATE | XATTR_REPLACE)) return Status::Errno(EINVAL);
  AMINO_ASSIGN_OR_RETURN(Named named, Namespace(name));
  const Space space = named.space;
  if (value.size() > kXattrValueMax) return Status::Errno(E2BIG);
  if (space == Space::kAcl) {
    // XATTR_CREATE and XATTR_REPLACE do not apply to ACLs.
    AMINO_ASSIGN_OR_RETURN(Acl acl, ParseAcl(value));
    return SetAcl(ops, t, c, n, name, std::move(acl));
  }
  AMINO_RETURN_IF_ERROR(CheckAccess(n, c, space, true));
  if (named.deferred) return Status::Errno(named.deferred);
  const std::string key = XattrKey(n.id, name);
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> old, s.Get(s.xattr(), t, key));
  if (old && (flags & XATTR_CREATE)) return Status::Errno(EEXIST);
  if (!old && (flags & XATTR_REPLACE)) return Status::Errno(ENODATA);
  AMINO_RETURN_IF_ERROR(s.Room(key.size() + value.size()));
  AMINO_RETURN_IF_ERROR(s.Put(s.xattr(), t, key, value));
  n.attr.ctime = ChangeTimeFor(n.id, n.attr.ctime);
  return ops.SaveAttr(t, n);
}

Result<std::vector<std::string>> List(Store& s, DB_TXN* t, const Cred& c, const Node& n) {
  std::vector<std::string> out;
  Cursor cur(s.xattr(), t);
  AMINO_RETURN_IF_ERROR(cur.status());
  const std::string prefix = IdKey(n.id);
  AMINO_ASSIGN_OR_RETURN(bool more, cur.SeekRange(prefix));
  while (more && cur.key().substr(0, prefix.size()) == prefix) {
    std::string name(cur.key().substr(prefix.size()));
    // Unprivileged callers do not see trusted.* at all.
    if (c.has(kCapSysAdmin) || name.rfind("trusted.", 0) != 0) out.push_back(std::move(name));
    AMINO_ASSIGN_OR_RETURN(more, cur.Next());
  }
  return out;
}

Status Remove(Store& s, Ops& ops, DB_TXN* t, const Cred& c, Node& n, std::string_view name) {
  AMINO_ASSIGN_OR_RETURN(Named named, Namespace(name));
  const Space space = named.space;
  // Removing an ACL the file does not have succeeds, as on Linux.
  if (space == Space::kAcl) return SetAcl(ops, t, c, n, name, Acl());
  AMINO_RETURN_IF_ERROR(CheckAccess(n, c, space, true));
  if (named.deferred) return Status::Errno(named.deferred);
  const std::string key = XattrKey(n.id, name);
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> old, s.Get(s.xattr(), t, key));
  if (!old) return Status::Errno(ENODATA);
  AMINO_RETURN_IF_ERROR(s.Del(s.xattr(), t, key));
  n.attr.ctime = ChangeTimeFor(n.id, n.attr.ctime);
  return ops.SaveAttr(t, n);
}

}  // namespace

Result<std::string> FileSystem::GetXattr(Transaction& txn, const Cred& c, std::string_view path,
                                         std::string_view name, bool follow) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(txn.raw(), c, path, follow));
  return Get(*store_, txn.raw(), c, n, name);
}

Status FileSystem::SetXattr(Transaction& txn, const Cred& c, std::string_view path,
                            std::string_view name, std::string_view value, int flags, bool follow) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(txn.raw(), c, path, follow));
  return Set(*store_, ops, txn.raw(), c, n, name, value, flags);
}

Result<std::vector<std::string>> FileSystem::ListXattr(Transaction& txn, const Cred& c,
                                                       std::string_view path, bool follow) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(txn.raw(), c, path, follow));
  return List(*store_, txn.raw(), c, n);
}

Status FileSystem::RemoveXattr(Transaction& txn, const Cred& c, std::string_view path,
                               std::string_view name, bool follow) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(txn.raw(), c, path, follow));
  return Remove(*store_, ops, txn.raw(), c, n, name);
}

Result<std::string> FileSystem::FGetXattr(Transaction& txn, const Cred& c, FileId id,
                                          std::string_view name) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  return Get(*store_, txn.raw(), c, n, name);
}

Status FileSystem::FSetXattr(Transaction& txn, const Cred& c, FileId id, std::string_view name,
                             std::string_view value, int flags) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  return Set(*store_, ops, txn.raw(), c, n, name, value, flags);
}

Result<std::vector<std::string>> FileSystem::FListXattr(Transaction& txn, const Cred& c,
                                                        FileId id) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  return List(*store_, txn.raw(), c, n);
}

Status FileSystem::FRemoveXattr(Transaction& txn, const Cred& c, FileId id, std::string_view name) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  return Remove(*store_, ops, txn.raw(), c, n, name);
}

}  // namespace amino::schema
