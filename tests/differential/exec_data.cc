// Data calls: the read and write family, lseek, truncation, sync, copy_file_range, sendfile,
// file mappings and directory listing.
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "executor.h"

namespace amino::fuzz {

namespace {

// A mapping that reaches past the end of the file it maps raises SIGBUS: the mapping calls
// touch only bytes below the size, but a monitor that maps the wrong file must not end the run.
sigjmp_buf bus_jump;
void OnBus(int) { siglongjmp(bus_jump, 1); }

// The buffers of a vectored call: the size cut into one to three pieces (one may be empty).
std::vector<iovec> Split(char* buf, size_t n, int form) {
  switch (form % 4) {
    case 1:
      return {{buf, n / 3}, {buf + n / 3, n - n / 3}};
    case 2:
      return {{buf, n / 4}, {buf + n / 4, 0}, {buf + n / 4, n - n / 4}};
    case 3:
      return {{buf, n / 2}, {buf + n / 2, n / 4}, {buf + n / 2 + n / 4, n - n / 2 - n / 4}};
    default:
      return {{buf, n}};
  }
}

// Reads (digest in *hash) or writes the first n bytes of a mapping; false on SIGBUS.
bool Touch(char* bytes, size_t n, bool write, const Op& op, uint64_t* hash) {
  struct sigaction sa {
  }, old{};
  sa.sa_handler = OnBus;
  sigaction(SIGBUS, &sa, &old);
  volatile bool ok = false;
  if (sigsetjmp(bus_jump, 1) == 0) {
    if (write) {
      FillPattern(bytes, n, op.data, op.form);
    } else {
      *hash = Fnv(bytes, n);
    }
    ok = true;
  }
  sigaction(SIGBUS, &old, nullptr);
  return ok;
}

std::string Off(int64_t v) { return v == -2 ? "NULL" : std::to_string(v); }

char DirentType(unsigned char t) {
  switch (t) {
    case DT_REG:
      return 'f';
    case DT_DIR:
      return 'd';
    case DT_LNK:
      return 'l';
    case DT_UNKNOWN:
      return 'u';
    default:
      return '?';
  }
}

}  // namespace

// Long by design: one case per call, each the call and its one-line record; a table.
bool Executor::RunData(const Op& op, std::string* line) {
  std::string& s = *line;
  const int fd = Fd(op.slot);
  const std::string slot = SlotText(op.slot);
  long r;
  int e = 0;
  switch (op.kind) {
    case Kind::kRead:
    case Kind::kPread:
    case Kind::kReadv:
    case Kind::kPreadv:
    case Kind::kPreadv2: {
      std::vector<char> buf(static_cast<size_t>(op.a) + 1);
      std::vector<iovec> iov = Split(buf.data(), static_cast<size_t>(op.a), op.form);
      const int n = static_cast<int>(iov.size());
      const std::string size = std::to_string(op.a);
      const std::string off = std::to_string(op.b);
      switch (op.kind) {
        case Kind::kRead:
          s = "read(" + slot + "," + size + ")";
          r = syscall(SYS_read, fd, buf.data(), op.a);
          break;
        case Kind::kPread:
          s = "pread64(" + slot + "," + size + "," + off + ")";
          r = syscall(SYS_pread64, fd, buf.data(), op.a, op.b);
          break;
        case Kind::kReadv:
          s = "readv(" + slot + "," + size + "/" + std::to_string(n) + ")";
          r = syscall(SYS_readv, fd, iov.data(), n);
          break;
        case Kind::kPreadv:
          s = "preadv(" + slot + "," + size + "/" + std::to_string(n) + "," + off + ")";
          r = syscall(SYS_preadv, fd, iov.data(), n, op.b, 0);
          break;
        default:
          s = "preadv2(" + slot + "," + size + "/" + std::to_string(n) + "," + off + "," +
              std::to_string(op.c) + ")";
          r = syscall(SYS_preadv2, fd, iov.data(), n, op.b, 0, op.c);
          break;
      }
      e = errno;
      s += Result(r, e);
      if (r > 0) s += " h=" + Hex(Fnv(buf.data(), static_cast<size_t>(r)));
      return true;
    }
    case Kind::kWrite:
    case Kind::kPwrite:
    case Kind::kWritev:
    case Kind::kPwritev:
    case Kind::kPwritev2: {
      std::vector<char> buf(static_cast<size_t>(op.a) + 1);
      FillPattern(buf.data(), static_cast<size_t>(op.a), op.data, op.form);
      std::vector<iovec> iov = Split(buf.data(), static_cast<size_t>(op.a), op.form / 4);
      const int n = static_cast<int>(iov.size());
      const std::string size = std::to_string(op.a) + "#" + std::to_string(op.form % 4);
      const std::string off = std::to_string(op.b);
      switch (op.kind) {
        case Kind::kWrite:
          s = "write(" + slot + "," + size + ")";
          r = syscall(SYS_write, fd, buf.data(), op.a);
          break;
        case Kind::kPwrite:
          s = "pwrite64(" + slot + "," + size + "," + off + ")";
          r = syscall(SYS_pwrite64, fd, buf.data(), op.a, op.b);
          break;
        case Kind::kWritev:
          s = "writev(" + slot + "," + size + "/" + std::to_string(n) + ")";
          r = syscall(SYS_writev, fd, iov.data(), n);
          break;
        case Kind::kPwritev:
          s = "pwritev(" + slot + "," + size + "/" + std::to_string(n) + "," + off + ")";
          r = syscall(SYS_pwritev, fd, iov.data(), n, op.b, 0);
          break;
        default:
          s = "pwritev2(" + slot + "," + size + "/" + std::to_string(n) + "," + off + "," +
              std::to_string(op.c) + ")";
          r = syscall(SYS_pwritev2, fd, iov.data(), n, op.b, 0, op.c);
          break;
      }
      s += Result(r, errno);
      return true;
    }
    case Kind::kLseek: {
      s = "lseek(" + slot + "," + std::to_string(op.a) + "," + std::to_string(op.b) + ")";
      r = syscall(SYS_lseek, fd, op.a, op.b);
      e = errno;
      // A directory's offset is a cookie of its file system's choosing.
      struct stat st;
      if (r >= 0 && canon_.portable && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        s += " = dir-offset";
      } else {
        s += Result(r, e);
      }
      return true;
    }
    case Kind::kFtruncate:
      s = "ftruncate(" + slot + "," + std::to_string(op.a) + ")";
      r = syscall(SYS_ftruncate, fd, op.a);
      s += Result(r, errno);
      return true;
    case Kind::kTruncate:
      s = "truncate(" + NameText(op.name) + "," + std::to_string(op.a) + ")";
      r = syscall(SYS_truncate, Name(op.name), op.a);
      s += Result(r, errno);
      return true;
    case Kind::kFsync:
      s = "fsync(" + slot + ")";
      r = syscall(SYS_fsync, fd);
      s += Result(r, errno);
      return true;
    case Kind::kFdatasync:
      s = "fdatasync(" + slot + ")";
      r = syscall(SYS_fdatasync, fd);
      s += Result(r, errno);
      return true;
    case Kind::kCopyFileRange: {
      const unsigned flags = op.form == 99 ? 1 : 0;
      s = "copy_file_range(" + slot + "," + Off(op.b) + "," + SlotText(op.slot2) + "," + Off(op.c) +
          "," + std::to_string(op.a) + "," + std::to_string(flags) + ")";
      loff_t in = op.b, out = op.c;
      r = syscall(SYS_copy_file_range, fd, op.b == -2 ? nullptr : &in, Fd(op.slot2),
                  op.c == -2 ? nullptr : &out, op.a, flags);
      s += Result(r, errno);
      if (op.b != -2) s += " in=" + std::to_string(in);
      if (op.c != -2) s += " out=" + std::to_string(out);
      return true;
    }
    case Kind::kSendfile: {
      s = "sendfile(" + SlotText(op.slot2) + "," + slot + "," + Off(op.b) + "," +
          std::to_string(op.a) + ")";
      off_t in = op.b;
      r = syscall(SYS_sendfile, Fd(op.slot2), fd, op.b == -2 ? nullptr : &in, op.a);
      s += Result(r, errno);
      if (op.b != -2) s += " off=" + std::to_string(in);
      return true;
    }
    case Kind::kMmapRead:
    case Kind::kMmapWrite: {
      const bool write = op.kind == Kind::kMmapWrite;
      const size_t len = static_cast<size_t>(op.a);
      s = std::string(write ? "mmap(SHARED,RW," : "mmap(PRIVATE,R,") + slot + "," +
          std::to_string(op.a) + "," + std::to_string(op.b) + ")";
      void* p = mmap(nullptr, len, write ? PROT_READ | PROT_WRITE : PROT_READ,
                     write ? MAP_SHARED : MAP_PRIVATE, fd, op.b);
      e = errno;
      if (p == MAP_FAILED) {
        s += Result(-1, e);
        return true;
      }
      // Only bytes below the file's size are touched (beyond it the mapping raises SIGBUS).
      struct stat st;
      size_t n = 0;
      if (fstat(fd, &st) == 0 && st.st_size > op.b) {
        n = std::min(len, static_cast<size_t>(st.st_size - op.b));
      }
      uint64_t h = 0;
      if (!Touch(static_cast<char*>(p), n, write, op, &h)) {
        s += " SIGBUS";
      } else if (write) {
        s += " = ok n=" + std::to_string(n);
        r = msync(p, len, MS_SYNC);
        s += " msync" + Result(r, errno);
      } else {
        s += " = ok n=" + std::to_string(n) + " h=" + Hex(h);
      }
      r = munmap(p, len);
      if (r != 0) s += " munmap" + Result(r, errno);
      return true;
    }
    case Kind::kGetdents: {
      // The whole directory from its start, whatever the buffer size: the order of entries and
      // how many fit one call are the file system's, the set of names and types is not.
      s = "getdents64(" + slot + "," + std::to_string(op.a) + ")";
      syscall(SYS_lseek, fd, 0, SEEK_SET);
      std::vector<char> buf(static_cast<size_t>(op.a));
      std::set<std::string> names;
      long total = 0;
      for (int calls = 0; calls < 100000; ++calls) {
        r = syscall(SYS_getdents64, fd, buf.data(), buf.size());
        e = errno;
        if (r <= 0) break;
        total += r;
        for (long at = 0; at < r;) {
          auto* d = reinterpret_cast<struct dirent64*>(buf.data() + at);
          names.insert(Pool::Show(d->d_name) + ":" + DirentType(d->d_type));
          at += d->d_reclen;
        }
      }
      if (r < 0 && total == 0) {
        s += Result(r, e);
        return true;
      }
      s += " = " + std::to_string(names.size()) + " [";
      bool first = true;
      for (const std::string& n : names) {
        s += (first ? "" : " ") + n;
        first = false;
      }
      s += "]";
      if (r < 0) s += " then" + Result(r, e);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace amino::fuzz
