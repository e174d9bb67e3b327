// Argument validation that Linux performs before a call looks at a descriptor or a path: the
// errno it reports for bad flags, modes, names and sizes. A monitor that serves a call itself
// (from the host file system or from an Amino mount) must report these first, in the kernel's
// order, or a call with both a bad flag and a bad path fails differently than natively.
//
// Every function is pure: it sees only values (registers, or data the caller has already
// copied from the tracee) and returns 0 when they are valid, else the positive errno.
#pragma once

#include <linux/openat2.h>
#include <sys/types.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace amino::monitor::calls {

// The checks a call makes on its register arguments alone, before it copies anything from
// memory or resolves a descriptor or path: *at flags, access modes, open flags, sizes and
// lengths. Calls whose first checks need memory (utimensat, openat2, the xattr names) are
// served by the functions below. Returns 0 for calls it does not know.
int EarlyErrno(long nr, std::span<const uint64_t, 6> args);

// Whether an empty path at argument `index` of call `nr` names the descriptor in the preceding
// argument itself (AT_EMPTY_PATH given; readlinkat always) instead of failing with ENOENT.
bool EmptyPathAllowed(long nr, int index, std::span<const uint64_t, 6> args);

// statx and newfstatat with AT_EMPTY_PATH, an empty (or NULL) path and a descriptor (not
// AT_FDCWD): the kernel takes a shortcut to the descriptor that skips the check of the other
// *at flags, so EarlyErrno's flag check must not be applied. `nr` is SYS_statx or
// SYS_newfstatat.
bool StatsDescriptorItself(long nr, int dirfd, bool path_empty_or_null, unsigned flags);

// statx(2): mask and flags. `by_descriptor` as StatsDescriptorItself.
int ValidateStatx(unsigned flags, unsigned mask, bool by_descriptor);
// newfstatat(2), when not StatsDescriptorItself.
int ValidateFstatatFlags(unsigned flags);
int ValidateUnlinkatFlags(unsigned flags);
// renameat2(2): unknown flags; RENAME_EXCHANGE with RENAME_NOREPLACE or RENAME_WHITEOUT.
int ValidateRenameFlags(unsigned flags);
// access, faccessat, faccessat2 (flags 0 for the first two).
int ValidateAccess(unsigned mode, unsigned flags);
// fchownat(2), fchmodat2(2): AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH only.
int ValidateOwnerModeFlags(unsigned flags);
int ValidateLinkatFlags(unsigned flags);
// readlink, readlinkat: the size is an int and must be positive.
int ValidateReadlinkSize(uint64_t size);
// truncate, ftruncate: a negative length.
int ValidateTruncateLength(int64_t length);
// mknod, mknodat: the file type (EPERM for a directory, EINVAL for no type Linux knows).
int ValidateMknodMode(mode_t mode);

// Extended attributes, in the order the kernel checks them: the flags of the set calls; then
// the name (read from the tracee, at most kXattrNameReadMax bytes: longer reads as ERANGE);
// then the value's size (set calls); then the value is copied (EFAULT); only then the path.
constexpr size_t kXattrNameReadMax = 256;
int ValidateSetxattrFlags(unsigned flags);
int ValidateXattrName(std::string_view name, bool longer_than_read);
int ValidateXattrValueSize(uint64_t size);

// open, openat, creat: the open_how the kernel builds from the arguments (unknown flags and mode
// bits are dropped, O_PATH keeps only what it permits, the mode only with a creating flag).
open_how OpenHowOf(uint64_t flags, uint64_t mode);
// openat2(2): the size argument (EINVAL below the first version, E2BIG beyond a page).
int ValidateOpenHowSize(uint64_t size);
// openat2(2): bytes of the caller's struct beyond the open_how this monitor knows (E2BIG if any
// is non-zero).
int ValidateOpenHowTail(std::span<const unsigned char> tail);
// The kernel's checks of an open_how (build_open_flags): what openat2 reports as EINVAL (or
// EAGAIN for RESOLVE_CACHED with a creating flag), and what open/openat report for O_TMPFILE
// without write access and O_CREAT|O_DIRECTORY.
int ValidateOpenHow(const open_how& how);

// utimensat(2). The times are copied first (EFAULT); if both are UTIME_OMIT the call succeeds
// at once, without looking at flags or path. Then the flags (`by_descriptor`: a NULL path with
// a descriptor, futimens, which takes no flags). The nanoseconds are checked only after the
// path was found (ValidateUtimes).
bool UtimesNothingToDo(const struct timespec times[2]);
int ValidateUtimensatFlags(unsigned flags, bool by_descriptor);
int ValidateUtimes(const struct timespec times[2]);

}  // namespace amino::monitor::calls
