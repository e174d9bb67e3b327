// The open file systems behind the mount table, and the per-call transaction every serviced
// call runs in (DESIGN.md §4): begun without waiting for locks, committed when the call
// succeeds, aborted when it fails, so a failing call leaves no partial effect and a lock
// conflict never blocks the monitor (the call is parked and asked again).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "monitor/mounts/mount_table.h"
#include "monitor/service/deferral_policy.h"
#include "schema/filesystem.h"

namespace amino::monitor::service {

struct MountFs {
  const mounts::Mount* mount = nullptr;
  std::unique_ptr<schema::FileSystem> fs;
  schema::Durability durability = schema::Durability::kWriteNoSync;
  // st_dev of its files: one device per mount, as a kernel mount has (find -xdev, du, tar and
  // cp -a tell file systems and hard links apart by it).
  dev_t dev = 0;
  // Bumped by every rename or removal of a directory: virtual cwds and directory descriptors
  // remember their path with the value it had, and look the path up again by file id after.
  uint64_t dir_generation = 1;
  // Files whose last description was closed while a transaction held their record: closed in
  // the schema once it ends (CloseDeferred).
  std::vector<schema::FileId> deferred_closes;
  // Bumped by every committed call that changed something: a file whose atime was current at
  // one value stays current until it changes (relatime needs a look only then).
  uint64_t change_generation = 1;
  // Bumped whenever an application transaction on this mount ends (its locks go): calls
  // parked on a lock are tried again then (CallHandler::Releases).
  uint64_t txn_ends = 0;
  // Called after an application transaction on this mount aborted (copies of file content
  // kept outside the schema, such as shared mapping files, are refreshed).
  std::function<void()> after_abort;
  // Calls that met a failure of the database itself (the first is reported, the count at the
  // end of the command).
  uint64_t storage_failures = 0;
  // Calls that found the file system holding the database full (the first is reported).
  uint64_t full_reported = 0;
  // Per-call transactions run so far (to tell a served call from one the kernel or the host
  // emulation performed).
  uint64_t calls_run = 0;
  // Calls answered from the last committed state because another transaction held a lock
  // they met (RunCallAlone).
  uint64_t snapshot_reads = 0;
  // Set by the handler for each call: whether a conflict may be answered from a snapshot (not
  // for the retries of a call that wants to change something); and set when the call's
  // snapshot attempt wanted to change something.
  bool snapshot_allowed = true;
  bool snapshot_refused = false;
  // Set by the handler for each call outside application transactions: its system call
  // number (-1 between calls), by which RunCallAlone decides whether it first tries without a
  // Berkeley DB transaction; and the calls answered so.
  long call_nr = -1;
  DeferralPolicy deferral;
  uint64_t deferred_calls = 0;
};

// Every mount of `table` opened (running recovery where a previous user died). `sync`: every
// top-level commit is flushed, unless the mount says otherwise; `flushes`: some commits are
// (application commits, or before output leaves the tree). Errors read "MOUNT: why".
schema::Result<std::vector<std::unique_ptr<MountFs>>> OpenMountFileSystems(
    const mounts::MountTable& table, bool sync, bool flushes);

// How a serviced call's transaction ended.
struct CallOutcome {
  enum class Kind {
    kDone,      // committed, or aborted with the call's errno in `status`
    kConflict,  // a lock is held by someone else: park the caller and ask again
    kStorage,   // the database failed: the call fails with EIO (the message is printed)
  };
  Kind kind = Kind::kDone;
  schema::Status status;
};

// The application transaction of the thread whose call is being served, on a mount: per-call
// transactions become children of it. Empty when the caller has none.
using CallerTxn = std::function<schema::Result<schema::Transaction*>(MountFs&)>;

// Runs `body` in a per-call transaction on `m`: a child of `parent` when given, else of the
// caller's application transaction, if any (its errors are the call's: a doomed transaction,
// another mount).
CallOutcome RunCall(MountFs& m, const CallerTxn& caller,
                    const std::function<schema::Status(schema::Transaction&)>& body,
                    schema::Transaction* parent = nullptr);
// As RunCall, but never inside the caller's transaction (work that belongs to no one call).
CallOutcome RunCallAlone(MountFs& m,
                         const std::function<schema::Status(schema::Transaction&)>& body,
                         schema::Transaction* parent = nullptr);

// Closes in the schema the files whose close had to wait. `wait`: for locks too (at the end).
void CloseDeferred(MountFs& m, bool wait);

}  // namespace amino::monitor::service
