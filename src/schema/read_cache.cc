#include "schema/read_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace amino::schema {
namespace {

constexpr const char* kGenerationFile = "/amino.generation";
// Bounds on what is kept: path, inode and name records are tens of bytes; file pages and big
// attributes are left to Berkeley DB's own cache.
constexpr size_t kMaxEntries = 1 << 16;
constexpr size_t kMaxValue = 512;

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
  c->shared_ = static_cast<uint64_t*>(map);
  c->seen_ = c->Shared();
  return c;
}

ReadCache::~ReadCache() {
  if (shared_) munmap(shared_, sizeof(uint64_t));
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

ReadCache::Entries* ReadCache::EntriesOf(int db) {
  return db >= 0 && db < kDatabases ? &entries_[static_cast<size_t>(db)] : nullptr;
}

void ReadCache::ClearLocked() {
  for (Entries& e : entries_) e.clear();
  size_ = 0;
}

std::optional<ReadCache::Hit> ReadCache::Find(int db, std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  Entries* entries = EntriesOf(db);
  auto it = entries ? entries->find(key) : Entries::iterator();
  if (!entries || it == entries->end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  return it->second;
}

void ReadCache::Insert(int db, std::string_view key, std::optional<std::string> value,
                       uint64_t reader) {
  if (value && value->size() > kMaxValue) return;
  std::lock_guard<std::mutex> lock(mu_);
  Entries* entries = EntriesOf(db);
  if (!entries) return;
  if (size_ >= kMaxEntries) ClearLocked();
  auto it = entries->find(key);
  if (it == entries->end()) {
    entries->emplace(std::string(key), Hit{std::move(value), reader});
    ++size_;
  } else {
    it->second = Hit{std::move(value), reader};
  }
}

void ReadCache::Forget(int db, std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  Entries* entries = EntriesOf(db);
  if (!entries) return;
  if (auto it = entries->find(key); it != entries->end()) {
    entries->erase(it);
    --size_;
  }
}

void ReadCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  ClearLocked();
}

}  // namespace amino::schema
