// Calls on served descriptors: data transfer between the schema and the tracee's memory,
// offsets, attributes, directory listing, synchronisation and locks. Each does what the same
// call does on ext4, in the order Linux checks its arguments; the data comes from the schema in
// one transaction per call and reaches the tracee after the commit.
#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "monitor/host/host_context.h"
#include "monitor/service/byte_shift.h"
#include "monitor/service/file_locks.h"
#include "monitor/service/mount_handler.h"
#include "monitor/service/stat_convert.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

constexpr size_t kMaxRw = 0x7ffff000;             // MAX_RW_COUNT: the cap on one transfer
constexpr uint64_t kUserEnd = 0x7ffffffff000ULL;  // TASK_SIZE_MAX: access_ok's limit
constexpr int kRwfSupported = 0x1ff;              // RWF_HIPRI .. RWF_NOSIGNAL
constexpr int kRwfNoWait = 0x08, kRwfAppend = 0x10, kRwfNoAppend = 0x20, kRwfAtomic = 0x40;
constexpr int kRwfDsync = 0x02, kRwfSync = 0x04;
constexpr size_t kChunk = 1 << 20;
constexpr uint64_t kBlock = 4096;  // the block of ext4 (and st_blksize) that fallocate moves
constexpr int64_t kOffsetMax = LLONG_MAX;

bool AccessOk(uint64_t addr, uint64_t len) {
  const uint64_t end = addr + len;
  return end >= addr && end <= kUserEnd;
}

// rw_verify_area: the range [pos, pos + count) must be representable.
long VerifyArea(int64_t pos, uint64_t count) {
  if (pos < 0) return -EINVAL;
  if (count > static_cast<uint64_t>(kOffsetMax - pos)) return -EINVAL;
  return 0;
}

// The tracee's iovec array as import_iovec takes it: EINVAL beyond UIO_MAXIOV or for a negative
// length, EFAULT for the array or a segment outside user space; the total capped at
// MAX_RW_COUNT.
long ImportIovecs(Thread& t, uint64_t addr, uint64_t count, std::vector<iovec>* out,
                  size_t* total) {
  *total = 0;
  if (count > IOV_MAX) return -EINVAL;
  out->resize(count);
  if (count && ReadMemory(*t.proc, addr, out->data(), count * sizeof(iovec)) != 0) return -EFAULT;
  for (const iovec& v : *out) {
    if (static_cast<ssize_t>(v.iov_len) < 0) return -EINVAL;
  }
  for (iovec& v : *out) {
    if (!AccessOk(reinterpret_cast<uint64_t>(v.iov_base), v.iov_len)) return -EFAULT;
    v.iov_len = std::min(v.iov_len, kMaxRw - *total);
    *total += v.iov_len;
  }
  return 0;
}

// RWF_* flags as ext4 takes them for a buffered transfer.
long CheckRwf(int rwf, bool dir) {
  if (!rwf) return 0;
  if (dir) return (rwf & ~RWF_HIPRI) ? -EOPNOTSUPP : 0;  // no read_iter: the loop accepts HIPRI
  if (rwf & ~kRwfSupported) return -EOPNOTSUPP;
  if ((rwf & kRwfAppend) && (rwf & kRwfNoAppend)) return -EINVAL;
  if (rwf & kRwfAtomic) return -EOPNOTSUPP;  // needs O_DIRECT and a device that has it
  return 0;
}

// Copies up to `len` bytes from the tracee: the number readable before the first fault.
size_t ReadUpTo(Process& p, uint64_t addr, char* buf, size_t len) {
  if (ReadMemory(p, addr, buf, len) == 0) return len;
  size_t done = 0;
  while (done < len) {
    const size_t in_page = 4096 - ((addr + done) % 4096);
    const size_t want = std::min(in_page, len - done);
    if (ReadMemory(p, addr + done, buf + done, want) != 0) break;
    done += want;
  }
  return done;
}

// generic_file_llseek_size: the new position, or -errno.
int64_t GenericSeek(uint64_t pos, int64_t off, int whence, int64_t maxsize, int64_t eof) {
  switch (whence) {
    case SEEK_END:
      off = static_cast<int64_t>(static_cast<uint64_t>(off) + static_cast<uint64_t>(eof));
      break;
    case SEEK_CUR:
      if (off == 0) return static_cast<int64_t>(pos);
      off = static_cast<int64_t>(pos + static_cast<uint64_t>(off));
      break;
    case SEEK_DATA:
      if (static_cast<uint64_t>(off) >= static_cast<uint64_t>(eof)) return -ENXIO;
      break;
    case SEEK_HOLE:
      if (static_cast<uint64_t>(off) >= static_cast<uint64_t>(eof)) return -ENXIO;
      off = eof;
      break;
    default:
      break;
  }
  if (off < 0 || off > maxsize) return -EINVAL;
  return off;
}

long XattrName(Thread& t, uint64_t addr, std::string* name) {
  int err = ReadString(*t.proc, addr, XATTR_NAME_MAX + 1, name);
  if (err == ENAMETOOLONG || (err == 0 && name->empty())) return -ERANGE;
  return err ? -err : 0;
}

// One directory entry as getdents or getdents64 lays it out.
void PutDirent(std::string* buf, bool wide, uint64_t ino, int64_t off, unsigned char type,
               const std::string& name) {
  const size_t header = wide ? 19 : 18;
  const size_t reclen = (header + name.size() + (wide ? 1 : 2) + 7) & ~size_t{7};
  const size_t at = buf->size();
  buf->resize(at + reclen, '\0');
  char* p = buf->data() + at;
  const uint16_t len16 = static_cast<uint16_t>(reclen);
  std::memcpy(p, &ino, 8);
  std::memcpy(p + 8, &off, 8);
  std::memcpy(p + 16, &len16, 2);
  if (wide) {
    p[18] = static_cast<char>(type);
    std::memcpy(p + 19, name.data(), name.size());
  } else {
    std::memcpy(p + 18, name.data(), name.size());
    p[reclen - 1] = static_cast<char>(type);
  }
}

size_t DirentLen(bool wide, size_t name_len) {
  return ((wide ? 19 : 18) + name_len + (wide ? 1 : 2) + 7) & ~size_t{7};
}

using FileBody = MountHandler::FileBody;
using Done = MountHandler::Done;
using Status = schema::Status;

// What the helpers below need of the handler for one call on a served descriptor.
struct FdCall {
  Thread& t;
  ServedFile& f;
  // A transaction on a served file's file system (RunOnFile).
  std::function<Decision(ServedFile&, const FileBody&, const Done&)> run_on;
  // The served file behind another descriptor of the caller, or nullptr.
  std::function<std::shared_ptr<ServedFile>(int)> served;
  schema::Cred cred;
  // The mapping files that follow what the monitor writes (shared_mappings.h).
  SharedMappings& maps;

  Decision run(const FileBody& body, const Done& done) { return run_on(f, body, done); }
};

Decision Emulate(long r) { return Decision::Emulate(r); }

