// The calls on names (mkdir, mknod, rmdir, unlink, symlink, readlink; link and rename, whose
// two paths may lead out of the mount and back), served in the mount's schema once PathCall has
// their targets.
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

// A name that left the mount on the way to the second path of a rename or link: the two files
// are on different file systems.
Status NoEscape(Status st) { return st.is_escape() ? Status::Errno(EXDEV) : st; }

// RENAME_WHITEOUT, after the rename: the old name becomes a whiteout (a character device 0:0
// without permission bits, the caller's, as overlay file systems use them). Linux lets any
// caller make one.
Status Whiteout(MountFs& m, schema::Transaction& txn, const schema::Cred& cred,
                const std::string& rel) {
  const std::string path = WithoutTrailingSlashes(rel);
  const schema::Cred root = schema::Cred::Root();
  // Two names of one file: nothing moved, and no whiteout is made.
  if (m.fs->GetStat(txn, root, path, false).ok()) return Status::Ok();
  auto dir = m.fs->GetStat(txn, root, std::string(schema::ParentPath(path)), true);
  if (!dir.ok()) return dir.status();
  auto made = m.fs->Mknod(txn, root, path, S_IFCHR, 0);
  if (!made.ok()) return made.status();
  const gid_t gid = (dir->attr.mode & S_ISGID) ? static_cast<gid_t>(-1) : cred.gid;
  return m.fs->Chown(txn, root, path, cred.uid, gid, false);
}

}  // namespace

// Long by design: one case per call, each the same few steps; the family reads best as one
// table.
Decision ServedPathCall::Names() {
  switch (nr) {
    case SYS_mkdir:
    case SYS_mkdirat: {
      // The schema applies the umask: not where a default ACL takes its place.
      const mode_t mode = static_cast<mode_t>(nr == SYS_mkdir ? a1 : a2) & 01777;
      const mode_t umask = h.UmaskOf(t);
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->Mkdir(txn, cred, rel, mode, umask).status();
          },
          IsDirError(EEXIST), Ok);
    }
    case SYS_mknod:
    case SYS_mknodat: {
      const mode_t raw = static_cast<mode_t>(nr == SYS_mknod ? a1 : a2);
      const mode_t mode = raw & (S_IFMT | 07777);
      const mode_t umask = h.UmaskOf(t);
      // The argument is an unsigned int in the kernel's encoding, which is what stat reports.
      const dev_t dev = static_cast<uint32_t>(nr == SYS_mknod ? a2 : a3);
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->Mknod(txn, cred, rel, mode, dev, umask).status();
          },
          IsDirError(EEXIST), Ok);
    }
    case SYS_rmdir:
    case SYS_unlink:
    case SYS_unlinkat: {
      const bool dir = nr == SYS_rmdir || (nr == SYS_unlinkat && (a2 & AT_REMOVEDIR));
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return dir ? m.fs->Rmdir(txn, cred, rel) : m.fs->Unlink(txn, cred, rel);
          },
          IsDirError(dir ? EINVAL : EISDIR),
          [&] {
            // Virtual cwds and directory descriptors look their path up again.
            if (dir) where->dir_generation++;
            return 0L;
          });
    }
    case SYS_symlink:
    case SYS_symlinkat:
      return Run([&](MountFs& m, schema::Transaction& txn,
                     const std::string& rel) { return m.fs->Symlink(txn, cred, x.target, rel); },
                 IsDirError(EEXIST), Ok);
    case SYS_readlink:
    case SYS_readlinkat: {
      const bool at = nr == SYS_readlinkat;
      const uint64_t buf = at ? a2 : a1;
      const size_t size = static_cast<size_t>(static_cast<int>(at ? a3 : a2));
      std::string link;
      auto copy = [&]() -> long {
        const size_t len = std::min(size, link.size());
        if (WriteMemory(*t.proc, buf, link.data(), len) != 0) return -EFAULT;
        return static_cast<long>(len);
      };
      if (on_file) {
        // readlinkat(fd, "") of a link opened with O_PATH | O_NOFOLLOW: the link itself.
        if (!S_ISLNK(file->type)) return Decision::Emulate(-ENOENT);
        return h.RunOnFile(
            *file,
            [&](schema::Transaction& txn) -> Status {
              auto names = file->mfs->fs->Names(txn, file->id);
              if (!names.ok()) return names.status();
              if (names->empty()) return Status::Errno(ENOENT);
              auto r = file->mfs->fs->Readlink(txn, schema::Cred::Root(), names->front());
              if (!r.ok()) return r.status();
              link = std::move(*r);
              return Status::Ok();
            },
            copy);
      }
      return Run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
            auto r = m.fs->Readlink(txn, cred, rel);
            if (!r.ok()) return r.status();
            link = std::move(*r);
            return Status::Ok();
          },
          NoId, copy);
    }
    default:
      return Decision::Emulate(-ENOSYS);
  }
}

