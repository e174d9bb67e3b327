// Calls on shadow descriptors: data transfer through the tracee's memory, offsets, attributes,
// directory listing, synchronisation. Each is the same call on the monitor's host descriptor.
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <vector>

#include "monitor/host/host_handler.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_iovecs.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::host {

namespace {

constexpr size_t kChunk = 1 << 20;
constexpr size_t kMaxRw = kMaxRwCount;

long Result(long r) { return r < 0 ? -errno : r; }

// A transfer of no bytes still makes the host call, with buffers of the same shape: the kernel
// checks the descriptor's access mode (EBADF), the file type (EISDIR for read(2) of a
// directory, not for an empty readv) and the flags even when there is nothing to move.
long EmptyTransfer(int fd, bool reading, bool vectored, const std::vector<iovec>& iov,
                   int64_t offset, int rwf) {
  char none;
  if (!vectored) {
    if (reading) return Result(offset < 0 ? read(fd, &none, 0) : pread(fd, &none, 0, offset));
    return Result(offset < 0 ? write(fd, &none, 0) : pwrite(fd, &none, 0, offset));
  }
  std::vector<iovec> empty(iov.size(), iovec{&none, 0});
  const int n = static_cast<int>(empty.size());
  return Result(reading ? preadv2(fd, empty.data(), n, offset, rwf)
                        : pwritev2(fd, empty.data(), n, offset, rwf));
}

size_t TotalLength(const std::vector<iovec>& iov) {
  size_t total = 0;
  for (const iovec& v : iov) total += std::min(v.iov_len, kMaxRw);
  return std::min(total, kMaxRw);
}

// Data read from the host (at `offset`, or at the file offset when offset < 0) into the
// tracee's buffers. The file offset moves only by what reached the tracee.
long ReadInto(Thread& t, int fd, const std::vector<iovec>& iov, int64_t offset, int rwf,
              bool vectored) {
  const size_t total = TotalLength(iov);
  if (total == 0) return EmptyTransfer(fd, true, vectored, iov, offset, rwf);
  const bool at_cursor = offset < 0;
  int64_t pos = at_cursor ? lseek(fd, 0, SEEK_CUR) : offset;
  const bool seekable = pos >= 0;
  std::vector<char> buf(std::min(total, kChunk));
  size_t done = 0;
  for (const iovec& v : iov) {
    size_t left = std::min(v.iov_len, total - done);
    size_t in_vec = 0;
    while (left > 0) {
      size_t want = std::min(left, buf.size());
      iovec local{buf.data(), want};
      ssize_t n = seekable ? preadv2(fd, &local, 1, pos + static_cast<int64_t>(done), rwf)
                           : readv(fd, &local, 1);
      if (n < 0) return done ? static_cast<long>(done) : -errno;
      if (n == 0) goto out;
      const size_t copied = WritePartial(*t.proc, reinterpret_cast<uint64_t>(v.iov_base) + in_vec,
                                         buf.data(), static_cast<size_t>(n));
      if (copied < static_cast<size_t>(n)) {
        // The kernel returns what it could copy before the fault, or EFAULT for nothing.
        done += copied;
        if (done == 0) return -EFAULT;
        goto out;
      }
      done += static_cast<size_t>(n);
      in_vec += static_cast<size_t>(n);
      left -= static_cast<size_t>(n);
      if (static_cast<size_t>(n) < want) goto out;
    }
  }
out:
  if (at_cursor && seekable) lseek(fd, pos + static_cast<int64_t>(done), SEEK_SET);
  return static_cast<long>(done);
}

// The tracee's buffers written to the host. O_APPEND and the file offset are the host's.
long WriteFrom(Thread& t, int fd, const std::vector<iovec>& iov, int64_t offset, int rwf,
               bool vectored) {
  if (TotalLength(iov) == 0) return EmptyTransfer(fd, false, vectored, iov, offset, rwf);
  size_t done = 0;
  std::vector<char> buf;
  for (const iovec& v : iov) {
    size_t in_vec = 0;
    while (in_vec < v.iov_len && done < kMaxRw) {
      size_t want = std::min({v.iov_len - in_vec, kChunk, kMaxRw - done});
      buf.resize(want);
      if (ReadMemory(*t.proc, reinterpret_cast<uint64_t>(v.iov_base) + in_vec, buf.data(), want) !=
          0) {
        return done ? static_cast<long>(done) : -EFAULT;
      }
      iovec local{buf.data(), want};
      ssize_t n =
          pwritev2(fd, &local, 1, offset < 0 ? -1 : offset + static_cast<int64_t>(done), rwf);
      if (n < 0) return done ? static_cast<long>(done) : -errno;
      done += static_cast<size_t>(n);
      in_vec += static_cast<size_t>(n);
      if (static_cast<size_t>(n) < want) return static_cast<long>(done);
    }
  }
  return static_cast<long>(done);
}

template <typename T>
long WriteStruct(Thread& t, uint64_t addr, const T& value, long result) {
  if (WriteMemory(*t.proc, addr, &value, sizeof value) != 0) return -EFAULT;
  return result;
}

// Whether a write to `fd` may clear set-user-ID or set-group-ID bits: that depends on the
// writer's CAP_FSETID and groups, so it must be made with the tracee's credentials.
bool ClearsSetIdBits(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID));
}