// Calls that read or change a file's bytes, or make them durable.
bool WritesBackFirst(long nr) {
  switch (nr) {
    case SYS_read:
    case SYS_pread64:
    case SYS_readv:
    case SYS_preadv:
    case SYS_preadv2:
    case SYS_write:
    case SYS_pwrite64:
    case SYS_writev:
    case SYS_pwritev:
    case SYS_pwritev2:
    case SYS_ftruncate:
    case SYS_fallocate:
    case SYS_fsync:
    case SYS_fdatasync:
    case SYS_syncfs:
    case SYS_sync_file_range:
    case SYS_sendfile:
    case SYS_copy_file_range:
    case SYS_splice:
    case SYS_lseek:  // SEEK_DATA and SEEK_HOLE look at the bytes
      return true;
    default:
      return false;
  }
}

// Access mode 3 (O_ACCMODE, "for ioctl only") allows neither reading nor writing.
bool CanRead(const ServedFile& f) {
  return !(f.flags & O_PATH) && (f.access_mode() == O_RDONLY || f.access_mode() == O_RDWR);
}
bool CanWrite(const ServedFile& f) {
  return !(f.flags & O_PATH) && (f.access_mode() == O_WRONLY || f.access_mode() == O_RDWR);
}
long Ok() { return 0; }

Decision ReadData(FdCall& c, const std::vector<iovec>& iov, size_t total, int64_t start,
                  bool at_cursor) {
  std::vector<char> data;
  return c.run(
      [&](schema::Transaction& txn) {
        size_t got = 0;
        data.clear();
        while (got < total) {
          const size_t want = std::min(total - got, kChunk);
          data.resize(got + want);
          auto r = c.f.mfs->fs->Read(txn, c.f.id, static_cast<uint64_t>(start) + got,
                                     data.data() + got, want);
          if (!r.ok()) return r.status();
          got += *r;
          if (*r < want) break;
        }
        data.resize(got);
        return Status::Ok();
      },
      [&] {
        // As the kernel's copies: what reached the tracee before a fault counts.
        size_t copied = 0;
        for (const iovec& v : iov) {
          if (copied == data.size()) break;
          const size_t n = std::min(v.iov_len, data.size() - copied);
          const size_t w = WritePartial(*c.t.proc, reinterpret_cast<uint64_t>(v.iov_base),
                                        data.data() + copied, n);
          copied += w;
          if (w < n) break;
        }
        if (copied == 0 && !data.empty()) return static_cast<long>(-EFAULT);
        if (at_cursor) c.f.offset = static_cast<uint64_t>(start) + copied;
        // As filemap_read(): even at the end of file, but not from s_maxbytes on.
        if (total > 0 && static_cast<uint64_t>(start) < schema::kMaxFileSize) NoteDataAccess(c.f);
        return static_cast<long>(copied);
      });
}

Decision WriteData(FdCall& c, const std::vector<iovec>& iov, size_t total, int64_t start,
                   bool at_cursor, bool append, bool sync) {
  std::vector<char> data(total);
  size_t have = 0;
  for (const iovec& v : iov) {
    const size_t n =
        ReadUpTo(*c.t.proc, reinterpret_cast<uint64_t>(v.iov_base), data.data() + have, v.iov_len);
    have += n;
    if (n < v.iov_len) break;
  }
  if (have == 0) return Emulate(-EFAULT);
  uint64_t at = static_cast<uint64_t>(start);
  size_t written = 0;
  return c.run(
      [&](schema::Transaction& txn) {
        if (append) {
          auto r = c.f.mfs->fs->Append(txn, c.cred, c.f.id, data.data(), have);
          if (!r.ok()) return r.status();
          at = *r;
          written = static_cast<size_t>(std::min<uint64_t>(have, schema::kMaxFileSize - at));
        } else {
          auto r = c.f.mfs->fs->Write(txn, c.cred, c.f.id, at, data.data(), have);
          if (!r.ok()) return r.status();
          written = *r;
        }
        return Status::Ok();
      },
      [&] {
        if (at_cursor) c.f.offset = at + written;
        c.maps.Wrote(*c.f.mfs, c.f.id, at, data.data(), written);
        if (sync && !c.f.mfs->fs->FlushLog().ok()) return static_cast<long>(-EIO);
        return static_cast<long>(written);
      });
}