// Long by design: the call in the schema, then (when a path left the mount) where each path
// really leads and the call again: one protocol whose steps share the targets.
// Rename and link, both paths in one mount. A path that leaves the mount on the way to its
// directory (a link to elsewhere) is followed after the schema said so.
Decision ServedPathCall::Pair() {
  // Two paths in one mount: rename and link. A path that leaves the mount on the way to its
  // directory (a link to elsewhere) is followed after the schema said so.
  Target& second = targets[1];
  bool escaped = false;
  auto no_escape = [&](Status st) {
    if (st.is_escape()) escaped = true;
    return NoEscape(std::move(st));
  };
  Decision d;
  if (nr == SYS_link || nr == SYS_linkat) {
    const bool follow = nr == SYS_linkat && (a4 & AT_SYMLINK_FOLLOW);
    d = Run(
        [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
          if (&m != second.mfs) return Status::Errno(EXDEV);
          return no_escape(m.fs->Link(txn, cred, rel, second.path, follow));
        },
        [&](MountFs& m, schema::Transaction& txn, schema::FileId id) -> Status {
          // linkat(fd, "", ..., AT_EMPTY_PATH), or of /proc/self/fd/N with AT_SYMLINK_FOLLOW:
          // a new name for the descriptor's file.
          if (&m != second.mfs) return Status::Errno(EXDEV);
          const bool linkable = targets[0].file && targets[0].file->linkable;
          AMINO_RETURN_IF_ERROR(no_escape(m.fs->LinkFile(txn, cred, id, second.path, linkable)));
          if (targets[0].file) targets[0].file->linkable = false;  // as Linux's I_LINKABLE
          return Status::Ok();
        },
        Ok);
  } else {
    const unsigned flags = nr == SYS_renameat2 ? static_cast<unsigned>(a4) : 0;
    bool moved_dir = false;
    d = Run(
        [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
          if (&m != second.mfs) return Status::Errno(EXDEV);
          AMINO_RETURN_IF_ERROR(
              no_escape(m.fs->Rename(txn, cred, rel, second.path, flags & ~RENAME_WHITEOUT)));
          if (flags & RENAME_WHITEOUT) AMINO_RETURN_IF_ERROR(Whiteout(m, txn, cred, rel));
          // Whether a directory changed its name (or replaced one): virtual cwds and directory
          // descriptors must look their paths up again.
          auto is_dir = [&](const std::string& p) {
            auto st = m.fs->GetStat(txn, schema::Cred::Root(), p, false);
            return !st.ok() || S_ISDIR(st->attr.mode);
          };
          moved_dir = is_dir(second.path) || ((flags & RENAME_EXCHANGE) && is_dir(rel));
          return Status::Ok();
        },
        NoId,
        [&] {
          if (moved_dir) where->dir_generation++;
          return 0L;
        });
  }
  if (!escaped || d.kind != Decision::Kind::kEmulate || d.result != -EXDEV) return d;

  // Where each path's directory really is, links that leave the mount followed.
  bool moved = false;
  for (int i = 0; i < 2; ++i) {
    Target& x = targets[i];
    for (int hops = 0; x.kind == Target::Kind::kServed; ++hops) {
      if (hops == mounts::kMaxEscapes) return Decision::Emulate(-ELOOP);
      const std::string path = WithoutTrailingSlashes(x.path);
      const std::string dir(schema::ParentPath(path));
      std::string out;
      CallOutcome o = h.RunCall(*x.mfs, [&](schema::Transaction& txn) {
        auto st = x.mfs->fs->GetStat(txn, cred, dir, true);
        out = st.status().escaped_path();
        return Status::Ok();
      });
      if (o.kind == CallOutcome::Kind::kConflict) return h.Conflict();
      if (out.empty()) break;  // the directory is in the mount
      out += "/" + std::string(schema::BaseName(path)) + (x.trailing_slash ? "/" : "");
      auto next = h.resolver_.ContinueOnHost(*x.mfs->mount, h.EscapeFrom(x, out));
      if (!next.ok()) return Decision::Emulate(-next.status().error());
      moved = true;
      x.path = next->path;
      x.trailing_slash = next->trailing_slash;
      if (next->is_host()) {
        x.kind = Target::Kind::kSubstitute;
      } else {
        x.mfs = h.FsFor(next->mount);
      }
    }
  }
  auto on_host = [](const Target& y) { return y.kind == Target::Kind::kSubstitute; };
  if (on_host(targets[0]) && on_host(targets[1])) {
    int args[2] = {path_args[0], path_args[1]};
    return OnHostPair(
        t, call, args, targets,
        [&](int a, const std::string& path) { return h.Substitute(t, call, a, path); }, h.host_,
        h.HostCredsOf(t));
  }
  const bool same =
      !on_host(targets[0]) && !on_host(targets[1]) && targets[0].mfs == targets[1].mfs;
  if (!moved || !same || reruns >= mounts::kMaxEscapes) return Decision::Emulate(-EXDEV);
  // Both lead into one mount again (a link to the mount's own host path, say).
  return h.ServePath(t, call, targets, n, path_args, x, reruns + 1);
}

}  // namespace amino::monitor::service
