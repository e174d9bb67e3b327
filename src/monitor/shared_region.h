// The region through which the monitor hands the kernel arguments a tracee did not write: a
// memfd mapped read-write in the monitor and read-only in the tracee, so no tracee thread can
// change an argument after the monitor has checked it, and the tracee's own memory is left alone.
// One per address space (shared by fork and CLONE_VM children, which inherit the mapping),
// created on first need by calls injected into the tracee. Each thread writes in its own slot:
// the kernel reads a slot only while that thread's call runs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "monitor/process_table.h"
#include "monitor/remote_syscall.h"

namespace amino::monitor {

class SharedRegion {
 public:
  static constexpr size_t kSlotSize = 16 << 10;
  static constexpr size_t kSlots = 256;
  static constexpr size_t kSize = kSlotSize * kSlots;

  // Creates the region in the tracee `t` with calls injected through `rs`; nullptr on failure
  // with an errno in *err.
  static std::shared_ptr<SharedRegion> Create(Thread& t, RemoteSyscalls& rs, int* err);
  ~SharedRegion();

  // The tracee address of `bytes` copied into the thread's slot at `offset` (< kSlotSize), or 0
  // when no slot is free.
  uint64_t Put(pid_t tid, size_t offset, std::string_view bytes);
  void Release(pid_t tid);

 private:
  SharedRegion() = default;
  char* local_ = nullptr;
  uint64_t tracee_base_ = 0;
  std::unordered_map<pid_t, size_t> slot_of_;
  std::vector<size_t> free_;
};

}  // namespace amino::monitor
