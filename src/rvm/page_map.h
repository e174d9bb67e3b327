// The per-thread index from a page address to its newest undo record: open addressing with
// linear probing in mmap'd memory (the fault handler inserts into it). Only pages written in the
// current transaction have an entry, so a region of many GiB costs nothing until it is written.
#pragma once

#include <cstddef>
#include <cstdint>

namespace amino::rvm {

class PageMap {
 public:
  struct Entry {
    uintptr_t page;     // 0 marks an empty slot (page 0 is never mapped)
    uint32_t record;    // index of the page's newest undo record
    uint32_t writable;  // the page is currently mapped read-write
  };

  PageMap() = default;
  ~PageMap();
  PageMap(const PageMap&) = delete;
  PageMap& operator=(const PageMap&) = delete;

  Entry* Find(uintptr_t page);
  // Inserts `page` (absent) and returns its entry, or nullptr when memory is exhausted.
  Entry* Insert(uintptr_t page, uint32_t record);
  // Removes `page`'s entry, if any.
  void Erase(uintptr_t page);
  size_t size() const { return size_; }

 private:
  static size_t Hash(uintptr_t page) {
    uint64_t h = (page >> 12) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
  bool Grow();
  Entry* slots_ = nullptr;
  size_t capacity_ = 0;  // a power of two
  size_t size_ = 0;
};

}  // namespace amino::rvm
