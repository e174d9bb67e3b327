// What the parts of the store (store.cc, cursor.cc) share about Berkeley DB: its environment as
// the store configures it, its errors as statuses, and DBTs. Internal to the schema.
#pragma once

#include <db.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "schema/status.h"

namespace amino::schema::store_env {

// A Berkeley DB error as a status: a lock conflict, a full file system (ENOSPC, no damage), or
// a storage failure carrying Berkeley DB's last message; a failure counts as damage seen.
Status Fail(int ret, const std::string& what);

// Storage failures and damage seen by this process: a file system in which any was seen is
// not marked clean at close (its next opener recovers, and meets the damage at once).
uint64_t DamageSeen();
void NoteDamageSeen();

// Keeps a handle of an environment that panicked (DB_RUNRECOVERY), which Berkeley DB refuses to
// close, reachable for the rest of the process instead of lost.
void Abandon(void* handle);

// A DBT over `s` (not owned); one Berkeley DB fills with malloc'd memory; that memory taken.
DBT Dbt(std::string_view s);
DBT MallocDbt();
std::string TakeDbt(DBT& d);

// A new environment handle with the store's cache of `cache` bytes, locks, log and limits.
Status CreateEnv(DB_ENV** out, size_t cache);

// Berkeley DB's recovery of `dir` in an environment of its own, closed again: 0 or its error.
int Recover(const std::string& dir, u_int32_t flags, size_t cache);

}  // namespace amino::schema::store_env