// The access mode of the open file description: the first thing the read and write family
// checks, before it reads the caller's vector.
long AccessError(int fd, bool reading) {
  const int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return -errno;
  if (fl & O_PATH) return -EBADF;
  // Access mode 3 (O_RDONLY|O_WRONLY|O_RDWR bits both set) allows neither.
  const int acc = fl & O_ACCMODE;
  return acc == O_RDWR || acc == (reading ? O_RDONLY : O_WRONLY) ? 0 : -EBADF;
}

// A stream (pipe, socket, device) that is not ready could block the monitor in a transfer.
bool IsStream(const struct stat& st) { return !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode); }

// A tracee descriptor the monitor can use directly (same open file description).
int Borrow(Thread& t, int fd) { return CopyProcessFd(*t.proc, fd); }

// read, write and their vectored and positioned forms on the monitor's descriptor `fd`.
Decision Transfer(Thread& t, SyscallRegs& call, int fd, const Creds& c) {
  const long nr = call.nr();
  const uint64_t a1 = call.arg(1), a2 = call.arg(2), a3 = call.arg(3);
  std::vector<iovec> iov;
  long r;
  switch (nr) {
    case SYS_read:
    case SYS_pread64:
      iov = {{reinterpret_cast<void*>(a1), static_cast<size_t>(a2)}};
      if (nr == SYS_pread64 && static_cast<int64_t>(a3) < 0) return Decision::Emulate(-EINVAL);
      return Decision::Emulate(
          ReadInto(t, fd, iov, nr == SYS_read ? -1 : static_cast<int64_t>(a3), 0, false));
    case SYS_write:
    case SYS_pwrite64: {
      iov = {{reinterpret_cast<void*>(a1), static_cast<size_t>(a2)}};
      if (nr == SYS_pwrite64 && static_cast<int64_t>(a3) < 0) return Decision::Emulate(-EINVAL);
      std::optional<AsTracee> as;
      if (ClearsSetIdBits(fd)) as.emplace(c);
      return Decision::Emulate(
          WriteFrom(t, fd, iov, nr == SYS_write ? -1 : static_cast<int64_t>(a3), 0, false));
    }
    case SYS_readv:
    case SYS_preadv:
    case SYS_preadv2:
    case SYS_writev:
    case SYS_pwritev:
    case SYS_pwritev2: {
      // The kernel's order: a negative offset, the access mode, then the vector.
      const bool positional = nr != SYS_readv && nr != SYS_writev;
      int64_t off = positional ? static_cast<int64_t>(a3) : -1;
      if ((nr == SYS_preadv || nr == SYS_pwritev) && off < 0) return Decision::Emulate(-EINVAL);
      if ((nr == SYS_preadv2 || nr == SYS_pwritev2) && off < -1) return Decision::Emulate(-EINVAL);
      const bool reading = nr == SYS_readv || nr == SYS_preadv || nr == SYS_preadv2;
      if ((r = AccessError(fd, reading)) < 0) return Decision::Emulate(r);
      size_t total = 0;
      if ((r = ImportIovecs(*t.proc, a1, a2, &iov, &total)) < 0) return Decision::Emulate(r);
      int rwf = (nr == SYS_preadv2 || nr == SYS_pwritev2) ? static_cast<int>(call.arg(5)) : 0;
      if (reading) return Decision::Emulate(ReadInto(t, fd, iov, off, rwf, true));
      std::optional<AsTracee> as;
      if (ClearsSetIdBits(fd)) as.emplace(c);
      return Decision::Emulate(WriteFrom(t, fd, iov, off, rwf, true));
    }
    default:
      return Decision::Emulate(-EINVAL);
  }
}

