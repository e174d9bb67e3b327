// The monitor's own read-only view of a file it shares with tracees (a mapping file of
// shared_mappings.h): a MAP_SHARED mapping of it, so that reading the file's bytes costs no
// copy. A process that kept a descriptor of the file could cut the file short while the monitor
// reads; such a read faults (SIGBUS) and the fault ends the read, not the monitor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace amino::monitor::service {

class FileView {
 public:
  FileView() = default;
  ~FileView();
  FileView(FileView&& other) noexcept { *this = std::move(other); }
  FileView& operator=(FileView&& other) noexcept;
  FileView(const FileView&) = delete;
  FileView& operator=(const FileView&) = delete;

  // Makes the view cover at least the first `size` bytes of `fd`'s file, mapping it again when
  // the file grew past it. false when the file cannot be mapped (the caller reads it instead).
  bool Cover(int fd, uint64_t size);

  // Runs `read(bytes)` with `bytes` the file's bytes from offset `at` (within the size covered).
  // Returns false when a read faulted: the file is shorter than that now, and `read` was left
  // where it faulted (by longjmp), so it must only read the view and write memory it was given.
  template <typename Reader>
  bool Read(uint64_t at, Reader&& read) const {
    auto run = [&read, bytes = base_ + at] { read(bytes); };
    return RunGuarded(&Trampoline<decltype(run)>, &run);
  }

 private:
  template <typename F>
  static void Trampoline(void* f) {
    (*static_cast<F*>(f))();
  }
  // Runs fn(arg); false when it faulted with SIGBUS.
  static bool RunGuarded(void (*fn)(void*), void* arg);

  const char* base_ = nullptr;
  size_t len_ = 0;
};

}  // namespace amino::monitor::service
