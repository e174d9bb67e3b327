// Page-sized buffers for before-images, taken by the fault handler: carved from mmap'd chunks,
// recycled through a free list threaded through the free buffers themselves.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rvm/sigsafe.h"

namespace amino::rvm {

class ImagePool {
 public:
  explicit ImagePool(size_t page_size) : page_size_(page_size) {}
  ~ImagePool();
  ImagePool(const ImagePool&) = delete;
  ImagePool& operator=(const ImagePool&) = delete;

  // A page-sized buffer, or nullptr when memory is exhausted.
  void* Take();
  void Give(void* image);
  size_t in_use() const { return in_use_; }
  // With no buffer in use, returns the memory of all chunks but the first few to the system, so
  // a large transaction does not keep its before-images' memory forever.
  void Trim();

 private:
  static constexpr size_t kPagesPerChunk = 256;
  static constexpr size_t kChunksKept = 4;
  void PushFree(void* image);
  size_t chunk_bytes() const { return kPagesPerChunk * page_size_; }
  size_t page_size_;
  MmapVector<char*> chunks_;
  size_t used_in_last_ = kPagesPerChunk;  // pages carved from the last chunk
  void* free_ = nullptr;
  size_t in_use_ = 0;
};

}  // namespace amino::rvm