// The descriptors and offsets of a sendfile, copy_file_range or splice, as the monitor holds
// them.
struct CopySides {
  int in, out;
  uint64_t in_off_p, out_off_p;  // the tracee's offset pointers (0: none)
  int64_t in_off, out_off;       // sendfile's input offset, read already
  uint64_t count;
};

// sendfile or copy_file_range with files at both ends: the kernel's own call on the same open
// file descriptions, which gives its every check (flags, access modes, O_APPEND, overlapping
// ranges of one file, limits), its short counts, and moves the file offsets it moves. The
// call's result.
long BetweenFiles(Thread& t, const SyscallRegs& call, const Creds& c, CopySides x) {
  const long nr = call.nr();
  int64_t& in_off = x.in_off;
  int64_t& out_off = x.out_off;
  const uint64_t in_off_p = x.in_off_p, out_off_p = x.out_off_p, count = x.count;
  const int in = x.in, out = x.out;
  long r;
  // Files at both ends: the kernel's own call on the same open file descriptions, which
  // gives its every check (flags, access modes, O_APPEND, overlapping ranges of one
  // file, limits), its short counts, and moves the file offsets it moves.
  if (nr == SYS_copy_file_range) {
    if (in_off_p && ReadMemory(*t.proc, in_off_p, &in_off, sizeof in_off) != 0) return -EFAULT;
    if (out_off_p && ReadMemory(*t.proc, out_off_p, &out_off, sizeof out_off) != 0) return -EFAULT;
  }
  loff_t host_in = in_off, host_out = out_off;
  {
    AsTracee as(c);  // a write clears set-id bits as the tracee's would
    r = nr == SYS_sendfile
            ? Result(syscall(SYS_sendfile, out, in, in_off_p ? &host_in : nullptr, count))
            : Result(syscall(SYS_copy_file_range, in, in_off_p ? &host_in : nullptr, out,
                             out_off_p ? &host_out : nullptr, count, call.arg(5)));
  }
  // sendfile stores its offset back whatever happened; copy_file_range after a copy.
  const bool store = nr == SYS_sendfile || r > 0;
  if (store && in_off_p && WriteMemory(*t.proc, in_off_p, &host_in, sizeof host_in) != 0)
    return -EFAULT;
  if (store && out_off_p && WriteMemory(*t.proc, out_off_p, &host_out, sizeof host_out) != 0)
    return -EFAULT;
  return r;
}

// A copy with a pipe or socket at one end at least, made by the monitor: one read and one
// write of at most kChunk bytes, the offsets moved as the kernel moves them.
Decision BetweenStreams(Thread& t, const SyscallRegs& call, CopySides x, bool in_file,
                        bool out_file) {
  const long nr = call.nr();
  const int in = x.in, out = x.out;
  const uint64_t in_off_p = x.in_off_p, out_off_p = x.out_off_p, count = x.count;
  int64_t in_off = x.in_off, out_off = x.out_off;
  // A pipe or socket that is not ready would block the monitor: the call waits parked.
  pollfd pf[2] = {{in, POLLIN, 0}, {out, POLLOUT, 0}};
  if ((!in_file && poll(&pf[0], 1, 0) == 0) || (!out_file && poll(&pf[1], 1, 0) == 0)) {
    return Decision::Park();
  }
  if (nr != SYS_sendfile && in_off_p &&
      ReadMemory(*t.proc, in_off_p, &in_off, sizeof in_off) != 0) {
    return Decision::Emulate(-EFAULT);
  }
  if (out_off_p && ReadMemory(*t.proc, out_off_p, &out_off, sizeof out_off) != 0)
    return Decision::Emulate(-EFAULT);
  std::vector<char> buf(std::min<uint64_t>(count, kChunk));
  ssize_t got =
      in_off_p ? pread(in, buf.data(), buf.size(), in_off) : read(in, buf.data(), buf.size());
  if (got <= 0) return Decision::Emulate(got < 0 ? -errno : 0);
  ssize_t put = out_off_p ? pwrite(out, buf.data(), static_cast<size_t>(got), out_off)
                          : write(out, buf.data(), static_cast<size_t>(got));
  if (put < 0) return Decision::Emulate(-errno);
  if (!in_off_p && put < got) lseek(in, put - got, SEEK_CUR);  // give back what was not used
  if (in_off_p) {
    in_off += put;
    WriteMemory(*t.proc, in_off_p, &in_off, sizeof in_off);
  }
  if (out_off_p) {
    out_off += put;
    WriteMemory(*t.proc, out_off_p, &out_off, sizeof out_off);
  }
  return Decision::Emulate(put);
}

