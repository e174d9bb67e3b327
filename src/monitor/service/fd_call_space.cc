// fallocate (with collapse and insert) and record locks on a served descriptor (fd_call.h).
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
#include "monitor/service/fd_call.h"
#include "monitor/service/file_locks.h"
#include "monitor/service/mount_handler.h"
#include "monitor/service/stat_convert.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service::fd_calls {

namespace {

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

constexpr int kModeMask = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_ZERO_RANGE |
                          FALLOC_FL_INSERT_RANGE | FALLOC_FL_UNSHARE_RANGE |
                          0x80 /* FALLOC_FL_WRITE_ZEROES */;

// vfs_fallocate's check of the mode alone: one kind of operation at most, and KEEP_SIZE only
// where it means something. 0 or -EOPNOTSUPP.
long ModeError(int mode) {
  if (mode & ~(kModeMask | FALLOC_FL_KEEP_SIZE)) return -EOPNOTSUPP;
  const bool keep = mode & FALLOC_FL_KEEP_SIZE;
  switch (mode & kModeMask) {
    case 0:
    case FALLOC_FL_UNSHARE_RANGE:
    case FALLOC_FL_ZERO_RANGE:
      return 0;
    case FALLOC_FL_PUNCH_HOLE:
      return keep ? 0 : -EOPNOTSUPP;
    case FALLOC_FL_COLLAPSE_RANGE:
    case FALLOC_FL_INSERT_RANGE:
    case 0x80:
      return keep ? -EOPNOTSUPP : 0;
    default:
      return -EOPNOTSUPP;
  }
}

}  // namespace

Decision Fallocate(FdCall& c, SyscallRegs& call) {
  ServedFile& f = c.f;
  const int mode = static_cast<int>(call.arg(1));
  const int64_t offset = static_cast<int64_t>(call.arg(2));
  const int64_t len = static_cast<int64_t>(call.arg(3));
  // vfs_fallocate's checks, in its order.
  if (offset < 0 || len <= 0) return Emulate(-EINVAL);
  if (long bad = ModeError(mode); bad != 0) return Emulate(bad);
  const int kind = mode & kModeMask;
  const bool keep = mode & FALLOC_FL_KEEP_SIZE;
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
        if (kind == 0 && end > size) {
          // Nothing is set aside for the range, but as on ext4 an allocation the file system
          // has no room for fails.
          auto room = fs.StatFs(txn);
          if (!room.ok()) return room.status();
          const uint64_t adds = end - std::max(static_cast<uint64_t>(offset), size);
          if (adds / room->f_bsize > room->f_bavail) return Status::Errno(ENOSPC);
        }
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
  if (o.wait) return Decision::ParkForLock(true);
  if (o.result < 0 || !get) return Emulate(o.result);
  struct flock out = orig;
  if (fl.l_type == F_UNLCK) {
    out.l_type = F_UNLCK;  // no conflict: only the type changes
  } else {
    out = fl;
  }
  return Emulate(WriteMemory(*c.t.proc, addr, &out, sizeof out) == 0 ? 0 : -EFAULT);
}

}  // namespace amino::monitor::service::fd_calls
