#include "monitor/service/mount_fs.h"

#include <sys/sysmacros.h>

#include <cerrno>
#include <cstdio>
#include <functional>

namespace amino::monitor::service {

schema::Result<std::vector<std::unique_ptr<MountFs>>> OpenMountFileSystems(
    const mounts::MountTable& table, bool sync, bool flushes) {
  std::vector<std::unique_ptr<MountFs>> out;
  unsigned index = 0;
  for (const mounts::Mount& m : table.mounts()) {
    const bool flushed = m.durability ? *m.durability == mounts::Durability::kSync : sync;
    schema::OpenOptions options;
    options.zero_log = flushed || flushes;
    // Large enough for the working set of the workloads in bench/: a dirty 64 KiB Data page
    // evicted from a small cache is checksummed and written, then read back and verified on
    // the next access; in a 16 MiB cache that was 40% of the monitor's time under Postmark.
    // The region grows as pages are touched, so a short run pays only for what it uses.
    options.cache_bytes = 128 << 20;
    auto opened = schema::FileSystem::Open(m.db_dir, options);
    if (!opened.ok()) {
      const schema::Status& st = opened.status();
      // The status made here says "storage failure" once.
      std::string why = st.message();
      if (st.is_storage() && why.starts_with("storage failure: ")) why.erase(0, 17);
      std::string msg = m.point + " (" + m.db_dir + "): " + why;
      // Permission, a missing database and a newer layout say what to do themselves; anything
      // else is a database Berkeley DB cannot use as it is.
      if (st.error() != EACCES && st.error() != EPERM && st.error() != ENOENT &&
          st.error() != EPROTONOSUPPORT) {
        msg += "; the database may be damaged: check it with 'amino fsck " + m.db_dir +
               "' ('amino recover " + m.db_dir + "' runs Berkeley DB's recovery)";
      }
      return schema::Status::Storage(st.error(), msg);
    }
    auto mfs = std::make_unique<MountFs>();
    mfs->mount = &m;
    mfs->fs = std::move(opened).value();
    mfs->durability = flushed ? schema::Durability::kSync : schema::Durability::kWriteNoSync;
    // Major 0 is the kernel's range for devices that are no block device (tmpfs, proc): the
    // minor is derived from the database directory, so it is stable across runs.
    const unsigned minor = 0x4000 + (std::hash<std::string>{}(m.db_dir) & 0x3fff) + index++;
    mfs->dev = makedev(0, minor);
    out.push_back(std::move(mfs));
  }
  return out;
}

namespace {

CallOutcome Classify(MountFs& m, schema::Status status) {
  CallOutcome out;
  out.status = std::move(status);
  if (out.status.is_conflict()) {
    out.kind = CallOutcome::Kind::kConflict;
  } else if (out.status.is_storage() &&
             (out.status.error() == ENOSPC || out.status.error() == EDQUOT)) {
    // The file system holding the database is full: the call fails as on a full disk, and
    // the calls after it go on (store_space.h). Said once, since the disk is not the mount.
    if (m.full_reported++ == 0) {
      std::fprintf(stderr,
                   "amino: %s: the file system holding the database (%s) is full: calls that "
                   "need room there fail with ENOSPC until some is freed\n",
                   m.mount->point.c_str(), m.mount->db_dir.c_str());
    }
    out.status = schema::Status::Errno(out.status.error());
  } else if (out.status.is_storage()) {
    out.kind = CallOutcome::Kind::kStorage;
    // Once per mount with what to do: every later call on a damaged database fails the same
    // way (EIO to the program), and the command's stderr is its own.
    if (m.storage_failures++ == 0) {
      std::fprintf(stderr,
                   "amino: %s: %s\namino: %s: calls on this mount fail with EIO from now on; when "
                   "the command has ended, check the database with 'amino fsck %s' "
                   "('amino recover %s' runs Berkeley DB's recovery)\n",
                   m.mount->point.c_str(), out.status.message().c_str(), m.mount->point.c_str(),
                   m.mount->db_dir.c_str(), m.mount->db_dir.c_str());
    }
  }
  return out;
}
}  // namespace

CallOutcome RunCall(MountFs& m, const CallerTxn& caller,
                    const std::function<schema::Status(schema::Transaction&)>& body,
                    schema::Transaction* parent) {
  if (!parent && caller) {
    auto p = caller(m);
    if (!p.ok()) return Classify(m, p.status());
    parent = *p;
  }
  return RunCallAlone(m, body, parent);
}

namespace {

// Linux touches the access time of each link a path walk follows (relatime), whatever becomes
// of the call.
schema::Status TouchLinks(MountFs& m, schema::Transaction& txn,
                          const std::vector<schema::FileId>& links) {
  for (schema::FileId id : links) {
    auto touched = m.fs->TouchAtime(txn, id);
    if (!touched.ok() && (touched.status().is_conflict() || touched.status().is_storage())) {
      return touched.status();
    }
  }
  return schema::Status::Ok();
}

// The same after a call that failed (a dangling link): in a transaction of its own, and only
// if nothing stands in its way (an access time is not worth a wait or a failure).
void TouchLinksAlone(MountFs& m, const std::vector<schema::FileId>& links,
                     schema::Transaction* parent) {
  schema::TxnOptions options;
  options.durability = m.durability;
  options.nowait = true;
  auto txn = m.fs->Begin(parent, options);
  if (!txn.ok()) return;
  if (!TouchLinks(m, *txn, links).ok() || !txn->Commit().ok()) (void)txn->Abort();
}

}  // namespace

namespace {

// One attempt at a call in a transaction of its own (nested in `parent`, when given): its
// status, and the links its path walks followed whose access times are still to be touched.
struct Attempt {
  schema::Status status;
  std::vector<schema::FileId> links;
  bool deferred = false;  // it ran without a Berkeley DB transaction (TxnOptions::deferred)
};

Attempt AttemptCall(MountFs& m, const std::function<schema::Status(schema::Transaction&)>& body,
                    schema::Transaction* parent, const schema::TxnOptions& options) {
  Attempt out;
  auto txn = m.fs->Begin(parent, options);
  if (!txn.ok()) {
    out.status = txn.status();
    return out;
  }
  out.deferred = txn->deferred();
  out.status = body(*txn);
  out.links = m.fs->TakeFollowedLinks();
  // A snapshot cannot write: its links are touched afterwards, if nothing stands in the way.
  if (out.status.ok() && !out.links.empty() && !options.snapshot) {
    out.status = TouchLinks(m, *txn, out.links);
    out.links.clear();
  }
  if (!out.status.ok() && !out.status.is_conflict()) {
    // A failure is an answer too: only if what it rests on is still so (records read from
    // the cache and through cursors at different moments can even look damaged).
    if (schema::Status held = txn->CheckCachedReads(); !held.ok()) out.status = held;
  }
  const bool wrote = txn->wrote();
  if (out.status.ok()) {
    out.status = txn->Commit();
    if (out.status.ok() && wrote) ++m.change_generation;
  } else if (parent && !out.status.is_conflict() && !out.status.is_storage() && !wrote) {
    // A call that fails inside an application transaction without having changed anything
    // hands its read locks to the transaction, as one that succeeds does: what it found (a
    // name missing, a permission lacking) stays true until the transaction ends. (Aborting
    // would release them: two transactions could both see a name missing and both create it.)
    if (schema::Status st = txn->Commit(); !st.ok()) out.status = st;
  } else {
    (void)txn->Abort();
  }
  return out;
}

}  // namespace

CallOutcome RunCallAlone(MountFs& m,
                         const std::function<schema::Status(schema::Transaction&)>& body,
                         schema::Transaction* parent) {
  ++m.calls_run;
  schema::TxnOptions options;
  options.durability = m.durability;
  options.nowait = true;
  options.cached = parent == nullptr;  // a call of its own: committed records may come cached
  Attempt out;
  bool answered = false;
  if (!parent && m.deferral.ShouldTry(m.call_nr)) {
    // First from the read cache alone, without a Berkeley DB transaction; any conflict (the
    // database needed, or the cache gone stale) runs the call again below.
    options.deferred = true;
    out = AttemptCall(m, body, parent, options);
    options.deferred = false;
    if (out.deferred) {
      // Refused anything, the body's answer is not to be trusted even where it folded that
      // status into one of its own.
      const bool refused = m.fs->DeferralRefused();
      m.deferral.Tried(m.call_nr, refused);
      answered = !refused && !out.status.is_conflict();
      if (answered) ++m.deferred_calls;
    } else {
      answered = true;  // it ran in an ordinary transaction after all (Begin fell back)
    }
  }
  if (!answered) out = AttemptCall(m, body, parent, options);
  if (out.status.is_conflict() && !parent && m.snapshot_allowed) {
    // It met a lock of another transaction (an application transaction still open, say). A
    // call that only reads answers from the last committed state instead of waiting: it is
    // then ordered before that transaction, which it cannot see. One that would change
    // anything still waits for the lock.
    options.snapshot = true;
    options.cached = false;
    Attempt snapshot = AttemptCall(m, body, parent, options);
    if (!snapshot.status.is_conflict()) {
      ++m.snapshot_reads;
      out = std::move(snapshot);
    } else if (m.fs->SnapshotRefusedChange()) {
      m.snapshot_refused = true;
    }
  }
  if (!out.links.empty() && !out.status.is_conflict()) TouchLinksAlone(m, out.links, parent);
  return Classify(m, std::move(out.status));
}

void CloseDeferred(MountFs& m, bool wait) {
  std::vector<schema::FileId> ids;
  ids.swap(m.deferred_closes);
  for (schema::FileId id : ids) {
    schema::Status st;
    if (wait) {
      st = m.fs->Run(nullptr, {m.durability, false},
                     [&](schema::Transaction& t) { return m.fs->Close(t, id); });
    } else {
      CallOutcome o = RunCallAlone(m, [&](schema::Transaction& t) { return m.fs->Close(t, id); });
      if (o.kind == CallOutcome::Kind::kConflict) {
        m.deferred_closes.push_back(id);
        continue;
      }
      st = o.status;
    }
    if (!st.ok()) {
      std::fprintf(stderr, "amino: %s: closing file %llu: %s\n", m.mount->point.c_str(),
                   static_cast<unsigned long long>(id), st.message().c_str());
    }
  }
}

}  // namespace amino::monitor::service
