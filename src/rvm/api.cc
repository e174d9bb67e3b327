// The C interface (include/amino/rvm.h) over regions, transactions, the heap and the store.
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <new>

#include "amino/rvm.h"
#include "rvm/fault.h"
#include "rvm/heap.h"
#include "rvm/region.h"
#include "rvm/store.h"
#include "rvm/txn.h"

using amino::rvm::ThreadTxn;

namespace {

// The calling thread's transaction, if it is in one.
ThreadTxn* InTransaction() {
  ThreadTxn* t = ThreadTxn::Current();
  return t && t->depth() > 0 ? t : nullptr;
}

// Makes `region` part of the calling thread's transaction, for the allocator's calls.
int Hold(rvm_region* region) {
  if (!region) return EINVAL;
  ThreadTxn* t = InTransaction();
  if (!t) return EPERM;
  return t->Claim(region) ? 0 : EBUSY;
}

}  // namespace

extern "C" {

int rvm_map(size_t size, unsigned flags, rvm_region** out) {
  if (!out || flags != 0 || size == 0) return EINVAL;
  const size_t ps = amino::rvm::PageSize();
  if (size > SIZE_MAX - ps) return ENOMEM;
  size = (size + ps - 1) / ps * ps;
  int err = amino::rvm::InstallFaultHandler();
  if (err != 0) return err;
  auto* region = new (std::nothrow) rvm_region();
  if (!region) return ENOMEM;
  void* base = amino::rvm::MapRegionMemory(size, PROT_READ);
  if (!base) {
    delete region;
    return ENOMEM;
  }
  region->base = reinterpret_cast<uintptr_t>(base);
  region->size = size;
  if (!amino::rvm::RegisterRegion(region)) {
    munmap(base, size);
    delete region;
    return ENOMEM;
  }
  *out = region;
  return 0;
}

int rvm_unmap(rvm_region* region) {
  if (!region) return EINVAL;
  if (region->owner.load(std::memory_order_acquire) != nullptr) return EBUSY;
  amino::rvm::UnregisterRegion(region);
  if (region->store) amino::rvm::RegionClose(region);
  munmap(reinterpret_cast<void*>(region->base), region->size);
  delete region;
  return 0;
}

void* rvm_base(const rvm_region* region) { return reinterpret_cast<void*>(region->base); }
size_t rvm_size(const rvm_region* region) { return region->size; }
int rvm_is_persistent(const rvm_region* region) { return region->store != nullptr; }

void* rvm_alloc(rvm_region* region, size_t size) {
  int err = Hold(region);
  void* p = nullptr;
  if (err == 0) err = amino::rvm::HeapAlloc(region, size, &p);
  if (err != 0) {
    errno = err;
    return nullptr;
  }
  return p;
}

int rvm_free(rvm_region* region, void* ptr) {
  if (!ptr) return region ? 0 : EINVAL;
  int err = Hold(region);
  return err != 0 ? err : amino::rvm::HeapFree(region, ptr);
}

int rvm_set_root(rvm_region* region, void* ptr) {
  int err = Hold(region);
  return err != 0 ? err : amino::rvm::HeapSetRoot(region, ptr);
}

void* rvm_get_root(const rvm_region* region) { return amino::rvm::HeapGetRoot(region); }

int rvm_begin(void) {
  ThreadTxn* t = ThreadTxn::Get();
  return t ? t->Begin() : ENOMEM;
}

int rvm_commit(void) {
  ThreadTxn* t = ThreadTxn::Current();
  return t ? t->Commit() : EINVAL;
}

int rvm_abort(void) {
  ThreadTxn* t = ThreadTxn::Current();
  return t ? t->Abort() : EINVAL;
}

int rvm_abort_to(int depth) {
  if (depth < 0 || depth > rvm_depth()) return EINVAL;
  while (rvm_depth() > depth) {
    int err = rvm_abort();
    if (err != 0) return err;
  }
  return 0;
}

int rvm_depth(void) {
  ThreadTxn* t = ThreadTxn::Current();
  return t ? t->depth() : 0;
}

int rvm_set_range(void* addr, size_t len) {
  ThreadTxn* t = InTransaction();
  if (!t) return EPERM;
  if (len == 0) return 0;
  uintptr_t start = reinterpret_cast<uintptr_t>(addr);
  rvm_region* region = amino::rvm::FindRegion(start);
  if (!region || len > region->size - (start - region->base)) return EINVAL;
  const size_t ps = amino::rvm::PageSize();
  for (uintptr_t page = start & ~(ps - 1); page < start + len; page += ps) {
    int err = t->OnWriteFault(region, page, false);
    if (err != 0) return err;
  }
  return 0;
}

void rvm_thread_stats(struct rvm_stats* out) {
  *out = rvm_stats{};
  if (ThreadTxn* t = ThreadTxn::Current()) t->Stats(out);
}

int rvm_store_open(const char* dir, unsigned flags, rvm_store** out) {
  return amino::rvm::StoreOpen(dir, flags, out);
}

int rvm_store_attach(struct __db_env* env, unsigned flags, rvm_store** out) {
  return amino::rvm::StoreAttach(env, flags, out);
}

int rvm_store_close(rvm_store* store) { return amino::rvm::StoreClose(store); }

int rvm_open(rvm_store* store, const char* name, size_t size, unsigned flags, rvm_region** out) {
  int err = amino::rvm::InstallFaultHandler();
  if (err != 0) return err;
  rvm_region* region = nullptr;
  err = amino::rvm::RegionOpen(store, name, size, flags, &region);
  if (err != 0) return err;
  if (!amino::rvm::RegisterRegion(region)) {
    amino::rvm::RegionClose(region);
    munmap(reinterpret_cast<void*>(region->base), region->size);
    delete region;
    return ENOMEM;
  }
  *out = region;
  return 0;
}

int rvm_remove(rvm_store* store, const char* name) { return amino::rvm::RegionRemove(store, name); }

int rvm_prepare_in(struct __db_txn* parent) {
  ThreadTxn* t = ThreadTxn::Current();
  return t ? t->Prepare(parent) : EINVAL;
}

}  // extern "C"
