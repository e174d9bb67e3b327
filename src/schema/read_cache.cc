#include "schema/read_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>

namespace amino::schema {
namespace {

constexpr const char* kGenerationFile = "/amino.generation";
// Bounds on what is kept: path, inode and name records are tens of bytes; file pages and big
// attributes are left to Berkeley DB's own cache.
constexpr size_t kMaxEntries = 1 << 16;
constexpr size_t kSlots = 2 * kMaxEntries;
constexpr size_t kMaxValue = 512;
constexpr size_t kMaxKey = 8 << 10;  // a path record's key is a path: under PATH_MAX
constexpr size_t kArenaBytes = 8 << 20;
constexpr size_t kHugePage = 2 << 20;
constexpr int kDatabases = 8;

// Only the databases the store numbers, and keys the slots can measure.
bool Known(int db, std::string_view key) {
  return db >= 0 && db < kDatabases && key.size() <= kMaxKey;
}

uint32_t HashOf(int db, std::string_view key) {
  const uint64_t h =
      std::hash<std::string_view>{}(key) + static_cast<uint64_t>(db) * 0x9e3779b97f4a7c15;
  return static_cast<uint32_t>(h ^ (h >> 32));
}

std::atomic_ref<uint64_t> At(uint64_t* p) { return std::atomic_ref<uint64_t>(*p); }

}  // namespace

Result<std::unique_ptr<ReadCache>> ReadCache::Open(const std::string& dir) {
  const std::string path = dir + kGenerationFile;
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Storage(errno, path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 ||
      (st.st_size < static_cast<off_t>(sizeof(uint64_t)) && ftruncate(fd, sizeof(uint64_t)) != 0)) {
    const int err = errno;
    close(fd);
    return Status::Storage(err, path + ": " + std::strerror(err));
  }
  void* map = mmap(nullptr, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (map == MAP_FAILED) return Status::Storage(err, path + ": mmap: " + std::strerror(err));
  std::unique_ptr<ReadCache> c(new ReadCache);
  if (!c->MapTable()) {
    const int map_err = errno;
    munmap(map, sizeof(uint64_t));
    return Status::Storage(map_err, std::string("read cache: mmap: ") + std::strerror(map_err));
  }
  c->shared_ = static_cast<uint64_t*>(map);
  c->seen_ = c->Shared();
  return c;
}

ReadCache::~ReadCache() {
  if (shared_) munmap(shared_, sizeof(uint64_t));
  if (map_) munmap(map_, map_bytes_);
}

uint64_t ReadCache::Shared() const { return At(shared_).load(std::memory_order_seq_cst); }

uint64_t ReadCache::Refresh() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t now = Shared();
  if (now != seen_) {
    ClearLocked();
    seen_ = now;
  }
  return now;
}

void ReadCache::Advance() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t before = At(shared_).fetch_add(1, std::memory_order_seq_cst);
  if (before != seen_) ClearLocked();  // someone else moved it since: nothing is sure
  seen_ = before + 1;
}

bool ReadCache::MapTable() {
  // Aligned to a huge page: mapped one larger and trimmed.
  const size_t wanted = (kSlots * sizeof(Slot) + kArenaBytes + kHugePage - 1) & ~(kHugePage - 1);
  void* map = mmap(nullptr, wanted + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED) return false;
  const uintptr_t start = reinterpret_cast<uintptr_t>(map);
  const uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) munmap(map, aligned - start);
  const uintptr_t end = start + wanted + kHugePage;
  if (end > aligned + wanted)
    munmap(reinterpret_cast<void*>(aligned + wanted), end - aligned - wanted);
  map_ = reinterpret_cast<void*>(aligned);
  map_bytes_ = wanted;
  (void)madvise(map_, map_bytes_, MADV_HUGEPAGE);  // a hint: small pages work as well
  slots_ = static_cast<Slot*>(map_);  // zero: every slot is of epoch 0, which is never current
  arena_ = static_cast<char*>(map_) + kSlots * sizeof(Slot);
  return true;
}

