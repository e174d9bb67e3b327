// Berkeley DB's environment as the store configures it, and the error and handle helpers every
// part of the store shares (store_env.h).
#include "schema/store_env.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "schema/store_files.h"
#include "schema/store_space.h"

namespace amino::schema::store_env {

using store_files::kFileMode;

namespace {

// Berkeley DB reports details through a callback; keep the last one per thread so a Status can
// carry it.
thread_local std::string last_db_message;

void CaptureMessage(const DB_ENV*, const char*, const char* msg) { last_db_message = msg; }

std::atomic<uint64_t> g_damage_seen{0};

}  // namespace

uint64_t DamageSeen() { return g_damage_seen.load(); }

void NoteDamageSeen() { g_damage_seen.fetch_add(1, std::memory_order_relaxed); }

Status Fail(int ret, const std::string& what) {
  std::string msg = what + ": " + db_strerror(ret);
  if (!last_db_message.empty()) msg += " (" + last_db_message + ")";
  last_db_message.clear();
  if (ret == DB_LOCK_DEADLOCK || ret == DB_LOCK_NOTGRANTED) return Status::Conflict(msg);
  // A full file system is no damage: Berkeley DB aborted what it could not write (a commit
  // record that found no room is turned into an abort), and the caller reports ENOSPC.
  if (StoreSpace::NoteError(ret)) return Status::Storage(ret, msg);
  NoteDamageSeen();
  return Status::Storage(ret > 0 ? ret : EIO, msg);
}

void Abandon(void* handle) {
  static auto* abandoned = new std::vector<void*>;
  abandoned->push_back(handle);
}

DBT Dbt(std::string_view s) {
  DBT d;
  std::memset(&d, 0, sizeof d);
  d.data = const_cast<char*>(s.data());
  d.size = static_cast<u_int32_t>(s.size());
  return d;
}

DBT MallocDbt() {
  DBT d;
  std::memset(&d, 0, sizeof d);
  d.flags = DB_DBT_MALLOC;
  return d;
}

std::string TakeDbt(DBT& d) {
  std::string s(static_cast<const char*>(d.data), d.size);
  free(d.data);
  d.data = nullptr;
  return s;
}

Status CreateEnv(DB_ENV** out, size_t cache) {
  int ret = db_env_create(out, 0);
  if (ret != 0) return Fail(ret, "db_env_create");
  DB_ENV* env = *out;
  env->set_errcall(env, CaptureMessage);
  env->set_cachesize(env, static_cast<u_int32_t>(cache >> 30),
                     static_cast<u_int32_t>(cache & ((1u << 30) - 1)), 1);
  // The cache's hash table: a bucket per 4 KiB of cache. A full cache looks for a buffer to
  // give up bucket by bucket, and the metadata databases (4 KiB pages, each with its older
  // versions) fill it once a tree has a few hundred thousand files: with a bucket per 16 KiB
  // that search was 58% of the time, and 400,000 files were made at 5,600/s against 13,000/s.
  // The buckets share 1,024 mutexes: a mutex per bucket took 8 ms of every start.
  env->set_mp_tablesize(env, static_cast<u_int32_t>(cache / (4 << 10)));
  env->set_mp_mtxcount(env, 1024);
  // Berkeley DB counts a mutex per 4 KiB of cache, for the buffers. Pages of the multiversion
  // databases also keep their older versions in the cache, each version a buffer of its own,
  // and each version names its transaction, whose record holds another mutex. Without room for
  // those the mutexes ran out at ~157,000 files made in the monitor's cache, and every later
  // call failed. The room is taken only as the region grows.
  env->mutex_set_increment(env, static_cast<u_int32_t>(cache / 4096));
  env->set_lk_detect(env, DB_LOCK_DEFAULT);
  // Locks live in the main region, which starts small and grows on demand up to its maximum:
  // renaming a big directory or importing a tree is one transaction that holds many locks,
  // but sizing the region for that up front made every start write tens of megabytes.
  env->set_memory_init(env, DB_MEM_LOCK, 4096);
  env->set_memory_init(env, DB_MEM_LOCKOBJECT, 4096);
  env->set_memory_init(env, DB_MEM_LOCKER, 1024);
  env->set_memory_init(env, DB_MEM_TRANSACTION, 256);
  env->set_memory_max(env, 0, 256u << 20);
  env->set_lk_tablesize(env, 16384);
  env->set_lg_bsize(env, 4 << 20);
  // An opener reads the last log file from its start to find the end of the log, checking each
  // record (up to 30 ms at 16 MiB), but every new file costs the calls that fill it: with 2 MiB
  // files unlink and rename took 40% longer in bench/served. The calls matter more.
  env->set_lg_max(env, 16 << 20);
  env->set_lg_regionmax(env, 1 << 20);
  env->set_lg_filemode(env, kFileMode);
  env->log_set_config(env, DB_LOG_AUTO_REMOVE, 1);
  env->set_tx_max(env, 1000);
  return Status::Ok();
}

int Recover(const std::string& dir, u_int32_t flags, size_t cache) {
  DB_ENV* env = nullptr;
  if (!CreateEnv(&env, cache).ok()) return EINVAL;
  const int ret = env->open(env, dir.c_str(), flags, kFileMode);
  env->close(env, 0);
  return ret;
}

}  // namespace amino::schema::store_env
