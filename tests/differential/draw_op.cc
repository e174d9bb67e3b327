// One random operation: its kind drawn by weight, then the call's arguments, with random flags,
// offsets, sizes and modes that include the error cases (bad descriptors, missing and existing
// names, wrong file types, invalid flags, too-long names, symbolic-link loops).
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <array>
#include <cstdio>

#include "draw.h"

namespace amino::fuzz {

bool IsDirName(int name) {
  for (int d : kDirNames) {
    if (d == name && d != 4 && d != 5 && d != 6) return true;  // e, l, d/e are often files
  }
  return name == 11 || name == 12;  // ".", "d/."
}

namespace {

int64_t OpenFlags(Rng& r) {
  static constexpr std::array<int64_t, 4> kAccess = {O_RDONLY, O_WRONLY, O_RDWR, O_ACCMODE};
  int64_t f = r.Below(20) == 0 ? O_ACCMODE : kAccess[static_cast<size_t>(r.Below(3))];
  struct Bit {
    int64_t flag;
    int percent;
  };
  static constexpr Bit kBits[] = {
      {O_CREAT, 45},    {O_EXCL, 12},    {O_TRUNC, 15},   {O_APPEND, 15}, {O_NONBLOCK, 8},
      {O_DIRECTORY, 8}, {O_NOFOLLOW, 8}, {O_CLOEXEC, 20}, {O_PATH, 6},    {O_SYNC, 4},
      {O_DSYNC, 4},     {O_NOATIME, 4},  {O_NOCTTY, 4},
  };
  for (const Bit& b : kBits) {
    if (r.Chance(b.percent)) f |= b.flag;
  }
  // O_TMPFILE includes O_DIRECTORY; it needs a writable access mode to succeed.
  if (r.Below(40) == 0) f = (f & ~O_ACCMODE & ~O_CREAT) | O_TMPFILE | (r.Chance(80) ? O_RDWR : 0);
  return f;
}

struct Weight {
  Kind kind;
  int weight;
};

constexpr Weight kWeights[] = {
    {Kind::kOpen, 8},       {Kind::kOpenat, 14},       {Kind::kOpenat2, 4},
    {Kind::kCreat, 4},      {Kind::kClose, 6},         {Kind::kCloseRange, 1},
    {Kind::kDup, 2},        {Kind::kDup2, 2},          {Kind::kDup3, 2},
    {Kind::kFcntlDupfd, 2}, {Kind::kFcntlFl, 3},       {Kind::kFcntlFd, 2},
    {Kind::kFcntlBad, 1},   {Kind::kRead, 5},          {Kind::kPread, 4},
    {Kind::kReadv, 2},      {Kind::kPreadv, 2},        {Kind::kPreadv2, 2},
    {Kind::kWrite, 8},      {Kind::kPwrite, 6},        {Kind::kWritev, 3},
    {Kind::kPwritev, 2},    {Kind::kPwritev2, 3},      {Kind::kLseek, 5},
    {Kind::kFtruncate, 3},  {Kind::kTruncate, 3},      {Kind::kFsync, 1},
    {Kind::kFdatasync, 1},  {Kind::kCopyFileRange, 3}, {Kind::kSendfile, 2},
    {Kind::kMmapRead, 2},   {Kind::kMmapWrite, 2},     {Kind::kGetdents, 6},
    {Kind::kStat, 3},       {Kind::kLstat, 3},         {Kind::kFstat, 3},
    {Kind::kFstatat, 3},    {Kind::kStatx, 3},         {Kind::kStatfs, 1},
    {Kind::kFstatfs, 1},    {Kind::kChmod, 2},         {Kind::kFchmod, 2},
    {Kind::kFchmodat, 2},   {Kind::kFchmodat2, 1},     {Kind::kChown, 1},
    {Kind::kLchown, 1},     {Kind::kFchown, 1},        {Kind::kFchownat, 1},
    {Kind::kUtimensat, 3},  {Kind::kFutimens, 2},      {Kind::kAccess, 2},
    {Kind::kFaccessat, 2},  {Kind::kFaccessat2, 2},    {Kind::kSetxattr, 6},
    {Kind::kGetxattr, 3},   {Kind::kListxattr, 2},     {Kind::kRemovexattr, 2},
    {Kind::kMkdir, 5},      {Kind::kMkdirat, 3},       {Kind::kRmdir, 4},
    {Kind::kUnlink, 5},     {Kind::kUnlinkat, 3},      {Kind::kRename, 4},
    {Kind::kRenameat, 2},   {Kind::kRenameat2, 4},     {Kind::kLink, 3},
    {Kind::kLinkat, 2},     {Kind::kSymlink, 3},       {Kind::kSymlinkat, 2},
    {Kind::kReadlink, 2},   {Kind::kReadlinkat, 1},    {Kind::kChdir, 2},
    {Kind::kFchdir, 2},     {Kind::kChdirRoot, 3},     {Kind::kGetcwd, 1},
    {Kind::kUmask, 1},      {Kind::kBind, 2},          {Kind::kConnect, 2},
};

Kind PickKind(Rng& r) {
  static const int total = [] {
    int t = 0;
    for (const Weight& w : kWeights) t += w.weight;
    return t;
  }();
  int x = r.Below(total);
  for (const Weight& w : kWeights) {
    if ((x -= w.weight) < 0) return w.kind;
  }
  return Kind::kStat;
}

Role NameRole(Kind k) {
  switch (k) {
    case Kind::kCreat:
    case Kind::kTruncate:
    case Kind::kUnlink:
    case Kind::kLink:
      return Role::kFile;
    case Kind::kMkdir:
    case Kind::kMkdirat:
    case Kind::kRmdir:
    case Kind::kChdir:
      return Role::kDir;
    case Kind::kSymlink:
    case Kind::kSymlinkat:
    case Kind::kReadlink:
    case Kind::kReadlinkat:
      return Role::kLink;
    case Kind::kSetxattr:
    case Kind::kGetxattr:
    case Kind::kListxattr:
    case Kind::kRemovexattr:
      return Role::kXattr;
    default:
      return Role::kAny;
  }
}

// The kind of descriptor a call mostly wants in its first slot.
Use SlotUse(Kind k) {
  switch (k) {
    case Kind::kGetdents:
    case Kind::kFchdir:
      return Use::kDir;
    default:
      return Use::kFile;
  }
}

}  // namespace

// Long by design: one case per operation kind, each drawing that call's arguments (error cases
// included); the table reads best whole.
Op DrawOp(Rng& r, const SlotGuess& slots) {
  Op op;
  op.kind = PickKind(r);
  // The common fields are drawn for every kind, in the same order.
  op.slot = slots.Pick(r, SlotUse(op.kind));
  op.slot2 = slots.Pick(r, Use::kFile);
  op.dst = r.Below(kSlots);
  op.dir = r.Chance(75) ? -1 : slots.Pick(r, Use::kDir);
  op.dir2 = r.Chance(75) ? -1 : slots.Pick(r, Use::kDir);
  op.name = PickName(r, NameRole(op.kind));
  op.name2 = PickName(r, NameRole(op.kind));
  op.data = r.Next();
  op.form = r.Below(16);
  switch (op.kind) {
    case Kind::kOpen:
    case Kind::kOpenat:
      op.a = OpenFlags(r);
      op.b = r.Pick(kCreateModes);
      if (op.a & O_CREAT) op.name = PickName(r, Role::kFile);
      // Directories open only for reading: mostly do that, so that directory slots exist.
      if (IsDirName(op.name) && r.Chance(70)) op.a &= ~(O_ACCMODE | O_CREAT | O_TMPFILE);
      break;
    case Kind::kOpenat2: {
      op.a = OpenFlags(r);
      // openat2 refuses a mode without O_CREAT or O_TMPFILE: sometimes give one anyway.
      op.b = (op.a & O_CREAT) || r.Chance(8) ? r.Pick(kCreateModes) : 0;
      static constexpr std::array<int64_t, 7> kResolve = {
          0, 0, 0, RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH, RESOLVE_IN_ROOT, RESOLVE_NO_MAGICLINKS};
      op.c = r.Pick(kResolve);
      // The struct's size (see the executor): mostly its own.
      op.form = r.Chance(85) ? 0 : 5 + r.Below(3);
      break;
    }
    case Kind::kCreat:
      op.b = r.Pick(kCreateModes);
      break;
    case Kind::kCloseRange: {
      static constexpr std::array<int64_t, 4> kFirst = {3, 4, 6, 10};
      op.a = r.Pick(kFirst);
      static constexpr std::array<int64_t, 3> kSpan = {0, 2, -1};  // -1: to ~0U
      op.b = r.PickOr(kSpan, -2);                                  // -2: last < first
      static constexpr std::array<int64_t, 4> kFlags = {0, 0, CLOSE_RANGE_CLOEXEC,
                                                        CLOSE_RANGE_UNSHARE};
      op.c = r.PickOr(kFlags, 0x80);
      break;
    }
    case Kind::kDup2:
    case Kind::kDup3: {
      // The target number: one of a few fixed numbers, or another slot's descriptor (which
      // dup2 closes first), or the source itself (dup2: a no-op; dup3: EINVAL).
      static constexpr std::array<int64_t, 6> kTarget = {10, 11, 20, -1, -1, -1};
      op.a = r.PickOr(kTarget, -2);  // -1: slot2's descriptor, -2: the source's own
      static constexpr std::array<int64_t, 2> kFlags = {0, O_CLOEXEC};
      op.b = r.PickOr(kFlags, O_APPEND);
      break;
    }
    case Kind::kFcntlDupfd: {
      static constexpr std::array<int64_t, 4> kMin = {0, 3, 10, 100};
      op.a = r.Pick(kMin);
      op.b = r.Chance(50) ? F_DUPFD : F_DUPFD_CLOEXEC;
      break;
    }
    case Kind::kFcntlFl: {
      op.a = r.Chance(40) ? F_GETFL : F_SETFL;
      static constexpr std::array<int64_t, 6> kFl = {
          0, O_APPEND, O_NONBLOCK, O_APPEND | O_NONBLOCK, O_NOATIME, O_RDWR | O_TRUNC};
      op.b = r.Pick(kFl);
      break;
    }
    case Kind::kFcntlFd:
      op.a = r.Chance(40) ? F_GETFD : F_SETFD;
      op.b = r.Chance(50) ? FD_CLOEXEC : 0;
      break;
    case Kind::kRead:
    case Kind::kPread:
    case Kind::kReadv:
    case Kind::kPreadv:
    case Kind::kPreadv2:
    case Kind::kWrite:
    case Kind::kPwrite:
    case Kind::kWritev:
    case Kind::kPwritev:
    case Kind::kPwritev2: {
      op.a = r.Pick(kSizes);
      op.b = r.PickOr(kOffsets, r.Chance(50) ? -1 : -4096);
      if ((op.kind == Kind::kPreadv2 || op.kind == Kind::kPwritev2) && r.Chance(30)) op.b = -1;
      // RWF_* flags; 0x100 is not a flag (EOPNOTSUPP). RWF_NOWAIT only for writes: a buffered
      // read with it fails or not depending on what is cached.
      static constexpr std::array<int64_t, 5> kReadRwf = {0, 0, 0, RWF_HIPRI, RWF_DSYNC};
      static constexpr std::array<int64_t, 7> kWriteRwf = {
          0, 0, 0, RWF_APPEND, RWF_DSYNC, RWF_SYNC, RWF_NOWAIT};
      op.c = op.kind == Kind::kPreadv2 ? r.PickOr(kReadRwf, 0x100) : r.PickOr(kWriteRwf, 0x100);
      break;
    }
    case Kind::kLseek: {
      static constexpr std::array<int64_t, 6> kSeekOffsets = {0,    1,    100,
                                                              4096, 5000, int64_t{1} << 40};
      op.a = r.PickOr(kSeekOffsets, -5000);
      if (r.Chance(10)) op.a = -1;  // valid from SEEK_CUR and SEEK_END only when not before 0
      static constexpr std::array<int64_t, 5> kWhence = {SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA,
                                                         SEEK_HOLE};
      op.b = r.PickOr(kWhence, 7);
      break;
    }
    case Kind::kFtruncate:
    case Kind::kTruncate:
      op.a = r.PickOr(kLengths, -1);
      break;
    case Kind::kCopyFileRange:
    case Kind::kSendfile:
      op.a = r.Pick(kSizes);
      op.b = r.Chance(50) ? -2 : r.PickOr(kOffsets, -1);  // -2: no offset pointer (use the file's)
      op.c = r.Chance(50) ? -2 : r.PickOr(kOffsets, -1);
      if (op.kind == Kind::kCopyFileRange && r.Chance(Rng::kInvalidPercent)) op.form = 99;
      break;
    case Kind::kMmapRead:
    case Kind::kMmapWrite: {
      static constexpr std::array<int64_t, 5> kMapLen = {1, 100, 4096, 8192, 10000};
      static constexpr std::array<int64_t, 4> kMapOff = {0, 0, 4096, 8192};
      op.a = r.Pick(kMapLen);
      op.b = r.PickOr(kMapOff, 100);
      break;
    }
    case Kind::kGetdents: {
      // Room for the longest entry (280 bytes) at least: which entry comes first, so whether
      // a smaller buffer holds it, is the file system's order.
      static constexpr std::array<int64_t, 4> kBuf = {280, 300, 512, 32768};
      op.a = r.PickOr(kBuf, 1);
      break;
    }
    case Kind::kFstatat: {
      static constexpr std::array<int64_t, 4> kFlags = {0, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH,
                                                        AT_NO_AUTOMOUNT};
      op.a = r.PickOr(kFlags, 0x1);
      break;
    }
    case Kind::kStatx: {
      static constexpr std::array<int64_t, 4> kFlags = {0, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH,
                                                        AT_STATX_FORCE_SYNC};
      op.a = r.PickOr(kFlags, AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC);
      static constexpr std::array<int64_t, 4> kMask = {STATX_BASIC_STATS, STATX_ALL, 0, STATX_SIZE};
      op.b = r.Pick(kMask);
      break;
    }
    case Kind::kChmod:
    case Kind::kFchmod:
    case Kind::kFchmodat:
    case Kind::kFchmodat2:
      op.a = r.Pick(kModes);
      if (op.kind == Kind::kFchmodat2) {
        static constexpr std::array<int64_t, 3> kFlags = {0, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH};
        op.b = r.PickOr(kFlags, 0x1);
      }
      break;
    case Kind::kChown:
    case Kind::kLchown:
    case Kind::kFchown:
    case Kind::kFchownat: {
      op.a = r.Below(4);  // owner choice (see the executor's table)
      op.b = r.Below(4);  // group choice
      static constexpr std::array<int64_t, 3> kFlags = {0, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH};
      op.c = r.PickOr(kFlags, 0x1);
      break;
    }
    case Kind::kUtimensat:
    case Kind::kFutimens: {
      // Indices into the executor's table of times; 7 is an invalid one.
      static constexpr std::array<int64_t, 7> kTimes = {0, 1, 2, 3, 4, 5, 6};
      op.a = r.PickOr(kTimes, 7);
      op.b = r.Pick(kTimes);
      static constexpr std::array<int64_t, 3> kFlags = {0, 0, AT_SYMLINK_NOFOLLOW};
      op.c = r.PickOr(kFlags, 0x1);
      if (r.Below(10) == 0) op.form = 99;  // times == NULL: both now
      break;
    }
    case Kind::kAccess:
    case Kind::kFaccessat:
    case Kind::kFaccessat2: {
      static constexpr std::array<int64_t, 5> kAccessModes = {F_OK, R_OK, W_OK, X_OK, R_OK | W_OK};
      op.a = r.PickOr(kAccessModes, 0x10);
      static constexpr std::array<int64_t, 4> kFlags = {0, AT_EACCESS, AT_SYMLINK_NOFOLLOW,
                                                        AT_EMPTY_PATH};
      op.b = r.PickOr(kFlags, 0x1);
      break;
    }
    case Kind::kSetxattr:
    case Kind::kGetxattr:
    case Kind::kListxattr:
    case Kind::kRemovexattr: {
      // Mostly user.a and user.b, so that set, get and remove meet; now and then a name that
      // is refused (see Pool::XattrNames).
      static constexpr std::array<int64_t, 6> kUsual = {0, 0, 0, 1, 1, 2};
      const int names = static_cast<int>(Pool::XattrNames().size());
      op.a = r.Chance(85) ? r.Pick(kUsual) : 3 + r.Below(names - 3);
      if (op.kind != Kind::kSetxattr && op.a == 2 && r.Chance(50)) op.a = 0;
      if (op.kind == Kind::kSetxattr) {
        // Four names of 900 bytes fit ext4's one block per file: the space for attributes is
        // each file system's own (Amino's is larger), so the draw stays within it.
        static constexpr std::array<int64_t, 6> kLen = {0, 1, 10, 100, 100, 900};
        op.b = r.PickOr(kLen, 70000);
        static constexpr std::array<int64_t, 5> kFlags = {0, 0, 0, XATTR_CREATE, XATTR_REPLACE};
        op.c = r.PickOr(kFlags, 0x4);
      } else {
        static constexpr std::array<int64_t, 4> kBuf = {0, 16, 4096, 65536};
        op.b = r.PickOr(kBuf, 1);
      }
      op.form = r.Below(3);  // path, l-path, descriptor
      break;
    }
    case Kind::kMkdir:
    case Kind::kMkdirat:
      op.a = r.Pick(kDirModes);
      break;
    case Kind::kUnlinkat: {
      static constexpr std::array<int64_t, 2> kFlags = {0, AT_REMOVEDIR};
      op.a = r.PickOr(kFlags, 0x1);
      break;
    }
    case Kind::kRenameat2: {
      static constexpr std::array<int64_t, 4> kFlags = {0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE};
      op.a = r.PickOr(kFlags, r.Chance(50) ? RENAME_NOREPLACE | RENAME_EXCHANGE : 0x10);
      break;
    }
    case Kind::kLinkat: {
      static constexpr std::array<int64_t, 3> kFlags = {0, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH};
      op.a = r.PickOr(kFlags, 0x1);
      break;
    }
    case Kind::kSymlink:
    case Kind::kSymlinkat:
      op.name2 = PickTarget(r);
      break;
    case Kind::kReadlink:
    case Kind::kReadlinkat: {
      static constexpr std::array<int64_t, 3> kBuf = {1, 64, 4096};
      op.a = r.PickOr(kBuf, 0);
      break;
    }
    case Kind::kGetcwd:
      op.a = r.Chance(10) ? 1 : 4096;
      break;
    case Kind::kUmask:
      op.a = r.Pick(kUmasks);
      break;
    case Kind::kConnect:
      if (r.Chance(60) && slots.last_bound >= 0) op.name = slots.last_bound;
      break;
    default:
      break;
  }
  return op;
}

}  // namespace amino::fuzz