ReadCache::Slot* ReadCache::Probe(int db, std::string_view key, uint32_t hash, bool for_insert) {
  Slot* const slots = slots_;
  Slot* reusable = nullptr;
  // At most half the slots are used, so an empty one ends every probe.
  for (size_t i = hash & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
    Slot* s = &slots[i];
    if (s->epoch != epoch_) return for_insert ? (reusable ? reusable : s) : nullptr;
    if (s->value_size == kForgotten) {
      if (!reusable) reusable = s;
      continue;
    }
    if (s->hash != hash || s->key_size != key.size()) continue;
    const char* at = &arena_[s->offset];
    if (static_cast<unsigned char>(at[0]) == db && std::memcmp(at + 1, key.data(), key.size()) == 0)
      return s;
  }
}

void ReadCache::ClearLocked() {
  if (++epoch_ == 0) {  // every slot may claim any older epoch: forget them all for real
    std::memset(slots_, 0, kSlots * sizeof(Slot));
    epoch_ = 1;
  }
  used_ = 0;
  arena_used_ = 0;
}

std::optional<ReadCache::Hit> ReadCache::Find(int db, std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  const Slot* s = Known(db, key) ? Probe(db, key, HashOf(db, key), false) : nullptr;
  if (!s) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  Hit hit;
  hit.reader = s->reader;
  if (s->value_size != kAbsent)
    hit.value.emplace(&arena_[s->offset + 1 + s->key_size], s->value_size);
  return hit;
}

void ReadCache::Insert(int db, std::string_view key, std::optional<std::string_view> value,
                       uint64_t reader) {
  if (!Known(db, key) || (value && value->size() > kMaxValue)) return;
  const uint32_t hash = HashOf(db, key);
  std::lock_guard<std::mutex> lock(mu_);
  InsertLocked(db, key, value, hash, reader);
}

void ReadCache::InsertMany(int db, std::span<const Record> records, uint64_t reader) {
  if (records.empty() || db < 0 || db >= kDatabases) return;
  std::lock_guard<std::mutex> lock(mu_);
  hashes_.resize(records.size());
  for (size_t i = 0; i < records.size(); ++i) hashes_[i] = HashOf(db, records[i].key);
  // A few records ahead: far enough for the slot to arrive, near enough to stay cached.
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < std::min(kAhead, records.size()); ++i) {
    __builtin_prefetch(&slots_[hashes_[i] & (kSlots - 1)], 1);
  }
  for (size_t i = 0; i < records.size(); ++i) {
    if (i + kAhead < records.size()) {
      __builtin_prefetch(&slots_[hashes_[i + kAhead] & (kSlots - 1)], 1);
    }
    const Record& r = records[i];
    if (r.key.size() > kMaxKey || r.value.size() > kMaxValue) continue;
    InsertLocked(db, r.key, r.value, hashes_[i], reader);
  }
}

void ReadCache::InsertLocked(int db, std::string_view key, std::optional<std::string_view> value,
                             uint32_t hash, uint64_t reader) {
  const size_t record = 1 + key.size() + (value ? value->size() : 0);
  if (used_ >= kMaxEntries || arena_used_ + record > kArenaBytes) ClearLocked();
  Slot* s = Probe(db, key, hash, true);
  if (s->epoch != epoch_) ++used_;  // a forgotten slot of this epoch is counted already
  char* at = &arena_[arena_used_];
  at[0] = static_cast<char>(db);
  std::memcpy(at + 1, key.data(), key.size());
  if (value) std::memcpy(at + 1 + key.size(), value->data(), value->size());
  *s = Slot{epoch_,
            hash,
            static_cast<uint32_t>(arena_used_),
            static_cast<uint16_t>(key.size()),
            value ? static_cast<uint16_t>(value->size()) : kAbsent,
            reader};
  arena_used_ += record;
}

void ReadCache::Forget(int db, std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!Known(db, key)) return;
  if (Slot* s = Probe(db, key, HashOf(db, key), false)) s->value_size = kForgotten;
}

void ReadCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  ClearLocked();
}

}  // namespace amino::schema
