// A recoverable region: its mapping, the transaction it belongs to, and for persistent regions
// the store that keeps it. The registry finds the region of a faulting address from the signal
// handler without locks.
#pragma once

#include <db.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "amino/rvm.h"

namespace amino::rvm {
class ThreadTxn;
}  // namespace amino::rvm

struct rvm_region {
  uintptr_t base = 0;
  size_t size = 0;
  // The thread transaction the region belongs to (nullptr: none). Set by the owner's first
  // write or allocation, cleared by its top-level commit or abort.
  std::atomic<amino::rvm::ThreadTxn*> owner{nullptr};
  // Persistent regions only.
  rvm_store* store = nullptr;
  std::string name;
  DB_LOCK lock{};  // held for as long as the region is mapped: one process at a time
};

namespace amino::rvm {

size_t PageSize();

// Maps `size` bytes (a multiple of the page size) of anonymous memory that reserves no swap and
// never uses huge pages (a sparse region would otherwise take 2 MiB per written page), at
// `hint` if that range is free (else elsewhere, or with `exact` not at all). nullptr when the
// address space is exhausted.
void* MapRegionMemory(size_t size, int prot, uintptr_t hint = 0, bool exact = false);

// Where to create a persistent region so that it can be mapped at the same address again in
// any process, which keeps pointers stored inside it valid: a slot of a range that programs
// otherwise leave empty (above the sanitizers' shadow memory, below where Linux loads programs
// and their heap), chosen from `key`; `attempt` walks to further slots when one is taken. 0 when
// the region is too big for the range.
uintptr_t PersistentAddress(const std::string& key, size_t size, int attempt);

// Adds a region to the registry; false when the registry is full.
bool RegisterRegion(rvm_region* region);
void UnregisterRegion(rvm_region* region);
// The registered region containing `addr`, or nullptr. Safe in a signal handler.
rvm_region* FindRegion(uintptr_t addr);

}  // namespace amino::rvm
