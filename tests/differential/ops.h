// The operations of the differential fuzz test and the argument pools they draw from.
//
// An operation is generated from the seed alone, never from results, so that the same seed gives
// the same sequence on every side and an operation left out by --only changes none of the others.
// Descriptors are named by pool slot (@0..@5), never by number; paths come from a small pool of
// relative names so that operations collide often.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace amino::fuzz {

constexpr int kSlots = 6;

enum class Kind : uint8_t {
  // descriptors
  kOpen,
  kOpenat,
  kOpenat2,
  kCreat,
  kClose,
  kCloseRange,
  kDup,
  kDup2,
  kDup3,
  kFcntlDupfd,
  kFcntlFl,
  kFcntlFd,
  kFcntlBad,
  // data
  kRead,
  kPread,
  kReadv,
  kPreadv,
  kPreadv2,
  kWrite,
  kPwrite,
  kWritev,
  kPwritev,
  kPwritev2,
  kLseek,
  kFtruncate,
  kTruncate,
  kFsync,
  kFdatasync,
  kCopyFileRange,
  kSendfile,
  kMmapRead,
  kMmapWrite,
  kGetdents,
  // attributes
  kStat,
  kLstat,
  kFstat,
  kFstatat,
  kStatx,
  kStatfs,
  kFstatfs,
  kChmod,
  kFchmod,
  kFchmodat,
  kFchmodat2,
  kChown,
  kLchown,
  kFchown,
  kFchownat,
  kUtimensat,
  kFutimens,
  kAccess,
  kFaccessat,
  kFaccessat2,
  kSetxattr,
  kGetxattr,
  kListxattr,
  kRemovexattr,
  // namespace
  kMkdir,
  kMkdirat,
  kRmdir,
  kUnlink,
  kUnlinkat,
  kRename,
  kRenameat,
  kRenameat2,
  kLink,
  kLinkat,
  kSymlink,
  kSymlinkat,
  kReadlink,
  kReadlinkat,
  // AF_UNIX sockets named by a path: a listening stream socket bound at a name (kept open to
  // the end), and a non-blocking client connecting to one
  kBind,
  kConnect,
  // process state
  kChdir,
  kFchdir,
  kChdirRoot,
  kGetcwd,
  kUmask,
  kCount
};

// One generated call. Field meaning depends on the kind (see generate.cc and the executor);
// every field is drawn for every kind, unused ones are simply ignored.
struct Op {
  Kind kind = Kind::kCount;
  int slot = 0;   // descriptor argument
  int slot2 = 0;  // second descriptor (copy_file_range, sendfile, dup2 target by slot)
  int dst = 0;    // slot that receives a returned descriptor
  int dir = -1;   // directory descriptor slot of an *at call; -1 is AT_FDCWD
  int dir2 = -1;  // the second path's
  int name = 0;   // path pool index
  int name2 = 0;  // second path (rename, link) or symlink target pool index
  int64_t a = 0, b = 0, c = 0;  // numeric arguments (flags, sizes, offsets, modes, ...)
  uint64_t data = 0;            // seed of the bytes written
  // A variant: the data pattern and iovec split of reads and writes, the path/l-path/descriptor
  // form of *xattr, openat2's struct size (5-7), 99 for NULL times or copy_file_range flags 1.
  int form = 0;
};

std::vector<Op> Generate(uint64_t seed, int count);

// Pools. Names are relative and free of "..", and symbolic link targets are too, so that no
// path can lead out of the scratch directory whatever the file system turns into.
struct Pool {
  static const std::vector<std::string>& Names();
  static const std::vector<std::string>& Targets();
  static const std::vector<std::string>& XattrNames();
  // How a pool string is shown in an operation line (long strings abbreviated).
  static std::string Show(const std::string& s);
};

}  // namespace amino::fuzz
