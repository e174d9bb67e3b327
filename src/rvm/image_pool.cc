#include "rvm/image_pool.h"

#include <sys/mman.h>

namespace amino::rvm {

ImagePool::~ImagePool() {
  for (char* c : chunks_) munmap(c, chunk_bytes());
}

void* ImagePool::Take() {
  if (free_) {
    void* p = free_;
    free_ = *static_cast<void**>(p);
    ++in_use_;
    return p;
  }
  if (used_in_last_ == kPagesPerChunk) {
    auto* c = static_cast<char*>(MapAnonymous(chunk_bytes()));
    if (!c) return nullptr;
    if (!chunks_.push_back(c)) {
      munmap(c, chunk_bytes());
      return nullptr;
    }
    used_in_last_ = 0;
  }
  ++in_use_;
  return chunks_.back() + page_size_ * used_in_last_++;
}

void ImagePool::Give(void* image) {
  PushFree(image);
  --in_use_;
}

void ImagePool::PushFree(void* image) {
  *static_cast<void**>(image) = free_;
  free_ = image;
}

void ImagePool::Trim() {
  if (in_use_ != 0 || chunks_.size() <= kChunksKept) return;
  for (size_t i = kChunksKept; i < chunks_.size(); ++i) munmap(chunks_[i], chunk_bytes());
  chunks_.shrink_to(kChunksKept);
  // Every buffer of the kept chunks is free: start carving them again from the beginning.
  free_ = nullptr;
  for (size_t i = 0; i + 1 < chunks_.size(); ++i) {
    for (size_t k = 0; k < kPagesPerChunk; ++k) PushFree(chunks_[i] + k * page_size_);
  }
  used_in_last_ = 0;
}

}  // namespace amino::rvm
