// Memory the SIGSEGV handler may use. The handler runs at any store instruction of the program,
// possibly while malloc holds its locks, so everything it touches grows by mmap/mremap (system
// calls, safe in a signal handler) and never through malloc.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace amino::rvm {

// Anonymous read-write memory, or nullptr.
inline void* MapAnonymous(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// A growable array of trivially copyable values in mmap'd memory.
template <typename T>
class MmapVector {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  MmapVector() = default;
  ~MmapVector() {
    if (data_) munmap(data_, capacity_ * sizeof(T));
  }
  MmapVector(const MmapVector&) = delete;
  MmapVector& operator=(const MmapVector&) = delete;

  // False when memory is exhausted (the vector is unchanged).
  bool push_back(const T& v) {
    if (size_ == capacity_ && !Grow()) return false;
    data_[size_++] = v;
    return true;
  }
  void pop_back() { --size_; }
  void shrink_to(size_t n) { size_ = n; }
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }

 private:
  bool Grow() {
    size_t old_bytes = capacity_ * sizeof(T);
    size_t new_bytes = old_bytes ? old_bytes * 2 : 4096;
    void* p = data_ ? mremap(data_, old_bytes, new_bytes, MREMAP_MAYMOVE) : MapAnonymous(new_bytes);
    if (p == MAP_FAILED || p == nullptr) return false;
    data_ = static_cast<T*>(p);
    capacity_ = new_bytes / sizeof(T);
    return true;
  }
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace amino::rvm
