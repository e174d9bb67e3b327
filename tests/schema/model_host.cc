// The oracle side of the model test: every op as the real system call on a scratch directory,
// run with the op's credentials (host.h), on ext4 or whatever /tmp is.
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "host.h"
#include "model_side.h"

namespace amino::schema::testing::model {
namespace {

std::string StatOf(const struct stat& st) {
  return StatString(st.st_mode, static_cast<uint32_t>(st.st_nlink), st.st_uid, st.st_gid,
                    static_cast<uint64_t>(st.st_size));
}

// The times utimens set explicitly (one it left alone, UTIME_OMIT, keeps a value from the
// file's creation or last write, which the two sides took from different clocks).
std::string TimesOf(const struct stat& st, const timespec* set) {
  std::string s;
  char buf[64];
  const timespec* got[2] = {&st.st_atim, &st.st_mtim};
  for (int i = 0; i < 2; ++i) {
    if (set[i].tv_nsec == UTIME_OMIT) continue;
    std::snprintf(buf, sizeof buf, "%s=%lld.%09ld ", i == 0 ? "atime" : "mtime",
                  static_cast<long long>(got[i]->tv_sec), got[i]->tv_nsec);
    s += buf;
  }
  return s;
}

char TypeChar(unsigned char d_type) {
  switch (d_type) {
    case DT_REG:
      return 'f';
    case DT_DIR:
      return 'd';
    case DT_LNK:
      return 'l';
    default:
      return '?';
  }
}

Outcome Fail() { return Outcome{errno, {}, false}; }

class HostSide : public Side {
 public:
  explicit HostSide(std::string root) : root_(std::move(root)) { fds_.fill(-1); }
  ~HostSide() override { CloseAll(); }

  Outcome Apply(const Op& op) override {
    Outcome out;
    bool slot_op = IsSlotOp(op.kind);
    if (slot_op && op.kind != Kind::kOpen && fds_[op.slot] < 0) return Outcome{0, {}, true};
    if (slot_op && op.kind != Kind::kOpen) {
      if (std::optional<Outcome> bad = FdCheck(op, flags_[op.slot])) return *bad;
    }
    if (op.kind == Kind::kOpen && fds_[op.slot] >= 0) CloseSlot(op.slot);
    RunAs(CredOf(op.cred), [&] { out = Call(op); });
    if (out.err == 0) After(op, &out);
    return out;
  }

  void CloseAll() override {
    for (int i = 0; i < kSlots; ++i) CloseSlot(i);
  }

  bool Snapshot(Tree* tree, std::string* error) override {
    tree->clear();
    return Walk("/", tree, error);
  }

 private:
  static bool IsSlotOp(Kind k) {
    return k == Kind::kOpen || k == Kind::kClose || k == Kind::kRead || k == Kind::kWrite ||
           k == Kind::kFTruncate || k == Kind::kFStat || k == Kind::kSeekData ||
           k == Kind::kSeekHole;
  }

  std::string P(const std::string& rel) const { return rel == "/" ? root_ : root_ + rel; }

  void CloseSlot(int slot) {
    if (fds_[slot] >= 0) close(fds_[slot]);
    fds_[slot] = -1;
  }

