#include "rvm/heap.h"

#include <cerrno>
#include <cstdint>

namespace amino::rvm {
namespace {

constexpr uint64_t kHeapMagic = 0x31504145484d5652ull;  // "RVMHEAP1", little-endian
constexpr int kBins = 256;
constexpr uint64_t kInUse = 1;
constexpr uint64_t kPrevFree = 2;
constexpr uint64_t kFlags = 15;
constexpr uint64_t kMinChunk = 32;  // header + the two free-list links
constexpr uint64_t kOverhead = 16;

struct Header {
  uint64_t magic;
  uint64_t root;   // offset of the application's root, 0 = none
  uint64_t top;    // offset where the never-used tail begins
  uint64_t limit;  // region size
  uint64_t nonempty[kBins / 64];
  uint64_t bins[kBins];  // offset of each bin's first free chunk, 0 = empty
};
constexpr uint64_t kHeapStart = (sizeof(Header) + 15) / 16 * 16;

// Exact bins of 16 bytes below 1 KiB; above, four bins per power of two.
int BinIndex(uint64_t size) {
  if (size < 1024) return static_cast<int>(size / 16);
  int log = 63 - __builtin_clzll(size);
  int index = 64 + (log - 10) * 4 + static_cast<int>((size >> (log - 2)) & 3);
  return index < kBins ? index : kBins - 1;
}

class Heap {
 public:
  explicit Heap(const rvm_region* r)
      : base_(reinterpret_cast<char*>(r->base)), h_(reinterpret_cast<Header*>(r->base)) {}

  Header& h() { return *h_; }
  uint64_t& PrevSize(uint64_t c) { return Word(c); }
  uint64_t& SizeFlags(uint64_t c) { return Word(c + 8); }
  uint64_t Size(uint64_t c) { return SizeFlags(c) & ~kFlags; }
  uint64_t& Next(uint64_t c) { return Word(c + 16); }
  uint64_t& Prev(uint64_t c) { return Word(c + 24); }
  char* Payload(uint64_t c) { return base_ + c + kOverhead; }

  void Insert(uint64_t c) {
    int b = BinIndex(Size(c));
    uint64_t first = h_->bins[b];
    Next(c) = first;
    Prev(c) = 0;
    if (first) Prev(first) = c;
    h_->bins[b] = c;
    h_->nonempty[b / 64] |= 1ull << (b % 64);
  }

  void Unlink(uint64_t c) {
    uint64_t next = Next(c), prev = Prev(c);
    if (prev) {
      Next(prev) = next;
    } else {
      int b = BinIndex(Size(c));
      h_->bins[b] = next;
      if (!next) h_->nonempty[b / 64] &= ~(1ull << (b % 64));
    }
    if (next) Prev(next) = prev;
  }

  // The first non-empty bin at or after `from`, or -1.
  int NextBin(int from) {
    for (int w = from / 64; w < kBins / 64; ++w) {
      uint64_t bits = h_->nonempty[w];
      if (w == from / 64) bits &= ~0ull << (from % 64);
      if (bits) return w * 64 + __builtin_ctzll(bits);
    }
    return -1;
  }

  // Turns free chunk `c` (unlinked) into an in-use chunk of `need` bytes, freeing the rest.
  void Take(uint64_t c, uint64_t need) {
    uint64_t size = Size(c);
    uint64_t rest = size - need;
    if (rest >= kMinChunk) {
      SizeFlags(c) = need | kInUse;
      uint64_t r = c + need;
      SizeFlags(r) = rest;
      PrevSize(c + size) = rest;  // the chunk after keeps kPrevFree
      Insert(r);
    } else {
      SizeFlags(c) = size | kInUse;
      SizeFlags(c + size) &= ~kPrevFree;
    }
  }

 private:
  uint64_t& Word(uint64_t off) { return *reinterpret_cast<uint64_t*>(base_ + off); }
  char* base_;
  Header* h_;
};

// Initialises the heap on first use. A region written directly by the program at offset 0 is
// not one the allocator can use.
int Prepare(rvm_region* region, Heap& heap) {
  Header& h = heap.h();
  if (h.magic == kHeapMagic) return h.limit == region->size ? 0 : EUCLEAN;
  if (h.magic != 0) return EUCLEAN;
  if (region->size < kHeapStart + kMinChunk) return ENOMEM;
  h.magic = kHeapMagic;
  h.top = kHeapStart;
  h.limit = region->size;
  return 0;
}

}  // namespace

int HeapAlloc(rvm_region* region, size_t size, void** out) {
  Heap heap(region);
  int err = Prepare(region, heap);
  if (err != 0) return err;
  Header& h = heap.h();
  if (size > h.limit) return ENOMEM;
  uint64_t need = (static_cast<uint64_t>(size) + kOverhead + 15) / 16 * 16;
  if (need < kMinChunk) need = kMinChunk;
  int first = BinIndex(need);
  for (int b = heap.NextBin(first); b >= 0; b = heap.NextBin(b + 1)) {
    // Chunks of a higher bin all fit; in the request's own bin sizes vary: first fit.
    for (uint64_t c = h.bins[b]; c; c = heap.Next(c)) {
      if (heap.Size(c) < need) continue;
      heap.Unlink(c);
      heap.Take(c, need);
      *out = heap.Payload(c);
      return 0;
    }
  }
  if (h.limit - h.top < need) return ENOMEM;
  uint64_t c = h.top;
  h.top += need;
  // The chunk before the tail is never free (it would have joined the tail), so no kPrevFree.
  heap.SizeFlags(c) = need | kInUse;
  *out = heap.Payload(c);
  return 0;
}

int HeapFree(rvm_region* region, void* ptr) {
  Heap heap(region);
  Header& h = heap.h();
  uint64_t off = reinterpret_cast<uintptr_t>(ptr) - region->base;
  if (h.magic != kHeapMagic || off % 16 != 0 || off < kHeapStart + kOverhead || off > h.top) {
    return EINVAL;
  }
  uint64_t c = off - kOverhead;
  uint64_t flags = heap.SizeFlags(c);
  uint64_t size = flags & ~kFlags;
  if (!(flags & kInUse) || size < kMinChunk || size > h.top - c) return EINVAL;

  uint64_t start = c, length = size;
  if (flags & kPrevFree) {
    uint64_t prev = c - heap.PrevSize(c);
    heap.Unlink(prev);
    start = prev;
    length += heap.Size(prev);
  }
  uint64_t next = c + size;
  if (next == h.top) {
    h.top = start;  // the chunk joins the untouched tail
    return 0;
  }
  if (!(heap.SizeFlags(next) & kInUse)) {
    heap.Unlink(next);
    length += heap.Size(next);
  }
  heap.SizeFlags(start) = length;
  heap.PrevSize(start + length) = length;
  heap.SizeFlags(start + length) |= kPrevFree;
  heap.Insert(start);
  return 0;
}

int HeapSetRoot(rvm_region* region, void* ptr) {
  uint64_t off = 0;
  if (ptr) {
    off = reinterpret_cast<uintptr_t>(ptr) - region->base;
    if (off >= region->size) return EINVAL;
  }
  Heap heap(region);
  int err = Prepare(region, heap);
  if (err != 0) return err;
  heap.h().root = off;
  return 0;
}

void* HeapGetRoot(const rvm_region* region) {
  const auto* h = reinterpret_cast<const Header*>(region->base);
  if (h->magic != kHeapMagic || h->root == 0) return nullptr;
  return reinterpret_cast<void*>(region->base + h->root);
}

}  // namespace amino::rvm
