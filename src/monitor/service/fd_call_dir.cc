// getdents and the descriptor forms of the xattr calls on a served descriptor (fd_call.h).
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

// The inode number of the mount point's parent directory on the host: ".." of the mount root.
uint64_t HostParentIno(const MountFs& m) {
  const std::string& point = m.mount->host_point.empty() ? m.mount->point : m.mount->host_point;
  const size_t slash = point.rfind('/');
  const std::string parent =
      slash == 0 || slash == std::string::npos ? "/" : point.substr(0, slash);
  struct stat st;
  return stat(parent.c_str(), &st) == 0 ? st.st_ino : 0;
}

}  // namespace

// Long by design: the position in the listing, "." and "..", and how much of the caller's
// buffer is filled are the state of one loop.
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
            if (batch->size() < want) {
              at_end = true;  // a short batch ends the directory: no second search for it
              break;
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

}  // namespace amino::monitor::service::fd_calls
