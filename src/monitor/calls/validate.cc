#include "monitor/calls/validate.h"

#include <fcntl.h>
#include <linux/limits.h>
#include <linux/stat.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "monitor/syscall_numbers.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#define RENAME_EXCHANGE (1 << 1)
#define RENAME_WHITEOUT (1 << 2)
#endif

namespace amino::monitor::calls {

namespace {

// The kernel's __O_TMPFILE bit alone (O_TMPFILE carries O_DIRECTORY with it).
constexpr uint64_t kTmpfileBit = O_TMPFILE & ~O_DIRECTORY;
// include/linux/fcntl.h: the flags open_how may carry, and those O_PATH permits.
constexpr uint64_t kValidOpenFlags = O_RDONLY | O_WRONLY | O_RDWR | O_CREAT | O_EXCL | O_NOCTTY |
                                     O_TRUNC | O_APPEND | O_NDELAY | O_NONBLOCK | O_SYNC | O_DSYNC |
                                     FASYNC | O_DIRECT | O_LARGEFILE | O_DIRECTORY | O_NOFOLLOW |
                                     O_NOATIME | O_CLOEXEC | O_PATH | kTmpfileBit;
constexpr uint64_t kOPathFlags = O_DIRECTORY | O_NOFOLLOW | O_PATH | O_CLOEXEC;
constexpr uint64_t kValidResolveFlags = RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS |
                                        RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_IN_ROOT |
                                        RESOLVE_CACHED;
constexpr size_t kOpenHowSizeVer0 = 24;
constexpr uint64_t kPageSize = 4096;
constexpr mode_t kAllModeBits = S_ISUID | S_ISGID | S_ISVTX | S_IRWXU | S_IRWXG | S_IRWXO;

constexpr unsigned kStatFlags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH;

bool WillCreate(uint64_t flags) { return flags & (O_CREAT | kTmpfileBit); }

}  // namespace

int ValidateStatx(unsigned flags, unsigned mask, bool by_descriptor) {
  if (mask & STATX__RESERVED) return EINVAL;
  if ((flags & AT_STATX_SYNC_TYPE) == AT_STATX_SYNC_TYPE) return EINVAL;
  if (!by_descriptor && (flags & ~(kStatFlags | AT_STATX_SYNC_TYPE))) return EINVAL;
  return 0;
}

int ValidateFstatatFlags(unsigned flags) {
  return flags & ~(kStatFlags | AT_STATX_SYNC_TYPE) ? EINVAL : 0;
}

int ValidateUnlinkatFlags(unsigned flags) { return flags & ~AT_REMOVEDIR ? EINVAL : 0; }

int ValidateRenameFlags(unsigned flags) {
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) return EINVAL;
  if ((flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)) && (flags & RENAME_EXCHANGE)) return EINVAL;
  return 0;
}

int ValidateAccess(unsigned mode, unsigned flags) {
  if (mode & ~static_cast<unsigned>(S_IRWXO)) return EINVAL;
  if (flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return EINVAL;
  return 0;
}

int ValidateOwnerModeFlags(unsigned flags) {
  return flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) ? EINVAL : 0;
}

int ValidateLinkatFlags(unsigned flags) {
  return flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) ? EINVAL : 0;
}

int ValidateReadlinkSize(uint64_t size) { return static_cast<int>(size) <= 0 ? EINVAL : 0; }

int ValidateTruncateLength(int64_t length) { return length < 0 ? EINVAL : 0; }

int ValidateMknodMode(mode_t mode) {
  switch (mode & S_IFMT) {
    case 0:
    case S_IFREG:
    case S_IFCHR:
    case S_IFBLK:
    case S_IFIFO:
    case S_IFSOCK:
      return 0;
    case S_IFDIR:
      return EPERM;
    default:
      return EINVAL;
  }
}

int ValidateSetxattrFlags(unsigned flags) {
  return flags & ~static_cast<unsigned>(XATTR_CREATE | XATTR_REPLACE) ? EINVAL : 0;
}

int ValidateXattrName(std::string_view name, bool longer_than_read) {
  if (longer_than_read || name.empty() || name.size() > XATTR_NAME_MAX) return ERANGE;
  return 0;
}

int ValidateXattrValueSize(uint64_t size) { return size > XATTR_SIZE_MAX ? E2BIG : 0; }

open_how OpenHowOf(uint64_t flags, uint64_t mode) {
  open_how how{};
  // The flags argument is an int: the upper half of the register is not the caller's.
  how.flags = static_cast<uint32_t>(flags) & kValidOpenFlags;
  how.mode = static_cast<uint32_t>(mode) & kAllModeBits;
  if (how.flags & O_PATH) how.flags &= kOPathFlags;
  if (!WillCreate(how.flags)) how.mode = 0;
  return how;
}

int ValidateOpenHowSize(uint64_t size) {
  if (size < kOpenHowSizeVer0) return EINVAL;
  if (size > kPageSize) return E2BIG;
  return 0;
}

int ValidateOpenHowTail(std::span<const unsigned char> tail) {
  return std::any_of(tail.begin(), tail.end(), [](unsigned char b) { return b != 0; }) ? E2BIG : 0;
}