// sendfile, copy_file_range and splice where one side at least is a shadow of the monitor's.
Decision Copy(Thread& t, SyscallRegs& call, const Creds& c) {
  const long nr = call.nr();
  const uint64_t a1 = call.arg(1), a2 = call.arg(2), a3 = call.arg(3), a4 = call.arg(4);
  // in/out descriptors and their offset pointers, per call.
  int in_fd, out_fd;
  uint64_t in_off_p, out_off_p, count;
  if (nr == SYS_sendfile) {
    out_fd = static_cast<int>(call.arg(0));
    in_fd = static_cast<int>(a1);
    in_off_p = a2;
    out_off_p = 0;
    count = a3;
  } else {
    in_fd = static_cast<int>(call.arg(0));
    in_off_p = a1;
    out_fd = static_cast<int>(a2);
    out_off_p = a3;
    count = a4;
  }
  // sendfile copies its offset before it looks at the descriptors.
  int64_t in_off = -1, out_off = -1;
  if (nr == SYS_sendfile && in_off_p &&
      ReadMemory(*t.proc, in_off_p, &in_off, sizeof in_off) != 0) {
    return Decision::Emulate(-EFAULT);
  }
  auto in_shadow = ShadowOf(t, in_fd);
  auto out_shadow = ShadowOf(t, out_fd);
  ScopedFd in_borrowed, out_borrowed;
  int in = in_shadow ? in_shadow->fd : (in_borrowed.reset(Borrow(t, in_fd)), in_borrowed.get());
  int out =
      out_shadow ? out_shadow->fd : (out_borrowed.reset(Borrow(t, out_fd)), out_borrowed.get());
  // fdget() finds no file in an O_PATH descriptor: EBADF, each side in its turn.
  auto is_path = [](int fd) { return (fcntl(fd, F_GETFL) & O_PATH) != 0; };
  if (in >= 0 && is_path(in)) in = -EBADF;
  if (out >= 0 && is_path(out)) out = -EBADF;
  if (in < 0) return Decision::Emulate(in);
  if (out < 0) {
    // sendfile checks its input (access mode, offset, range) before it looks at the
    // output: the kernel's own call with no output descriptor says which fails first.
    if (nr == SYS_sendfile) {
      loff_t probe = in_off;
      return Decision::Emulate(
          Result(syscall(SYS_sendfile, -1, in, in_off_p ? &probe : nullptr, count)));
    }
    return Decision::Emulate(out);
  }
  struct stat si, so;
  fstat(in, &si);
  fstat(out, &so);
  if (nr != SYS_splice && !IsStream(si) && !IsStream(so)) {
    return Decision::Emulate(
        BetweenFiles(t, call, c, CopySides{in, out, in_off_p, out_off_p, in_off, out_off, count}));
  }
  return BetweenStreams(t, call, CopySides{in, out, in_off_p, out_off_p, in_off, out_off, count},
                        S_ISREG(si.st_mode), S_ISREG(so.st_mode));
}

