// The operations of the model-based test: a random sequence of file-system calls over a small
// pool of names (so that they collide), each self-contained so that any subsequence can be
// replayed on a fresh file system (what shrinking needs). Calls on open files name a slot; a slot
// that is empty when the call runs makes the call a no-op on both sides.
#pragma once

#include <time.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace amino::schema::testing::model {

enum class Kind {
  kOpen,
  kClose,
  kRead,
  kWrite,
  kFTruncate,
  kFStat,
  kSeekData,
  kSeekHole,
  kTruncate,
  kUnlink,
  kMkdir,
  kRmdir,
  kRename,
  kLink,
  kSymlink,
  kReadlink,
  kChmod,
  kChown,
  kUtimens,
  kSetXattr,
  kGetXattr,
  kRemoveXattr,
  kListXattr,
  kStat,
  kAccess,
  kReadDir,
};

inline constexpr int kSlots = 4;

// The credentials an op runs with: 0 root, 1 uid/gid 1000, 2 uid/gid 1001 also in group 1000.
inline constexpr int kCreds = 3;

struct Op {
  Kind kind = Kind::kStat;
  int cred = 0;
  int slot = 0;
  std::string a;       // path (or symlink target for kSymlink)
  std::string b;       // second path (rename/link destination, symlink path, stat's other name)
  int flags = 0;       // open flags, rename flags, xattr flags, access mode
  uint32_t mode = 0;   // create/mkdir/chmod mode
  uint64_t off = 0;    // read/write/seek offset
  int64_t len = 0;     // read/write/truncate length, xattr value length
  uint32_t uid = 0;    // chown
  uint32_t gid = 0;    // chown
  uint8_t fill = 0;    // seed of the bytes written
  bool follow = true;  // stat, utimens, xattr calls: follow a final symbolic link
  std::string name;    // xattr name
  timespec times[2]{};
};

// A random sequence of `n` ops from `seed`; the same arguments always give the same ops.
std::vector<Op> Generate(uint64_t seed, size_t n);

// A line that names the call and all its arguments, e.g. `cred=1 open(slot=2, "/a/b",
// O_RDWR|O_CREAT, 0644)`.
std::string ToString(const Op& op);

// The bytes an op writes (write data, xattr value).
std::string Payload(uint8_t fill, size_t len);

std::string FlagsString(int open_flags);

}  // namespace amino::schema::testing::model
