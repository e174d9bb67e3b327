// Records by path and by id, and path resolution on a component stack.
#include <deque>

#include "schema/change_clock.h"
#include "schema/fs_internal.h"
#include "schema/name_hints.h"

namespace amino::schema::internal {

timespec Now() { return CoarseNow(); }

namespace {

// acl_permission_check(): the mode bits, or the ACL.
bool ModePermits(const Node& n, const Cred& c, int mask) {
  const Attr& a = n.attr;
  unsigned bits;
  if (c.uid == a.uid) {
    bits = (a.mode >> 6) & 7;
  } else if ((a.flags & kHasAccessAcl) && (a.mode & 070)) {
    // acl_permission_check(): the ACL decides for everyone but the owner, unless the group
    // bits (the mask) are all clear, when the mode bits do.
    return AclPermits(n.acl, a.uid, a.gid, c, mask);
  } else if (c.in_group(a.gid)) {
    bits = (a.mode >> 3) & 7;
  } else {
    bits = a.mode & 7;
  }
  return (bits & static_cast<unsigned>(mask)) == static_cast<unsigned>(mask);
}

}  // namespace

bool Permitted(const Node& n, const Cred& c, int mask) {
  if (ModePermits(n, c, mask)) return true;
  // generic_permission(): what the capabilities override.
  const mode_t mode = n.attr.mode;
  if (S_ISDIR(mode)) {
    if (!(mask & 2) && c.has(kCapDacReadSearch)) return true;
    return c.has(kCapDacOverride);
  }
  if (mask == 4 && c.has(kCapDacReadSearch)) return true;
  // Reading and writing, always; executing, when someone may execute the file.
  if (!(mask & 1) || (mode & 0111)) return c.has(kCapDacOverride);
  return false;
}

bool IsOwnerOrPrivileged(const Attr& a, const Cred& c) { return c.owns(a.uid); }

static Status Damaged(const std::string& what) {
  return Status::Storage(EUCLEAN, "damaged record: " + what);
}

Result<std::optional<PathValue>> Ops::GetPath(DB_TXN* t, std::string_view path) {
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> raw, s_.Get(s_.path(), t, PathKey(path)));
  if (!raw) return std::optional<PathValue>();
  PathValue pv;
  if (!DecodePathValue(*raw, &pv)) return Damaged("path " + std::string(path));
  return std::optional<PathValue>(pv);
}

Status Ops::PutPath(DB_TXN* t, std::string_view path, const PathValue& v) {
  return s_.Put(s_.path(), t, PathKey(path), EncodePathValue(v));
}

Result<InodeValue> Ops::GetInode(DB_TXN* t, FileId id, uint32_t flags) {
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> raw, s_.Get(s_.inode(), t, IdKey(id), flags));
  InodeValue iv;
  if (!raw || !DecodeInodeValue(*raw, &iv)) return Damaged("inode " + std::to_string(id));
  return iv;
}

Result<std::optional<InodeValue>> Ops::FindInode(DB_TXN* t, FileId id) {
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> raw, s_.Get(s_.inode(), t, IdKey(id)));
  if (!raw) return std::optional<InodeValue>();
  InodeValue iv;
  if (!DecodeInodeValue(*raw, &iv)) return Status::Storage(EUCLEAN, "damaged inode");
  return std::optional<InodeValue>(iv);
}

Status Ops::PutInode(DB_TXN* t, FileId id, const InodeValue& v) {
  return s_.Put(s_.inode(), t, IdKey(id), EncodeInodeValue(v));
}

Result<Node> Ops::NodeAt(DB_TXN* t, std::string_view path, const PathValue& pv) {
  Node n;
  n.id = pv.id;
  n.path = std::string(path);
  n.pv = pv;
  if (pv.plmd) {
    n.where = Node::Where::kPlmd;
    n.attr = *pv.plmd;
    // The Data record is loaded lazily by the operations that change counts.
    n.iv.link_count = 1;
  } else {
    AMINO_ASSIGN_OR_RETURN(n.iv, GetInode(t, pv.id));
    if (!n.iv.dlmd) return Damaged("hard-linked file without DLMD " + std::to_string(pv.id));
    n.where = Node::Where::kDlmd;
    n.attr = *n.iv.dlmd;
  }
  AMINO_RETURN_IF_ERROR(LoadAcl(t, n));
  return n;
}

