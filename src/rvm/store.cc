#include "rvm/store.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "rvm/testing.h"

namespace amino::rvm {
namespace {

std::atomic<bool> g_split_commit{false};
std::atomic<unsigned> g_split_crash_after{0};  // page commits before a self-inflicted crash

constexpr char kMetaTag = 'M';
constexpr char kPageTag = 'P';
constexpr uint64_t kMetaMagic = 0x314e4745524d5652ull;  // "RVMREGN1", little-endian
constexpr u_int32_t kDbPageSize = 64 * 1024;  // keeps 4 KiB records inline, not on overflow pages
constexpr size_t kMaxNameLength = 255;

int Errno(int ret) {
  if (ret == 0) return 0;
  if (ret > 0) return ret;
  if (ret == DB_LOCK_NOTGRANTED) return EBUSY;
  if (ret == DB_LOCK_DEADLOCK) return EDEADLK;
  return EIO;  // DB_RUNRECOVERY and the other Berkeley DB conditions
}

DBT Dbt(const void* data, size_t size) {
  DBT d;
  std::memset(&d, 0, sizeof d);
  d.data = const_cast<void*>(data);
  d.size = static_cast<u_int32_t>(size);
  return d;
}

std::string Key(const std::string& name, char tag) {
  std::string k = name;
  k.push_back('\0');
  k.push_back(tag);
  return k;
}

std::string PageKey(const std::string& name, uint64_t index) {
  std::string k = Key(name, kPageTag);
  for (int shift = 56; shift >= 0; shift -= 8) k.push_back(static_cast<char>(index >> shift));
  return k;
}

struct Meta {
  uint64_t size = 0;
  uint64_t page_size = 0;
  uint64_t address = 0;
};

std::string EncodeMeta(const Meta& m) {
  std::string v;
  for (uint64_t x : {kMetaMagic, m.size, m.page_size, m.address}) {
    for (int shift = 0; shift < 64; shift += 8) v.push_back(static_cast<char>(x >> shift));
  }
  return v;
}

bool DecodeMeta(const void* data, size_t size, Meta* m) {
  if (size != 32) return false;
  uint64_t x[4];
  auto* p = static_cast<const unsigned char*>(data);
  for (int i = 0; i < 4; ++i) {
    x[i] = 0;
    for (int b = 7; b >= 0; --b) x[i] = x[i] << 8 | p[i * 8 + b];
  }
  if (x[0] != kMetaMagic) return false;
  *m = Meta{x[1], x[2], x[3]};
  return true;
}

bool AllZero(const void* data, size_t size) {
  auto* p = static_cast<const unsigned char*>(data);
  return p[0] == 0 && std::memcmp(p, p + 1, size - 1) == 0;
}

int OpenDatabase(rvm_store* s) {
  int ret = db_create(&s->db, s->env, 0);
  if (ret != 0) return Errno(ret);
  s->db->set_pagesize(s->db, kDbPageSize);
  s->db->set_flags(s->db, DB_CHKSUM);
  ret = s->db->open(s->db, nullptr, "rvm.db", nullptr, DB_BTREE,
                    DB_CREATE | DB_THREAD | DB_AUTO_COMMIT, 0644);
  if (ret != 0) {
    s->db->close(s->db, 0);
    s->db = nullptr;
    return Errno(ret);
  }
  ret = s->env->lock_id(s->env, &s->locker);
  if (ret != 0) return Errno(ret);
  s->has_locker = true;
  // rvm_prepare_in checks its parent against this: a child transaction must be in the same
  // environment as its parent.
  DB_TXN* t = nullptr;
  ret = s->env->txn_begin(s->env, nullptr, &t, 0);
  if (ret != 0) return Errno(ret);
  s->txn_manager = t->mgrp;
  t->abort(t);
  return 0;
}

// Frees what a partly opened store holds.
void Release(rvm_store* s) {
  if (s->has_locker) s->env->lock_id_free(s->env, s->locker);
  if (s->db) s->db->close(s->db, 0);
  if (s->own_env && s->env) {
    s->env->txn_checkpoint(s->env, 0, 0, 0);
    s->env->close(s->env, 0);
  }
  delete s;
}

u_int32_t CommitFlags(unsigned flags) {
  if (flags & RVM_STORE_SYNC) return DB_TXN_SYNC;
  if (flags & RVM_STORE_NOSYNC) return DB_TXN_NOSYNC;
  return DB_TXN_WRITE_NOSYNC;
}

// Reads every stored page of region `name` into memory at `base`.
int LoadPages(rvm_store* s, const std::string& name, const Meta& meta, char* base) {
  DBC* c = nullptr;
  int ret = s->db->cursor(s->db, nullptr, &c, 0);
  if (ret != 0) return Errno(ret);
  const std::string prefix = Key(name, kPageTag);
  std::string first = PageKey(name, 0);
  std::vector<char> kbuf(prefix.size() + 8 + 256), vbuf(meta.page_size);
  DBT k = Dbt(kbuf.data(), first.size());
  std::memcpy(kbuf.data(), first.data(), first.size());
  k.ulen = static_cast<u_int32_t>(kbuf.size());
  k.flags = DB_DBT_USERMEM;
  DBT v = Dbt(vbuf.data(), 0);
  v.ulen = static_cast<u_int32_t>(vbuf.size());
  v.flags = DB_DBT_USERMEM;
  int err = 0;
  for (ret = c->get(c, &k, &v, DB_SET_RANGE); ret == 0; ret = c->get(c, &k, &v, DB_NEXT)) {
    if (k.size != prefix.size() + 8 || std::memcmp(k.data, prefix.data(), prefix.size()) != 0) {
      break;
    }
    uint64_t index = 0;
    auto* p = static_cast<const unsigned char*>(k.data) + prefix.size();
    for (int i = 0; i < 8; ++i) index = index << 8 | p[i];
    if (v.size != meta.page_size || index >= meta.size / meta.page_size) {
      err = EUCLEAN;  // a record the region cannot hold: the store is damaged
      break;
    }
    std::memcpy(base + index * meta.page_size, v.data, v.size);
  }
  if (err == 0 && ret != 0 && ret != DB_NOTFOUND) err = Errno(ret);
  c->close(c);
  return err;
}

// The region's stored description, or a new one when RVM_CREATE allows (*exists says which):
// 0 or the errno RegionOpen reports. `size` is rounded to pages; 0 takes the stored size.
int FindMeta(rvm_store* s, const std::string& name, size_t size, unsigned flags, Meta* meta,
             bool* exists) {
  const size_t ps = PageSize();
  std::string meta_key = Key(name, kMetaTag);
  DBT k = Dbt(meta_key.data(), meta_key.size());
  DBT v = Dbt(nullptr, 0);
  v.flags = DB_DBT_MALLOC;
  const int ret = s->db->get(s->db, nullptr, &k, &v, 0);
  *exists = ret == 0;
  if (*exists) {
    bool ok = DecodeMeta(v.data, v.size, meta);
    free(v.data);
    if (!ok) return EUCLEAN;
    if (meta->page_size != ps) return EINVAL;
    if (size != 0 && size != meta->size) return EINVAL;
    return 0;
  }
  if (ret != DB_NOTFOUND) return Errno(ret);
  if (!(flags & RVM_CREATE)) return ENOENT;
  if (size == 0) return EINVAL;
  meta->size = size;
  meta->page_size = ps;
  return 0;
}

// Memory for the region, writable: at its recorded address when it exists (pointers stored in
// it stay valid), otherwise at an address derived from its name when one is free.
void* MapRegion(const std::string& name, const Meta& meta, bool exists) {
  if (exists) return MapRegionMemory(meta.size, PROT_READ | PROT_WRITE, meta.address);
  void* base = nullptr;
  for (int attempt = 0; attempt < 8 && !base; ++attempt) {
    uintptr_t hint = PersistentAddress(name, meta.size, attempt);
    if (hint == 0) break;
    base = MapRegionMemory(meta.size, PROT_READ | PROT_WRITE, hint, true);
  }
  return base ? base : MapRegionMemory(meta.size, PROT_READ | PROT_WRITE);
}

}  // namespace

int StoreOpen(const char* dir, unsigned flags, rvm_store** out) {
  if (!dir || !out || (flags & ~(RVM_STORE_SYNC | RVM_STORE_NOSYNC))) return EINVAL;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) return errno;
  auto* s = new (std::nothrow) rvm_store();
  if (!s) return ENOMEM;
  s->own_env = true;
  s->commit_flags = CommitFlags(flags);
  int ret = db_env_create(&s->env, 0);
  if (ret != 0) {
    delete s;
    return Errno(ret);
  }
  DB_ENV* env = s->env;
  env->set_cachesize(env, 0, 16 << 20, 1);
  env->set_lk_detect(env, DB_LOCK_DEFAULT);
  env->set_lg_bsize(env, 4 << 20);
  env->set_lg_max(env, 16 << 20);
  env->log_set_config(env, DB_LOG_AUTO_REMOVE, 1);
  // DB_REGISTER with DB_RECOVER: recovery runs exactly when a process that had the environment
  // open died, which brings every region back to its last committed state.
  ret = env->open(env, dir,
                  DB_CREATE | DB_INIT_TXN | DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL | DB_THREAD |
                      DB_REGISTER | DB_RECOVER,
                  0644);
  if (ret == 0) ret = OpenDatabase(s);
  if (ret != 0) {
    int err = Errno(ret);
    Release(s);
    return err;
  }
  *out = s;
  return 0;
}

