// File data: pages of kTransferUnit bytes in the Data db keyed by (id, page index). A missing
// page, or the missing tail of a short page, reads as zeros; the page that holds the end of file
// is never longer than the file (LASTPAGEMATCHESSIZE) and none lies past it (PAGESMATCHSIZE).
#include <algorithm>
#include <cstring>
#include <optional>

#include "schema/change_clock.h"
#include "schema/fs_internal.h"

namespace amino::schema {

using internal::Node;
using internal::Now;
using internal::Ops;
using internal::Permitted;

namespace internal {

Status Ops::TruncatePages(DB_TXN* t, FileId id, uint64_t from, uint64_t old_size,
                          uint64_t* blocks) {
  if (from >= old_size) return Status::Ok();
  const uint64_t first_gone = (from + kTransferUnit - 1) / kTransferUnit;
  const uint32_t keep = static_cast<uint32_t>(from % kTransferUnit);
  const std::string prefix = IdKey(id);
  if (keep != 0) {
    // The page that will hold the new end of file loses its tail.
    std::string key = PageKey(id, from / kTransferUnit);
    AMINO_ASSIGN_OR_RETURN(std::optional<std::string> page, s_.Get(s_.data(), t, key));
    if (page && page->size() > keep) {
      page->resize(keep);
      AMINO_RETURN_IF_ERROR(s_.Put(s_.data(), t, key, *page));
    }
  }
  Cursor c(s_.data(), t);
  AMINO_RETURN_IF_ERROR(c.status());
  c.KeysOnly();  // pages are only deleted
  AMINO_ASSIGN_OR_RETURN(bool more, c.SeekRange(PageKey(id, first_gone)));
  while (more && c.key().size() == 16 && c.key().substr(0, 8) == prefix) {
    AMINO_RETURN_IF_ERROR(c.Delete());
    *blocks -= std::min<uint64_t>(*blocks, kTransferUnit / 512);
    AMINO_ASSIGN_OR_RETURN(more, c.Next());
  }
  return Status::Ok();
}

Status Ops::SetSize(DB_TXN* t, Node& n, uint64_t length, const timespec& now) {
  if (length < n.attr.size) {
    AMINO_RETURN_IF_ERROR(TruncatePages(t, n.id, length, n.attr.size, &n.attr.blocks));
  }
  n.attr.size = length;
  n.attr.mtime = n.attr.ctime = now;
  return SaveAttr(t, n);
}

void DropPrivileges(Attr& a, const Cred& c) {
  if (c.has(kCapFsetid) || !S_ISREG(a.mode)) return;
  a.mode &= ~S_ISUID;
  if ((a.mode & S_ISGID) && ((a.mode & S_IXGRP) || !c.in_group(a.gid))) a.mode &= ~S_ISGID;
}

}  // namespace internal

namespace {

using internal::DropPrivileges;

Result<size_t> WriteAt(Store& s, Ops& ops, DB_TXN* t, const Cred& c, Node& n, uint64_t offset,
                       const void* buf, size_t len) {
  if (n.is_dir()) return Status::Errno(EISDIR);
  if (!S_ISREG(n.attr.mode)) return Status::Errno(EINVAL);
  if (len == 0) return size_t{0};
  if (offset >= kMaxFileSize) return Status::Errno(EFBIG);
  const Attr before = n.attr;
  len = static_cast<size_t>(std::min<uint64_t>(len, kMaxFileSize - offset));
  AMINO_RETURN_IF_ERROR(s.Room(len));
  const auto* src = static_cast<const char*>(buf);
  uint64_t pos = offset;
  const uint64_t end = offset + len;
  std::string page;
  std::optional<Cursor> whole;  // finds stored pages and changes them in place
  while (pos < end) {
    const uint64_t index = pos / kTransferUnit;
    const uint32_t in_page = static_cast<uint32_t>(pos % kTransferUnit);
    const uint32_t chunk =
        static_cast<uint32_t>(std::min<uint64_t>(kTransferUnit - in_page, end - pos));
    const std::string key = PageKey(n.id, index);
    // No page lies past the end of file (PAGESMATCHSIZE): one there is new, not read.
    const bool inside = index * kTransferUnit < n.attr.size;
    if (chunk == kTransferUnit) {
      // A whole page: what it held does not matter, only whether it was there (its blocks).
      // One search: the cursor that found it replaces it.
      const std::string_view bytes(src + (pos - offset), chunk);
      bool existed = false;
      if (inside) {
        if (!whole) whole.emplace(s.data(), t);
        AMINO_RETURN_IF_ERROR(whole->status());
        AMINO_ASSIGN_OR_RETURN(existed, whole->SeekToReplace(key));
      }
      if (existed) {
        AMINO_RETURN_IF_ERROR(whole->ReplaceCurrent(bytes));
      } else {
        n.attr.blocks += kTransferUnit / 512;
        AMINO_RETURN_IF_ERROR(s.Put(s.data(), t, key, bytes));
      }
      pos += chunk;
      continue;
    }
    const std::string_view bytes(src + (pos - offset), chunk);
    if (inside) {
      // Part of a page that may be stored: changed where it lies, without reading it here
      // (a shorter one grows, with zeros up to the part, as below).
      if (!whole) whole.emplace(s.data(), t);
      AMINO_RETURN_IF_ERROR(whole->status());
      AMINO_ASSIGN_OR_RETURN(bool existed, whole->SeekToReplace(key));
      if (existed) {
        AMINO_RETURN_IF_ERROR(whole->ReplaceInCurrent(in_page, bytes));
        pos += chunk;
        continue;
      }
    }
    // A new page (past the end of file, or a hole): zeros up to the part.
    page.assign(in_page, '\0');
    page.append(bytes);
    n.attr.blocks += kTransferUnit / 512;
    AMINO_RETURN_IF_ERROR(s.Put(s.data(), t, key, page));
    pos += chunk;
  }
  n.attr.size = std::max<uint64_t>(n.attr.size, end);
  n.attr.mtime = n.attr.ctime = ChangeTimeFor(n.id, n.attr.ctime);
  DropPrivileges(n.attr, c);
  // Pages rewritten inside the file within a tick: its record stays as it was.
  if (!SameAttr(before, n.attr)) AMINO_RETURN_IF_ERROR(ops.SaveAttr(t, n));
  return len;
}

}  // namespace

Result<size_t> FileSystem::Read(Transaction& txn, FileId id, uint64_t offset, void* buf,
                                size_t len) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(t, id));
  if (n.is_dir()) return Status::Errno(EISDIR);
  if (offset >= n.attr.size || len == 0) return size_t{0};
  const size_t count = static_cast<size_t>(std::min<uint64_t>(len, n.attr.size - offset));
  auto* dst = static_cast<char*>(buf);
  std::memset(dst, 0, count);
  const uint64_t end = offset + count;
  if (offset / kTransferUnit == (end - 1) / kTransferUnit) {
    // Within one page (most reads): that record alone, copied straight into `dst`.
    const uint64_t page_start = offset / kTransferUnit * kTransferUnit;
    AMINO_ASSIGN_OR_RETURN(std::optional<size_t> got,
                           store_->GetPart(store_->data(), t, PageKey(id, offset / kTransferUnit),
                                           static_cast<uint32_t>(offset - page_start), dst,
                                           static_cast<uint32_t>(count)));
    (void)got;  // an absent page is a hole, a short one ends in zeros: as set above
    return count;
  }
  Cursor c(store_->data(), t);
  AMINO_RETURN_IF_ERROR(c.status());
  AMINO_ASSIGN_OR_RETURN(bool more, c.SeekRange(PageKey(id, offset / kTransferUnit)));
  while (more) {
    FileId pid;
    uint64_t index;
    if (!ParsePageKey(c.key(), &pid, &index) || pid != id) break;
    const uint64_t page_start = index * kTransferUnit;
    if (page_start >= end) break;
    const std::string_view data = c.value();
    const uint64_t from = std::max(offset, page_start);
    const uint64_t to = std::min<uint64_t>(end, page_start + data.size());
    if (from < to) std::memcpy(dst + (from - offset), data.data() + (from - page_start), to - from);
    if (page_start + kTransferUnit >= end) break;  // no later page holds any of it
    AMINO_ASSIGN_OR_RETURN(more, c.Next());
  }
  return count;
}

