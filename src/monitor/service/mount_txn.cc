// MountHandler and application transactions: libamino's pseudo-calls, and every file call
// served inside the caller's current transaction (user_txn.h).
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "amino/amino.h"
#include "monitor/mounts/lexical_path.h"
#include "monitor/service/external_sync.h"
#include "monitor/service/file_locks.h"
#include "monitor/service/mount_handler.h"
#include "monitor/syscall_table.h"
#include "schema/store_files.h"

namespace amino::monitor::service {

MountHandler::~MountHandler() { Finish(); }

void MountHandler::Finish() {
  if (finished_) return;
  finished_ = true;
  // Open transactions are aborted first (their descriptions' counts undone), then the closes
  // they held back are done, waiting for locks now that no one else can take them. Under
  // external synchrony the end of the command is output too (its exit status).
  txns_ = TxnManager(false, {});
  (void)shared_maps_.WriteBackAll();
  for (auto& m : mounts_) service::CloseDeferred(*m, true);
  if (external_) (void)FlushForOutput();
  fifo_waits_.clear();
  nodes_.Remove();
  for (auto& m : mounts_) {
    if (m->storage_failures > 1) {
      std::fprintf(stderr, "amino: %s: %llu calls failed on the database\n",
                   m->mount->point.c_str(), static_cast<unsigned long long>(m->storage_failures));
    }
  }
}

void MountHandler::PrintStats(FILE* out) const {
  for (const auto& m : mounts_) {
    const auto regions = schema::store_files::RegionSizesIn(m->mount->db_dir);
    std::fprintf(out, "amino: %s: database regions %llu KiB in %d files, %llu KiB allocated\n",
                 m->mount->point.c_str(), static_cast<unsigned long long>(regions.bytes >> 10),
                 regions.files, static_cast<unsigned long long>(regions.allocated >> 10));
    const auto [hits, misses] = m->fs->ReadCacheStats();
    std::fprintf(out,
                 "amino: %s: read cache %llu hits, %llu misses (%.0f%%); %llu calls answered "
                 "with no Berkeley DB transaction of their own (from it and the store's "
                 "reader); %llu calls read a snapshot past another transaction's lock\n",
                 m->mount->point.c_str(), static_cast<unsigned long long>(hits),
                 static_cast<unsigned long long>(misses),
                 hits + misses ? 100.0 * static_cast<double>(hits) / (hits + misses) : 0.0,
                 static_cast<unsigned long long>(m->deferred_calls),
                 static_cast<unsigned long long>(m->snapshot_reads));
  }
}

bool MountHandler::FlushForOutput() {
  for (auto& m : mounts_) {
    // Cheap when nothing was committed since the last flush. Another `amino run` on the same
    // database shares the log: its commits are flushed here as well.
    if (schema::Status st = m->fs->FlushLog(); !st.ok()) {
      if (!flush_failed_) {
        std::fprintf(stderr, "amino: %s: cannot flush the log (%s): output is held back\n",
                     m->mount->point.c_str(), st.message().c_str());
      }
      flush_failed_ = true;
      return false;
    }
  }
  flush_failed_ = false;
  return true;
}

Decision MountHandler::OnEntry(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
  if (renamer_ == t.tid) {
    ++host_renames_;  // its rename is done now
    renamer_ = 0;
  }
  if (IsLibaminoCall(nr)) return TxnCall(t, call);
  if (!fifo_waits_.empty()) {
    if (std::optional<Decision> d = ResumeFifoWait(t, call)) return *d;
  }
  CloseDeferred();
  const uint64_t calls_before = CallsRun();
  // Another task sharing the memory could rewrite a path between the monitor's look and the
  // kernel's: its bytes are read once, and a call let through gets those (path_pin.cc).
  StringSnapshot paths;
  std::optional<StringSnapshot::Scope> pinned;
  if (t.SharesMemory() && MayChangeNamedFile(call)) {
    TakePaths(t, call, &paths);
    pinned.emplace(paths, *t.proc);
  }
  Decision d = txns_.Current(t.tid) == 0 ? ServePlain(t, call) : ServeInTxn(t, call);
  if (pinned && d.kind == Decision::Kind::kPass && !paths.empty()) d = PinPaths(t, call, paths);
  if (external_ && MayBeObservedOutside(call)) {
    // Performed by the kernel, or by the host emulation (no schema call ran): output that
    // may depend on commits waits until they are on disk.
    const bool kernel = d.kind == Decision::Kind::kPass || d.kind == Decision::Kind::kObserveExit;
    const bool host = (d.kind == Decision::Kind::kEmulate || d.kind == Decision::Kind::kReplied) &&
                      CallsRun() == calls_before;
    if ((kernel || host) && !FlushForOutput()) return Decision::ParkInvisibly();
  }
  return d;
}

Decision MountHandler::ServePlain(Thread& t, SyscallRegs& call) {
  // Outside any transaction: a conflict parks the call, for no longer than the lock timeout.
  // A call parked because it would change something goes on waiting for the lock when it is
  // tried again; one that only reads answers from a snapshot (RunCallAlone).
  const bool changes = changing_.count(t.tid) > 0;
  for (auto& m : mounts_) {
    m->snapshot_allowed = !changes;
    m->snapshot_refused = false;
    m->call_nr = call.nr();
  }
  caller_ = t.tid;
  Decision d = Serve(t, call);
  caller_ = 0;
  for (auto& m : mounts_) m->call_nr = -1;
  if (d.kind != Decision::Kind::kPark) {
    txns_.OnPlainProgress(t.tid);
    if (changes) changing_.erase(t.tid);
  } else if (std::any_of(mounts_.begin(), mounts_.end(),
                         [](const auto& m) { return m->snapshot_refused; })) {
    changing_.insert(t.tid);
  }
  return d;
}

Decision MountHandler::ServeInTxn(Thread& t, SyscallRegs& call) {
  // Per-call transactions of this call become children of the thread's transaction.
  caller_txn_ = [this, tid = t.tid](MountFs& m) { return txns_.ParentFor(tid, m); };
  caller_ = t.tid;
  Decision d = Serve(t, call);
  caller_txn_ = nullptr;
  caller_ = 0;
  if (d.kind != Decision::Kind::kPark) txns_.OnProgress(t.tid);
  return d;
}

uint64_t MountHandler::Releases() const {
  uint64_t n = FileLockReleases();
  for (const auto& m : mounts_) n += m->txn_ends;
  return n;
}

uint64_t MountHandler::CallsRun() const {
  uint64_t n = 0;
  for (const auto& m : mounts_) n += m->calls_run;
  return n;
}

Decision MountHandler::Conflict() {
  if (caller_ && txns_.OnConflict(caller_)) return Decision::Emulate(-AMINO_EABORTED);
  return Decision::ParkForLock(false);
}

void MountHandler::CloseDeferred() {
  for (auto& m : mounts_) {
    if (!m->deferred_closes.empty()) service::CloseDeferred(*m, false);
  }
}

void MountHandler::OnNewTask(Thread& parent, Thread& child, bool thread) {
  txns_.OnNewTask(parent.tid, child.tid, thread);
}

Decision MountHandler::TxnCall(Thread& t, SyscallRegs& call) {
  // BEGIN, COMMIT, ABORT, CURRENT and DEPTH may act for the caller's parent process (`amino
  // txn` in a shell script): its main thread, which must be traced too.
  pid_t target = t.tid;
  const bool targeted = call.nr() == AMINO_SYS_BEGIN || call.nr() == AMINO_SYS_COMMIT ||
                        call.nr() == AMINO_SYS_ABORT || call.nr() == AMINO_SYS_CURRENT ||
                        call.nr() == AMINO_SYS_DEPTH;
  if (targeted && call.arg(0) == AMINO_TARGET_PARENT) {
    // The shell's transaction. A command the shell started inherited it (the same one); a
    // command a shell or subshell ran as its last, by exec in its own place, holds it while its
    // parent is another shell, or not traced at all: then the caller's own is the one. Only
    // BEGIN must act on the parent, whose transaction the new one joins.
    const pid_t parent = t.proc->parent_tgid;
    const bool parent_traced = table_ && parent > 0 && table_->Find(parent);
    const bool own = txns_.Current(t.tid) != 0;
    if (call.nr() != AMINO_SYS_BEGIN && own) {
      target = t.tid;
    } else if (parent_traced) {
      target = parent;
    } else if (!own) {
      return Decision::Emulate(-ESRCH);
    }
  } else if (targeted && call.arg(0) != AMINO_TARGET_SELF) {
    return Decision::Emulate(-EINVAL);
  }
  const uid_t euid = CredOf(t).uid;
  long r;
  switch (call.nr()) {
    case AMINO_SYS_PROBE:
      r = AMINO_PROBE_ANSWER;
      break;
    case AMINO_SYS_BEGIN:
      r = txns_.Begin(target, euid);
      break;
    case AMINO_SYS_COMMIT:
      r = txns_.Commit(target);
      CloseDeferred();
      break;
    case AMINO_SYS_ABORT:
      r = txns_.Abort(target);
      CloseDeferred();
      break;
    case AMINO_SYS_ATTACH:
      r = txns_.Attach(t.tid, euid, call.arg(0));
      break;
    case AMINO_SYS_DETACH:
      r = txns_.Detach(t.tid);
      CloseDeferred();
      break;
    case AMINO_SYS_SUSPEND:
      r = txns_.Suspend(t.tid);
      break;
    case AMINO_SYS_CURRENT:
      r = txns_.Current(target);
      break;
    case AMINO_SYS_DEPTH:
      r = txns_.Depth(target);
      break;
    default:
      r = -ENOSYS;
      break;
  }
  return Decision::Emulate(r);
}

}  // namespace amino::monitor::service