int StoreAttach(DB_ENV* env, unsigned flags, rvm_store** out) {
  if (!env || !out || (flags & ~(RVM_STORE_SYNC | RVM_STORE_NOSYNC))) return EINVAL;
  auto* s = new (std::nothrow) rvm_store();
  if (!s) return ENOMEM;
  s->env = env;
  s->commit_flags = CommitFlags(flags);
  int err = OpenDatabase(s);
  if (err != 0) {
    Release(s);
    return err;
  }
  *out = s;
  return 0;
}

int StoreClose(rvm_store* s) {
  if (!s) return EINVAL;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->regions.empty()) return EBUSY;
  }
  Release(s);
  return 0;
}

int RegionOpen(rvm_store* s, const char* cname, size_t size, unsigned flags, rvm_region** out) {
  if (!s || !cname || !out || (flags & ~RVM_CREATE)) return EINVAL;
  std::string name(cname);
  if (name.empty() || name.size() > kMaxNameLength) return EINVAL;
  const size_t ps = PageSize();
  if (size > SIZE_MAX - ps) return EINVAL;
  size = (size + ps - 1) / ps * ps;

  std::unique_lock<std::mutex> lock(s->mu);
  for (rvm_region* r : s->regions) {
    if (r->name == name) return EBUSY;
  }
  auto* region = new (std::nothrow) rvm_region();
  if (!region) return ENOMEM;
  region->store = s;
  region->name = name;
  // One opener at a time, across processes: a Berkeley DB lock held while the region is mapped
  // (a dead holder's lock goes with the recovery that its death triggers).
  std::string object = "rvm:" + name;
  DBT obj = Dbt(object.data(), object.size());
  int ret = s->env->lock_get(s->env, s->locker, DB_LOCK_NOWAIT, &obj, DB_LOCK_WRITE, &region->lock);
  if (ret != 0) {
    delete region;
    return Errno(ret);
  }
  auto fail = [&](int err) {
    s->env->lock_put(s->env, &region->lock);
    delete region;
    return err;
  };

  Meta meta;
  bool exists = false;
  if (int err = FindMeta(s, name, size, flags, &meta, &exists); err != 0) return fail(err);
  void* base = MapRegion(name, meta, exists);
  if (!base) return fail(ENOMEM);
  int err = exists ? LoadPages(s, name, meta, static_cast<char*>(base)) : 0;
  if (err == 0 && !exists) {
    meta.address = reinterpret_cast<uintptr_t>(base);
    std::string meta_key = Key(name, kMetaTag);
    DBT k = Dbt(meta_key.data(), meta_key.size());
    std::string value = EncodeMeta(meta);
    DBT mv = Dbt(value.data(), value.size());
    err = Errno(s->db->put(s->db, nullptr, &k, &mv, 0));
  }
  if (err == 0 && mprotect(base, meta.size, PROT_READ) != 0) err = errno;
  if (err != 0) {
    munmap(base, meta.size);
    return fail(err);
  }
  region->base = reinterpret_cast<uintptr_t>(base);
  region->size = meta.size;
  s->regions.push_back(region);
  *out = region;
  return 0;
}