Result<size_t> FileSystem::Write(Transaction& txn, const Cred& c, FileId id, uint64_t offset,
                                 const void* buf, size_t len) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  return WriteAt(*store_, ops, txn.raw(), c, n, offset, buf, len);
}

Result<uint64_t> FileSystem::Append(Transaction& txn, const Cred& c, FileId id, const void* buf,
                                    size_t len) {
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  const uint64_t at = n.attr.size;
  AMINO_ASSIGN_OR_RETURN(size_t written, WriteAt(*store_, ops, txn.raw(), c, n, at, buf, len));
  (void)written;
  return at;
}

Status FileSystem::Truncate(Transaction& txn, const Cred& c, std::string_view path,
                            int64_t length) {
  if (length < 0) return Status::Errno(EINVAL);
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.ResolveExisting(txn.raw(), c, path, true));
  if (n.is_dir()) return Status::Errno(EISDIR);
  if (!S_ISREG(n.attr.mode)) return Status::Errno(EINVAL);
  if (!Permitted(n, c, 2)) return Status::Errno(EACCES);
  if (static_cast<uint64_t>(length) > kMaxFileSize) return Status::Errno(EFBIG);
  DropPrivileges(n.attr, c);
  return ops.SetSize(txn.raw(), n, static_cast<uint64_t>(length),
                     ChangeTimeFor(n.id, n.attr.ctime));
}

