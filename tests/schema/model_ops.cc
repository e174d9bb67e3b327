#include "model_ops.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <array>
#include <cinttypes>
#include <cstdio>

namespace amino::schema::testing::model {
namespace {

// Few names, so that calls collide: the same name is created, removed, renamed onto and linked
// to again and again, at depths up to three.
constexpr std::array<const char*, 4> kNames = {"a", "b", "c", "d"};

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}

  uint64_t Below(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool Chance(int percent) { return Below(100) < static_cast<uint64_t>(percent); }
  template <typename T, size_t N>
  T Pick(const std::array<T, N>& a) {
    return a[Below(N)];
  }

  std::string Name() { return kNames[Below(kNames.size())]; }

  // A mount-relative path of depth 1..3. Some carry the forms resolution must handle: a
  // trailing slash, "." components, doubled slashes, "x/.." detours. None climbs above the root
  // (a ".." only ever follows a name), so the host side never leaves its scratch directory.
  std::string Path(bool allow_root = false) {
    if (allow_root && Chance(4)) return "/";
    int depth = 1 + static_cast<int>(Below(10) < 5 ? 0 : Below(10) < 7 ? 1 : 2);
    std::string p;
    for (int i = 0; i < depth; ++i) {
      p += "/";
      if (Chance(2)) p += "/";
      if (Chance(3)) p += "./";
      if (Chance(3)) p += Name() + "/../";
      p += Name();
    }
    if (Chance(5)) p += "/";
    return p;
  }

  // A relative symbolic-link target without "." or "..": it always resolves below the link's
  // directory, so no sequence of links and ".." can leave the mount.
  std::string Target() {
    if (Chance(3)) return "";
    std::string t = Name();
    if (Chance(30)) t += "/" + Name();
    if (Chance(5)) t += "/";
    return t;
  }

  uint64_t Offset() {
    switch (Below(10)) {
      case 0:
      case 1:
        return 0;
      case 2:
      case 3:
      case 4:
        return Below(10000);
      case 5:
      case 6: {
        int64_t page = static_cast<int64_t>(Below(8));
        int64_t off = page * 4096 + static_cast<int64_t>(Below(9)) - 4;
        return off < 0 ? 0 : static_cast<uint64_t>(off);
      }
      case 7:
      case 8:
        return Below(300000);
      default:
        return Below(4 << 20);  // far past the end: a hole
    }
  }

  int64_t Length(int64_t max) {
    if (Chance(5)) return 0;
    return 1 + static_cast<int64_t>(Below(static_cast<uint64_t>(max)));
  }

  uint32_t Mode() {
    static constexpr std::array<uint32_t, 14> kModes = {
        0644, 0600, 0755, 0700, 0444, 0, 0777, 04755, 02755, 01777, 0666, 02644, 0311, 0570};
    return Pick(kModes);
  }

  uint32_t Id() {
    static constexpr std::array<uint32_t, 4> kIds = {0, 1000, 1001, static_cast<uint32_t>(-1)};
    return Pick(kIds);
  }

  timespec Time() {
    timespec t{};
    switch (Below(6)) {
      case 0:
        t.tv_nsec = UTIME_OMIT;
        break;
      case 1:
        t.tv_sec = 0;
        t.tv_nsec = static_cast<long>(Below(1000000000));
        break;
      default:
        t.tv_sec = static_cast<time_t>(1000000000 + Below(1000000000));
        t.tv_nsec = static_cast<long>(Below(1000000000));
        break;
    }
    return t;
  }

  int OpenFlags() {
    static constexpr std::array<int, 3> kAccess = {O_RDONLY, O_WRONLY, O_RDWR};
    int f = Pick(kAccess);
    if (Chance(50)) f |= O_CREAT;
    if (Chance(15)) f |= O_EXCL;
    if (Chance(15)) f |= O_TRUNC;
    if (Chance(15)) f |= O_APPEND;
    if (Chance(10)) f |= O_DIRECTORY;
    if (Chance(10)) f |= O_NOFOLLOW;
    return f;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

struct Weighted {
  Kind kind;
  int weight;
};

constexpr std::array<Weighted, 26> kWeights = {{
    {Kind::kOpen, 14},     {Kind::kClose, 6},       {Kind::kRead, 8},      {Kind::kWrite, 12},
    {Kind::kFTruncate, 3}, {Kind::kFStat, 3},       {Kind::kSeekData, 2},  {Kind::kSeekHole, 2},
    {Kind::kTruncate, 3},  {Kind::kUnlink, 6},      {Kind::kMkdir, 7},     {Kind::kRmdir, 4},
    {Kind::kRename, 8},    {Kind::kLink, 4},        {Kind::kSymlink, 4},   {Kind::kReadlink, 2},
    {Kind::kChmod, 3},     {Kind::kChown, 2},       {Kind::kUtimens, 2},   {Kind::kSetXattr, 3},
    {Kind::kGetXattr, 2},  {Kind::kRemoveXattr, 2}, {Kind::kListXattr, 1}, {Kind::kStat, 5},
    {Kind::kAccess, 2},    {Kind::kReadDir, 3},
}};

Kind PickKind(Gen& g) {
  int total = 0;
  for (const Weighted& w : kWeights) total += w.weight;
  int r = static_cast<int>(g.Below(static_cast<uint64_t>(total)));
  for (const Weighted& w : kWeights) {
    if (r < w.weight) return w.kind;
    r -= w.weight;
  }
  return Kind::kStat;
}

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kOpen:
      return "open";
    case Kind::kClose:
      return "close";
    case Kind::kRead:
      return "read";
    case Kind::kWrite:
      return "write";
    case Kind::kFTruncate:
      return "ftruncate";
    case Kind::kFStat:
      return "fstat";
    case Kind::kSeekData:
      return "lseek_data";
    case Kind::kSeekHole:
      return "lseek_hole";
    case Kind::kTruncate:
      return "truncate";
    case Kind::kUnlink:
      return "unlink";
    case Kind::kMkdir:
      return "mkdir";
    case Kind::kRmdir:
      return "rmdir";
    case Kind::kRename:
      return "rename";
    case Kind::kLink:
      return "link";
    case Kind::kSymlink:
      return "symlink";
    case Kind::kReadlink:
      return "readlink";
    case Kind::kChmod:
      return "chmod";
    case Kind::kChown:
      return "chown";
    case Kind::kUtimens:
      return "utimens";
    case Kind::kSetXattr:
      return "setxattr";
    case Kind::kGetXattr:
      return "getxattr";
    case Kind::kRemoveXattr:
      return "removexattr";
    case Kind::kListXattr:
      return "listxattr";
    case Kind::kStat:
      return "stat";
    case Kind::kAccess:
      return "access";
    case Kind::kReadDir:
      return "readdir";
  }
  return "?";
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

std::string Oct(uint32_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0%o", m);
  return buf;
}

std::string TimeString(const timespec& t) {
  if (t.tv_nsec == UTIME_OMIT) return "UTIME_OMIT";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld.%09ld", static_cast<long long>(t.tv_sec), t.tv_nsec);
  return buf;
}

}  // namespace

std::string Payload(uint8_t fill, size_t len) {
  std::string s(len, '\0');
  // Not a constant byte: a shifted or misplaced page would still compare equal otherwise.
  for (size_t i = 0; i < len; ++i) s[i] = static_cast<char>(fill + i * 7 + (i >> 12));
  return s;
}

std::string FlagsString(int f) {
  std::string s;
  switch (f & O_ACCMODE) {
    case O_RDONLY:
      s = "O_RDONLY";
      break;
    case O_WRONLY:
      s = "O_WRONLY";
      break;
    default:
      s = "O_RDWR";
      break;
  }
  if (f & O_CREAT) s += "|O_CREAT";
  if (f & O_EXCL) s += "|O_EXCL";
  if (f & O_TRUNC) s += "|O_TRUNC";
  if (f & O_APPEND) s += "|O_APPEND";
  if (f & O_DIRECTORY) s += "|O_DIRECTORY";
  if (f & O_NOFOLLOW) s += "|O_NOFOLLOW";
  return s;
}

// Long by design: one case per operation kind, each drawing that call's arguments; the table
// reads best whole.
std::vector<Op> Generate(uint64_t seed, size_t n) {
  Gen g(seed);
  std::vector<Op> ops;
  ops.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Op op;
    op.kind = PickKind(g);
    // Mostly root, so the tree grows; a third of the calls as one of two users.
    op.cred = g.Chance(70) ? 0 : 1 + static_cast<int>(g.Below(2));
    op.slot = static_cast<int>(g.Below(kSlots));
    op.follow = !g.Chance(20);
    switch (op.kind) {
      case Kind::kOpen:
        op.a = g.Path(/*allow_root=*/true);
        op.flags = g.OpenFlags();
        op.mode = g.Mode();
        break;
      case Kind::kRead:
        op.off = g.Offset();
        op.len = g.Length(20000);
        break;
      case Kind::kWrite:
        op.off = g.Offset();
        op.len = g.Length(9000);
        op.fill = static_cast<uint8_t>(g.Below(256));
        break;
      case Kind::kTruncate:
        op.a = g.Path();
        [[fallthrough]];
      case Kind::kFTruncate:
        op.len = g.Chance(3) ? -1 : static_cast<int64_t>(g.Offset());
        break;
      case Kind::kSeekData:
      case Kind::kSeekHole:
        op.off = g.Offset();
        break;
      case Kind::kReadlink:
        op.a = g.Path(true);
        break;
      case Kind::kUnlink:
      case Kind::kRmdir:
        // Never the root: on the host that is the scratch directory itself, whose parent (/tmp,
        // sticky) decides the errno, and rmdir would remove it.
        op.a = g.Path();
        break;
      case Kind::kMkdir:
        op.a = g.Path(true);
        op.mode = g.Mode();
        break;
      case Kind::kRename: {
        op.a = g.Path();
        op.b = g.Path();
        int r = static_cast<int>(g.Below(20));
        op.flags = r < 13   ? 0
                   : r < 16 ? RENAME_NOREPLACE
                   : r < 19 ? RENAME_EXCHANGE
                            : RENAME_NOREPLACE | RENAME_EXCHANGE;
        break;
      }
      case Kind::kLink:
        op.a = g.Path(true);
        op.b = g.Path(true);
        break;
      case Kind::kSymlink:
        op.a = g.Target();
        op.b = g.Path(true);
        break;
      case Kind::kChmod:
        op.a = g.Path(true);
        op.mode = g.Mode();
        break;
      case Kind::kChown:
        op.a = g.Path(true);
        op.uid = g.Id();
        op.gid = g.Id();
        break;
      case Kind::kUtimens:
        op.a = g.Path(true);
        op.times[0] = g.Time();
        op.times[1] = g.Time();
        break;
      case Kind::kSetXattr:
        op.a = g.Path(true);
        op.name = g.Chance(50) ? "user.x" : "user.y";
        op.len = static_cast<int64_t>(g.Below(300));
        op.fill = static_cast<uint8_t>(g.Below(256));
        op.flags = g.Chance(70) ? 0 : g.Chance(50) ? XATTR_CREATE : XATTR_REPLACE;
        break;
      case Kind::kGetXattr:
      case Kind::kRemoveXattr:
        op.a = g.Path(true);
        op.name = g.Chance(50) ? "user.x" : "user.y";
        break;
      case Kind::kListXattr:
      case Kind::kReadDir:
        op.a = g.Path(true);
        break;
      case Kind::kStat:
        op.a = g.Path(true);
        op.b = g.Path(true);
        break;
      case Kind::kAccess: {
        static constexpr std::array<int, 6> kModes = {F_OK, R_OK,        W_OK,
                                                      X_OK, R_OK | W_OK, R_OK | X_OK};
        op.a = g.Path(true);
        op.flags = g.Pick(kModes);
        break;
      }
      case Kind::kClose:
      case Kind::kFStat:
        break;
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

std::string ToString(const Op& op) {
  std::string s = "cred=" + std::to_string(op.cred) + " " + KindName(op.kind) + "(";
  std::string slot = "slot=" + std::to_string(op.slot);
  std::string follow = op.follow ? "follow" : "nofollow";
  switch (op.kind) {
    case Kind::kOpen:
      s += slot + ", " + Quote(op.a) + ", " + FlagsString(op.flags) + ", " + Oct(op.mode);
      break;
    case Kind::kClose:
    case Kind::kFStat:
      s += slot;
      break;
    case Kind::kRead:
      s += slot + ", off=" + std::to_string(op.off) + ", len=" + std::to_string(op.len);
      break;
    case Kind::kWrite:
      s += slot + ", off=" + std::to_string(op.off) + ", len=" + std::to_string(op.len) +
           ", fill=" + std::to_string(op.fill);
      break;
    case Kind::kFTruncate:
      s += slot + ", len=" + std::to_string(op.len);
      break;
    case Kind::kSeekData:
    case Kind::kSeekHole:
      s += slot + ", off=" + std::to_string(op.off);
      break;
    case Kind::kTruncate:
      s += Quote(op.a) + ", len=" + std::to_string(op.len);
      break;
    case Kind::kUnlink:
    case Kind::kRmdir:
    case Kind::kReadlink:
    case Kind::kReadDir:
      s += Quote(op.a);
      break;
    case Kind::kListXattr:
      s += Quote(op.a) + ", " + follow;
      break;
    case Kind::kMkdir:
    case Kind::kChmod:
      s += Quote(op.a) + ", " + Oct(op.mode);
      break;
    case Kind::kRename:
      s += Quote(op.a) + ", " + Quote(op.b) + ", flags=" + std::to_string(op.flags);
      break;
    case Kind::kLink:
      s += Quote(op.a) + ", " + Quote(op.b);
      break;
    case Kind::kSymlink:
      s += "target=" + Quote(op.a) + ", " + Quote(op.b);
      break;
    case Kind::kChown:
      s += Quote(op.a) + ", " + std::to_string(static_cast<int32_t>(op.uid)) + ", " +
           std::to_string(static_cast<int32_t>(op.gid));
      break;
    case Kind::kUtimens:
      s += Quote(op.a) + ", atime=" + TimeString(op.times[0]) +
           ", mtime=" + TimeString(op.times[1]) + ", " + follow;
      break;
    case Kind::kSetXattr:
      s += Quote(op.a) + ", " + op.name + ", len=" + std::to_string(op.len) +
           ", fill=" + std::to_string(op.fill) + ", flags=" + std::to_string(op.flags) + ", " +
           follow;
      break;
    case Kind::kGetXattr:
    case Kind::kRemoveXattr:
      s += Quote(op.a) + ", " + op.name + ", " + follow;
      break;
    case Kind::kStat:
      s += Quote(op.a) + ", same_as=" + Quote(op.b) + ", " + follow;
      break;
    case Kind::kAccess:
      s += Quote(op.a) + ", mode=" + std::to_string(op.flags);
      break;
  }
  return s + ")";
}

}  // namespace amino::schema::testing::model