Result<std::optional<Node>> Ops::LookupPath(DB_TXN* t, std::string_view path) {
  AMINO_ASSIGN_OR_RETURN(std::optional<PathValue> pv, GetPath(t, path));
  if (!pv) return std::optional<Node>();
  AMINO_ASSIGN_OR_RETURN(Node n, NodeAt(t, path, *pv));
  return std::optional<Node>(std::move(n));
}

Result<std::optional<Node>> Ops::NodeByIdInSnapshot(DB_TXN* t, FileId id) {
  // From the metadata databases only, which keep versions (the Data database does not): a
  // file with one name by its Names and Path records, a nameless one by its Orphan record.
  // A hard-linked file's attributes are in the Data database: nullopt.
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> name, s_.Get(s_.names(), t, IdKey(id)));
  Node n;
  n.id = id;
  if (name) {
    AMINO_ASSIGN_OR_RETURN(std::optional<PathValue> pv, GetPath(t, *name));
    if (!pv || pv->id != id) return Damaged("name index of " + std::to_string(id));
    if (!pv->plmd) return std::optional<Node>();
    n.where = Node::Where::kPlmd;
    n.path = *name;
    n.pv = *pv;
    n.attr = *pv->plmd;
    n.iv.link_count = 1;  // as NodeAt: the Data record is loaded by those that change counts
  } else {
    AMINO_ASSIGN_OR_RETURN(std::optional<std::string> o, s_.Get(s_.orphan(), t, IdKey(id)));
    if (!o) return Status::Errno(ESTALE);
    if (!DecodeAttr(*o, &n.attr)) return Damaged("orphan " + std::to_string(id));
    n.where = Node::Where::kOrphan;
    n.iv = InodeValue{0, 1, std::nullopt};
  }
  AMINO_RETURN_IF_ERROR(LoadAcl(t, n));
  return std::optional<Node>(std::move(n));
}

Result<Node> Ops::NodeById(DB_TXN* t, FileId id) {
  if (s_.InSnapshot(t)) {
    AMINO_ASSIGN_OR_RETURN(std::optional<Node> n, NodeByIdInSnapshot(t, id));
    if (n) return std::move(*n);
  }
  if (const std::string* hint = NameHints::Find(&s_, id)) {
    // Its Path record, when it still names this file and holds its metadata, is all there is
    // to read (name_hints.h); that record's lock covers every change of the file's names too.
    const std::string name = *hint;
    AMINO_ASSIGN_OR_RETURN(std::optional<PathValue> pv, GetPath(t, name));
    if (pv && pv->id == id && pv->plmd) return NodeAt(t, name, *pv);
  }
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> raw, s_.Get(s_.inode(), t, IdKey(id)));
  if (!raw) return Status::Errno(ESTALE);
  Node n;
  n.id = id;
  if (!DecodeInodeValue(*raw, &n.iv)) return Damaged("inode " + std::to_string(id));
  if (n.iv.dlmd) {
    n.where = Node::Where::kDlmd;
    n.attr = *n.iv.dlmd;
    AMINO_RETURN_IF_ERROR(LoadAcl(t, n));
    return n;
  }
  if (n.iv.link_count == 0) {
    AMINO_ASSIGN_OR_RETURN(std::optional<std::string> o, s_.Get(s_.orphan(), t, IdKey(id)));
    if (!o || !DecodeAttr(*o, &n.attr)) return Damaged("orphan " + std::to_string(id));
    n.where = Node::Where::kOrphan;
    AMINO_RETURN_IF_ERROR(LoadAcl(t, n));
    return n;
  }
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> name, s_.Get(s_.names(), t, IdKey(id)));
  if (!name) return Damaged("file without a name " + std::to_string(id));
  AMINO_ASSIGN_OR_RETURN(std::optional<PathValue> pv, GetPath(t, *name));
  if (!pv || pv->id != id || !pv->plmd) return Damaged("name index of " + std::to_string(id));
  n.where = Node::Where::kPlmd;
  n.path = *name;
  n.pv = *pv;
  n.attr = *pv->plmd;
  AMINO_RETURN_IF_ERROR(LoadAcl(t, n));
  NameHints::Note(&s_, id, n.path);
  return n;
}

