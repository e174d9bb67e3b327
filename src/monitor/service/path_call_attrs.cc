// The attribute calls on paths (stat, statfs, access, chmod, chown, the times, truncate, the
// extended attributes), served in the mount's schema once PathCall has their target.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "monitor/calls/validate.h"
#include "monitor/service/path_call.h"
#include "monitor/service/stat_convert.h"
#include "monitor/syscall_numbers.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

using schema::Status;

namespace {
constexpr long kStatfsValid = 0x0020;  // ST_VALID: f_flags is filled in (linux/statfs.h)
}  // namespace

Decision ServedPathCall::Stats() {
  switch (nr) {
    case SYS_stat:
    case SYS_lstat:
      return RunStat(nr == SYS_stat, [&](const schema::Stat& st) {
        return CopyOut(t, a1, ToStat(st, where->dev));
      });
    case SYS_newfstatat:
      return RunStat(!(a3 & AT_SYMLINK_NOFOLLOW), [&](const schema::Stat& st) {
        return CopyOut(t, a2, ToStat(st, where->dev));
      });
    case SYS_statx:
      return RunStat(!(a2 & AT_SYMLINK_NOFOLLOW), [&](const schema::Stat& st) {
        return CopyOut(t, a4, ToStatx(st, where->dev, static_cast<unsigned>(a3)));
      });
    case SYS_statfs: {
      struct statfs out {};
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
            auto st = m.fs->GetStat(txn, cred, rel, true);
            if (!st.ok()) return st.status();
            auto fs = m.fs->StatFs(txn);
            if (!fs.ok()) return fs.status();
            out = *fs;
            return Status::Ok();
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId) -> Status {
            auto fs = m.fs->StatFs(txn);
            if (!fs.ok()) return fs.status();
            out = *fs;
            return Status::Ok();
          },
          [&] {
            out.f_flags |= kStatfsValid;
            return CopyOut(t, a1, out);
          });
    }
    default:
      return Decision::Emulate(-ENOSYS);
  }
}

// Long by design: one case per call, each the same few steps (the arguments, the schema call on
// a path and on a descriptor's file, the copy-out); the family reads best as one table.
Decision ServedPathCall::Attributes() {
  switch (nr) {
    case SYS_access:
    case SYS_faccessat:
    case SYS_faccessat2: {
      const int mode = static_cast<int>(nr == SYS_access ? a1 : a2);
      const unsigned flags = nr == SYS_faccessat2 ? static_cast<unsigned>(a3) : 0;
      // Without AT_EACCESS the real ids are checked, as access(2) does.
      if (!(flags & AT_EACCESS)) cred = h.CredOf(t, true);
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->Access(txn, cred, rel, mode, !(flags & AT_SYMLINK_NOFOLLOW));
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
            return m.fs->FAccess(txn, cred, id, mode);
          },
          Ok);
    }
    case SYS_chmod:
    case SYS_fchmodat:
    case SYS_fchmodat2: {
      const mode_t mode = static_cast<mode_t>(nr == SYS_chmod ? a1 : a2);
      const bool follow = !(nr == SYS_fchmodat2 && (a3 & AT_SYMLINK_NOFOLLOW));
      return Run([&](MountFs& m, schema::Transaction& txn,
                     const std::string& rel) { return m.fs->Chmod(txn, cred, rel, mode, follow); },
                 [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
                   return m.fs->FChmod(txn, cred, id, mode);
                 },
                 Ok);
    }
    case SYS_chown:
    case SYS_lchown:
    case SYS_fchownat: {
      const bool at = nr == SYS_fchownat;
      const uid_t uid = static_cast<uid_t>(at ? a2 : a1);
      const gid_t gid = static_cast<gid_t>(at ? a3 : a2);
      const bool follow = at ? !(a4 & AT_SYMLINK_NOFOLLOW) : nr == SYS_chown;
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->Chown(txn, cred, rel, uid, gid, follow);
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
            return m.fs->FChown(txn, cred, id, uid, gid);
          },
          Ok);
    }
    case SYS_utime:
    case SYS_utimes:
    case SYS_futimesat:
    case SYS_utimensat: {
      const timespec* times = x.has_times ? x.times : nullptr;
      const bool follow = !(nr == SYS_utimensat && (a3 & AT_SYMLINK_NOFOLLOW));
      // Linux checks the nanoseconds once it has found the file.
      const int bad_times = calls::ValidateUtimes(times);
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
            if (bad_times) {
              auto st = m.fs->GetStat(txn, cred, rel, follow);
              return st.ok() ? Status::Errno(bad_times) : st.status();
            }
            return m.fs->Utimens(txn, cred, rel, times, follow);
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
            if (bad_times) return Status::Errno(bad_times);
            return m.fs->FUtimens(txn, cred, id, times);
          },
          Ok);
    }
    case SYS_truncate: {
      schema::FileId truncated = 0;
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            if (!h.shared_maps_.empty()) {
              auto st = m.fs->GetStat(txn, cred, rel, true);
              if (st.ok()) truncated = st->ino;
            }
            return m.fs->Truncate(txn, cred, rel, static_cast<int64_t>(a1));
          },
          IsDirError(EISDIR),
          [&] {
            if (truncated) h.shared_maps_.Resized(*where, truncated, a1);
            return 0L;
          });
    }
    default:
      return Decision::Emulate(-ENOSYS);
  }
}