void RegionClose(rvm_region* region) {
  rvm_store* s = region->store;
  std::lock_guard<std::mutex> lock(s->mu);
  s->regions.erase(std::find(s->regions.begin(), s->regions.end(), region));
  s->env->lock_put(s->env, &region->lock);
}

int RegionRemove(rvm_store* s, const char* cname) {
  if (!s || !cname || !*cname) return EINVAL;
  std::string name(cname);
  std::lock_guard<std::mutex> lock(s->mu);
  for (rvm_region* r : s->regions) {
    if (r->name == name) return EBUSY;
  }
  DB_TXN* t = nullptr;
  int ret = s->env->txn_begin(s->env, nullptr, &t, s->commit_flags);
  if (ret != 0) return Errno(ret);
  DBC* c = nullptr;
  ret = s->db->cursor(s->db, t, &c, 0);
  if (ret != 0) {
    t->abort(t);
    return Errno(ret);
  }
  // The meta record and every page record share the prefix name \0.
  std::string prefix = name;
  prefix.push_back('\0');
  DBT k = Dbt(prefix.data(), prefix.size());
  k.flags = DB_DBT_MALLOC;
  DBT v = Dbt(nullptr, 0);
  v.flags = DB_DBT_MALLOC;
  bool found = false;
  for (ret = c->get(c, &k, &v, DB_SET_RANGE); ret == 0; ret = c->get(c, &k, &v, DB_NEXT)) {
    bool mine = k.size >= prefix.size() && std::memcmp(k.data, prefix.data(), prefix.size()) == 0;
    free(k.data);
    free(v.data);
    if (!mine) break;
    found = true;
    ret = c->del(c, 0);
    if (ret != 0) break;
  }
  c->close(c);
  if (ret != 0 && ret != DB_NOTFOUND) {
    t->abort(t);
    return Errno(ret);
  }
  ret = t->commit(t, 0);
  if (ret != 0) return Errno(ret);
  return found ? 0 : ENOENT;
}

