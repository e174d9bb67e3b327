// The operation generator: a seeded stream of calls over a small name pool (draw_op.cc draws
// each), after a prologue that gives the calls something to work on.
#include <fcntl.h>
#include <linux/close_range.h>

#include <string>
#include <vector>

#include "draw.h"

namespace amino::fuzz {

const std::vector<std::string>& Pool::Names() {
  static const std::vector<std::string> names = {
      // common (PickName prefers the first ten)
      "a", "b", "c", "d", "e", "l", "d/e", "d/f", "d/g", "d/g/h",
      // the rest: through symbolic links, special names, errors
      "e/a", ".", "d/.", "a/", "d/e/i", "a/x", "nx/y", "", std::string(255, 'n'),
      std::string(256, 'n')};
  return names;
}

const std::vector<std::string>& Pool::Targets() {
  // "l" (a link named l to itself) and "e"/"l" pairs make loops (ELOOP); "" and a 4096-byte
  // target are refused by symlink(2).
  static const std::vector<std::string> targets = {
      "a", "b", "d", "d/e", "l", "e", "x", ".", "d/g/h", "e/a", "", std::string(4096, 't')};
  return targets;
}

const std::vector<std::string>& Pool::XattrNames() {
  // trusted.* needs CAP_SYS_ADMIN; a name without a namespace is not supported; 256 bytes is
  // one past XATTR_NAME_MAX.
  static const std::vector<std::string> names = {"user.a",
                                                 "user.b",
                                                 "user.c",
                                                 "trusted.t",
                                                 "nonamespace",
                                                 "user.",
                                                 "user." + std::string(251, 'x')};
  return names;
}

std::string Pool::Show(const std::string& s) {
  if (s.size() > 32) return "<" + std::to_string(s.size()) + "x" + s.substr(s.size() - 1) + ">";
  return "\"" + s + "\"";
}

namespace {

// The first operations of every sequence: a few directories, files and open descriptors to
// start from (random operations on an empty directory mostly fail with ENOENT).
std::vector<Op> Prologue() {
  std::vector<Op> ops;
  auto add = [&](Kind k, int name, int64_t a, int64_t b, int dst) {
    Op op;
    op.kind = k;
    op.name = name;
    op.a = a;
    op.b = b;
    op.dst = dst;
    ops.push_back(op);
  };
  add(Kind::kMkdir, 3, 0755, 0, 0);                             // d
  add(Kind::kMkdir, 8, 0755, 0, 0);                             // d/g
  add(Kind::kOpenat, 0, O_RDWR | O_CREAT, 0644, 0);             // a -> @0
  add(Kind::kOpenat, 6, O_RDWR | O_CREAT | O_APPEND, 0600, 1);  // d/e -> @1
  add(Kind::kOpenat, 3, O_RDONLY | O_DIRECTORY, 0, 2);          // d -> @2
  ops.push_back(ops[0]);
  ops.back().kind = Kind::kSymlink;  // symlink("a", "l")
  ops.back().name = 5;
  ops.back().name2 = 0;
  return ops;
}

}  // namespace

namespace {

// Follows what an operation does to the slots (as far as the arguments tell).
void Track(SlotGuess& slots, const Op& op) {
  switch (op.kind) {
    case Kind::kBind:
      slots.last_bound = op.name;
      break;
    case Kind::kOpen:
    case Kind::kOpenat:
    case Kind::kOpenat2: {
      const bool dir = (op.a & O_DIRECTORY) || (!(op.a & O_CREAT) && IsDirName(op.name));
      slots.Set(op.dst, dir ? Use::kDir : Use::kFile);
      break;
    }
    case Kind::kCreat:
      slots.Set(op.dst, Use::kFile);
      break;
    case Kind::kDup:
    case Kind::kDup2:
    case Kind::kDup3:
    case Kind::kFcntlDupfd:
      slots.Set(op.dst, slots.Get(op.slot) == Use::kDir ? Use::kDir : Use::kFile);
      break;
    case Kind::kClose:
      slots.Set(op.slot, Use::kClosed);
      break;
    case Kind::kCloseRange:
      if (!(op.c & CLOSE_RANGE_CLOEXEC)) slots.AllClosed();
      break;
    default:
      break;
  }
}

}  // namespace

std::vector<Op> Generate(uint64_t seed, int count) {
  Rng r(seed);
  SlotGuess slots;
  std::vector<Op> ops = Prologue();
  if (static_cast<int>(ops.size()) > count) ops.resize(static_cast<size_t>(count));
  for (const Op& op : ops) Track(slots, op);
  while (static_cast<int>(ops.size()) < count) {
    ops.push_back(DrawOp(r, slots));
    Track(slots, ops.back());
  }
  return ops;
}

}  // namespace amino::fuzz