Status Ops::SaveAttr(DB_TXN* t, Node& n) {
  switch (n.where) {
    case Node::Where::kPlmd:
      n.pv.plmd = n.attr;
      n.pv.mode = n.attr.mode;
      return PutPath(t, n.path, n.pv);
    case Node::Where::kDlmd:
      n.iv.dlmd = n.attr;
      return PutInode(t, n.id, n.iv);
    case Node::Where::kOrphan:
      return s_.Put(s_.orphan(), t, IdKey(n.id), EncodeAttr(n.attr));
  }
  return Status::Ok();
}

Status Ops::TouchDir(DB_TXN* t, std::string_view dir, int nlink_delta) {
  AMINO_ASSIGN_OR_RETURN(std::optional<Node> d, LookupPath(t, dir));
  if (!d) return Damaged("missing directory " + std::string(dir));
  const Attr before = d->attr;
  d->attr.mtime = d->attr.ctime = ChangeTimeFor(d->id, d->attr.ctime);
  d->attr.nlink = static_cast<uint32_t>(static_cast<int64_t>(d->attr.nlink) + nlink_delta);
  // The second entry made or removed in a tick: the directory's record stays as it is (the
  // entry's own records are what changed; its read lock orders this call with a removal or a
  // rename of the directory, which write that record).
  if (SameAttr(before, d->attr)) return Status::Ok();
  return SaveAttr(t, *d);
}

namespace {

void SplitInto(std::string_view path, std::deque<std::string>* out, bool front) {
  std::deque<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) parts.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  if (front) {
    out->insert(out->begin(), parts.begin(), parts.end());
  } else {
    out->insert(out->end(), parts.begin(), parts.end());
  }
}

std::string JoinRest(const std::deque<std::string>& rest, bool trailing_slash) {
  std::string r;
  for (const std::string& p : rest) {
    r.push_back('/');
    r += p;
  }
  if (trailing_slash) r.push_back('/');
  return r;
}

constexpr int kMaxSymlinks = 40;

}  // namespace

