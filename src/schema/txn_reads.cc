#include "schema/txn_reads.h"

namespace amino::schema {

namespace {
// A transaction that reads more than this (fsck, a rename of a large tree) starts over: the
// values are a saving, not a duty.
constexpr size_t kMaxValues = 4096;
}  // namespace

TxnReads::Reads& TxnReads::Mine() {
  thread_local Reads reads;
  return reads;
}

std::string TxnReads::Key(int db, std::string_view key) {
  std::string k;
  k.reserve(key.size() + 1);
  k.push_back(static_cast<char>(db));
  k.append(key);
  return k;
}

const std::optional<std::string>* TxnReads::Find(const void* store, DB_TXN* txn, int db,
                                                 std::string_view key) {
  Reads& r = Mine();
  if (r.values.empty() || r.store != store || r.txn != txn || r.id != txn->id(txn)) {
    return nullptr;
  }
  auto it = r.values.find(Key(db, key));
  return it == r.values.end() ? nullptr : &it->second;
}

void TxnReads::Remember(const void* store, DB_TXN* txn, int db, std::string_view key,
                        const std::optional<std::string>& value) {
  Reads& r = Mine();
  const u_int32_t id = txn->id(txn);
  if (r.store != store || r.txn != txn || r.id != id || r.values.size() >= kMaxValues) {
    r.values.clear();
    r.store = store;
    r.txn = txn;
    r.id = id;
  }
  r.values.insert_or_assign(Key(db, key), value);
}

void TxnReads::Forget(int db, std::string_view key) {
  Reads& r = Mine();
  if (!r.values.empty()) r.values.erase(Key(db, key));
}

void TxnReads::End(DB_TXN* txn) {
  Reads& r = Mine();
  if (r.txn != txn) return;
  r.values.clear();
  r.txn = nullptr;
  r.store = nullptr;
}

}  // namespace amino::schema