int WritePages(rvm_store* s, DB_TXN* parent, const DirtyPage* pages, size_t n) {
  if (parent && parent->mgrp != s->txn_manager) return EXDEV;
  const size_t ps = PageSize();
  DB_TXN* t = nullptr;
  int ret = s->env->txn_begin(s->env, parent, &t, parent ? 0 : s->commit_flags);
  if (ret != 0) return Errno(ret);
  for (size_t i = 0; i < n && ret == 0; ++i) {
    const void* now = reinterpret_cast<const void*>(pages[i].page);
    if (std::memcmp(now, pages[i].before, ps) == 0) continue;
    std::string key = PageKey(pages[i].region->name, (pages[i].page - pages[i].region->base) / ps);
    DBT k = Dbt(key.data(), key.size());
    if (AllZero(now, ps)) {
      ret = s->db->del(s->db, t, &k, 0);
      if (ret == DB_NOTFOUND) ret = 0;
    } else {
      DBT v = Dbt(now, ps);
      ret = s->db->put(s->db, t, &k, &v, 0);
    }
    if (ret == 0 && !parent && g_split_commit.load(std::memory_order_relaxed)) {
      ret = t->commit(t, 0);
      if (ret != 0) return Errno(ret);
      if (g_split_crash_after.load() != 0 && g_split_crash_after.fetch_sub(1) == 1) raise(SIGKILL);
      ret = s->env->txn_begin(s->env, nullptr, &t, s->commit_flags);
      if (ret != 0) return Errno(ret);
    }
  }
  if (ret != 0) {
    t->abort(t);
    return Errno(ret);
  }
  ret = t->commit(t, 0);
  if (ret != 0) return Errno(ret);
  // Keep the log (and recovery time) bounded in an environment of our own; the owner of an
  // attached environment checkpoints it.
  if (s->own_env && !parent && s->commits.fetch_add(1, std::memory_order_relaxed) % 256 == 255) {
    s->env->txn_checkpoint(s->env, 8 * 1024, 0, 0);
  }
  return 0;
}

namespace testing {
void SetSplitCommitForTesting(bool on, unsigned crash_after_pages) {
  g_split_commit.store(on);
  g_split_crash_after.store(crash_after_pages);
}
}  // namespace testing

}  // namespace amino::rvm