Decision Seek(FdCall& c, int64_t off, int whence) {
  ServedFile& f = c.f;
  if (static_cast<unsigned>(whence) > SEEK_HOLE) return Emulate(-EINVAL);
  int64_t r;
  if (f.is_dir()) {
    // ext4's hashed directories: positions up to LLONG_MAX, the end at LLONG_MAX. Any other
    // position than the stream's makes the next getdents count entries from the start.
    r = GenericSeek(f.offset, off, whence, kOffsetMax, kOffsetMax);
  } else if (whence == SEEK_SET || whence == SEEK_CUR) {
    r = GenericSeek(f.offset, off, whence, schema::kMaxFileSize, 0);
  } else {
    if ((whence == SEEK_DATA || whence == SEEK_HOLE) && off < 0) return Emulate(-ENXIO);
    int64_t found = 0;
    Decision d = c.run(
        [&](schema::Transaction& txn) {
          schema::FileSystem& fs = *f.mfs->fs;
          if (whence == SEEK_END) {
            auto st = fs.FStat(txn, f.id);
            if (!st.ok()) return st.status();
            found = static_cast<int64_t>(st->attr.size);
            return Status::Ok();
          }
          auto at = whence == SEEK_DATA ? fs.SeekData(txn, f.id, static_cast<uint64_t>(off))
                                        : fs.SeekHole(txn, f.id, static_cast<uint64_t>(off));
          if (!at.ok()) return at.status();
          found = static_cast<int64_t>(*at);
          return Status::Ok();
        },
        Ok);
    if (d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
    r = whence == SEEK_END ? GenericSeek(f.offset, off, whence, schema::kMaxFileSize, found)
                           : GenericSeek(f.offset, found, SEEK_SET, schema::kMaxFileSize, 0);
  }
  if (r >= 0) f.offset = static_cast<uint64_t>(r);
  return Emulate(r);
}

// The inode number of the mount point's parent directory on the host: ".." of the mount root.
uint64_t HostParentIno(const MountFs& m) {
  const std::string& point = m.mount->host_point.empty() ? m.mount->point : m.mount->host_point;
  const size_t slash = point.rfind('/');
  const std::string parent =
      slash == 0 || slash == std::string::npos ? "/" : point.substr(0, slash);
  struct stat st;
  return stat(parent.c_str(), &st) == 0 ? st.st_ino : 0;
}

Decision Getdents(FdCall& c, uint64_t addr, unsigned count, bool wide) {
  ServedFile& f = c.f;
  if (!f.is_dir()) return Emulate(-ENOTDIR);
  // The kernel keeps the room left in an int: a count beyond INT_MAX leaves room for nothing.
  const int64_t room = static_cast<int>(count);
  const uint64_t pos = f.offset;
  const uint64_t root_parent = f.id == schema::kRootId && pos < 2 ? HostParentIno(*f.mfs) : 0;
  std::string buf;
  std::vector<size_t> ends;        // the end of each entry in buf
  std::vector<std::string> names;  // each entry's name ("" for "." and "..")
  bool at_end = false;             // the listing reached the end of the directory
  bool too_small = false;          // the first entry did not fit (EINVAL)
  return c.run(
      [&](schema::Transaction& txn) {
        schema::FileSystem& fs = *f.mfs->fs;
        buf.clear();
        ends.clear();
        names.clear();
        uint64_t parent = root_parent;
        if (f.id != schema::kRootId) {
          auto paths = fs.Names(txn, f.id);
          if (!paths.ok()) return paths.status();
          if (paths->empty()) return Status::Errno(ENOENT);  // removed: as IS_DEADDIR
          if (pos < 2) {
            auto st =
                fs.GetStat(txn, schema::Cred::Root(), schema::ParentPath(paths->front()), false);
            if (!st.ok()) return st.status();
            parent = st->ino;
          }
        }
        at_end = false;
        if (pos >= static_cast<uint64_t>(kOffsetMax)) return Status::Ok();  // at the end
        uint64_t next = pos;
        bool full = false;
        auto add = [&](const std::string& name, uint64_t ino, unsigned char type, bool real) {
          const size_t len = DirentLen(wide, name.size());
          if (static_cast<int64_t>(buf.size() + len) > room) return !(full = true);
          PutDirent(&buf, wide, ino, static_cast<int64_t>(next + 1), type, name);
          ends.push_back(buf.size());
          names.push_back(real ? name : std::string());
          ++next;
          return true;
        };
        if (next == 0 && !add(".", f.id, DT_DIR, false)) goto out;
        if (next == 1 && !add("..", parent, DT_DIR, false)) goto out;
        {
          std::string after;
          if (pos >= 2 && pos == f.dir_offset) {
            after = f.dir_after;
          } else if (pos > 2) {
            // A position of our own making elsewhere: count entries from the start.
            uint64_t left = pos - 2;
            while (left > 0) {
              auto batch = fs.ReadDir(txn, f.id, after, std::min<uint64_t>(left, 1024));
              if (!batch.ok()) return batch.status();
              if (batch->empty()) {
                at_end = true;  // past the end
                goto out;
              }
              left -= batch->size();
              after = batch->back().name;
            }
          }
          const size_t want = std::min<int64_t>(room / 24 + 1, 4096);
          for (;;) {
            auto batch = fs.ReadDir(txn, f.id, after, want);
            if (!batch.ok()) return batch.status();
            if (batch->empty()) {
              at_end = true;
              break;
            }
            for (const schema::DirEntry& e : *batch) {
              if (!add(e.name, e.ino, e.type, true)) goto out;
              after = e.name;
            }
          }
        }
      out:
        too_small = ends.empty() && full;  // not even one entry fits
        return Status::Ok();
      },
      [&] {
        // iterate_dir() touches the directory's atime, even at the end or with no room.
        NoteDataAccess(f);
        if (too_small) return static_cast<long>(-EINVAL);
        if (ends.empty()) {
          if (at_end) f.offset = f.dir_offset = static_cast<uint64_t>(kOffsetMax);
          return 0L;
        }
        if (at_end) {
          // As ext4: a listing that reached the end leaves the position at the end of the
          // directory (LLONG_MAX), which is also the last entry's d_off.
          const size_t last = ends.size() > 1 ? ends[ends.size() - 2] : 0;
          const int64_t eof = kOffsetMax;
          std::memcpy(buf.data() + last + 8, &eof, sizeof eof);
        }
        const size_t written = WritePartial(*c.t.proc, addr, buf.data(), buf.size());
        size_t k = 0;
        while (k < ends.size() && ends[k] <= written) ++k;
        if (k == 0) return static_cast<long>(-EFAULT);
        f.offset = at_end && k == ends.size() ? static_cast<uint64_t>(kOffsetMax) : pos + k;
        f.dir_offset = f.offset;
        f.dir_after = names[k - 1];
        return static_cast<long>(ends[k - 1]);
      });
}

Decision Xattr(FdCall& c, SyscallRegs& call) {
  const long nr = call.nr();
  const uint64_t a2 = call.arg(2), a3 = call.arg(3);
  schema::FileSystem& fs = *c.f.mfs->fs;
  std::string name;
  long r;
  switch (nr) {
    case SYS_fsetxattr: {
      const int flags = static_cast<int>(call.arg(4));
      if (flags & ~(XATTR_CREATE | XATTR_REPLACE)) return Emulate(-EINVAL);
      if ((r = XattrName(c.t, call.arg(1), &name)) < 0) return Emulate(r);
      if (a3 > XATTR_SIZE_MAX) return Emulate(-E2BIG);
      std::string value(a3, '\0');
      if (a3 && ReadMemory(*c.t.proc, a2, value.data(), a3) != 0) return Emulate(-EFAULT);
      if (c.f.flags & O_PATH) return Emulate(-EBADF);  // the arguments are checked first
      return c.run(
          [&](schema::Transaction& txn) {
            return fs.FSetXattr(txn, c.cred, c.f.id, name, value, flags);
          },
          Ok);
    }
    case SYS_fgetxattr: {
      if ((r = XattrName(c.t, call.arg(1), &name)) < 0) return Emulate(r);
      if (c.f.flags & O_PATH) return Emulate(-EBADF);  // the name is checked first
      std::string value;
      return c.run(
          [&](schema::Transaction& txn) {
            auto v = fs.FGetXattr(txn, c.cred, c.f.id, name);
            if (!v.ok()) return v.status();
            value = std::move(*v);
            return Status::Ok();
          },
          [&] {
            if (a3 == 0) return static_cast<long>(value.size());
            if (value.size() > std::min<uint64_t>(a3, XATTR_SIZE_MAX)) return -long{ERANGE};
            if (!value.empty() && WriteMemory(*c.t.proc, a2, value.data(), value.size()) != 0)
              return -long{EFAULT};
            return static_cast<long>(value.size());
          });
    }
    case SYS_flistxattr: {
      const uint64_t size = a2;
      const uint64_t addr = call.arg(1);
      std::string list;
      return c.run(
          [&](schema::Transaction& txn) {
            auto names = fs.FListXattr(txn, c.cred, c.f.id);
            if (!names.ok()) return names.status();
            list.clear();
            for (const std::string& n : *names) list.append(n).push_back('\0');
            return Status::Ok();
          },
          [&] {
            if (size == 0) return static_cast<long>(list.size());
            if (list.size() > std::min<uint64_t>(size, XATTR_LIST_MAX))
              return size >= XATTR_LIST_MAX ? -long{E2BIG} : -long{ERANGE};
            if (!list.empty() && WriteMemory(*c.t.proc, addr, list.data(), list.size()) != 0)
              return -long{EFAULT};
            return static_cast<long>(list.size());
          });
    }
    default:  // fremovexattr
      if ((r = XattrName(c.t, call.arg(1), &name)) < 0) return Emulate(r);
      if (c.f.flags & O_PATH) return Emulate(-EBADF);  // the name is checked first
      return c.run(
          [&](schema::Transaction& txn) { return fs.FRemoveXattr(txn, c.cred, c.f.id, name); }, Ok);
  }
}

// fallocate's COLLAPSE_RANGE (`insert` false) and INSERT_RANGE, as ext4 does them: whole
// blocks only; a collapse ends before the end of the file, an insert starts before it. The
// bytes after the range move (holes among them are stored as zeros).
Decision MoveRange(FdCall& c, bool insert, uint64_t at, uint64_t len) {
  ServedFile& f = c.f;
  if ((at | len) % kBlock != 0) return Emulate(-EINVAL);
  return c.run(
      [&](schema::Transaction& txn) {
        schema::FileSystem& fs = *f.mfs->fs;
        auto st = fs.FStat(txn, f.id);
        if (!st.ok()) return st.status();
        const uint64_t size = st->attr.size;
        if (insert && len > schema::kMaxFileSize - size) return Status::Errno(EFBIG);
        if (insert ? at >= size : at + len >= size) return Status::Errno(EINVAL);
        Status failed = Status::Ok();
        auto read = [&](uint64_t pos, char* buf, size_t n) {
          auto r = fs.Read(txn, f.id, pos, buf, n);
          if (!r.ok()) failed = r.status();
          if (r.ok() && *r < n) std::memset(buf + *r, 0, n - *r);
          return r.ok();
        };
        auto write = [&](uint64_t pos, const char* buf, size_t n) {
          auto w = fs.Write(txn, c.cred, f.id, pos, buf, n);
          if (!w.ok()) failed = w.status();
          if (w.ok() && *w < n) failed = Status::Errno(ENOSPC);
          return failed.ok();
        };
        const uint64_t from = insert ? at : at + len, to = insert ? at + len : at;
        if (!ShiftBytes(from, to, size - from, kChunk, read, write)) return failed;
        if (!insert) return fs.FTruncate(txn, c.cred, f.id, static_cast<int64_t>(size - len));
        static const std::vector<char> zeros(kChunk, '\0');
        for (uint64_t done = 0; done < len;) {
          const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, len - done));
          if (!write(at + done, zeros.data(), n)) return failed;
          done += n;
        }
        return Status::Ok();
      },
      [&] {
        if (insert) {
          c.maps.Inserted(*f.mfs, f.id, at, len);
        } else {
          c.maps.Collapsed(*f.mfs, f.id, at, len);
        }
        return 0L;
      });
}

