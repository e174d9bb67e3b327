// What the operation generator draws from (generate.cc, draw_op.cc): a seeded random stream,
// the tables of sizes, offsets, modes and names, and its guess at what each descriptor slot
// holds.
#pragma once

#include <array>
#include <cstdint>

#include "ops.h"

namespace amino::fuzz {

// splitmix64: small, fast, and identical everywhere.
class Rng {
 public:
  // The seed is mixed first: splitmix64 streams from nearby raw states are shifted copies of
  // each other, which would make seed k+1 replay seed k one draw later.
  explicit Rng(uint64_t seed) : s_(seed) { s_ = Next() ^ 0x632be59bd9b4e019ull; }
  uint64_t Next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int Below(int n) { return static_cast<int>(Next() % static_cast<uint64_t>(n)); }
  bool Chance(int percent) { return Below(100) < percent; }
  template <typename T, size_t N>
  T Pick(const std::array<T, N>& a) {
    return a[static_cast<size_t>(Below(static_cast<int>(N)))];
  }
  // A valid value mostly, the invalid one now and then: invalid flags are found at once, and
  // drawn often they would end most sequences before the interesting calls.
  template <size_t N>
  int64_t PickOr(const std::array<int64_t, N>& valid, int64_t invalid) {
    return Chance(kInvalidPercent) ? invalid : Pick(valid);
  }
  static constexpr int kInvalidPercent = 6;

 private:
  uint64_t s_;
};

constexpr int64_t kHuge = int64_t{1} << 62;  // beyond any file system's maximum file size

constexpr std::array<int64_t, 12> kSizes = {0,    1,    7,    100,   512,   4095,
                                            4096, 4097, 8192, 12345, 65536, 3000};
constexpr std::array<int64_t, 11> kOffsets = {
    0, 1, 100, 4095, 4096, 5000, 8192, 65536, 1 << 20, int64_t{1} << 40, kHuge};
constexpr std::array<int64_t, 10> kLengths = {
    0, 1, 100, 4096, 5000, 65536, 1 << 20, int64_t{1} << 40, kHuge, 12345};
constexpr std::array<int64_t, 13> kModes = {0644,  0755, 0600, 0,     0777,    04755, 02755,
                                            01777, 0400, 0200, 07777, 0100644, 0111};
constexpr std::array<int64_t, 8> kCreateModes = {0644, 0600, 0755, 0, 0777, 04755, 07777, 0444};
constexpr std::array<int64_t, 7> kDirModes = {0755, 0700, 0, 01777, 02755, 07777, 0555};
constexpr std::array<int64_t, 5> kUmasks = {0, 022, 077, 0777, 002};

// Names by role, as pool indices (see Pool::Names): most creations of files use names meant for
// files and most directories names meant for directories, so that the tree grows instead of
// collapsing into ENOTDIR; the rest of the time any name, which makes the collisions.
constexpr std::array<int, 8> kFileNames = {0, 1, 2, 4, 6, 7, 9, 10};
constexpr std::array<int, 6> kDirNames = {3, 8, 4, 5, 14, 6};
constexpr std::array<int, 4> kLinkNames = {5, 4, 1, 7};       // where symlink() mostly puts links
constexpr std::array<int, 5> kXattrNames = {0, 3, 11, 6, 8};  // names that mostly exist

enum class Role { kAny, kFile, kDir, kLink, kXattr };

inline int PickName(Rng& r, Role role = Role::kAny) {
  static const int n = static_cast<int>(Pool::Names().size());
  if (role == Role::kFile && r.Chance(80)) return r.Pick(kFileNames);
  if (role == Role::kDir && r.Chance(80)) return r.Pick(kDirNames);
  if (role == Role::kLink && r.Chance(70)) return r.Pick(kLinkNames);
  if (role == Role::kXattr && r.Chance(70)) return r.Pick(kXattrNames);
  return r.Chance(85) ? r.Below(10) : r.Below(n);
}

inline int PickTarget(Rng& r) { return r.Below(static_cast<int>(Pool::Targets().size())); }

// What the sequence so far has put in each slot, as far as the generator can tell without
// results: descriptor arguments mostly come from open slots of the kind the call wants (a
// directory for getdents64, fchdir and *at calls, a file for data calls), so that most calls
// reach the file system instead of failing with EBADF or ENOTDIR.
class SlotGuess {
 public:
  enum class Use { kClosed, kFile, kDir };

  int Pick(Rng& r, Use want) const {
    int match[kSlots], open[kSlots], nm = 0, no = 0;
    for (int i = 0; i < kSlots; ++i) {
      if (use_[i] == want) match[nm++] = i;
      if (use_[i] != Use::kClosed) open[no++] = i;
    }
    const int x = r.Below(100);
    if (nm && x < 75) return match[r.Below(nm)];
    if (no && x < 92) return open[r.Below(no)];
    return r.Below(kSlots);
  }
  void Set(int slot, Use u) { use_[slot] = u; }
  Use Get(int slot) const { return use_[slot]; }
  void AllClosed() {
    for (Use& u : use_) u = Use::kClosed;
  }
  // The name the last kBind drew: connects go there often, or they would rarely find a socket.
  int last_bound = -1;

 private:
  Use use_[kSlots] = {};
};

using Use = SlotGuess::Use;

// Whether pool name `name` is mostly a directory.
bool IsDirName(int name);

// One operation, its kind drawn by weight and its arguments by kind (draw_op.cc).
Op DrawOp(Rng& r, const SlotGuess& slots);

}  // namespace amino::fuzz