int ValidateOpenHow(const open_how& how) {
  const uint64_t flags = how.flags & ~static_cast<uint64_t>(O_CLOEXEC);
  if (flags & ~kValidOpenFlags) return EINVAL;
  if (how.resolve & ~kValidResolveFlags) return EINVAL;
  if ((how.resolve & RESOLVE_BENEATH) && (how.resolve & RESOLVE_IN_ROOT)) return EINVAL;
  if (WillCreate(flags) ? (how.mode & ~static_cast<uint64_t>(kAllModeBits)) : how.mode != 0) {
    return EINVAL;
  }
  if ((flags & (O_DIRECTORY | O_CREAT)) == (O_DIRECTORY | O_CREAT)) return EINVAL;
  if (flags & kTmpfileBit) {
    if (!(flags & O_DIRECTORY)) return EINVAL;
    // O_WRONLY or O_RDWR (or both bits: access mode 3, which Linux reads as both).
    if (!(flags & O_ACCMODE)) return EINVAL;
  }
  if ((flags & O_PATH) && (flags & ~kOPathFlags)) return EINVAL;
  if ((how.resolve & RESOLVE_CACHED) && (flags & (O_TRUNC | O_CREAT | kTmpfileBit))) return EAGAIN;
  return 0;
}

bool UtimesNothingToDo(const struct timespec times[2]) {
  return times && times[0].tv_nsec == UTIME_OMIT && times[1].tv_nsec == UTIME_OMIT;
}

int ValidateUtimensatFlags(unsigned flags, bool by_descriptor) {
  if (by_descriptor) return flags ? EINVAL : 0;
  return ValidateOwnerModeFlags(flags);
}

int ValidateUtimes(const struct timespec times[2]) {
  if (!times) return 0;
  for (int i = 0; i < 2; ++i) {
    const long ns = times[i].tv_nsec;
    if (ns == UTIME_NOW || ns == UTIME_OMIT) continue;
    if (ns < 0 || ns > 999999999) return EINVAL;
  }
  return 0;
}

bool StatsDescriptorItself(long nr, int dirfd, bool path_empty_or_null, unsigned flags) {
  if (dirfd < 0 || !path_empty_or_null) return false;
  // newfstatat takes the shortcut only for AT_EMPTY_PATH alone; otherwise it looks the empty
  // name up relative to the descriptor, checking the flags first.
  return nr == SYS_newfstatat ? flags == AT_EMPTY_PATH : (flags & AT_EMPTY_PATH) != 0;
}

int EarlyErrno(long nr, std::span<const uint64_t, 6> a) {
  auto u = [&](int i) { return static_cast<unsigned>(a[static_cast<size_t>(i)]); };
  switch (nr) {
    case SYS_unlinkat:
      return ValidateUnlinkatFlags(u(2));
    case SYS_renameat2:
      return ValidateRenameFlags(u(4));
    case SYS_access:
      return ValidateAccess(u(1), 0);
    case SYS_faccessat:
      return ValidateAccess(u(2), 0);
    case SYS_faccessat2:
      return ValidateAccess(u(2), u(3));
    case SYS_fchownat:
      return ValidateOwnerModeFlags(u(4));
    case SYS_fchmodat2:
      return ValidateOwnerModeFlags(u(3));
    case SYS_linkat:
      return ValidateLinkatFlags(u(4));
    case SYS_readlink:
      return ValidateReadlinkSize(a[2]);
    case SYS_readlinkat:
      return ValidateReadlinkSize(a[3]);
    case SYS_truncate:
      return ValidateTruncateLength(static_cast<int64_t>(a[1]));
    case SYS_ftruncate:
      return ValidateTruncateLength(static_cast<int64_t>(a[1]));
    case SYS_mknod:
      return ValidateMknodMode(static_cast<mode_t>(a[1]));
    case SYS_mknodat:
      return ValidateMknodMode(static_cast<mode_t>(a[2]));
    case SYS_setxattr:
    case SYS_lsetxattr:
    case SYS_fsetxattr:
      return ValidateSetxattrFlags(u(4));
    case SYS_open:
      return ValidateOpenHow(OpenHowOf(a[1], a[2]));
    case SYS_openat:
      return ValidateOpenHow(OpenHowOf(a[2], a[3]));
    default:
      // statx and newfstatat depend on the path (StatsDescriptorItself); utimensat, openat2
      // and the xattr names on memory.
      return 0;
  }
}

bool EmptyPathAllowed(long nr, int index, std::span<const uint64_t, 6> a) {
  auto has_empty = [&](int i) { return (a[static_cast<size_t>(i)] & AT_EMPTY_PATH) != 0; };
  switch (nr) {
    case SYS_newfstatat:
      return has_empty(3);
    case SYS_statx:
      return has_empty(2);
    case SYS_fchownat:
      return has_empty(4);
    case SYS_faccessat2:
    case SYS_fchmodat2:
    case SYS_utimensat:
      return has_empty(3);
    case SYS_linkat:
      return index == 1 && has_empty(4);
    case SYS_readlinkat:
      return true;
    default:
      return false;
  }
}

}  // namespace amino::monitor::calls