Decision Fallocate(FdCall& c, SyscallRegs& call) {
  ServedFile& f = c.f;
  const int mode = static_cast<int>(call.arg(1));
  const int64_t offset = static_cast<int64_t>(call.arg(2));
  const int64_t len = static_cast<int64_t>(call.arg(3));
  constexpr int kModeMask = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_ZERO_RANGE |
                            FALLOC_FL_INSERT_RANGE | FALLOC_FL_UNSHARE_RANGE |
                            0x80 /* FALLOC_FL_WRITE_ZEROES */;
  // vfs_fallocate's checks, in its order.
  if (offset < 0 || len <= 0) return Emulate(-EINVAL);
  if (mode & ~(kModeMask | FALLOC_FL_KEEP_SIZE)) return Emulate(-EOPNOTSUPP);
  const int kind = mode & kModeMask;
  const bool keep = mode & FALLOC_FL_KEEP_SIZE;
  switch (kind) {
    case 0:
    case FALLOC_FL_UNSHARE_RANGE:
    case FALLOC_FL_ZERO_RANGE:
      break;
    case FALLOC_FL_PUNCH_HOLE:
      if (!keep) return Emulate(-EOPNOTSUPP);
      break;
    case FALLOC_FL_COLLAPSE_RANGE:
    case FALLOC_FL_INSERT_RANGE:
    case 0x80:
      if (keep) return Emulate(-EOPNOTSUPP);
      break;
    default:
      return Emulate(-EOPNOTSUPP);
  }
  if (!CanWrite(f)) return Emulate(-EBADF);
  if (f.is_dir()) return Emulate(-EISDIR);
  if (!S_ISREG(f.type)) return Emulate(-ENODEV);
  if (len > kOffsetMax - offset || static_cast<uint64_t>(offset + len) > schema::kMaxFileSize) {
    return Emulate(-EFBIG);
  }
  if (kind == FALLOC_FL_COLLAPSE_RANGE || kind == FALLOC_FL_INSERT_RANGE) {
    return MoveRange(c, kind == FALLOC_FL_INSERT_RANGE, static_cast<uint64_t>(offset),
                     static_cast<uint64_t>(len));
  }
  // Neither UNSHARE nor WRITE_ZEROES, as on ext4.
  if (kind != 0 && kind != FALLOC_FL_PUNCH_HOLE && kind != FALLOC_FL_ZERO_RANGE)
    return Emulate(-EOPNOTSUPP);
  const uint64_t end = static_cast<uint64_t>(offset + len);
  uint64_t size = 0;
  return c.run(
      [&](schema::Transaction& txn) {
        schema::FileSystem& fs = *f.mfs->fs;
        auto st = fs.FStat(txn, f.id);
        if (!st.ok()) return st.status();
        size = st->attr.size;
        if (kind != 0) {
          // Zeros over the part of the range inside the file (no page is freed).
          static const std::vector<char> zeros(kChunk, '\0');
          for (uint64_t at = static_cast<uint64_t>(offset); at < std::min(end, size);) {
            const size_t n =
                static_cast<size_t>(std::min<uint64_t>(kChunk, std::min(end, size) - at));
            auto w = fs.Write(txn, c.cred, f.id, at, zeros.data(), n);
            if (!w.ok()) return w.status();
            at += n;
          }
        }
        if (!keep && end > size) {
          return fs.FTruncate(txn, c.cred, f.id, static_cast<int64_t>(end));
        }
        return Status::Ok();
      },
      [&] {
        if (kind != 0 && static_cast<uint64_t>(offset) < std::min(end, size)) {
          const std::vector<char> zeros(std::min(end, size) - static_cast<uint64_t>(offset));
          c.maps.Wrote(*f.mfs, f.id, static_cast<uint64_t>(offset), zeros.data(), zeros.size());
        }
        if (!keep && end > size) c.maps.Resized(*f.mfs, f.id, end);
        return 0L;
      });
}

