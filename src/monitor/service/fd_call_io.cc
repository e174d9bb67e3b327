// read and write in every form, and lseek, on a served descriptor (fd_call.h).
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
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service::fd_calls {

long VerifyArea(int64_t pos, uint64_t count) {
  if (pos < 0) return -EINVAL;
  if (count > static_cast<uint64_t>(kOffsetMax - pos)) return -EINVAL;
  return 0;
}

long CheckRwf(int rwf, bool dir) {
  if (!rwf) return 0;
  if (dir) return (rwf & ~RWF_HIPRI) ? -EOPNOTSUPP : 0;  // no read_iter: the loop accepts HIPRI
  if (rwf & ~kRwfSupported) return -EOPNOTSUPP;
  if ((rwf & kRwfAppend) && (rwf & kRwfNoAppend)) return -EINVAL;
  if (rwf & kRwfAtomic) return -EOPNOTSUPP;  // needs O_DIRECT and a device that has it
  return 0;
}

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

Decision ReadData(FdCall& c, const std::vector<iovec>& iov, size_t total, int64_t start,
                  bool at_cursor) {
  std::vector<char> data;
  // As filemap_read(): the access counts even at the end of file, but not from s_maxbytes on.
  const bool accessed = total > 0 && static_cast<uint64_t>(start) < schema::kMaxFileSize;
  bool atime_current = false;  // found so by the read's own transaction
  bool atime_due = false;      // found due by it
  return c.run(
      [&](schema::Transaction& txn) {
        size_t got = 0;
        data.clear();
        atime_current = atime_due = false;
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
        if (accessed && !txn.nested() && !(c.f.flags & O_NOATIME) &&
            c.f.atime_current_at != c.f.mfs->change_generation) {
          // Mostly atime is not due (relatime): asked here, where the file's record was just
          // read, that spares the transaction of its own that would ask it.
          auto due = c.f.mfs->fs->AtimeDue(txn, c.f.id);
          if (!due.ok()) return due.status();
          atime_current = !*due;
          atime_due = *due;
        }
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
        if (atime_current) {
          c.f.atime_current_at = c.f.mfs->change_generation;
        } else if (accessed) {
          NoteDataAccess(c.f, atime_due);
        }
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
    // A removed directory is emptied to no size and is no longer hashed: ext4 seeks in it as
    // in an empty file. Only these seeks can tell (the rest agree), so only they ask.
    if ((whence != SEEK_SET && whence != SEEK_CUR) ||
        r > static_cast<int64_t>(schema::kMaxFileSize)) {
      bool removed = false;
      Decision d = c.run(
          [&](schema::Transaction& txn) {
            auto st = f.mfs->fs->FStat(txn, f.id);
            if (!st.ok()) return st.status();
            removed = st->attr.nlink == 0;
            return Status::Ok();
          },
          Ok);
      if (d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
      if (removed && (whence == SEEK_DATA || whence == SEEK_HOLE)) return Emulate(-ENXIO);
      if (removed) r = GenericSeek(f.offset, off, whence, schema::kMaxFileSize, 0);
    }
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

Decision Transfer(FdCall& c, SyscallRegs& call) {
  const long nr = call.nr();
  const uint64_t a1 = call.arg(1), a2 = call.arg(2), a3 = call.arg(3);
  ServedFile& f = c.f;
  Thread& t = c.t;
  const bool is_path = f.flags & O_PATH;
  const bool vectored =
      nr != SYS_read && nr != SYS_pread64 && nr != SYS_write && nr != SYS_pwrite64;
  const bool writing = FamilyOf(nr) == Family::kWrite;
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
    if (long r = ImportIovecs(*t.proc, a1, a2, &iov, &total)) return Emulate(r);
    if (total == 0) return Emulate(0);
  } else {
    if (!UserRangeOk(a1, a2)) return Emulate(-EFAULT);
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

}  // namespace amino::monitor::service::fd_calls
