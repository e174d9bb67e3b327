// Records read lately, kept across transactions: a served call looks up the same path records
// (every directory of a walk) and inode records (every call on a descriptor) as the calls
// before it, about a microsecond each in Berkeley DB. Only committed values are kept.
//
// Several processes may share the file system (two `amino run`, the tools), so the cache is
// only as good as the file system's *generation*, a counter in DBDIR/amino.generation that
// every process maps:
// - every top-level transaction that wrote anything advances it *before* it commits (while it
//   still holds its locks);
// - a transaction that may read from the cache (Store::BeginTopLevel) empties the cache first
//   when the generation moved since this process last looked;
// - such a transaction, if it relied on a cached value, commits only when the generation has
//   not moved since it began: otherwise another process committed meanwhile, and it fails with
//   a conflict (the caller runs it again). So everything it read, cached or not, is the state
//   at its commit: as serializable as reading everything through Berkeley DB's locks.
// Writes of this process forget the keys they touch at once (any transaction's, committed or
// not), and a transaction that wrote reads past the cache from then on (its own uncommitted
// values must not be kept).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "schema/status.h"

namespace amino::schema {

class ReadCache {
 public:
  // Maps DIR/amino.generation (made, mode 0600, when missing).
  static Result<std::unique_ptr<ReadCache>> Open(const std::string& dir);
  ~ReadCache();
  ReadCache(const ReadCache&) = delete;
  ReadCache& operator=(const ReadCache&) = delete;

  // The shared generation now; the cache is emptied if it moved since this process last saw it.
  uint64_t Refresh();
  // The shared generation, as it is.
  uint64_t Shared() const;
  // Advances the shared generation (a commit with writes is about to happen). When this process
  // was the last to move it, what the cache holds stays true.
  void Advance();

  struct Hit {
    std::optional<std::string> value;  // nullopt: known absent
    uint64_t reader = 0;               // the Insert's `reader`
  };
  // What is cached for `key` in database `db`, if anything.
  std::optional<Hit> Find(int db, std::string_view key);
  // `reader` names the transaction that read the value (under its own lock: a hit of that same
  // transaction is as good as its own read).
  void Insert(int db, std::string_view key, std::optional<std::string> value, uint64_t reader);
  void Forget(int db, std::string_view key);
  void Clear();

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  ReadCache() = default;
  // Looked up by the key as the caller has it, with no string made for the lookup.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
  };
  using Entries = std::unordered_map<std::string, Hit, KeyHash, std::equal_to<>>;
  static constexpr int kDatabases = 8;
  Entries* EntriesOf(int db);
  void ClearLocked();

  std::mutex mu_;                            // writes may come from any thread of the process
  uint64_t* shared_ = nullptr;               // the mapped generation
  uint64_t seen_ = 0;                        // the generation the entries are true at
  std::array<Entries, kDatabases> entries_;  // by database number
  size_t size_ = 0;                          // entries in all of them
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

}  // namespace amino::schema