// fcntl F_GETLK .. F_OFD_SETLKW: the range is made absolute here (its base may be the size).
Decision RecordLock(FdCall& c, SyscallRegs& call) {
  ServedFile& f = c.f;
  const int cmd = static_cast<int>(call.arg(1));
  const uint64_t addr = call.arg(2);
  struct flock fl;
  if (ReadMemory(*c.t.proc, addr, &fl, sizeof fl) != 0) return Emulate(-EFAULT);
  const struct flock orig = fl;
  const bool get = cmd == F_GETLK || cmd == F_OFD_GETLK;
  if (cmd == F_GETLK && fl.l_type != F_RDLCK && fl.l_type != F_WRLCK) return Emulate(-EINVAL);
  int64_t base = 0;
  switch (fl.l_whence) {
    case SEEK_SET:
      break;
    case SEEK_CUR:
      base = static_cast<int64_t>(f.offset);
      break;
    case SEEK_END: {
      Decision d = c.run(
          [&](schema::Transaction& txn) {
            auto st = f.mfs->fs->FStat(txn, f.id);
            if (!st.ok()) return st.status();
            base = static_cast<int64_t>(st->attr.size);
            return Status::Ok();
          },
          Ok);
      if (d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
      break;
    }
    default:
      return Emulate(-EINVAL);
  }
  if (fl.l_start > kOffsetMax - base) return Emulate(-EOVERFLOW);
  const int64_t start = base + fl.l_start;
  if (start < 0) return Emulate(-EINVAL);
  if (fl.l_len > 0 && fl.l_len - 1 > kOffsetMax - start) return Emulate(-EOVERFLOW);
  if (fl.l_len < 0 && start + fl.l_len < 0) return Emulate(-EINVAL);
  if (fl.l_type != F_RDLCK && fl.l_type != F_WRLCK && fl.l_type != F_UNLCK) return Emulate(-EINVAL);
  if (!get && ((fl.l_type == F_RDLCK && !CanRead(f)) || (fl.l_type == F_WRLCK && !CanWrite(f))))
    return Emulate(-EBADF);
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  LockOutcome o = FcntlLock(c.served(static_cast<int>(call.arg(0))), c.t.proc->tgid, cmd, &fl);
  if (o.wait) return Decision::Park();
  if (o.result < 0 || !get) return Emulate(o.result);
  struct flock out = orig;
  if (fl.l_type == F_UNLCK) {
    out.l_type = F_UNLCK;  // no conflict: only the type changes
  } else {
    out = fl;
  }
  return Emulate(WriteMemory(*c.t.proc, addr, &out, sizeof out) == 0 ? 0 : -EFAULT);
}

// One side of sendfile, copy_file_range or splice: a served file or a host descriptor.
struct Side {
  std::shared_ptr<ServedFile> served;
  int fd = -1;  // the monitor's descriptor for a host side
  host::ScopedFd holder;
  int flags = 0;  // status flags of a host side
  struct stat st {};
  bool pipe() const { return !served && S_ISFIFO(st.st_mode); }
  bool seekable() const { return served || S_ISREG(st.st_mode) || S_ISBLK(st.st_mode); }
  bool readable() const {
    return served ? CanRead(*served)
                  : !(flags & O_PATH) &&
                        ((flags & O_ACCMODE) == O_RDONLY || (flags & O_ACCMODE) == O_RDWR);
  }
  bool writable() const {
    return served ? CanWrite(*served)
                  : !(flags & O_PATH) &&
                        ((flags & O_ACCMODE) == O_WRONLY || (flags & O_ACCMODE) == O_RDWR);
  }
  int file_flags() const { return served ? served->flags : flags; }
  mode_t type() const { return served ? served->type : st.st_mode & S_IFMT; }
};

// The descriptor `fd` of the caller as a Side: 0 or -EBADF.
long GetSide(FdCall& c, int fd, Side* side) {
  if ((side->served = c.served(fd))) return 0;
  if (auto shadow = host::ShadowOf(c.t, fd)) {
    side->fd = shadow->fd;
  } else {
    // The tracee's own description (shared offset and flags), as --emulate=host borrows it.
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, c.t.proc->tgid, 0));
    if (pidfd < 0) return -EBADF;
    side->holder.reset(static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0)));
    close(pidfd);
    if (side->holder.get() < 0) return -EBADF;
    side->fd = side->holder.get();
  }
  side->flags = fcntl(side->fd, F_GETFL);
  if (fstat(side->fd, &side->st) != 0) return -EBADF;
  return 0;
}

// Reads from a host side without blocking the monitor: -EAGAIN when nothing is ready.
long HostRead(const Side& s, char* buf, size_t len, int64_t pos) {
  ssize_t n;
  if (s.seekable()) {
    n = pos >= 0 ? pread(s.fd, buf, len, pos) : read(s.fd, buf, len);
  } else {
    pollfd p{s.fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 0) return -EAGAIN;
    n = S_ISSOCK(s.st.st_mode) ? recv(s.fd, buf, len, MSG_DONTWAIT) : read(s.fd, buf, len);
  }
  return n < 0 ? -errno : n;
}