  // The call itself, on the thread with the op's credentials.
  Outcome Call(const Op& op) {
    const std::string a = P(op.a);
    const std::string b = P(op.b);
    int fd = op.kind == Kind::kOpen ? -1 : fds_[op.slot];
    switch (op.kind) {
      case Kind::kOpen: {
        int f = open(a.c_str(), op.flags | O_CLOEXEC, op.mode);
        if (f < 0) return Fail();
        fds_[op.slot] = f;
        flags_[op.slot] = op.flags;
        return {};
      }
      case Kind::kClose: {
        int rc = close(fd);
        fds_[op.slot] = -1;
        return rc < 0 ? Fail() : Outcome{};
      }
      case Kind::kRead: {
        std::string buf(static_cast<size_t>(op.len), '\0');
        ssize_t n = pread(fd, buf.data(), buf.size(), static_cast<off_t>(op.off));
        if (n < 0) return Fail();
        buf.resize(static_cast<size_t>(n));
        return Outcome{0, DataString(buf), false};
      }
      case Kind::kWrite: {
        std::string data = Payload(op.fill, static_cast<size_t>(op.len));
        // With O_APPEND, Linux's pwrite ignores the offset and appends, like write.
        ssize_t n = pwrite(fd, data.data(), data.size(), static_cast<off_t>(op.off));
        if (n < 0) return Fail();
        std::string v = "n=" + std::to_string(n);
        if (flags_[op.slot] & O_APPEND) {
          struct stat st;
          fstat(fd, &st);
          v += " at=" + std::to_string(st.st_size - n);
        }
        return Outcome{0, v, false};
      }
      case Kind::kFTruncate:
        return ftruncate(fd, op.len) < 0 ? Fail() : Outcome{};
      case Kind::kFStat: {
        struct stat st;
        if (fstat(fd, &st) < 0) return Fail();
        return Outcome{0, StatOf(st), false};
      }
      case Kind::kSeekData:
      case Kind::kSeekHole: {
        // What lseek means on a directory is each file system's own business (ext4 treats it
        // as a hash position): only regular files are compared.
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) return Outcome{0, "directory", false};
        off_t r = lseek(fd, static_cast<off_t>(op.off),
                        op.kind == Kind::kSeekData ? SEEK_DATA : SEEK_HOLE);
        if (r < 0) return Fail();
        return Outcome{0, "pos=" + std::to_string(r), false};
      }
      case Kind::kTruncate:
        return truncate(a.c_str(), op.len) < 0 ? Fail() : Outcome{};
      case Kind::kUnlink:
        return unlink(a.c_str()) < 0 ? Fail() : Outcome{};
      case Kind::kMkdir:
        return mkdir(a.c_str(), op.mode) < 0 ? Fail() : Outcome{};
      case Kind::kRmdir:
        return rmdir(a.c_str()) < 0 ? Fail() : Outcome{};
      case Kind::kRename:
        return syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(),
                       static_cast<unsigned>(op.flags)) < 0
                   ? Fail()
                   : Outcome{};
      case Kind::kLink:
        return linkat(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), 0) < 0 ? Fail() : Outcome{};
      case Kind::kSymlink:
        return symlink(op.a.c_str(), b.c_str()) < 0 ? Fail() : Outcome{};
      case Kind::kReadlink: {
        char buf[4096];
        ssize_t n = readlink(a.c_str(), buf, sizeof buf);
        if (n < 0) return Fail();
        return Outcome{0, std::string(buf, static_cast<size_t>(n)), false};
      }
      case Kind::kChmod:
        return chmod(a.c_str(), op.mode) < 0 ? Fail() : Outcome{};
      case Kind::kChown:
        return chown(a.c_str(), op.uid, op.gid) < 0 ? Fail() : Outcome{};
      case Kind::kUtimens:
        return utimensat(AT_FDCWD, a.c_str(), op.times, op.follow ? 0 : AT_SYMLINK_NOFOLLOW) < 0
                   ? Fail()
                   : Outcome{};
      case Kind::kSetXattr: {
        std::string v = Payload(op.fill, static_cast<size_t>(op.len));
        int rc = op.follow ? setxattr(a.c_str(), op.name.c_str(), v.data(), v.size(), op.flags)
                           : lsetxattr(a.c_str(), op.name.c_str(), v.data(), v.size(), op.flags);
        return rc < 0 ? Fail() : Outcome{};
      }
      case Kind::kGetXattr: {
        std::string v(65536, '\0');
        ssize_t n = op.follow ? getxattr(a.c_str(), op.name.c_str(), v.data(), v.size())
                              : lgetxattr(a.c_str(), op.name.c_str(), v.data(), v.size());
        if (n < 0) return Fail();
        v.resize(static_cast<size_t>(n));
        return Outcome{0, DataString(v), false};
      }
      case Kind::kRemoveXattr: {
        int rc = op.follow ? removexattr(a.c_str(), op.name.c_str())
                           : lremovexattr(a.c_str(), op.name.c_str());
        return rc < 0 ? Fail() : Outcome{};
      }
      case Kind::kListXattr: {
        std::vector<std::string> names;
        if (!ListX(a, op.follow, &names)) return Fail();
        std::string v;
        for (const std::string& n : names) v += n + ",";
        return Outcome{0, v, false};
      }
      case Kind::kStat: {
        struct stat sa, sb;
        int ra = op.follow ? stat(a.c_str(), &sa) : lstat(a.c_str(), &sa);
        if (ra < 0) return Fail();
        int rb = op.follow ? stat(b.c_str(), &sb) : lstat(b.c_str(), &sb);
        std::string same = rb < 0 ? "-" : (sa.st_ino == sb.st_ino ? "1" : "0");
        return Outcome{0, StatOf(sa) + " same=" + same, false};
      }
      case Kind::kAccess:
        return syscall(SYS_faccessat2, AT_FDCWD, a.c_str(), op.flags,
                       AT_EACCESS | (op.follow ? 0 : AT_SYMLINK_NOFOLLOW)) < 0
                   ? Fail()
                   : Outcome{};
      case Kind::kReadDir: {
        int dfd = open(a.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) return Fail();
        std::vector<std::string> names;
        if (!ListDir(dfd, &names)) return Fail();
        std::string v;
        for (const std::string& n : names) v += n + ",";
        return Outcome{0, v, false};
      }
    }
    return {};
  }

  // State the call left, read back as root, for the ops whose effect a later op might not show.
  void After(const Op& op, Outcome* out) {
    struct stat st;
    const std::string a = P(op.a);
    switch (op.kind) {
      case Kind::kOpen:
        if (fstat(fds_[op.slot], &st) == 0) out->value = StatOf(st);
        break;
      case Kind::kMkdir:
      case Kind::kChmod:
      case Kind::kChown:
      case Kind::kTruncate:
        if (stat(a.c_str(), &st) == 0) out->value = StatOf(st);
        break;
      case Kind::kUtimens:
        if ((op.follow ? stat(a.c_str(), &st) : lstat(a.c_str(), &st)) == 0) {
          out->value = TimesOf(st, op.times);
        }
        break;
      case Kind::kFTruncate:
        if (fstat(fds_[op.slot], &st) == 0) out->value = StatOf(st);
        break;
      default:
        break;
    }
  }

  static bool ListX(const std::string& p, bool follow, std::vector<std::string>* names) {
    std::string buf(65536, '\0');
    ssize_t n = follow ? listxattr(p.c_str(), buf.data(), buf.size())
                       : llistxattr(p.c_str(), buf.data(), buf.size());
    if (n < 0) return false;
    for (size_t i = 0; i < static_cast<size_t>(n);) {
      std::string name(buf.data() + i);
      i += name.size() + 1;
      names->push_back(name);
    }
    std::sort(names->begin(), names->end());
    return true;
  }

  // "name:type" of every entry but "." and "..", sorted; closes dfd.
  static bool ListDir(int dfd, std::vector<std::string>* names) {
    DIR* d = fdopendir(dfd);
    if (d == nullptr) {
      int e = errno;
      close(dfd);
      errno = e;
      return false;
    }
    errno = 0;
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      names->push_back(n + ":" + TypeChar(e->d_type));
    }
    int e = errno;
    closedir(d);
    std::sort(names->begin(), names->end());
    errno = e;
    return e == 0;
  }

  bool Walk(const std::string& rel, Tree* tree, std::string* error) {
    const std::string p = P(rel);
    struct stat st;
    if (lstat(p.c_str(), &st) < 0) {
      *error = "host lstat " + rel + ": " + std::strerror(errno);
      return false;
    }
    Entry& e = (*tree)[rel];
    e.mode = st.st_mode;
    e.nlink = static_cast<uint32_t>(st.st_nlink);
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.size = S_ISDIR(st.st_mode) ? 0 : static_cast<uint64_t>(st.st_size);
    e.ino = st.st_ino;
    std::vector<std::string> xnames;
    if (!ListX(p, false, &xnames)) {
      *error = "host llistxattr " + rel + ": " + std::strerror(errno);
      return false;
    }
    for (const std::string& n : xnames) {
      std::string v(65536, '\0');
      ssize_t len = lgetxattr(p.c_str(), n.c_str(), v.data(), v.size());
      if (len < 0) continue;
      v.resize(static_cast<size_t>(len));
      e.xattrs[n] = v;
    }
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t n = readlink(p.c_str(), buf, sizeof buf);
      if (n >= 0) e.target.assign(buf, static_cast<size_t>(n));
    } else if (S_ISREG(st.st_mode)) {
      int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        *error = "host open " + rel + ": " + std::strerror(errno);
        return false;
      }
      std::string buf(1 << 16, '\0');
      ssize_t n;
      while ((n = read(fd, buf.data(), buf.size())) > 0) e.content.append(buf.data(), size_t(n));
      close(fd);
    } else if (S_ISDIR(st.st_mode)) {
      int dfd = open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      std::vector<std::string> names;
      if (dfd < 0 || !ListDir(dfd, &names)) {
        *error = "host readdir " + rel + ": " + std::strerror(errno);
        return false;
      }
      for (const std::string& n : names) {
        std::string name = n.substr(0, n.rfind(':'));
        if (!Walk(rel == "/" ? "/" + name : rel + "/" + name, tree, error)) return false;
      }
    }
    return true;
  }

  std::string root_;
  std::array<int, kSlots> fds_;
  std::array<int, kSlots> flags_{};
};

}  // namespace

std::unique_ptr<Side> MakeHostSide(const std::string& root) {
  return std::make_unique<HostSide>(root);
}

}  // namespace amino::schema::testing::model
