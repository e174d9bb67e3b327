// Persistent regions on Berkeley DB. A store is one B-tree database, rvm.db, in an environment of
// its own or in the caller's; each region is a run of records in it:
//
//   name \0 'M'                      size, page size, address (the region's meta record)
//   name \0 'P' page index (u64 BE)  the page's committed contents; pages never written (or all
//                                    zero) have no record, so a sparse region stays small
//
// Committing writes each changed page as one record. Berkeley DB logs only the bytes that differ
// from the record's previous value, so the log carries roughly what LRVM's set_range would have.
#pragma once

#include <db.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "amino/rvm.h"
#include "rvm/region.h"

struct rvm_store {
  DB_ENV* env = nullptr;
  bool own_env = false;
  DB* db = nullptr;
  u_int32_t commit_flags = 0;   // txn_begin flags of a top-level commit's transaction
  void* txn_manager = nullptr;  // DB_TXN::mgrp of this environment's transactions
  u_int32_t locker = 0;         // holds the locks that keep a region to one opener
  bool has_locker = false;
  std::mutex mu;
  std::vector<rvm_region*> regions;  // mapped regions of this store
  std::atomic<uint32_t> commits{0};
};

namespace amino::rvm {

int StoreOpen(const char* dir, unsigned flags, rvm_store** out);
int StoreAttach(DB_ENV* env, unsigned flags, rvm_store** out);
int StoreClose(rvm_store* store);

// Maps the region read-only with its committed contents; the caller registers it.
int RegionOpen(rvm_store* store, const char* name, size_t size, unsigned flags, rvm_region** out);
// Releases what RegionOpen took (lock, place in the store); the caller unmaps the memory.
void RegionClose(rvm_region* region);
int RegionRemove(rvm_store* store, const char* name);

struct DirtyPage {
  rvm_region* region;
  uintptr_t page;
  const void* before;  // the page's committed contents
};
// Writes the current contents of `pages` (all of regions of `store`) in one transaction, a child
// of `parent` when given (which must belong to the store's environment: EXDEV otherwise).
int WritePages(rvm_store* store, DB_TXN* parent, const DirtyPage* pages, size_t n);

}  // namespace amino::rvm
