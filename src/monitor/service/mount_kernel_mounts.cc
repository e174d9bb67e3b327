// The kernel's mount calls on paths in an Amino mount. An Amino mount is no kernel mount: the
// kernel sees only the mount point's empty host directory. Bound elsewhere (mount --bind, also
// in a user namespace of the program's own, open_tree + move_mount) that directory would take
// writes the monitor never sees; mounted over, remounted or unmounted (the cover of
// mount_cover.h, as root) it would stop defending the host directory. So every such call that
// names a path in a mount fails with EINVAL, the kernel's answer for a path that is no mount
// (or no place for one); the same calls elsewhere go to the kernel untouched.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include <cerrno>
#include <string>

#include "monitor/service/mount_handler.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

// A path argument of a mount call: where it is and the directory it is relative to.
struct MountPathArg {
  int arg;
  int dirfd;  // AT_FDCWD for the calls without one
};

}  // namespace

Decision MountHandler::KernelMountCall(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
  MountPathArg paths[2] = {{-1, AT_FDCWD}, {-1, AT_FDCWD}};
  switch (nr) {
    case SYS_mount: {
      // The target always; the source where it is a path (a bind or a move).
      paths[0] = {1, AT_FDCWD};
      if (call.arg(3) & (MS_BIND | MS_MOVE)) paths[1] = {0, AT_FDCWD};
      break;
    }
    case SYS_umount2:
      paths[0] = {0, AT_FDCWD};
      break;
    case SYS_pivot_root:
      paths[0] = {0, AT_FDCWD};
      paths[1] = {1, AT_FDCWD};
      break;
    case SYS_open_tree:
    case SYS_fspick:
    case SYS_mount_setattr:
      paths[0] = {1, static_cast<int>(call.arg(0))};
      break;
    case SYS_move_mount:
      paths[0] = {1, static_cast<int>(call.arg(0))};
      paths[1] = {3, static_cast<int>(call.arg(2))};
      break;
    default:
      return Decision::Pass();
  }
  for (const MountPathArg& p : paths) {
    if (p.arg < 0 || !call.arg(p.arg)) continue;
    std::string path;
    if (ReadString(*t.proc, call.arg(p.arg), PATH_MAX, &path) != 0) continue;  // the kernel's
    // An empty path with *_EMPTY_PATH names the descriptor: a served one is in a mount.
    if (path.empty()) {
      if (p.dirfd >= 0 && ServedOf(t, p.dirfd)) return Decision::Emulate(-EINVAL);
      continue;
    }
    Target target;
    if (int err = Resolve(t, p.dirfd, path, false, LastName::kFollow, &target)) {
      // A path the monitor must answer for (a virtual cwd or directory) but cannot resolve.
      if (WalkStartsInMount(t, p.dirfd, path)) return Decision::Emulate(err);
      continue;
    }
    if (target.kind != Target::Kind::kHost) return Decision::Emulate(-EINVAL);
  }
  return Decision::Pass();
}

bool MountHandler::WalkStartsInMount(Thread& t, int dirfd, const std::string& path) {
  if (path.empty() || path[0] == '/') return false;
  return dirfd == AT_FDCWD ? t.proc->fs->cwd.is_virtual() : !!ServedOf(t, dirfd);
}

Decision MountHandler::NameToHandle(Thread& t, SyscallRegs& call) {
  const int dirfd = static_cast<int>(call.arg(0));
  const int flags = static_cast<int>(call.arg(4));
  std::string path;
  if (ReadString(*t.proc, call.arg(1), PATH_MAX, &path) != 0) return Decision::Pass();
  Target target;
  const LastName last = flags & AT_SYMLINK_FOLLOW ? LastName::kFollow : LastName::kLookUp;
  if (int err = Resolve(t, dirfd, path, flags & AT_EMPTY_PATH, last, &target)) {
    // The monitor answers for a walk that starts in a mount; the kernel for the others.
    return WalkStartsInMount(t, dirfd, path) ? Decision::Emulate(err) : Decision::Pass();
  }
  if (target.kind == Target::Kind::kHost) return Decision::Pass();
  return Decision::Emulate(-EOPNOTSUPP);
}

}  // namespace amino::monitor::service