// Long by design: the walk is one loop over a path's components whose state (the directory,
// the links followed, what remains of the path) every step changes.
Result<Resolved> Ops::Resolve(DB_TXN* t, const Cred& c, std::string_view path, bool follow,
                              bool creating) {
  if (path.empty()) return Status::Errno(ENOENT);

  // Fast path: a privileged caller (no search checks) naming an existing file by a clean path
  // needs one lookup, since a key exists only under real directories.
  if ((c.has(kCapDacReadSearch) || c.has(kCapDacOverride)) && path.size() > 1 && path[0] == '/' &&
      path.back() != '/' && path.find("//") == std::string_view::npos &&
      path.find("/.") == std::string_view::npos) {
    AMINO_ASSIGN_OR_RETURN(std::optional<PathValue> pv, GetPath(t, path));
    if (pv && (!follow || !S_ISLNK(pv->mode))) {
      Resolved r;
      r.parent = std::string(ParentPath(path));
      r.name = std::string(BaseName(path));
      if (r.name.size() > kNameMax) return Status::Errno(ENAMETOOLONG);
      AMINO_ASSIGN_OR_RETURN(Node n, NodeAt(t, path, *pv));
      r.node = std::move(n);
      return r;
    }
    if (!pv) {
      // No such name; if its directory is one, that is the answer (a new file's creation, a
      // search along PATH) without the walk.
      const std::string_view parent = ParentPath(path);
      AMINO_ASSIGN_OR_RETURN(std::optional<PathValue> dir, GetPath(t, parent));
      if (dir && S_ISDIR(dir->mode)) {
        Resolved r;
        r.parent = std::string(parent);
        r.name = std::string(BaseName(path));
        if (r.name.size() > kNameMax) return Status::Errno(ENAMETOOLONG);
        return r;
      }
    }
  }

  std::deque<std::string> rest;
  SplitInto(path, &rest, false);
  bool trailing = path.back() == '/';
  int links = 0;

  Resolved r;
  std::string cur = "/";
  AMINO_ASSIGN_OR_RETURN(std::optional<Node> cur_node, LookupPath(t, "/"));
  if (!cur_node) return Damaged("missing root directory");
  if (rest.empty()) {
    r.parent = "/";
    r.last = Resolved::Last::kRoot;
    r.node = std::move(cur_node);
    r.trailing_slash = trailing;
    return r;
  }

  while (!rest.empty()) {
    std::string comp = std::move(rest.front());
    rest.pop_front();
    bool last = rest.empty();
    // Looking anything up in a directory needs search permission on it, checked before the
    // name (may_lookup() comes before the file system's lookup refuses a long name).
    if (!Permitted(*cur_node, c, 1)) return Status::Errno(EACCES);
    if (comp.size() > kNameMax) return Status::Errno(ENAMETOOLONG);

    if (comp == ".") {
      if (last) {
        r.parent = cur;
        r.last = Resolved::Last::kDot;
        r.node = std::move(cur_node);
        r.trailing_slash = true;
        return r;
      }
      continue;
    }
    if (comp == "..") {
      if (cur == "/") return Status::Escape(".." + JoinRest(rest, trailing && !rest.empty()));
      cur = std::string(ParentPath(cur));
      AMINO_ASSIGN_OR_RETURN(cur_node, LookupPath(t, cur));
      if (!cur_node) return Damaged("missing directory " + cur);
      if (last) {
        r.parent = cur;
        r.last = Resolved::Last::kDotDot;
        r.node = std::move(cur_node);
        r.trailing_slash = true;
        return r;
      }
      continue;
    }

    if (last && creating && trailing) return Status::Errno(EISDIR);
    std::string child = JoinPath(cur, comp);
    AMINO_ASSIGN_OR_RETURN(std::optional<Node> n, LookupPath(t, child));
    if (!n) {
      if (!last) return Status::Errno(ENOENT);
      r.parent = cur;
      r.name = comp;
      r.trailing_slash = trailing;
      return r;
    }
    if (n->is_link() && (!last || follow || trailing)) {
      if (++links > kMaxSymlinks) return Status::Errno(ELOOP);
      s_.NoteFollowedLink(n->id);
      std::string target(n->attr.size, '\0');
      AMINO_ASSIGN_OR_RETURN(std::optional<std::string> page,
                             s_.Get(s_.data(), t, PageKey(n->id, 0)));
      if (page) target = *page;
      if (target.empty()) return Status::Errno(ENOENT);
      if (target[0] == '/') return Status::Escape(target + JoinRest(rest, trailing));
      bool link_trailing = target.back() == '/';
      SplitInto(target, &rest, true);
      if (rest.empty()) {
        // A target of only slashes or dots resolves to the directory the link is in.
        rest.emplace_back(".");
      }
      if (link_trailing && last) trailing = true;
      continue;
    }
    if (!last) {
      if (!n->is_dir()) return Status::Errno(ENOTDIR);
      cur = std::move(child);
      cur_node = std::move(n);
      continue;
    }
    if (trailing && !n->is_dir()) return Status::Errno(ENOTDIR);
    r.parent = cur;
    r.name = comp;
    r.trailing_slash = trailing;
    r.node = std::move(n);
    return r;
  }
  return Damaged("unreachable resolution state");
}

Result<Node> Ops::ResolveExisting(DB_TXN* t, const Cred& c, std::string_view path, bool follow) {
  AMINO_ASSIGN_OR_RETURN(Resolved r, Resolve(t, c, path, follow));
  if (!r.node) return Status::Errno(ENOENT);
  return std::move(*r.node);
}

}  // namespace amino::schema::internal
