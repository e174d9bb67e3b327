// One thread's stack of nested transactions: the undo records of every level, the index from
// page to newest record, the pages currently writable, and the regions the transaction holds.
//
// Invariant: a page is writable only while its newest undo record belongs to the innermost
// level. So the first write of a level to any page faults and saves the page as that level
// found it; Begin re-protects the writable pages to restore the invariant for the new level.
#pragma once

#include <db.h>

#include <cstdint>

#include "amino/rvm.h"
#include "rvm/image_pool.h"
#include "rvm/page_map.h"
#include "rvm/region.h"
#include "rvm/sigsafe.h"

namespace amino::rvm {

struct Record {
  uintptr_t page;
  rvm_region* region;
  void* image;     // the page as its level found it
  int32_t prev;    // the page's record in an enclosing level, or -1
  uint32_t level;  // 1 = top level
};

class ThreadTxn {
 public:
  // The calling thread's transaction state, or nullptr if it has none yet. Signal-safe.
  static ThreadTxn* Current();
  // Creates the state on first use; nullptr when memory is exhausted.
  static ThreadTxn* Get();

  int depth() const { return depth_; }
  int Begin();
  int Commit();
  int Abort();
  int Prepare(DB_TXN* parent);

  // The fault handler's work for a write to `addr` in `region` (and rvm_set_range's): saves the
  // page's before-image if this level has none and makes the page writable. 0, or why the write
  // must be refused: EPERM outside a transaction, EBUSY when another thread's transaction holds
  // the region, ENOMEM when memory or kernel mappings (vm.max_map_count) are exhausted.
  // Signal-safe.
  int OnWriteFault(rvm_region* region, uintptr_t addr, bool from_fault);
  // Makes `region` part of this transaction; false when another thread's transaction holds it.
  // Requires depth() > 0. Signal-safe.
  bool Claim(rvm_region* region);
  void Stats(rvm_stats* out) const;

  ~ThreadTxn();

 private:
  ThreadTxn();
  static constexpr uint32_t kNoRecord = UINT32_MAX;
  void CommitNested();
  void AbortLevel();
  void FinishTopLevel();
  // Makes the pages of `writable_` for which `keep` is false read-only again; they leave it.
  template <typename Keep>
  void ProtectWritable(Keep keep);
  int WritePersistent(DB_TXN* parent);
  bool HasPersistentPages() const;
  static void OnThreadExit(void* self);

  size_t page_size_;
  int depth_ = 0;
  MmapVector<Record> records_;
  MmapVector<uint32_t> levels_;  // index of each level's first record
  PageMap map_;
  struct Writable {
    uintptr_t page;
    rvm_region* region;
  };
  MmapVector<Writable> writable_;
  MmapVector<rvm_region*> owned_;
  ImagePool images_;
  bool prepared_ = false;               // Prepare wrote the persistent pages ...
  bool written_since_prepare_ = false;  // ... and nothing was written since
  uint64_t faults_ = 0;
  uint64_t before_images_ = 0;
};

// Writes a message on standard error and aborts: for states that would otherwise let memory and
// undo records disagree silently.
[[noreturn]] void Fatal(const char* message);

}  // namespace amino::rvm