// The calls on a host file's size, space and synchronisation, performed by the monitor (as
// the tracee where the kernel checks who asks): their result, or -errno.
long SizeAndSync(long nr, int fd, uint64_t a1, uint64_t a2, uint64_t a3, const Creds& c) {
  switch (nr) {
    case SYS_ftruncate: {
      AsTracee as(c);
      return Result(ftruncate(fd, static_cast<off_t>(a1)));
    }
    case SYS_fsync:
      return Result(fsync(fd));
    case SYS_fdatasync:
      return Result(fdatasync(fd));
    case SYS_syncfs:
      return Result(syncfs(fd));
    case SYS_sync_file_range:
      return Result(sync_file_range(fd, static_cast<off_t>(a1), static_cast<off_t>(a2),
                                    static_cast<unsigned>(a3)));
    case SYS_fallocate: {
      std::optional<AsTracee> as;
      if (ClearsSetIdBits(fd)) as.emplace(c);
      return Result(
          fallocate(fd, static_cast<int>(a1), static_cast<off_t>(a2), static_cast<off_t>(a3)));
    }
    case SYS_fadvise64:
      return -posix_fadvise(fd, static_cast<off_t>(a1), static_cast<off_t>(a2),
                            static_cast<int>(a3));
    case SYS_readahead:
      return Result(readahead(fd, static_cast<off64_t>(a1), static_cast<size_t>(a2)));
    default:
      return -EINVAL;
  }
}

}  // namespace

Decision HostHandler::DataCall(Thread& t, SyscallRegs& call, HostFile& f) {
  const long nr = call.nr();
  const int fd = f.fd;
  const uint64_t a1 = call.arg(1), a2 = call.arg(2), a3 = call.arg(3);
  const Creds& c = CredsOf(t);
  long r;
  if (const Family family = FamilyOf(nr); family == Family::kRead || family == Family::kWrite) {
    return Transfer(t, call, f.fd, c);
  }
  switch (nr) {
    case SYS_lseek:
      return Decision::Emulate(Result(lseek(fd, static_cast<off_t>(a1), static_cast<int>(a2))));
    case SYS_fstat: {
      struct stat st;
      if (fstat(fd, &st) != 0) return Decision::Emulate(-errno);
      return Decision::Emulate(WriteStruct(t, a1, st, 0));
    }
    case SYS_fstatfs: {
      struct statfs st;
      if (fstatfs(fd, &st) != 0) return Decision::Emulate(-errno);
      return Decision::Emulate(WriteStruct(t, a1, st, 0));
    }
    case SYS_getdents:
    case SYS_getdents64: {
      std::vector<char> buf(std::min<size_t>(a2, kChunk));
      r = Result(syscall(nr, fd, buf.data(), buf.size()));
      if (r > 0 && WriteMemory(*t.proc, a1, buf.data(), static_cast<size_t>(r)) != 0) {
        return Decision::Emulate(-EFAULT);
      }
      return Decision::Emulate(r);
    }
    case SYS_ftruncate:
    case SYS_fsync:
    case SYS_fdatasync:
    case SYS_syncfs:
    case SYS_sync_file_range:
    case SYS_fallocate:
    case SYS_fadvise64:
    case SYS_readahead:
      return Decision::Emulate(SizeAndSync(nr, fd, a1, a2, a3, c));
    case SYS_fchmod: {
      AsTracee as(c);
      return Decision::Emulate(Result(fchmod(fd, static_cast<mode_t>(a1))));
    }
    case SYS_fchown: {
      AsTracee as(c);
      return Decision::Emulate(Result(fchown(fd, static_cast<uid_t>(a1), static_cast<gid_t>(a2))));
    }
    case SYS_flock: {
      const int op = static_cast<int>(a1);
      if (flock(fd, op | LOCK_NB) == 0) return Decision::Emulate(0);
      if (errno == EWOULDBLOCK && !(op & LOCK_NB)) return Decision::Park();
      return Decision::Emulate(-errno);
    }
    case SYS_fgetxattr:
    case SYS_fsetxattr:
    case SYS_fremovexattr:
    case SYS_flistxattr:
      break;  // with the path forms below
    case SYS_sendfile:
    case SYS_copy_file_range:
    case SYS_splice:
      return Copy(t, call, c);
    default:
      return Decision::Emulate(-EINVAL);
  }
  return PathCall(t, call, CredsOf(t));
}

}  // namespace amino::monitor::host
