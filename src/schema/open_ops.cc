// Opens and closes (with the open counts that keep a removed file until its last close),
// directory listings and the names of a file.
#include <fcntl.h>
#include <linux/fs.h>

#include <random>

#include "schema/change_clock.h"
#include "schema/fs_internal.h"
#include "schema/name_hints.h"

namespace amino::schema {

using internal::CreationParent;
using internal::IsOwnerOrPrivileged;
using internal::Node;
using internal::Now;
using internal::Ops;
using internal::Permitted;
using internal::Resolved;

namespace {

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

}  // namespace

// An open description holds its file (open_holds.h): nothing is written.
Status FileSystem::Hold(Transaction& txn, FileId id, bool made_here) {
  if (made_here) {
    AMINO_RETURN_IF_ERROR(store_->holds().Acquire(id));
    txn.NoteHold(id, 1);
    return Status::Ok();
  }
  if (txn.nested()) {
    // Inside an application transaction the open takes the file's turn until the transaction
    // ends, as a written open count did: transactions that open one file take turns. Otherwise
    // readers that keep their transactions open could hold off a writer forever (a call that
    // meets a lock does not queue for it: the monitor retries it later). A lock of its own,
    // not the file's record: records of many files share a page, and Berkeley DB locks pages.
    AMINO_RETURN_IF_ERROR(store_->MayChange(txn.raw()));
    AMINO_RETURN_IF_ERROR(store_->holds().TakeTurn(id, txn.raw()));
  }
  const bool snapshot = store_->InSnapshot(txn.raw());
  if (snapshot) AMINO_RETURN_IF_ERROR(store_->holds().Undecided(id, txn.raw()));
  AMINO_RETURN_IF_ERROR(store_->holds().Acquire(id));
  txn.NoteHold(id, 1);
  if (snapshot) {
    // Nobody is deciding on the file now, and nobody can before this call ends: it is there
    // if it is as last committed. Gone since the snapshot began: the call runs again.
    AMINO_ASSIGN_OR_RETURN(Store::Committed now, store_->CommittedState(id));
    if (now == Store::Committed::kGone) return Status::Conflict("the file was removed meanwhile");
    return Status::Ok();
  }
  // A remover asks whether the file is held with its record taken for writing: a read lock on
  // the record until this transaction ends makes the two take turns even when the path that
  // led here came from the read cache (no lock on the name then).
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> record,
                         store_->GetLocked(store_->inode(), txn.raw(), IdKey(id)));
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
    return OpenResult{n.id, Stat{n.id, n.attr}, false, {}};
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
      // handle_truncate(): whatever the size was, as a truncate by this caller.
      internal::DropPrivileges(n.attr, c);
      AMINO_RETURN_IF_ERROR(ops.SetSize(t, n, 0, ChangeTimeFor(n.id, n.attr.ctime)));
    } else if ((mask & 2) && txn.nested()) {
      // Opened for writing inside an application transaction: its writes will change the
      // record that holds its size and times. Taken for writing now, so that two transactions
      // writing files whose records share a page take turns here instead of both reading it
      // and then each waiting for the other to let go (a deadlock, one aborted).
      const bool plmd = n.where == Node::Where::kPlmd;
      AMINO_RETURN_IF_ERROR(store_
                                ->Get(plmd ? store_->path() : store_->inode(), t,
                                      plmd ? PathKey(n.path) : IdKey(n.id), DB_RMW)
                                .status());
    }
  }
  Node& n = *r.node;
  AMINO_RETURN_IF_ERROR(Hold(txn, n.id, out.created));
  out.id = n.id;
  out.stat = Stat{n.id, n.attr};
  out.path = n.path;
  if (n.where == Node::Where::kPlmd) NameHints::Note(store_.get(), n.id, n.path);
  return out;
}

Status FileSystem::Close(Transaction& txn, FileId id) {
  // The hold is given up only after the file's record is read, and so locked until this
  // transaction ends; the question whether anyone else holds it is asked with the record taken
  // for writing (open_holds.h).
  DB_TXN* t = txn.raw();
  if (store_->InSnapshot(t)) {
    // A call reading a snapshot asks whether the file is named as last committed instead,
    // once no decision on it is under way or can start before the call ends (open_holds.h).
    // A nameless one may be the close's to free: that takes the record's lock.
    AMINO_RETURN_IF_ERROR(store_->holds().Undecided(id, t));
    AMINO_ASSIGN_OR_RETURN(Store::Committed now, store_->CommittedState(id));
    if (now == Store::Committed::kNameless) return store_->MayChange(t);
    if (!store_->holds().Release(id)) return Status::Errno(EBADF);
    txn.NoteHold(id, -1);
    return Status::Ok();
  }
  AMINO_ASSIGN_OR_RETURN(std::optional<std::string> raw,
                         store_->GetLocked(store_->inode(), t, IdKey(id)));
  InodeValue iv;
  if (raw && !DecodeInodeValue(*raw, &iv)) return Status::Storage(EUCLEAN, "damaged Data record");
  const bool nameless = raw && iv.link_count == 0;
  if (nameless) {
    AMINO_RETURN_IF_ERROR(store_->Get(store_->inode(), t, IdKey(id), DB_RMW).status());
  }
  if (!store_->holds().Release(id)) return Status::Errno(EBADF);
  txn.NoteHold(id, -1);
  if (!nameless) return Status::Ok();  // named, or freed already, or its creation was undone
  AMINO_RETURN_IF_ERROR(store_->holds().Decide(id, t));
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
  // A directory's entries are neighbours in the Path database: read in batches. Each batch's
  // records are kept for the calls after (they are in the batch's buffer until the next).
  std::vector<ReadCache::Record> seen;
  AMINO_ASSIGN_OR_RETURN(bool more, cur.SeekRangeBatch(start));
  while (more) {
    std::string_view key, value;
    bool done = false;
    seen.clear();
    while (cur.NextInBatch(&key, &value)) {
      if (out.size() >= max || key.substr(0, prefix.size()) != prefix) {
        done = true;
        break;
      }
      FileId id;
      uint32_t mode;
      if (!DecodePathEntry(value, &id, &mode)) return Status::Storage(EUCLEAN, "damaged path");
      out.push_back(DirEntry{std::string(key.substr(prefix.size())), id, DirentType(mode)});
      seen.push_back({key, value});
    }
    store_->KeepReads(store_->path(), t, seen);
    if (done) break;
    AMINO_ASSIGN_OR_RETURN(more, cur.NextBatch());
  }
  return out;
}

Result<std::vector<std::string>> FileSystem::Names(Transaction& txn, FileId id) {
  {
    // A file with one name (every directory) has it in its node, which the read cache and the
    // name hints usually give without a lookup in the Names database.
    Ops ops(*store_);
    Result<Node> n = ops.NodeById(txn.raw(), id);
    if (!n.ok() && n.status().error() == ESTALE) return std::vector<std::string>{};
    AMINO_RETURN_IF_ERROR(n.status());
    if (n->where == Node::Where::kOrphan) return std::vector<std::string>{};
    if (n->where == Node::Where::kPlmd) return std::vector<std::string>{n->path};
  }
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
