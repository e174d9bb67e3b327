// Copies between descriptors where one is served: sendfile, splice, copy_file_range (fd_call.h).
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
  // The tracee's own description (shared offset and flags), as --emulate=host borrows it.
  const int copy = CopyProcessFd(*c.t.proc, fd);
  if (copy < 0) return -EBADF;
  side->holder.reset(copy);
  side->fd = side->holder.get();
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

// sendfile from a served file into itself: as splice_direct_to_actor(), round after round,
// each reading what is there at the time (what the round before wrote among it) until the
// count is met or a read finds nothing. A copy to just past where it reads feeds itself: the
// pipe holds the page cache's own pages, so within a round each byte is copied from where
// the copy may already have written, as a forward byte-by-byte copy.
Decision MoveWithinFile(FdCall& c, ServedFile& in, int64_t in_pos, ServedFile& out, int64_t out_pos,
                        size_t count, const std::function<void(size_t)>& account) {
  const uint64_t in_at = in_pos >= 0 ? static_cast<uint64_t>(in_pos) : in.offset;
  const uint64_t out_at = out_pos >= 0 ? static_cast<uint64_t>(out_pos) : out.offset;
  std::vector<char> moved;  // what was written, from out_at on
  Decision d = c.run_on(
      in,
      [&](schema::Transaction& txn) {
        moved.clear();
        std::vector<char> round;
        while (moved.size() < count) {
          round.resize(std::min(count - moved.size(), kChunk));
          auto r = in.mfs->fs->Read(txn, in.id, in_at + moved.size(), round.data(), round.size());
          if (!r.ok()) return r.status();
          if (*r == 0) break;
          const uint64_t from = in_at + moved.size(), to = out_at + moved.size();
          if (to > from && to - from < *r) {
            for (size_t i = to - from; i < *r; ++i) round[i] = round[i - (to - from)];
          }
          auto w = out.mfs->fs->Write(txn, c.cred, out.id, to, round.data(), *r);
          if (!w.ok()) return w.status();
          moved.insert(moved.end(), round.begin(), round.begin() + static_cast<long>(*w));
          if (*w < *r) break;
        }
        return Status::Ok();
      },
      Ok);
  if (d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
  NoteDataAccess(in);
  if (moved.empty()) return Emulate(0);
  c.maps.Wrote(*out.mfs, out.id, out_at, moved.data(), moved.size());
  if ((out.flags & O_DSYNC) && !out.mfs->fs->FlushLog().ok()) return Emulate(-EIO);
  if (out_pos < 0) out.offset = out_at + moved.size();
  // With one description on both sides, the offset is where the read ended.
  if (in_pos < 0) in.offset = in_at + moved.size();
  account(moved.size());
  return Emulate(static_cast<long>(moved.size()));
}

// The data moved by sendfile or splice, where one side at most is served (both may be for
// sendfile). `in_pos` / `out_pos`: -1 for the description's offset.
Decision Move(FdCall& c, Side& in, int64_t in_pos, Side& out, int64_t out_pos, size_t count,
              bool nonblock, const std::function<void(size_t)>& account) {
  if (in.served && out.served && in.served->mfs == out.served->mfs &&
      in.served->id == out.served->id) {
    return MoveWithinFile(c, *in.served, in_pos, *out.served, out_pos, count, account);
  }
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

}  // namespace

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
  if (count == 0) {
    // Into a file or a socket, splice_direct_to_actor() touches atime even with nothing to do.
    if (in.served && !out.pipe()) NoteDataAccess(*in.served);
    return Emulate(0);
  }
  if (!S_ISREG(in.type()) && in.served) return Emulate(-EINVAL);  // no splice_read
  return Move(c, in, pos, out, -1, std::min<uint64_t>(count, kChunk), false,
              WriteBack(c, off_p, pos));
}

// Long by design: copy_file_range's checks in the kernel's order (which decides the errno of
// a call with several faults), then the copy; split, the order would be hard to see.
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
        NoteDataAccess(fi);  // the copy is a splice: filemap_splice_read() touches atime
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

}  // namespace amino::monitor::service::fd_calls
