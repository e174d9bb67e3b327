// What a transaction has read, kept for the rest of it: a served call looks up the same records
// several times (the parent directory in the walk, in the permission check and again when its
// times change), about a microsecond each in Berkeley DB.
//
// A value read under the transaction's lock stays true until the transaction ends, except where
// the transaction (or a child of it) writes: every write forgets its key here. A value taken from
// the read cache carries the cache's own guarantee (read_cache.h: checked at commit), unchanged.
// One transaction per thread is remembered: the one that read last. Its Berkeley DB id is kept
// with it, so a handle reused by a later transaction never meets the earlier one's values.
#pragma once

#include <db.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace amino::schema {

class TxnReads {
 public:
  // What `txn` read of `key` in database number `db`, if it read it and nothing wrote it since.
  static const std::optional<std::string>* Find(const void* store, DB_TXN* txn, int db,
                                                std::string_view key);
  static void Remember(const void* store, DB_TXN* txn, int db, std::string_view key,
                       const std::optional<std::string>& value);
  // A write of `key`: forgotten, whichever transaction wrote it.
  static void Forget(int db, std::string_view key);
  // `txn` ended: its reads are let go.
  static void End(DB_TXN* txn);

 private:
  // The last few reads, in slots whose strings keep their buffers from one transaction to the
  // next: a call reads a handful of records, and remembering one must cost far less than the
  // Berkeley DB get it may save (allocating and hashing made a stat 4% dearer).
  struct Entry {
    int db = -1;  // -1: free
    std::string key;
    std::optional<std::string> value;
  };
  struct Reads {
    const void* store = nullptr;
    DB_TXN* txn = nullptr;
    u_int32_t id = 0;
    std::array<Entry, 16> entries;
    size_t used = 0;  // entries[0, used) are in use, or free (db -1) after a write
    size_t next = 0;  // when all are used, the one replaced next
  };
  static Reads& Mine();
  static Entry* Lookup(Reads& r, int db, std::string_view key);
};

}  // namespace amino::schema
