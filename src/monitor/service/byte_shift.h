// Moving a range of a file's bytes to another place in the same file, for fallocate's
// COLLAPSE_RANGE and INSERT_RANGE, on the schema's copy of a file and on a mapping file alike.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace amino::monitor::service {

// Moves the `count` bytes at `from` to `to`, one chunk at a time, in the order that never
// overwrites a byte before it has moved (front first when moving down, back first when moving
// up). `read(at, buf, len)` and `write(at, buf, len)` return false on failure; so does this.
template <typename Read, typename Write>
bool ShiftBytes(uint64_t from, uint64_t to, uint64_t count, size_t chunk, Read read, Write write) {
  std::vector<char> buf(static_cast<size_t>(std::min<uint64_t>(count, chunk)));
  for (uint64_t done = 0; done < count;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, count - done));
    const uint64_t at = to < from ? done : count - done - n;  // offset inside the range
    if (!read(from + at, buf.data(), n) || !write(to + at, buf.data(), n)) return false;
    done += n;
  }
  return true;
}

}  // namespace amino::monitor::service
