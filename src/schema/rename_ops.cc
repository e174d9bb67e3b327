// rename and renameat2 (RENAME_NOREPLACE, RENAME_EXCHANGE): the checks in Linux's order, then
// the names, and for a directory every path below it, moved.
#include <fcntl.h>
#include <linux/fs.h>

#include <random>

#include "schema/change_clock.h"
#include "schema/fs_internal.h"

namespace amino::schema {

using internal::DirIsEmpty;
using internal::IsOwnerOrPrivileged;
using internal::MayDelete;
using internal::Node;
using internal::Now;
using internal::Ops;
using internal::Permitted;
using internal::Resolved;
using internal::ResolveEntry;

namespace {

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

Status TouchCtime(Ops& ops, DB_TXN* t, const std::string& path) {
  AMINO_ASSIGN_OR_RETURN(std::optional<Node> n, ops.LookupPath(t, path));
  if (!n) return Status::Storage(EUCLEAN, "missing path " + path);
  n->attr.ctime = ChangeTimeFor(n->id, n->attr.ctime);
  return ops.SaveAttr(t, *n);
}

}  // namespace

// Long by design: Linux's checks in rename's order (lookups, may_delete, the loop check,
// RENAME_NOREPLACE and RENAME_EXCHANGE), then the move; the order decides the errno.
Status FileSystem::Rename(Transaction& txn, const Cred& c, std::string_view oldpath,
                          std::string_view newpath, unsigned flags) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  const bool noreplace = flags & RENAME_NOREPLACE;
  const bool exchange = flags & RENAME_EXCHANGE;
  if ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) || (noreplace && exchange)) {
    return Status::Errno(EINVAL);
  }
  Result<Resolved> ro_found = ResolveEntry(ops, t, c, oldpath);
  if (!ro_found.ok() && ro_found.status().error() == ENAMETOOLONG && OnlyLastNameTooLong(oldpath)) {
    // Linux walks to both directories before it looks either last name up: an error on the
    // way to the new one comes first, then "." or ".." as its last name.
    Result<Resolved> rn = ResolveEntry(ops, t, c, newpath);
    if (!rn.ok() && !(rn.status().error() == ENAMETOOLONG && OnlyLastNameTooLong(newpath))) {
      return rn.status();
    }
    if (rn.ok() && rn->last != Resolved::Last::kName) {
      return Status::Errno(noreplace ? EEXIST : EBUSY);
    }
  }
  if (!ro_found.ok()) return ro_found.status();
  Resolved& ro = *ro_found;
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
    AMINO_RETURN_IF_ERROR(TouchCtime(ops, t, to));
    AMINO_RETURN_IF_ERROR(TouchCtime(ops, t, from));
    if (moves_parent) {
      AMINO_RETURN_IF_ERROR(ops.TouchDir(t, ro.parent, -delta));
      return ops.TouchDir(t, rn.parent, delta);
    }
    return ops.TouchDir(t, ro.parent, 0);
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
    AMINO_RETURN_IF_ERROR(ops.RemoveName(t, victim, to));
  } else if (moves_parent && src.is_dir() && new_dir->attr.nlink >= kMaxLinks) {
    return Status::Errno(EMLINK);
  }
  AMINO_RETURN_IF_ERROR(MoveTree(*store_, t, from, to));
  AMINO_RETURN_IF_ERROR(TouchCtime(ops, t, to));
  if (moves_parent) {
    AMINO_RETURN_IF_ERROR(ops.TouchDir(t, ro.parent, old_delta));
    return ops.TouchDir(t, rn.parent, new_delta);
  }
  return ops.TouchDir(t, ro.parent, old_delta + new_delta);
}

}  // namespace amino::schema