namespace amino::monitor::service {

long MountHandler::BeginFor(Thread& t) { return txns_.Begin(t.tid, CredOf(t).uid); }

long MountHandler::End(uint64_t id, bool commit) {
  const long r = txns_.End(id, commit);
  CloseDeferred();
  return r;
}

bool MountHandler::ServedPath(Thread& t, int fd, std::string* path, bool* writing) const {
  auto it = t.proc->fds->files.find(fd);
  if (it == t.proc->fds->files.end()) return false;
  auto f = std::dynamic_pointer_cast<ServedFile>(it->second);
  if (!f || !f->mfs) return false;
  *path = f->mfs->mount->HostPathOf(f->opened_name.empty() ? "/" : f->opened_name);
  *writing = f->writable();
  return true;
}

}  // namespace amino::monitor::service

namespace amino::monitor::service {

std::string MountHandler::AbsolutePath(Thread& t, int dirfd, const std::string& path) {
  if (!path.empty() && path[0] == '/') return mounts::NormalizeAbsolute(path);
  std::string dir;
  if (dirfd == AT_FDCWD) {
    if (t.proc->fs->cwd.is_virtual()) {
      const std::string cwd = CwdPath(t);
      if (cwd.empty()) return "";
      dir = CwdMount(t).mount->HostPathOf(cwd);
    } else {
      dir = HostCwd(t);
    }
  } else if (std::shared_ptr<ServedFile> f = ServedOf(t, dirfd); f && f->is_dir()) {
    const std::string rel = DirPath(*f);
    if (rel.empty()) return "";
    dir = f->mfs->mount->HostPathOf(rel);
  } else {
    dir = host::ReadLink("/proc/" + std::to_string(t.proc->tgid) + "/fd/" + std::to_string(dirfd));
  }
  if (dir.empty() || dir[0] != '/') return "";
  return mounts::JoinNormal(mounts::NormalizeAbsolute(dir), path);
}

}  // namespace amino::monitor::service
