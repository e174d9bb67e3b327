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

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
  // `value` nullopt: known absent. Values over 512 bytes are not kept.
  void Insert(int db, std::string_view key, std::optional<std::string_view> value, uint64_t reader);
  // Several values read together (a listing's batch), as Insert each: their slots are looked
  // up ahead, so that the memory waits overlap.
  struct Record {
    std::string_view key;
    std::string_view value;
  };
  void InsertMany(int db, std::span<const Record> records, uint64_t reader);
  void Forget(int db, std::string_view key);
  void Clear();

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  // An open-addressing table over one arena: no allocation per entry, and emptying it (the
  // generation moved, or it is full) is a counter's step, not a walk over its entries.
  struct Slot {
    uint32_t epoch;       // live only when it equals epoch_; 0 never does
    uint32_t hash;        // the key's hash, to skip most comparisons
    uint32_t offset;      // into arena_: db byte, key bytes, value bytes
    uint16_t key_size;    // key bytes after the db byte
    uint16_t value_size;  // kAbsent: known absent; kForgotten: a removed entry
    uint64_t reader;
  };
  static constexpr uint16_t kAbsent = 0xffff;
  static constexpr uint16_t kForgotten = 0xfffe;

  ReadCache() = default;
  bool MapTable();  // false: no memory for it (errno says why)
  // The slot holding (db, key), or the one to fill for it (nullptr when every probe is taken).
  Slot* Probe(int db, std::string_view key, uint32_t hash, bool for_insert);
  void ClearLocked();
  void InsertLocked(int db, std::string_view key, std::optional<std::string_view> value,
                    uint32_t hash, uint64_t reader);

  std::mutex mu_;               // writes may come from any thread of the process
  uint64_t* shared_ = nullptr;  // the mapped generation
  uint64_t seen_ = 0;           // the generation the entries are true at
  // One mapping for both, in huge pages where the kernel gives them: a lookup lands on a
  // random slot, and with small pages nearly each one missed the TLB too. Its pages are
  // touched only as entries fill them.
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  Slot* slots_ = nullptr;
  char* arena_ = nullptr;
  uint32_t epoch_ = 1;
  size_t used_ = 0;  // slots of this epoch, forgotten ones included
  size_t arena_used_ = 0;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
  std::vector<uint32_t> hashes_;  // InsertMany's, kept for the next
};

}  // namespace amino::schema
