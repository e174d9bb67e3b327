// Where a file with one name was last seen, so that a call on an open file finds its metadata
// with one lookup (its Path record) instead of three (Data, Names, Path).
//
// A hint is only a guess: the caller reads the Path record it names and uses it only when that
// record is the file's, with the file's metadata in it (HARDLINKUSESDLMD: then it is the only
// name). A stale hint costs the lookup it was meant to save, nothing else.
// Kept per thread, like TxnReads, in a few direct-mapped slots whose strings keep their buffers.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace amino::schema {

class NameHints {
 public:
  // The name last noted for file `id` of `store`, or nullptr.
  static const std::string* Find(const void* store, uint64_t id);
  static void Note(const void* store, uint64_t id, std::string_view path);

 private:
  struct Slot {
    const void* store = nullptr;
    uint64_t id = 0;
    std::string path;
  };
  static std::array<Slot, 256>& Mine();
};

}  // namespace amino::schema
