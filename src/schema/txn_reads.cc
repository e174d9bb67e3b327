#include "schema/txn_reads.h"

namespace amino::schema {

TxnReads::Reads& TxnReads::Mine() {
  thread_local Reads reads;
  return reads;
}

TxnReads::Entry* TxnReads::Lookup(Reads& r, int db, std::string_view key) {
  for (size_t i = 0; i < r.used; ++i) {
    Entry& e = r.entries[i];
    if (e.db == db && e.key == key) return &e;
  }
  return nullptr;
}

const std::optional<std::string>* TxnReads::Find(const void* store, DB_TXN* txn, int db,
                                                 std::string_view key) {
  Reads& r = Mine();
  if (r.used == 0 || r.store != store || r.txn != txn || r.id != txn->id(txn)) return nullptr;
  const Entry* e = Lookup(r, db, key);
  return e ? &e->value : nullptr;
}

void TxnReads::Remember(const void* store, DB_TXN* txn, int db, std::string_view key,
                        const std::optional<std::string>& value) {
  Reads& r = Mine();
  const u_int32_t id = txn->id(txn);
  if (r.store != store || r.txn != txn || r.id != id) {
    r.store = store;
    r.txn = txn;
    r.id = id;
    r.used = 0;
    r.next = 0;
  }
  Entry* e = Lookup(r, db, key);
  if (!e) {
    if (r.used < r.entries.size()) {
      e = &r.entries[r.used++];
    } else {
      e = &r.entries[r.next];
      r.next = (r.next + 1) % r.entries.size();
    }
  }
  e->db = db;
  e->key.assign(key);
  e->value = value;
}

void TxnReads::Forget(int db, std::string_view key) {
  Reads& r = Mine();
  if (Entry* e = Lookup(r, db, key)) e->db = -1;
}

void TxnReads::End(DB_TXN* txn) {
  Reads& r = Mine();
  if (r.txn != txn) return;
  r.used = 0;
  r.next = 0;
  r.txn = nullptr;
  r.store = nullptr;
}

}  // namespace amino::schema
