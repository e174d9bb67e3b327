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

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

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
  struct Reads {
    const void* store = nullptr;
    DB_TXN* txn = nullptr;
    u_int32_t id = 0;
    std::unordered_map<std::string, std::optional<std::string>> values;
  };
  static Reads& Mine();
  static std::string Key(int db, std::string_view key);
};

}  // namespace amino::schema
