#include "monitor/service/shared_mappings.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "monitor/service/byte_shift.h"
#include "monitor/service/file_vmas.h"
#include "monitor/service/page_mark.h"

namespace amino::monitor::service {

namespace {

using schema::Status;

constexpr size_t kPage = kMarkedPage;
constexpr size_t kChunk = 64 * 1024;  // bytes compared per schema read

bool ReadAll(int fd, char* buf, size_t len, uint64_t at) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = pread(fd, buf + got, len - got, static_cast<off_t>(at + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

bool WriteAll(int fd, const char* buf, size_t len, uint64_t at) {
  size_t put = 0;
  while (put < len) {
    ssize_t n = pwrite(fd, buf + put, len - put, static_cast<off_t>(at + put));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    put += static_cast<size_t>(n);
  }
  return true;
}

uint64_t SizeOf(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

SharedMappings::~SharedMappings() {
  for (auto& [key, mapping] : files_) {
    close(mapping.fd);
    unlink(mapping.path.c_str());
  }
  if (!dir_.empty()) rmdir(dir_.c_str());
}

std::string SharedMappings::MakeDirectory() {
  // Memory-backed where there is /dev/shm. Searchable by everyone (the tracee opens its files
  // by name) but not listable; each file is readable by its owner only, lent to the tracee
  // that maps it for the time of its open.
  for (const char* base : {"/dev/shm", "/tmp"}) {
    std::string templ = std::string(base) + "/amino-mappings-XXXXXX";
    if (mkdtemp(templ.data()) && chmod(templ.c_str(), 0711) == 0) return templ;
  }
  return {};
}

SharedMappings::Mapping* SharedMappings::FindMutable(const MountFs& m, schema::FileId id) {
  auto it = files_.find({&m, id});
  return it == files_.end() ? nullptr : &it->second;
}

std::map<SharedMappings::Key, SharedMappings::Mapping>::iterator SharedMappings::FindByInode(
    dev_t dev, ino_t ino) {
  return std::find_if(files_.begin(), files_.end(), [&](const auto& file) {
    return file.second.ino == ino && file.second.dev == dev;
  });
}

const SharedMappings::Mapping* SharedMappings::Find(const MountFs& m, schema::FileId id) const {
  auto it = files_.find({&m, id});
  return it == files_.end() ? nullptr : &it->second;
}

CallOutcome SharedMappings::Get(MountFs& m, schema::FileId id, const Mapping** out) {
  if (const Mapping* found = Find(m, id)) {
    *out = found;
    return {};
  }
  CallOutcome failed;
  failed.status = Status::Errno(ENOMEM);
  if (dir_.empty()) dir_ = MakeDirectory();
  if (dir_.empty()) return failed;
  Mapping mapping;
  mapping.path = dir_ + "/" + std::to_string(++made_);
  mapping.fd = open(mapping.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (mapping.fd < 0) {
    failed.status = Status::Errno(errno);
    return failed;
  }
  struct stat st;
  if (fstat(mapping.fd, &st) == 0) mapping.dev = st.st_dev, mapping.ino = st.st_ino;
  CallOutcome filled = CopyIn(m, id, mapping.fd, 0, UINT64_MAX);
  if (filled.kind != CallOutcome::Kind::kDone || !filled.status.ok()) {
    close(mapping.fd);
    unlink(mapping.path.c_str());
    return filled;
  }
  *out = &(files_[{&m, id}] = std::move(mapping));
  return {};
}

CallOutcome SharedMappings::CopyIn(MountFs& m, schema::FileId id, int fd, uint64_t from,
                                   uint64_t to) {
  // The stored parts of the range only (a file may be sparse, and terabytes long); the rest of
  // the range becomes a hole of the mapping file.
  std::vector<char> chunk(kChunk);
  int err = 0;
  CallOutcome o = RunCallAlone(m, [&](schema::Transaction& txn) -> Status {
    auto st = m.fs->FStat(txn, id);
    if (!st.ok()) return st.status();
    const uint64_t size = st->attr.size;
    const uint64_t end = std::min(to, size);
    if (ftruncate(fd, static_cast<off_t>(std::min(from, size))) != 0 ||
        ftruncate(fd, static_cast<off_t>(size)) != 0) {
      err = errno;
      return Status::Ok();
    }
    uint64_t at = from;
    while (at < end) {
      auto data = m.fs->SeekData(txn, id, at);
      if (!data.ok()) {
        if (data.status().error() == ENXIO) break;  // no stored byte after `at`
        return data.status();
      }
      if (*data >= end) break;
      auto hole = m.fs->SeekHole(txn, id, *data);
      if (!hole.ok()) return hole.status();
      for (at = *data; at < std::min(*hole, end);) {
        const size_t len =
            static_cast<size_t>(std::min<uint64_t>(kChunk, std::min(*hole, end) - at));
        auto got = m.fs->Read(txn, id, at, chunk.data(), len);
        if (!got.ok()) return got.status();
        if (*got == 0) break;
        if (!WriteAll(fd, chunk.data(), *got, at)) {
          err = errno ? errno : EIO;
          return Status::Ok();
        }
        at += *got;
      }
      at = std::max(at, *hole);
    }
    return Status::Ok();
  });
  if (o.kind == CallOutcome::Kind::kDone && o.status.ok() && err) o.status = Status::Errno(err);
  return o;
}

bool SharedMappings::MarkChunk(Mapping& mapping, uint64_t pos, size_t len, char* bytes,
                               uint64_t* marks, bool* copied) {
  // The last page's mark is of the whole page, zeros past the end of the file's data: the same
  // bytes, whatever the file's size is now.
  auto mark_all = [len, marks](const char* from) {
    for (size_t page = 0; page < len; page += kPage) {
      const size_t n = std::min(kPage, len - page);
      if (n == kPage) {
        marks[page / kPage] = PageMark(from + page);
      } else {
        char last[kPage] = {};
        std::memcpy(last, from + page, n);
        marks[page / kPage] = PageMark(last);
      }
    }
  };
  if (mapping.view.Cover(mapping.fd, pos + len) && mapping.view.Read(pos, mark_all)) return true;
  if (!CopyChunk(mapping, pos, len, bytes)) return false;
  *copied = true;
  mark_all(bytes);
  return true;
}

bool SharedMappings::CopyChunk(Mapping& mapping, uint64_t pos, size_t len, char* bytes) {
  // Past `len`, up to the page's end, zeros (see MarkChunk).
  std::memset(bytes + len, 0, (kPage - len % kPage) % kPage);
  if (mapping.view.Cover(mapping.fd, pos + len) &&
      mapping.view.Read(pos, [bytes, len](const char* from) { std::memcpy(bytes, from, len); })) {
    return true;
  }
  return ReadAll(mapping.fd, bytes, len, pos);
}

Status SharedMappings::WriteBackChunk(MountFs& m, schema::Transaction& txn, schema::FileId id,
                                      Mapping& mapping, uint64_t pos, size_t len, Buffers& b) {
  uint64_t marks[kChunk / kPage];
  bool copied = false;  // whether b.mine holds the chunk's bytes
  if (!MarkChunk(mapping, pos, len, b.mine.data(), marks, &copied)) return Status::Errno(EIO);
  bool have_stored = false;
  for (size_t page = 0; page < len; page += kPage) {
    const size_t n = std::min(kPage, len - page);
    const uint64_t index = (pos + page) / kPage;
    const uint64_t mark = marks[page / kPage];
    const uint64_t known = mapping.marks.Get(index);
    if (known == mark) continue;  // as it was when last in step
    if (!copied && !(copied = CopyChunk(mapping, pos, len, b.mine.data()))) {
      return Status::Errno(EIO);
    }
    const char* mine = b.mine.data() + page;
    if (known == 0) {
      // Never seen in step: compare with what the schema holds.
      if (!have_stored) {
        auto got = m.fs->Read(txn, id, pos, b.stored.data(), len);
        if (!got.ok()) return got.status();
        if (*got < len) std::memset(b.stored.data() + *got, 0, len - *got);
        have_stored = true;
      }
      if (std::memcmp(mine, b.stored.data() + page, n) == 0) {
        b.learned.emplace_back(index, mark);
        continue;
      }
    }
    auto put = m.fs->Write(txn, schema::Cred::Root(), id, pos + page, mine, n);
    if (!put.ok()) return put.status();
    b.learned.emplace_back(index, mark);
  }
  return Status::Ok();
}

CallOutcome SharedMappings::WriteBack(MountFs& m, schema::FileId id, uint64_t from, uint64_t to) {
  Mapping* mapping = FindMutable(m, id);
  if (!mapping) return {};
  from -= from % kPage;  // whole pages: the marks are of whole pages
  if (to != UINT64_MAX) to += (kPage - to % kPage) % kPage;
  // Only the pages that differ are written: a write-back changes nothing when nothing was
  // stored (and leaves the file's times alone then). Holes of the mapping file (never stored
  // to) match the schema's, and are found with SEEK_DATA and SEEK_HOLE, which walk the file's
  // pages: only where a chunk has pages not known to be in step.
  const int fd = mapping->fd;
  const uint64_t size = std::min(SizeOf(fd), to);
  Buffers b;
  b.mine.resize(kChunk);
  b.stored.resize(kChunk);
  CallOutcome o = RunCallAlone(m, [&](schema::Transaction& txn) -> Status {
    b.learned.clear();  // kept only once the transaction has committed
    uint64_t at = from;
    uint64_t data_end = 0;  // [at, data_end) is known to hold data (SEEK_HOLE)
    while (at < size) {
      uint64_t end = std::min(size, (at / kChunk + 1) * kChunk);
      if (!mapping->marks.AllKnown(at / kPage, (end + kPage - 1) / kPage)) {
        if (at >= data_end) {
          const off_t data = lseek(fd, static_cast<off_t>(at), SEEK_DATA);
          if (data < 0 || static_cast<uint64_t>(data) >= size) break;  // no data after `at`
          const off_t hole = lseek(fd, data, SEEK_HOLE);
          data_end = hole < 0 ? size : std::min(static_cast<uint64_t>(hole), size);
          if (static_cast<uint64_t>(data) > at) {
            at = static_cast<uint64_t>(data);
            continue;
          }
        }
        end = std::min(end, data_end);
        if (end <= at) break;  // (the file changed under the seeks)
      }
      AMINO_RETURN_IF_ERROR(WriteBackChunk(m, txn, id, *mapping, at, end - at, b));
      at = end;
    }
    return Status::Ok();
  });
  if (o.kind == CallOutcome::Kind::kDone && o.status.ok()) {
    for (const auto& [index, mark] : b.learned) mapping->marks.Set(index, mark);
  }
  if (o.kind == CallOutcome::Kind::kDone && o.status.error() == ESTALE) {
    // The file is gone (removed, its last description closed): what is stored in a mapping
    // of it now goes nowhere, as with the kernel's.
    auto it = files_.find({&m, id});
    close(it->second.fd);
    unlink(it->second.path.c_str());
    files_.erase(it);
    o.status = Status::Ok();
  }
  return o;
}

CallOutcome SharedMappings::RemoveMapped(pid_t pid, uint64_t addr, uint64_t len) {
  const std::optional<std::vector<FileVma>> vmas = FileVmasIn(pid, addr, len);
  if (!vmas || vmas->empty()) return {};
  const bool ours = std::any_of(vmas->begin(), vmas->end(), [&](const FileVma& vma) {
    return FindByInode(vma.dev, vma.ino) != files_.end();
  });
  if (!ours) return {};
  const std::optional<uint64_t> up_to = RemovableUpTo(pid, addr, len);
  if (!up_to) return {};
  static const std::vector<char> zeros(kChunk, '\0');
  for (const FileVma& vma : *vmas) {
    auto it = FindByInode(vma.dev, vma.ino);
    const uint64_t lo = std::max(vma.start, addr), hi = std::min(vma.end, *up_to);
    if (it == files_.end() || lo >= hi) continue;
    MountFs& m = *const_cast<MountFs*>(it->first.first);
    const schema::FileId id = it->first.second;
    const uint64_t from = vma.offset + (lo - vma.start), to = vma.offset + (hi - vma.start);
    CallOutcome o = RunCallAlone(m, [&](schema::Transaction& txn) -> Status {
      auto st = m.fs->FStat(txn, id);
      if (!st.ok()) return st.status();
      // As fallocate's PUNCH_HOLE | KEEP_SIZE: zeros inside the file, its size unchanged.
      for (uint64_t at = from; at < std::min(to, st->attr.size);) {
        const size_t n =
            static_cast<size_t>(std::min<uint64_t>(kChunk, std::min(to, st->attr.size) - at));
        auto w = m.fs->Write(txn, schema::Cred::Root(), id, at, zeros.data(), n);
        if (!w.ok()) return w.status();
        at += n;
      }
      return Status::Ok();
    });
    if (o.kind == CallOutcome::Kind::kDone && o.status.error() == ESTALE) continue;  // gone
    if (o.kind != CallOutcome::Kind::kDone || !o.status.ok()) return o;
    // The punched pages are zeros in both; a store there later is compared afresh.
    it->second.marks.Forget(from / kPage, (to + kPage - 1) / kPage);
  }
  return {};
}

std::vector<MountFs*> SharedMappings::WriteBackMapped(pid_t pid, uint64_t addr, uint64_t len) {
  const std::optional<std::vector<FileVma>> vmas = FileVmasIn(pid, addr, len);
  if (!vmas) return WriteBackAll();
  std::vector<MountFs*> written;
  const uint64_t end = len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
  for (const FileVma& vma : *vmas) {
    auto it = FindByInode(vma.dev, vma.ino);
    if (it == files_.end()) continue;
    const uint64_t lo = std::max(vma.start, addr), hi = std::min(vma.end, end);
    MountFs& m = *const_cast<MountFs*>(it->first.first);
    (void)WriteBack(m, it->first.second, vma.offset + (lo - vma.start),
                    vma.offset + (hi - vma.start));
    if (std::find(written.begin(), written.end(), &m) == written.end()) written.push_back(&m);
  }
  return written;
}

std::vector<MountFs*> SharedMappings::WriteBackAll() {
  std::vector<MountFs*> written;
  std::vector<Key> keys;
  for (auto& [key, mapping] : files_) keys.push_back(key);
  for (const Key& key : keys) {  // (a write-back may forget a file that is gone)
    MountFs& m = *const_cast<MountFs*>(key.first);
    CallOutcome o = WriteBack(m, key.second);
    if (o.kind == CallOutcome::Kind::kDone && !o.status.ok() && o.status.error() != ENOENT) {
      std::fprintf(stderr, "amino run: %s: writing back a shared mapping of file %llu: %s\n",
                   m.mount->point.c_str(), static_cast<unsigned long long>(key.second),
                   o.status.message().c_str());
    }
    if (std::find(written.begin(), written.end(), &m) == written.end()) written.push_back(&m);
  }
  return written;
}

void SharedMappings::Wrote(const MountFs& m, schema::FileId id, uint64_t at, const char* data,
                           size_t len) {
  // Just the bytes written: stores other processes made meanwhile elsewhere in the file stay.
  if (Mapping* mapping = FindMutable(m, id)) {
    (void)WriteAll(mapping->fd, data, len, at);
    if (len) mapping->marks.Forget(at / kPage, (at + len - 1) / kPage + 1);
  }
}

void SharedMappings::Resized(const MountFs& m, schema::FileId id, uint64_t size) {
  // Cut off, or extended with zeros, as the schema's file.
  if (Mapping* mapping = FindMutable(m, id)) {
    (void)ftruncate(mapping->fd, static_cast<off_t>(size));
    mapping->marks.Forget(size / kPage, UINT64_MAX);
  }
}

void SharedMappings::Collapsed(const MountFs& m, schema::FileId id, uint64_t at, uint64_t len) {
  Mapping* mapping = FindMutable(m, id);
  if (!mapping) return;
  mapping->marks.Clear();
  const int fd = mapping->fd;
  const uint64_t size = SizeOf(fd);
  if (at + len > size) return;
  (void)ShiftBytes(
      at + len, at, size - at - len, kChunk,
      [fd](uint64_t pos, char* buf, size_t n) { return ReadAll(fd, buf, n, pos); },
      [fd](uint64_t pos, const char* buf, size_t n) { return WriteAll(fd, buf, n, pos); });
  (void)ftruncate(fd, static_cast<off_t>(size - len));
}

void SharedMappings::Inserted(const MountFs& m, schema::FileId id, uint64_t at, uint64_t len) {
  Mapping* mapping = FindMutable(m, id);
  if (!mapping) return;
  mapping->marks.Clear();
  const int fd = mapping->fd;
  const uint64_t size = SizeOf(fd);
  if (at > size) return;
  (void)ShiftBytes(
      at, at + len, size - at, kChunk,
      [fd](uint64_t pos, char* buf, size_t n) { return ReadAll(fd, buf, n, pos); },
      [fd](uint64_t pos, const char* buf, size_t n) { return WriteAll(fd, buf, n, pos); });
  // The opened range reads as zeros: a hole punched where the moved bytes were.
  if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(at),
                static_cast<off_t>(len)) != 0) {
    const std::vector<char> zeros(static_cast<size_t>(std::min<uint64_t>(len, kChunk)));
    for (uint64_t done = 0; done < len;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(len - done, kChunk));
      if (!WriteAll(fd, zeros.data(), n, at + done)) break;
      done += n;
    }
  }
}

void SharedMappings::Refresh(MountFs& m, schema::FileId id) {
  if (Mapping* mapping = FindMutable(m, id)) {
    mapping->marks.Clear();
    CopyIn(m, id, mapping->fd, 0, UINT64_MAX);
  }
}

void SharedMappings::RefreshAll(MountFs& m) {
  for (auto& [key, mapping] : files_) {
    if (key.first != &m) continue;
    mapping.marks.Clear();
    CopyIn(m, key.second, mapping.fd, 0, UINT64_MAX);
  }
}

void SharedMappings::LendTo(int fd, uid_t uid, gid_t gid) {
  if (geteuid() == 0) (void)fchown(fd, uid, gid);
}

void SharedMappings::TakeBack(int fd) {
  if (geteuid() == 0) (void)fchown(fd, 0, 0);
}

}  // namespace amino::monitor::service
