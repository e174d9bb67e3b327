// The store's cursor (store.h): Berkeley DB's cursor with buffers it reuses across calls.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "schema/store.h"
#include "schema/store_env.h"

namespace amino::schema {

using namespace store_env;

Cursor::Cursor(DB* db, DB_TXN* txn, uint32_t flags) {
  std::memset(&k_, 0, sizeof k_);
  std::memset(&v_, 0, sizeof v_);
  k_.flags = DB_DBT_REALLOC;
  v_.flags = DB_DBT_REALLOC;
  if (auto* store = static_cast<Store*>(db->app_private)) {
    Result<DB_TXN*> via = store->ReadVia(txn);
    Status st = via.ok() ? store->MayRead(db, *via) : via.status();
    if (!st.ok()) {
      open_status_ = st;
      return;
    }
    txn = *via;
  }
  int ret = db->cursor(db, txn, &dbc_, flags);
  if (ret != 0) {
    dbc_ = nullptr;
    open_status_ = Fail(ret, "cursor");
  }
}

Cursor::~Cursor() {
  if (dbc_ && dbc_->close(dbc_) == DB_RUNRECOVERY) Abandon(dbc_);
  free(k_.data);
  free(v_.data);
}

// Copies `s` into a DB_DBT_REALLOC buffer the cursor owns. Its allocation is at least its
// `size`: Berkeley DB reallocates such a buffer to exactly the record's length when `size` is
// less than that (shrinking it below any larger `ulen` set before), and never otherwise.
static void Load(DBT* d, std::string_view s) {
  if (!d->data || d->size < s.size()) {
    d->data = realloc(d->data, s.size() ? s.size() : 1);
  }
  if (!s.empty()) std::memmove(d->data, s.data(), s.size());  // s may be the buffer itself
  d->size = static_cast<u_int32_t>(s.size());
}

Result<bool> Cursor::Get(uint32_t op) {
  if (!dbc_) return open_status_;
  int ret = dbc_->get(dbc_, &k_, &v_, op);
  if (ret == DB_NOTFOUND || ret == DB_KEYEMPTY) return false;
  if (ret != 0) return Fail(ret, "cursor get");
  return true;
}

Result<bool> Cursor::SeekRange(std::string_view key) {
  if (!dbc_) return open_status_;
  Load(&k_, key);
  return Get(DB_SET_RANGE);
}

Result<bool> Cursor::SeekBoth(std::string_view key, std::string_view value) {
  if (!dbc_) return open_status_;
  Load(&k_, key);
  Load(&v_, value);
  return Get(DB_GET_BOTH);
}

// A batch buffer holds at least one page of the cursor's database (Berkeley DB's rule for bulk
// buffers, which must also be a multiple of 1 KiB). A seek's batch is one page: a small
// directory's entries fit, and a bulk read copies as many records as the buffer holds, locking
// each page it reads, so a larger first batch would copy (and lock) the entries of the next
// directories too. Each further batch doubles, up to kBatchBytes.
constexpr u_int32_t kBatchBytes = 64 << 10;

Result<bool> Cursor::GetBatch(uint32_t op) {
  if (!dbc_) return open_status_;
  batch_at_ = nullptr;
  u_int32_t want = batch_dbt_.ulen * 2;
  if (op == DB_SET_RANGE || batch_dbt_.ulen == 0) {
    u_int32_t page = 0;
    if (dbc_->dbp->get_pagesize(dbc_->dbp, &page) != 0 || page == 0) page = kBatchBytes;
    want = (page + 1023) & ~1023u;
  }
  want = std::max(std::min(want, kBatchBytes), batch_least_);
  for (;;) {
    if (want > batch_cap_) {
      batch_.reset(new uint32_t[want / sizeof(uint32_t)]);
      batch_cap_ = want;
      batch_dbt_.data = batch_.get();
      batch_dbt_.flags = DB_DBT_USERMEM;
    }
    batch_dbt_.ulen = want;
    int ret = dbc_->get(dbc_, &k_, &batch_dbt_, op | DB_MULTIPLE_KEY);
    if (ret == DB_NOTFOUND || ret == DB_KEYEMPTY) return false;
    if (ret == DB_BUFFER_SMALL) {
      // The cursor has not moved: asked again with room for the record, and every later
      // batch keeps that room.
      batch_least_ = std::max((batch_dbt_.size + 1023) & ~1023u, want * 2);
      want = batch_least_;
      continue;
    }
    if (ret != 0) return Fail(ret, "cursor bulk get");
    DB_MULTIPLE_INIT(batch_at_, &batch_dbt_);
    return true;
  }
}

Result<bool> Cursor::SeekRangeBatch(std::string_view key) {
  if (!dbc_) return open_status_;
  Load(&k_, key);
  return GetBatch(DB_SET_RANGE);
}

Result<bool> Cursor::NextBatch() { return GetBatch(DB_NEXT); }

bool Cursor::NextInBatch(std::string_view* key, std::string_view* value) {
  if (!batch_at_) return false;
  void* k = nullptr;
  void* v = nullptr;
  u_int32_t klen = 0, vlen = 0;
  DB_MULTIPLE_KEY_NEXT(batch_at_, &batch_dbt_, k, klen, v, vlen);
  if (!k) return false;
  *key = {static_cast<const char*>(k), klen};
  *value = {static_cast<const char*>(v), vlen};
  return true;
}

void Cursor::KeysOnly() {
  v_.flags = DB_DBT_REALLOC | DB_DBT_PARTIAL;
  v_.doff = 0;
  v_.dlen = 0;
}

Result<bool> Cursor::First() { return Get(DB_FIRST); }
Result<bool> Cursor::Next() { return Get(DB_NEXT); }
Result<bool> Cursor::NextDup() { return Get(DB_NEXT_DUP); }

Result<bool> Cursor::SeekToReplace(std::string_view key) {
  if (!dbc_) return open_status_;
  auto* store = static_cast<Store*>(dbc_->dbp->app_private);
  if (store) AMINO_RETURN_IF_ERROR(store->MayChange(dbc_->txn));
  Load(&k_, key);
  DBT none{};  // the value's first 0 bytes: whether it is there, not what it holds
  none.flags = DB_DBT_USERMEM | DB_DBT_PARTIAL;
  int ret = dbc_->get(dbc_, &k_, &none, DB_SET | DB_RMW);
  if (ret == DB_NOTFOUND || ret == DB_KEYEMPTY) return false;
  if (ret != 0) return Fail(ret, "cursor get");
  return true;
}

Status Cursor::ReplaceCurrent(std::string_view value) {
  DBT v = Dbt(value);
  return PutCurrent(v);
}

Status Cursor::ReplaceInCurrent(uint32_t offset, std::string_view bytes) {
  DBT v = Dbt(bytes);
  v.doff = offset;
  v.dlen = static_cast<u_int32_t>(bytes.size());
  v.flags |= DB_DBT_PARTIAL;
  return PutCurrent(v);
}

Status Cursor::PutCurrent(DBT& value) {
  if (!dbc_) return open_status_;
  auto* store = static_cast<Store*>(dbc_->dbp->app_private);
  if (store) {
    AMINO_RETURN_IF_ERROR(store->MayChange(dbc_->txn));
    ++store->writes_;
    store->NoteWrite(dbc_->dbp, key());
  }
  int ret = dbc_->put(dbc_, &k_, &value, DB_CURRENT);
  return ret == 0 ? Status::Ok() : Fail(ret, "cursor put");
}

Status Cursor::Delete() {
  auto* store = static_cast<Store*>(dbc_->dbp->app_private);
  if (store) AMINO_RETURN_IF_ERROR(store->MayChange(dbc_->txn));
  if (store) {
    ++store->writes_;
    if (dbc_->dbp == store->data_) store->data_deletes_.fetch_add(1, std::memory_order_relaxed);
    store->NoteWrite(dbc_->dbp, key());
  }
  int ret = dbc_->del(dbc_, 0);
  return ret == 0 ? Status::Ok() : Fail(ret, "cursor del");
}

}  // namespace amino::schema
