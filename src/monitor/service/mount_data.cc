// Calls on served descriptors (fd_call.h): the dispatch, attributes, size, synchronisation and
// flock.
#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "monitor/host/host_context.h"
#include "monitor/service/byte_shift.h"
#include "monitor/service/fd_call.h"
#include "monitor/service/file_locks.h"
#include "monitor/service/mount_handler.h"
#include "monitor/service/stat_convert.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

using namespace fd_calls;

// Calls that read or change a file's bytes, or make them durable.
bool WritesBackFirst(long nr) {
  switch (FamilyOf(nr)) {
    case Family::kRead:
    case Family::kWrite:
      return true;
    case Family::kData:  // lseek too: SEEK_DATA and SEEK_HOLE look at the bytes
      return nr != SYS_fadvise64 && nr != SYS_readahead && nr != SYS_tee;
    case Family::kSync:
      return nr == SYS_fsync || nr == SYS_fdatasync || nr == SYS_syncfs ||
             nr == SYS_sync_file_range;
    default:
      return false;
  }
}

// The calls an O_PATH descriptor allows; every other fails as fdget() does. (Those that check
// an argument first, or name two descriptors, check it themselves.)
bool AllowedOnPath(long nr) {
  switch (nr) {
    case SYS_fstat:
    case SYS_fstatfs:
    case SYS_pread64:
    case SYS_preadv:
    case SYS_preadv2:
    case SYS_pwrite64:
    case SYS_pwritev:
    case SYS_pwritev2:
    case SYS_ftruncate:
    case SYS_flock:
    case SYS_sendfile:
    case SYS_copy_file_range:
    case SYS_splice:
    case SYS_fgetxattr:
    case SYS_fsetxattr:
    case SYS_fremovexattr:
      return true;
    default:
      return false;
  }
}

// fstat, fstatfs, fchmod, fchown.
Decision Attributes(FdCall& c, SyscallRegs& call) {
  const uint64_t a1 = call.arg(1), a2 = call.arg(2);
  ServedFile& f = c.f;
  Thread& t = c.t;
  schema::FileSystem& fs = *f.mfs->fs;
  const schema::FileId id = f.id;
  switch (call.nr()) {
    case SYS_fstat: {
      schema::Stat st;
      return c.run(
          [&](schema::Transaction& txn) {
            auto r = fs.FStat(txn, id);
            if (!r.ok()) return r.status();
            st = *r;
            return Status::Ok();
          },
          [&] {
            struct stat out = ToStat(st, f.mfs->dev);
            return WriteMemory(*t.proc, a1, &out, sizeof out) == 0 ? 0L : -EFAULT;
          });
    }
    case SYS_fstatfs: {
      struct statfs st {};
      return c.run(
          [&](schema::Transaction& txn) {
            auto r = fs.StatFs(txn);
            if (!r.ok()) return r.status();
            st = *r;
            return Status::Ok();
          },
          [&] { return WriteMemory(*t.proc, a1, &st, sizeof st) == 0 ? 0L : -EFAULT; });
    }
    case SYS_fchmod:
      return c.run(
          [&](schema::Transaction& txn) {
            return fs.FChmod(txn, c.cred, id, static_cast<mode_t>(a1));
          },
          Ok);
    case SYS_fchown:
      return c.run(
          [&](schema::Transaction& txn) {
            return fs.FChown(txn, c.cred, id, static_cast<uid_t>(a1), static_cast<gid_t>(a2));
          },
          Ok);
    default:
      return Emulate(-EINVAL);
  }
}