Status FileSystem::FTruncate(Transaction& txn, const Cred& c, FileId id, int64_t length) {
  if (length < 0) return Status::Errno(EINVAL);
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(txn.raw(), id));
  if (!S_ISREG(n.attr.mode)) return Status::Errno(EINVAL);
  if (static_cast<uint64_t>(length) > kMaxFileSize) return Status::Errno(EFBIG);
  DropPrivileges(n.attr, c);
  return ops.SetSize(txn.raw(), n, static_cast<uint64_t>(length),
                     ChangeTimeFor(n.id, n.attr.ctime));
}

Result<uint64_t> FileSystem::SeekData(Transaction& txn, FileId id, uint64_t offset) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(t, id));
  if (offset >= n.attr.size) return Status::Errno(ENXIO);
  Cursor c(store_->data(), t);
  AMINO_RETURN_IF_ERROR(c.status());
  AMINO_ASSIGN_OR_RETURN(bool found, c.SeekRange(PageKey(id, offset / kTransferUnit)));
  FileId pid;
  uint64_t index;
  if (!found || !ParsePageKey(c.key(), &pid, &index) || pid != id) return Status::Errno(ENXIO);
  const uint64_t at = std::max(offset, index * kTransferUnit);
  if (at >= n.attr.size) return Status::Errno(ENXIO);
  return at;
}

Result<uint64_t> FileSystem::SeekHole(Transaction& txn, FileId id, uint64_t offset) {
  DB_TXN* t = txn.raw();
  Ops ops(*store_);
  AMINO_ASSIGN_OR_RETURN(Node n, ops.NodeById(t, id));
  if (offset >= n.attr.size) return Status::Errno(ENXIO);
  Cursor c(store_->data(), t);
  AMINO_RETURN_IF_ERROR(c.status());
  uint64_t expect = offset / kTransferUnit;
  AMINO_ASSIGN_OR_RETURN(bool more, c.SeekRange(PageKey(id, expect)));
  while (more) {
    FileId pid;
    uint64_t index;
    if (!ParsePageKey(c.key(), &pid, &index) || pid != id || index != expect) break;
    ++expect;
    AMINO_ASSIGN_OR_RETURN(more, c.Next());
  }
  return std::min<uint64_t>(n.attr.size, std::max(offset, expect * kTransferUnit));
}

}  // namespace amino::schema