// Writes to a host side without blocking the monitor (a short count when a pipe or socket has
// less room): -EAGAIN when it has none.
long HostWrite(const Side& s, const char* buf, size_t len, int64_t pos) {
  ssize_t n;
  if (s.seekable()) {
    n = pos >= 0 ? pwrite(s.fd, buf, len, pos) : write(s.fd, buf, len);
  } else if (S_ISSOCK(s.st.st_mode)) {
    n = send(s.fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
  } else if (S_ISFIFO(s.st.st_mode)) {
    // A description of its own in non-blocking mode: the tracee's flags stay as they are.
    const std::string self = "/proc/self/fd/" + std::to_string(s.fd);
    host::ScopedFd nb(open(self.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    if (nb.get() < 0) return errno == ENXIO ? -EPIPE : -errno;
    n = write(nb.get(), buf, len);
  } else {
    pollfd p{s.fd, POLLOUT, 0};
    if (poll(&p, 1, 0) == 0) return -EAGAIN;
    n = write(s.fd, buf, len);
  }
  return n < 0 ? -errno : n;
}

// The data moved by sendfile or splice, where one side at most is served (both may be for
// sendfile). `in_pos` / `out_pos`: -1 for the description's offset.
Decision Move(FdCall& c, Side& in, int64_t in_pos, Side& out, int64_t out_pos, size_t count,
              bool nonblock, const std::function<void(size_t)>& account) {
  std::vector<char> data;
  long got;
  uint64_t in_at = 0;  // a served input's first byte
  if (in.served) {
    ServedFile& f = *in.served;
    in_at = in_pos >= 0 ? static_cast<uint64_t>(in_pos) : f.offset;
    Decision d = c.run_on(
        f,
        [&](schema::Transaction& txn) {
          data.resize(count);
          auto r = f.mfs->fs->Read(txn, f.id, in_at, data.data(), count);
          if (!r.ok()) return r.status();
          data.resize(*r);
          return Status::Ok();
        },
        Ok);
    if (d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
    got = static_cast<long>(data.size());
    NoteDataAccess(f);  // filemap_splice_read() touches atime, even at the end of file
  } else {
    data.resize(std::min(count, kChunk));
    got = HostRead(in, data.data(), data.size(), in_pos);
    if (got == -EAGAIN && !nonblock && !(in.flags & O_NONBLOCK)) return Decision::Park();
    if (got < 0) return Emulate(got);
    data.resize(static_cast<size_t>(got));
  }
  if (got == 0) return Emulate(0);
  long put;
  if (out.served) {
    ServedFile& f = *out.served;
    const uint64_t at = out_pos >= 0 ? static_cast<uint64_t>(out_pos) : f.offset;
    size_t written = 0;
    Decision d = c.run_on(
        f,
        [&](schema::Transaction& txn) {
          auto r = f.mfs->fs->Write(txn, c.cred, f.id, at, data.data(), data.size());
          if (!r.ok()) return r.status();
          written = *r;
          return Status::Ok();
        },
        Ok);
    if (d.kind != Decision::Kind::kEmulate || d.result != 0) {
      if (!in.served && !in.pipe() && in.seekable() && in_pos < 0) lseek(in.fd, -got, SEEK_CUR);
      return d;
    }
    if (out_pos < 0) f.offset = at + written;
    c.maps.Wrote(*f.mfs, f.id, at, data.data(), written);
    if ((f.flags & O_DSYNC) && !f.mfs->fs->FlushLog().ok()) return Emulate(-EIO);
    put = static_cast<long>(written);
  } else {
    put = HostWrite(out, data.data(), data.size(), out_pos);
    if (put == -EAGAIN && !nonblock && !(out.flags & O_NONBLOCK)) return Decision::Park();
    if (put == -EPIPE) syscall(SYS_tgkill, c.t.proc->tgid, c.t.tid, SIGPIPE);
    if (put < 0) return Emulate(put);
  }
  // What the output did not take goes back to the input (a served or seekable input only).
  if (in.served && in_pos < 0) {
    // Set, not advanced: with one description on both sides (sendfile(fd, fd, ...)), Linux
    // leaves the offset where the read ended, as the write's own update did.
    in.served->offset = in_at + static_cast<uint64_t>(put);
  } else if (!in.served && in.seekable() && in_pos < 0 && put < got) {
    lseek(in.fd, put - got, SEEK_CUR);
  }
  account(static_cast<size_t>(put));
  return Emulate(put);
}

// A position as the kernel would check it for a side (the description's offset when `pos` < 0).
int64_t PositionOf(const Side& s, int64_t pos) {
  if (pos >= 0) return pos;
  if (s.served) return static_cast<int64_t>(s.served->offset);
  return s.seekable() ? lseek(s.fd, 0, SEEK_CUR) : 0;
}

// Where a transfer starts: the offset the caller passed at `addr` (which may be negative: the
// checks then fail it), or the description's own position when it passed none.
int64_t StartOf(const Side& s, uint64_t addr, int64_t pos) {
  return addr ? pos : PositionOf(s, -1);
}

long ReadOffset(FdCall& c, uint64_t addr, int64_t* out) {
  return ReadMemory(*c.t.proc, addr, out, sizeof *out) == 0 ? 0 : -EFAULT;
}

std::function<void(size_t)> WriteBack(FdCall& c, uint64_t addr, int64_t pos) {
  return [&c, addr, pos](size_t n) {
    if (!addr) return;
    const int64_t now = pos + static_cast<int64_t>(n);
    (void)WriteMemory(*c.t.proc, addr, &now, sizeof now);
  };
}

Decision Splice(FdCall& c, SyscallRegs& call) {
  const size_t len = call.arg(4);
  const unsigned flags = static_cast<unsigned>(call.arg(5));
  const uint64_t in_p = call.arg(1), out_p = call.arg(3);
  if (len == 0) return Emulate(0);
  if (flags & ~unsigned{SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT})
    return Emulate(-EINVAL);
  Side in, out;
  if (long r = GetSide(c, static_cast<int>(call.arg(0)), &in)) return Emulate(r);
  if (long r = GetSide(c, static_cast<int>(call.arg(2)), &out)) return Emulate(r);
  if ((in.file_flags() & O_PATH) || (out.file_flags() & O_PATH)) return Emulate(-EBADF);
  if ((in.pipe() && in_p) || (out.pipe() && out_p)) return Emulate(-ESPIPE);
  int64_t in_pos = -1, out_pos = -1;
  if (out_p) {
    if (long r = ReadOffset(c, out_p, &out_pos)) return Emulate(r);
  }
  if (in_p) {
    if (long r = ReadOffset(c, in_p, &in_pos)) return Emulate(r);
  }
  if (!in.readable() || !out.writable()) return Emulate(-EBADF);
  if (in.pipe() == out.pipe()) return Emulate(-EINVAL);  // a served file is never a pipe
  const size_t count = std::min(len, kChunk);
  if (in.pipe()) {
    if (out.file_flags() & O_APPEND) return Emulate(-EINVAL);
    if (long r = VerifyArea(StartOf(out, out_p, out_pos), count)) return Emulate(r);
    const bool nonblock = (flags & SPLICE_F_NONBLOCK) || (in.flags & O_NONBLOCK);
    return Move(c, in, -1, out, out_pos, count, nonblock, WriteBack(c, out_p, out_pos));
  }
  if (S_ISDIR(in.type())) return Emulate(-EINVAL);
  if (long r = VerifyArea(StartOf(in, in_p, in_pos), count)) return Emulate(r);
  const bool nonblock = (flags & SPLICE_F_NONBLOCK) || (out.flags & O_NONBLOCK);
  return Move(c, in, in_pos, out, -1, count, nonblock, WriteBack(c, in_p, in_pos));
}

Decision Sendfile(FdCall& c, SyscallRegs& call) {
  const uint64_t off_p = call.arg(2);
  uint64_t count = call.arg(3);
  Side in, out;
  if (long r = GetSide(c, static_cast<int>(call.arg(1)), &in)) return Emulate(r);
  if (in.file_flags() & O_PATH) return Emulate(-EBADF);
  if (!in.readable()) return Emulate(-EBADF);
  int64_t pos = -1;
  if (off_p) {
    if (long r = ReadOffset(c, off_p, &pos)) return Emulate(r);
    if (!in.seekable()) return Emulate(-ESPIPE);
  }
  const int64_t in_at = StartOf(in, off_p, pos);
  if (in.seekable()) {
    if (long r = VerifyArea(in_at, count)) return Emulate(r);
  }
  if (long r = GetSide(c, static_cast<int>(call.arg(0)), &out)) return Emulate(r);
  if ((out.file_flags() & O_PATH) || !out.writable()) return Emulate(-EBADF);
  if (out.seekable()) {
    if (long r = VerifyArea(PositionOf(out, -1), count)) return Emulate(r);
  }
  const int64_t max = static_cast<int64_t>(schema::kMaxFileSize);
  if (in.seekable() && in_at + static_cast<int64_t>(std::min<uint64_t>(count, kMaxRw)) > max) {
    if (in_at >= max) return Emulate(-EOVERFLOW);
    count = static_cast<uint64_t>(max - in_at);
  }
  if (!out.pipe() && (out.file_flags() & O_APPEND)) return Emulate(-EINVAL);
  if (count == 0) return Emulate(0);
  if (!S_ISREG(in.type()) && in.served) return Emulate(-EINVAL);  // no splice_read
  return Move(c, in, pos, out, -1, std::min<uint64_t>(count, kChunk), false,
              WriteBack(c, off_p, pos));
}

Decision CopyFileRange(FdCall& c, SyscallRegs& call) {
  const uint64_t in_p = call.arg(1), out_p = call.arg(3);
  const uint64_t len = call.arg(4);
  Side in, out;
  if (long r = GetSide(c, static_cast<int>(call.arg(0)), &in)) return Emulate(r);
  if (long r = GetSide(c, static_cast<int>(call.arg(2)), &out)) return Emulate(r);
  if ((in.file_flags() & O_PATH) || (out.file_flags() & O_PATH)) return Emulate(-EBADF);
  int64_t in_pos = -1, out_pos = -1;
  if (in_p) {
    if (long r = ReadOffset(c, in_p, &in_pos)) return Emulate(r);
  }
  if (out_p) {
    if (long r = ReadOffset(c, out_p, &out_pos)) return Emulate(r);
  }
  if (call.arg(5) != 0) return Emulate(-EINVAL);
  if (S_ISDIR(in.type()) || S_ISDIR(out.type())) return Emulate(-EISDIR);
  if (!S_ISREG(in.type()) || !S_ISREG(out.type())) return Emulate(-EINVAL);
  if (!in.readable() || !out.writable() || (out.file_flags() & O_APPEND)) return Emulate(-EBADF);
  // Another file system (a host file, another mount): as between ext4 and a file system
  // without copy_file_range; callers copy by hand then.
  if (!in.served || !out.served || in.served->mfs != out.served->mfs) return Emulate(-EXDEV);
  ServedFile& fi = *in.served;
  ServedFile& fo = *out.served;
  const int64_t pin = StartOf(in, in_p, in_pos), pout = StartOf(out, out_p, out_pos);
  if (static_cast<uint64_t>(pin) + len < static_cast<uint64_t>(pin) ||
      static_cast<uint64_t>(pout) + len < static_cast<uint64_t>(pout)) {
    return Emulate(-EOVERFLOW);
  }
  // The bytes copied into a file mapped shared go to its mapping file too (one chunk at most
  // per call then: callers loop on a short count).
  const bool mapped = c.maps.Find(*fo.mfs, fo.id) != nullptr;
  std::vector<char> copied;
  size_t done_bytes = 0;
  return c.run_on(
      fi,
      [&](schema::Transaction& txn) {
        schema::FileSystem& fs = *fi.mfs->fs;
        auto st = fs.FStat(txn, fi.id);
        if (!st.ok()) return st.status();
        const uint64_t size = st->attr.size;
        uint64_t count = pin >= 0 && static_cast<uint64_t>(pin) >= size
                             ? 0
                             : std::min<uint64_t>(len, size - static_cast<uint64_t>(pin));
        const uint64_t max = schema::kMaxFileSize;
        if (pout >= 0 && static_cast<uint64_t>(pout) >= max) return Status::Errno(EFBIG);
        if (pout >= 0) count = std::min<uint64_t>(count, max - static_cast<uint64_t>(pout));
        if (fi.id == fo.id && static_cast<uint64_t>(pout) + count > static_cast<uint64_t>(pin) &&
            static_cast<uint64_t>(pout) < static_cast<uint64_t>(pin) + count) {
          return Status::Errno(EINVAL);
        }
        if (VerifyArea(pin, count) || VerifyArea(pout, count)) return Status::Errno(EINVAL);
        count = std::min<uint64_t>(count, mapped ? kChunk : kMaxRw);
        std::vector<char> data;
        done_bytes = 0;
        copied.clear();
        while (done_bytes < count) {
          const size_t want = static_cast<size_t>(std::min<uint64_t>(count - done_bytes, kChunk));
          data.resize(want);
          auto r = fs.Read(txn, fi.id, static_cast<uint64_t>(pin) + done_bytes, data.data(), want);
          if (!r.ok()) return r.status();
          if (*r == 0) break;
          auto w = fs.Write(txn, c.cred, fo.id, static_cast<uint64_t>(pout) + done_bytes,
                            data.data(), *r);
          if (!w.ok()) return w.status();
          if (mapped) copied.insert(copied.end(), data.begin(), data.begin() + *w);
          done_bytes += *w;
          if (*w < want) break;
        }
        return Status::Ok();
      },
      [&] {
        long r = static_cast<long>(done_bytes);
        if (done_bytes == 0) return r;
        const int64_t n = static_cast<int64_t>(done_bytes);
        if (mapped)
          c.maps.Wrote(*fo.mfs, fo.id, static_cast<uint64_t>(pout), copied.data(), done_bytes);
        if (in_p) {
          const int64_t now = pin + n;
          if (WriteMemory(*c.t.proc, in_p, &now, sizeof now) != 0) r = -EFAULT;
        } else {
          fi.offset = static_cast<uint64_t>(pin + n);
        }
        if (out_p) {
          const int64_t now = pout + n;
          if (WriteMemory(*c.t.proc, out_p, &now, sizeof now) != 0) r = -EFAULT;
        } else {
          fo.offset = static_cast<uint64_t>(pout + n);
        }
        if ((fo.flags & O_DSYNC) && !fo.mfs->fs->FlushLog().ok()) r = -EIO;
        return r;
      });
}

}  // namespace

Decision MountHandler::ServeFd(Thread& t, SyscallRegs& call, ServedFile& f) {
  const long nr = call.nr();
  const uint64_t a1 = call.arg(1), a2 = call.arg(2), a3 = call.arg(3);
  schema::FileSystem& fs = *f.mfs->fs;
  const schema::FileId id = f.id;
  const bool is_path = f.flags & O_PATH;
  FdCall c{t,
           f,
           [this](ServedFile& on, const FileBody& body, const Done& done) {
             return RunOnFile(on, body, done);
           },
           [this, &t](int fd) { return ServedOf(t, fd); },
           CredOf(t),
           shared_maps_};

  // Stores through shared mappings reach the schema before the monitor reads or changes the
  // file, or the other file of a copy between descriptors.
  if (!shared_maps_.empty() && WritesBackFirst(nr)) {
    std::shared_ptr<ServedFile> other;
    if (nr == SYS_sendfile || nr == SYS_copy_file_range || nr == SYS_splice) {
      other = ServedOf(t, static_cast<int>(nr == SYS_sendfile ? a1 : a2));
      if (other.get() == &f) other = ServedOf(t, static_cast<int>(call.arg(0)));
    }
    for (ServedFile* file : {&f, other.get()}) {
      if (!file) continue;
      CallOutcome o = shared_maps_.WriteBack(*file->mfs, file->id);
      if (o.kind == CallOutcome::Kind::kConflict) return Conflict();
    }
  }

  // The calls an O_PATH descriptor allows; every other fails as fdget() does. (Those that
  // check an argument first, or name two descriptors, check it themselves.)
  if (is_path && nr != SYS_fstat && nr != SYS_fstatfs && nr != SYS_pread64 && nr != SYS_preadv &&
      nr != SYS_preadv2 && nr != SYS_pwrite64 && nr != SYS_pwritev && nr != SYS_pwritev2 &&
      nr != SYS_ftruncate && nr != SYS_flock && nr != SYS_sendfile && nr != SYS_copy_file_range &&
      nr != SYS_splice && nr != SYS_fgetxattr && nr != SYS_fsetxattr && nr != SYS_fremovexattr) {
    return Emulate(-EBADF);
  }

  switch (nr) {
    // --- data
    case SYS_read:
    case SYS_pread64:
    case SYS_readv:
    case SYS_preadv:
    case SYS_preadv2:
    case SYS_write:
    case SYS_pwrite64:
    case SYS_writev:
    case SYS_pwritev:
    case SYS_pwritev2: {
      const bool vectored =
          nr != SYS_read && nr != SYS_pread64 && nr != SYS_write && nr != SYS_pwrite64;
      const bool writing = nr == SYS_write || nr == SYS_pwrite64 || nr == SYS_writev ||
                           nr == SYS_pwritev || nr == SYS_pwritev2;
      const bool v2 = nr == SYS_preadv2 || nr == SYS_pwritev2;
      int64_t pos = -1;  // -1: at the file offset
      if (nr != SYS_read && nr != SYS_write && nr != SYS_readv && nr != SYS_writev) {
        pos = static_cast<int64_t>(a3);
        if (pos < (v2 ? -1 : 0)) return Emulate(-EINVAL);
      }
      if (is_path || (writing ? !CanWrite(f) : !CanRead(f))) return Emulate(-EBADF);
      const int rwf = v2 ? static_cast<int>(call.arg(5)) : 0;
      std::vector<iovec> iov;
      size_t total = 0;
      if (vectored) {
        if (long r = ImportIovecs(t, a1, a2, &iov, &total)) return Emulate(r);
        if (total == 0) return Emulate(0);
      } else {
        if (!AccessOk(a1, a2)) return Emulate(-EFAULT);
        total = std::min<uint64_t>(a2, kMaxRw);
        iov = {{reinterpret_cast<void*>(a1), total}};
      }
      const bool at_cursor = pos < 0;
      const int64_t start = at_cursor ? static_cast<int64_t>(f.offset) : pos;
      if (long r = VerifyArea(start, total)) return Emulate(r);
      if (long r = CheckRwf(rwf, f.is_dir())) return Emulate(r);
      if (f.is_dir()) return Emulate(-EISDIR);
      if (!writing) return ReadData(c, iov, total, start, at_cursor);
      if (total == 0) return Emulate(0);
      if (rwf & kRwfNoWait) return Emulate(-EOPNOTSUPP);  // ext4: no buffered NOWAIT writes
      const bool append = ((f.flags & O_APPEND) || (rwf & kRwfAppend)) && !(rwf & kRwfNoAppend);
      const bool sync = (f.flags & O_DSYNC) || (rwf & (kRwfDsync | kRwfSync));
      return WriteData(c, iov, total, start, at_cursor, append, sync);
    }
    case SYS_lseek:
      return Seek(c, static_cast<int64_t>(a1), static_cast<int>(a2));
    case SYS_getdents:
    case SYS_getdents64:
      return Getdents(c, a1, static_cast<unsigned>(a2), nr == SYS_getdents64);

    // --- attributes
    case SYS_fstat: {
      schema::Stat st;
      return c.run(
          [&](schema::Transaction& txn) {
            auto r = fs.FStat(txn, id);
            if (!r.ok()) return r.status();
            st = *r;
            return Status::Ok();
          },
          [&] {
            struct stat out = ToStat(st, f.mfs->dev);
            return WriteMemory(*t.proc, a1, &out, sizeof out) == 0 ? 0L : -EFAULT;
          });
    }
    case SYS_fstatfs: {
      struct statfs st {};
      return c.run(
          [&](schema::Transaction& txn) {
            auto r = fs.StatFs(txn);
            if (!r.ok()) return r.status();
            st = *r;
            return Status::Ok();
          },
          [&] { return WriteMemory(*t.proc, a1, &st, sizeof st) == 0 ? 0L : -EFAULT; });
    }
    case SYS_fchmod:
      return c.run(
          [&](schema::Transaction& txn) {
            return fs.FChmod(txn, c.cred, id, static_cast<mode_t>(a1));
          },
          Ok);
    case SYS_fchown:
      return c.run(
          [&](schema::Transaction& txn) {
            return fs.FChown(txn, c.cred, id, static_cast<uid_t>(a1), static_cast<gid_t>(a2));
          },
          Ok);
    case SYS_fgetxattr:
    case SYS_fsetxattr:
    case SYS_flistxattr:
    case SYS_fremovexattr:
      return Xattr(c, call);

    // --- size and synchronisation
    case SYS_ftruncate: {
      const int64_t length = static_cast<int64_t>(a1);
      if (length < 0) return Emulate(-EINVAL);
      if (is_path) return Emulate(-EBADF);
      if (!S_ISREG(f.type) || !CanWrite(f)) return Emulate(-EINVAL);
      return c.run([&](schema::Transaction& txn) { return fs.FTruncate(txn, c.cred, id, length); },
                   [&] {
                     shared_maps_.Resized(*f.mfs, id, static_cast<uint64_t>(length));
                     return 0L;
                   });
    }
    case SYS_fsync:
    case SYS_fdatasync:
    case SYS_syncfs:
      return Emulate(f.mfs->fs->FlushLog().ok() ? 0 : -EIO);
    case SYS_sync_file_range: {
      const uint64_t end = a1 + a2;
      constexpr unsigned kValid =
          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
      if ((a3 & ~uint64_t{kValid}) || static_cast<int64_t>(a1) < 0 ||
          static_cast<int64_t>(end) < 0 || end < a1) {
        return Emulate(-EINVAL);
      }
      return Emulate(f.mfs->fs->FlushLog().ok() ? 0 : -EIO);
    }
    case SYS_fallocate:
      return Fallocate(c, call);
    case SYS_fadvise64:
      if (static_cast<int64_t>(a2) < 0 || a3 > POSIX_FADV_NOREUSE) return Emulate(-EINVAL);
      return Emulate(0);  // advice only: there is no page cache to steer
    case SYS_readahead:
      if (!CanRead(f)) return Emulate(-EBADF);
      if (!S_ISREG(f.type)) return Emulate(-EINVAL);
      return Emulate(0);

    // --- locks
    case SYS_flock: {
      const int op = static_cast<int>(a1);
      if (op & LOCK_MAND) return Emulate(0);  // ignored by Linux since 5.15
      const int what = op & ~LOCK_NB;
      if (what != LOCK_SH && what != LOCK_EX && what != LOCK_UN) return Emulate(-EINVAL);
      if (is_path || (what != LOCK_UN && !CanRead(f) && !CanWrite(f))) return Emulate(-EBADF);
      LockOutcome o = FlockLock(ServedOf(t, static_cast<int>(call.arg(0))), op);
      return o.wait ? Decision::Park() : Emulate(o.result);
    }
    case SYS_fcntl:
      return RecordLock(c, call);

    // --- transfers between descriptors
    case SYS_sendfile:
      return Sendfile(c, call);
    case SYS_copy_file_range:
      return CopyFileRange(c, call);
    case SYS_splice:
      return Splice(c, call);
    default:
      return Emulate(-EINVAL);
  }
}

}  // namespace amino::monitor::service