// ftruncate, the sync calls, advice, flock.
Decision SizeSyncAndLocks(FdCall& c, SyscallRegs& call) {
  const uint64_t a1 = call.arg(1), a2 = call.arg(2), a3 = call.arg(3);
  ServedFile& f = c.f;
  schema::FileSystem& fs = *f.mfs->fs;
  const schema::FileId id = f.id;
  const bool is_path = f.flags & O_PATH;
  switch (call.nr()) {
    case SYS_ftruncate: {
      const int64_t length = static_cast<int64_t>(a1);
      if (length < 0) return Emulate(-EINVAL);
      if (is_path) return Emulate(-EBADF);
      if (!S_ISREG(f.type) || !CanWrite(f)) return Emulate(-EINVAL);
      return c.run([&](schema::Transaction& txn) { return fs.FTruncate(txn, c.cred, id, length); },
                   [&] {
                     c.maps.Resized(*f.mfs, id, static_cast<uint64_t>(length));
                     return 0L;
                   });
    }
    case SYS_fsync:
    case SYS_fdatasync:
    case SYS_syncfs:
      return Emulate(f.mfs->fs->FlushLog().ok() ? 0 : -EIO);
    case SYS_sync_file_range: {
      const uint64_t end = a1 + a2;
      constexpr unsigned kValid =
          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
      if ((a3 & ~uint64_t{kValid}) || static_cast<int64_t>(a1) < 0 ||
          static_cast<int64_t>(end) < 0 || end < a1) {
        return Emulate(-EINVAL);
      }
      return Emulate(f.mfs->fs->FlushLog().ok() ? 0 : -EIO);
    }
    case SYS_fadvise64:
      if (static_cast<int64_t>(a2) < 0 || a3 > POSIX_FADV_NOREUSE) return Emulate(-EINVAL);
      return Emulate(0);  // advice only: there is no page cache to steer
    case SYS_readahead:
      if (!CanRead(f)) return Emulate(-EBADF);
      if (!S_ISREG(f.type)) return Emulate(-EINVAL);
      return Emulate(0);

    case SYS_flock: {
      const int op = static_cast<int>(a1);
      if (op & LOCK_MAND) return Emulate(0);  // ignored by Linux since 5.15
      const int what = op & ~LOCK_NB;
      if (what != LOCK_SH && what != LOCK_EX && what != LOCK_UN) return Emulate(-EINVAL);
      if (is_path || (what != LOCK_UN && !CanRead(f) && !CanWrite(f))) return Emulate(-EBADF);
      LockOutcome o = FlockLock(c.served(static_cast<int>(call.arg(0))), op);
      return o.wait ? Decision::ParkForLock(true) : Emulate(o.result);
    }
    default:
      return Emulate(-EINVAL);
  }
}

}  // namespace

// Stores through shared mappings reach the schema before the monitor reads or changes the
// file, or the other file of a copy between descriptors. False on a conflict.
bool MountHandler::WriteBackMappings(Thread& t, const SyscallRegs& call, ServedFile& f) {
  const long nr = call.nr();
  std::shared_ptr<ServedFile> other;
  if (nr == SYS_sendfile || nr == SYS_copy_file_range || nr == SYS_splice) {
    other = ServedOf(t, static_cast<int>(nr == SYS_sendfile ? call.arg(1) : call.arg(2)));
    if (other.get() == &f) other = ServedOf(t, static_cast<int>(call.arg(0)));
  }
  for (ServedFile* file : {&f, other.get()}) {
    if (!file) continue;
    CallOutcome o = shared_maps_.WriteBack(*file->mfs, file->id);
    if (o.kind == CallOutcome::Kind::kConflict) return false;
  }
  return true;
}

Decision MountHandler::ServeFd(Thread& t, SyscallRegs& call, ServedFile& f) {
  const long nr = call.nr();
  const uint64_t a1 = call.arg(1), a2 = call.arg(2);
  const bool is_path = f.flags & O_PATH;
  FdCall c{t,
           f,
           [this](ServedFile& on, const FileBody& body, const Done& done) {
             return RunOnFile(on, body, done);
           },
           [this, &t](int fd) { return ServedOf(t, fd); },
           CredOf(t),
           shared_maps_};

  if (!shared_maps_.empty() && WritesBackFirst(nr) && !WriteBackMappings(t, call, f)) {
    return Conflict();
  }

  if (is_path && !AllowedOnPath(nr)) return Emulate(-EBADF);

  if (const Family family = FamilyOf(nr); family == Family::kRead || family == Family::kWrite) {
    return Transfer(c, call);
  }
  switch (nr) {
    // --- data
    case SYS_lseek:
      return Seek(c, static_cast<int64_t>(a1), static_cast<int>(a2));
    case SYS_getdents:
    case SYS_getdents64:
      return Getdents(c, a1, static_cast<unsigned>(a2), nr == SYS_getdents64);

    // --- attributes
    case SYS_fstat:
    case SYS_fstatfs:
    case SYS_fchmod:
    case SYS_fchown:
      return Attributes(c, call);
    case SYS_fgetxattr:
    case SYS_fsetxattr:
    case SYS_flistxattr:
    case SYS_fremovexattr:
      return Xattr(c, call);

    // --- size, synchronisation, locks
    case SYS_ftruncate:
    case SYS_fsync:
    case SYS_fdatasync:
    case SYS_syncfs:
    case SYS_sync_file_range:
    case SYS_fadvise64:
    case SYS_readahead:
    case SYS_flock:
      return SizeSyncAndLocks(c, call);
    case SYS_fallocate:
      return Fallocate(c, call);
    case SYS_fcntl:
      return RecordLock(c, call);

    // --- transfers between descriptors
    case SYS_sendfile:
      return Sendfile(c, call);
    case SYS_copy_file_range:
      return CopyFileRange(c, call);
    case SYS_splice:
      return Splice(c, call);
    default:
      return Emulate(-EINVAL);
  }
}

}  // namespace amino::monitor::service
