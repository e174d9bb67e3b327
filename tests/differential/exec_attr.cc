// Attribute calls: the stat family, statfs, modes, owners, times, access checks and extended
// attributes.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "executor.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

namespace amino::fuzz {

namespace {

// Explicit times (seconds, nanoseconds) by pool index; the last is invalid (EINVAL).
constexpr struct timespec kTimes[] = {
    {1000000000, 0}, {1234567890, 123456789}, {0, 0},          {-1, 500000000}, {0, UTIME_NOW},
    {0, UTIME_OMIT}, {1500000000, 999999999}, {1, 1000000000},
};

std::string TimeArg(int64_t i) {
  const struct timespec& t = kTimes[i];
  if (t.tv_nsec == UTIME_NOW) return "NOW";
  if (t.tv_nsec == UTIME_OMIT) return "OMIT";
  return std::to_string(t.tv_sec) + "." + std::to_string(t.tv_nsec);
}

std::string IdText(uint32_t id) { return id == ~0u ? "-1" : std::to_string(id); }

// statfs: only what every file system answers alike. f_type, block counts, free space and the
// file system id are the file system's own (Amino reports its own type), so they are not
// compared; the name length limit is part of the system-call contract.
std::string StatfsText(long r, int e, const struct statfs& sf) {
  if (r < 0) return Result(r, e);
  return " = 0 namelen=" + std::to_string(sf.f_namelen);
}

}  // namespace

uid_t Executor::OwnerChoice(int64_t i) const {
  // Unprivileged, only root (EPERM), "unchanged" and oneself; as root, other users too.
  static constexpr uid_t kRoot[] = {0, ~0u, 65534, 1000};
  const uid_t self = getuid();
  const uid_t kUser[] = {0, ~0u, self, self};
  return privileged_ ? kRoot[i] : kUser[i];
}

gid_t Executor::GroupChoice(int64_t i) const {
  static constexpr gid_t kRoot[] = {0, ~0u, 65534, 1000};
  const gid_t self = getgid();
  const gid_t kUser[] = {0, ~0u, self, self};
  return privileged_ ? kRoot[i] : kUser[i];
}

// Long by design: one case per call, each the call and its one-line record; a table.
bool Executor::RunAttribute(const Op& op, std::string* line) {
  std::string& s = *line;
  const int fd = Fd(op.slot);
  const std::string slot = SlotText(op.slot);
  const std::string name = NameText(op.name);
  const char* path = Name(op.name);
  long r;
  int e;
  struct stat st {};
  auto stat_result = [&](long res, int err) {
    s += res < 0 ? Result(res, err) : " = 0 " + StatText(st, canon_);
  };
  switch (op.kind) {
    case Kind::kStat:
      s = "stat(" + name + ")";
      r = syscall(SYS_stat, path, &st);
      stat_result(r, errno);
      return true;
    case Kind::kLstat:
      s = "lstat(" + name + ")";
      r = syscall(SYS_lstat, path, &st);
      stat_result(r, errno);
      return true;
    case Kind::kFstat:
      s = "fstat(" + slot + ")";
      r = syscall(SYS_fstat, fd, &st);
      stat_result(r, errno);
      return true;
    case Kind::kFstatat:
      s = "newfstatat(" + DirText(op.dir) + "," + name + "," + std::to_string(op.a) + ")";
      r = syscall(SYS_newfstatat, DirFd(op.dir), path, &st, op.a);
      stat_result(r, errno);
      return true;
    case Kind::kStatx: {
      s = "statx(" + DirText(op.dir) + "," + name + "," + std::to_string(op.a) + "," + Octal(op.b) +
          ")";
      struct statx sx {};
      r = syscall(SYS_statx, DirFd(op.dir), path, op.a, op.b, &sx);
      e = errno;
      s += r < 0 ? Result(r, e) : " = 0 " + StatxText(sx, canon_);
      return true;
    }
    case Kind::kStatfs:
    case Kind::kFstatfs: {
      struct statfs sf {};
      if (op.kind == Kind::kStatfs) {
        s = "statfs(" + name + ")";
        r = syscall(SYS_statfs, path, &sf);
      } else {
        s = "fstatfs(" + slot + ")";
        r = syscall(SYS_fstatfs, fd, &sf);
      }
      e = errno;
      s += StatfsText(r, e, sf);
      return true;
    }
    case Kind::kChmod:
      s = "chmod(" + name + "," + Octal(op.a) + ")";
      r = syscall(SYS_chmod, path, op.a);
      s += Result(r, errno);
      return true;
    case Kind::kFchmod:
      s = "fchmod(" + slot + "," + Octal(op.a) + ")";
      r = syscall(SYS_fchmod, fd, op.a);
      s += Result(r, errno);
      return true;
    case Kind::kFchmodat:
      s = "fchmodat(" + DirText(op.dir) + "," + name + "," + Octal(op.a) + ")";
      r = syscall(SYS_fchmodat, DirFd(op.dir), path, op.a);
      s += Result(r, errno);
      return true;
    case Kind::kFchmodat2:
      s = "fchmodat2(" + DirText(op.dir) + "," + name + "," + Octal(op.a) + "," +
          std::to_string(op.b) + ")";
      r = syscall(SYS_fchmodat2, DirFd(op.dir), path, op.a, op.b);
      s += Result(r, errno);
      return true;
    case Kind::kChown:
    case Kind::kLchown:
    case Kind::kFchown:
    case Kind::kFchownat: {
      const uid_t u = OwnerChoice(op.a);
      const gid_t g = GroupChoice(op.b);
      const std::string ids = IdText(u) + "," + IdText(g);
      switch (op.kind) {
        case Kind::kChown:
          s = "chown(" + name + "," + ids + ")";
          r = syscall(SYS_chown, path, u, g);
          break;
        case Kind::kLchown:
          s = "lchown(" + name + "," + ids + ")";
          r = syscall(SYS_lchown, path, u, g);
          break;
        case Kind::kFchown:
          s = "fchown(" + slot + "," + ids + ")";
          r = syscall(SYS_fchown, fd, u, g);
          break;
        default: {
          // With AT_EMPTY_PATH, the descriptor itself.
          const bool empty = op.c == AT_EMPTY_PATH;
          s = "fchownat(" + (empty ? slot + ",\"\"" : DirText(op.dir) + "," + name) + "," + ids +
              "," + std::to_string(op.c) + ")";
          r = syscall(SYS_fchownat, empty ? fd : DirFd(op.dir), empty ? "" : path, u, g, op.c);
          break;
        }
      }
      s += Result(r, errno);
      return true;
    }
    case Kind::kUtimensat:
    case Kind::kFutimens: {
      const struct timespec ts[2] = {kTimes[op.a], kTimes[op.b]};
      const bool null_times = op.form == 99;
      const std::string times =
          null_times ? "NULL" : "[" + TimeArg(op.a) + "," + TimeArg(op.b) + "]";
      if (op.kind == Kind::kUtimensat) {
        s = "utimensat(" + DirText(op.dir) + "," + name + "," + times + "," + std::to_string(op.c) +
            ")";
        r = syscall(SYS_utimensat, DirFd(op.dir), path, null_times ? nullptr : ts, op.c);
      } else {
        // futimens is utimensat with a NULL path.
        s = "futimens(" + slot + "," + times + ")";
        r = syscall(SYS_utimensat, fd, nullptr, null_times ? nullptr : ts, 0);
      }
      s += Result(r, errno);
      return true;
    }
    case Kind::kAccess:
      s = "access(" + name + "," + std::to_string(op.a) + ")";
      r = syscall(SYS_access, path, op.a);
      s += Result(r, errno);
      return true;
    case Kind::kFaccessat:
      s = "faccessat(" + DirText(op.dir) + "," + name + "," + std::to_string(op.a) + ")";
      r = syscall(SYS_faccessat, DirFd(op.dir), path, op.a);
      s += Result(r, errno);
      return true;
    case Kind::kFaccessat2:
      s = "faccessat2(" + DirText(op.dir) + "," + name + "," + std::to_string(op.a) + "," +
          std::to_string(op.b) + ")";
      r = syscall(SYS_faccessat2, DirFd(op.dir), path, op.a, op.b);
      s += Result(r, errno);
      return true;
    case Kind::kSetxattr:
    case Kind::kGetxattr:
    case Kind::kListxattr:
    case Kind::kRemovexattr: {
      static const char* const kPrefix[] = {"", "l", "f"};
      const int form = op.form % 3;
      const std::string& xname = Pool::XattrNames()[static_cast<size_t>(op.a)];
      const std::string target = form == 2 ? slot : name;
      const std::string xshow = Pool::Show(xname);
      const size_t len = static_cast<size_t>(op.b);
      std::vector<char> buf(len + 1);
      const long nr_set[] = {SYS_setxattr, SYS_lsetxattr, SYS_fsetxattr};
      const long nr_get[] = {SYS_getxattr, SYS_lgetxattr, SYS_fgetxattr};
      const long nr_list[] = {SYS_listxattr, SYS_llistxattr, SYS_flistxattr};
      const long nr_remove[] = {SYS_removexattr, SYS_lremovexattr, SYS_fremovexattr};
      // The first argument: a path for the path and l-path forms, a descriptor for the f form.
      const long first = form == 2 ? static_cast<long>(fd) : reinterpret_cast<long>(path);
      const std::string call = std::string(kPrefix[form]);
      switch (op.kind) {
        case Kind::kSetxattr:
          FillPattern(buf.data(), len, op.data, 2);
          s = call + "setxattr(" + target + "," + xshow + "," + std::to_string(len) + "," +
              std::to_string(op.c) + ")";
          r = syscall(nr_set[form], first, xname.c_str(), buf.data(), len, op.c);
          s += Result(r, errno);
          return true;
        case Kind::kGetxattr:
          s = call + "getxattr(" + target + "," + xshow + "," + std::to_string(len) + ")";
          r = syscall(nr_get[form], first, xname.c_str(), buf.data(), len);
          e = errno;
          s += Result(r, e);
          if (r > 0 && len > 0) s += " h=" + Hex(Fnv(buf.data(), static_cast<size_t>(r)));
          return true;
        case Kind::kListxattr: {
          s = call + "listxattr(" + target + "," + std::to_string(len) + ")";
          r = syscall(nr_list[form], first, buf.data(), len);
          e = errno;
          s += Result(r, e);
          if (r > 0 && len > 0) {
            // The order of names is the file system's: compare them sorted.
            std::vector<std::string> names;
            for (long at = 0; at < r;) {
              std::string n(buf.data() + at);
              at += static_cast<long>(n.size()) + 1;
              names.push_back(Pool::Show(n));
            }
            std::sort(names.begin(), names.end());
            s += " [";
            for (size_t i = 0; i < names.size(); ++i) s += (i ? " " : "") + names[i];
            s += "]";
          }
          return true;
        }
        default:
          s = call + "removexattr(" + target + "," + xshow + ")";
          r = syscall(nr_remove[form], first, xname.c_str());
          s += Result(r, errno);
          return true;
      }
    }
    default:
      return false;
  }
}

}  // namespace amino::fuzz
