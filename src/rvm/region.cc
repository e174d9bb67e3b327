#include "rvm/region.h"

#include <sys/mman.h>
#include <unistd.h>

#include <mutex>

namespace amino::rvm {
namespace {

// A fixed table, so the handler can scan it while other threads map and unmap: slots are
// published and cleared atomically and the table itself never moves.
constexpr size_t kMaxRegions = 4096;
std::atomic<rvm_region*> g_regions[kMaxRegions];
std::atomic<size_t> g_high{0};  // slots [0, g_high) may be in use
std::mutex g_registry_mu;

}  // namespace

size_t PageSize() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

void* MapRegionMemory(size_t size, int prot, uintptr_t hint, bool exact) {
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  void* p = MAP_FAILED;
  if (hint != 0) {
    p = mmap(reinterpret_cast<void*>(hint), size, prot, flags | MAP_FIXED_NOREPLACE, -1, 0);
    // Kernels before 4.17 treat the flag as a hint and may map elsewhere.
    if (p != MAP_FAILED && p != reinterpret_cast<void*>(hint)) {
      munmap(p, size);
      p = MAP_FAILED;
    }
  }
  if (p == MAP_FAILED && !exact) p = mmap(nullptr, size, prot, flags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, size, MADV_NOHUGEPAGE);
  return p;
}

uintptr_t PersistentAddress(const std::string& key, size_t size, int attempt) {
  constexpr uintptr_t kLow = uintptr_t{0x2000} << 32;   // 32 TiB
  constexpr uintptr_t kHigh = uintptr_t{0x5000} << 32;  // 80 TiB
  constexpr uintptr_t kSlot = uintptr_t{1} << 30;
  if (size > kHigh - kLow - kSlot) return 0;
  const uintptr_t slots = (kHigh - kLow - size) / kSlot;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  return kLow + ((h + static_cast<uint64_t>(attempt) * 7919) % slots) * kSlot;
}

bool RegisterRegion(rvm_region* region) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  size_t high = g_high.load(std::memory_order_relaxed);
  for (size_t i = 0; i < kMaxRegions; ++i) {
    if (g_regions[i].load(std::memory_order_relaxed) != nullptr) continue;
    g_regions[i].store(region, std::memory_order_release);
    if (i >= high) g_high.store(i + 1, std::memory_order_release);
    return true;
  }
  return false;
}

void UnregisterRegion(rvm_region* region) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  size_t high = g_high.load(std::memory_order_relaxed);
  for (size_t i = 0; i < high; ++i) {
    if (g_regions[i].load(std::memory_order_relaxed) == region) {
      g_regions[i].store(nullptr, std::memory_order_release);
      break;
    }
  }
  while (high > 0 && g_regions[high - 1].load(std::memory_order_relaxed) == nullptr) --high;
  g_high.store(high, std::memory_order_release);
}

rvm_region* FindRegion(uintptr_t addr) {
  size_t high = g_high.load(std::memory_order_acquire);
  for (size_t i = 0; i < high; ++i) {
    rvm_region* r = g_regions[i].load(std::memory_order_acquire);
    if (r && addr - r->base < r->size) return r;
  }
  return nullptr;
}

}  // namespace amino::rvm