Decision ServedPathCall::Xattrs() {
  switch (nr) {
    case SYS_setxattr:
    case SYS_lsetxattr:
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->SetXattr(txn, cred, rel, x.name, x.value, static_cast<int>(a4),
                                  nr == SYS_setxattr);
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
            return m.fs->FSetXattr(txn, cred, id, x.name, x.value, static_cast<int>(a4));
          },
          Ok);
    case SYS_getxattr:
    case SYS_lgetxattr: {
      std::string value;
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
            auto v = m.fs->GetXattr(txn, cred, rel, x.name, nr == SYS_getxattr);
            if (!v.ok()) return v.status();
            value = std::move(*v);
            return Status::Ok();
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) -> Status {
            auto v = m.fs->FGetXattr(txn, cred, id, x.name);
            if (!v.ok()) return v.status();
            value = std::move(*v);
            return Status::Ok();
          },
          [&]() -> long {
            const long len = static_cast<long>(value.size());
            if (a3 == 0) return len;
            if (value.size() > a3) return -ERANGE;
            if (len && WriteMemory(*t.proc, a2, value.data(), value.size()) != 0) return -EFAULT;
            return len;
          });
    }
    case SYS_listxattr:
    case SYS_llistxattr: {
      std::string list;
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
            auto names = m.fs->ListXattr(txn, cred, rel, nr == SYS_listxattr);
            if (!names.ok()) return names.status();
            for (const std::string& name : *names) list.append(name).push_back('\0');
            return Status::Ok();
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) -> Status {
            auto names = m.fs->FListXattr(txn, cred, id);
            if (!names.ok()) return names.status();
            for (const std::string& name : *names) list.append(name).push_back('\0');
            return Status::Ok();
          },
          [&]() -> long {
            const long len = static_cast<long>(list.size());
            if (a2 == 0) return len;
            if (list.size() > a2) return a2 >= XATTR_LIST_MAX ? -E2BIG : -ERANGE;
            if (len && WriteMemory(*t.proc, a1, list.data(), list.size()) != 0) return -EFAULT;
            return len;
          });
    }
    case SYS_removexattr:
    case SYS_lremovexattr:
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->RemoveXattr(txn, cred, rel, x.name, nr == SYS_removexattr);
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
            return m.fs->FRemoveXattr(txn, cred, id, x.name);
          },
          Ok);
    default:
      return Decision::Emulate(-ENOSYS);
  }
}

}  // namespace amino::monitor::service
