// The kernel's mount calls on paths in an Amino mount. An Amino mount is no kernel mount: the
// kernel sees only the mount point's empty host directory. Bound elsewhere (mount --bind, also
// in a user namespace of the program's own, open_tree + move_mount) that directory would take
// writes the monitor never sees; mounted over, remounted or unmounted (the cover of
// mount_cover.h, as root) it would stop defending the host directory. So every such call that
// names a path in a mount fails with EINVAL, the kernel's answer for a path that is no mount
// (or no place for one); the same calls elsewhere go to the kernel untouched. The paths a new
// mount's options name are checked the same way, in mount's data string and in fsconfig
// (overlayfs's upperdir and workdir take writes: an upper directory in a mount would write
// into the host directory, also unprivileged, in a user namespace of the program's own).
#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/service/mount_handler.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

// A path argument of a mount call: where it is and the directory it is relative to.
struct MountPathArg {
  int arg;
  int dirfd;  // AT_FDCWD for the calls without one
};

// The options that name directories (overlayfs's; no other file system names a directory in
// its options). lowerdir and datadir in mount's data string are lists separated by ':'.
bool NamesPaths(std::string_view key) {
  return key == "lowerdir" || key == "upperdir" || key == "workdir" || key == "datadir" ||
         key == "lowerdir+" || key == "datadir+";
}
bool IsList(std::string_view key) { return key == "lowerdir" || key == "datadir"; }

// `text` split at each `sep` that no backslash escapes, the escapes taken out (as overlayfs
// reads its options and its lists of directories).
std::vector<std::string> SplitEscaped(std::string_view text, char sep) {
  std::vector<std::string> parts(1);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      parts.back() += text[++i];
    } else if (text[i] == sep) {
      parts.emplace_back();
    } else {
      parts.back() += text[i];
    }
  }
  return parts;
}

// The directories named by option `key` = `value`.
std::vector<std::string> OptionPaths(std::string_view key, std::string_view value) {
  if (!NamesPaths(key)) return {};
  if (IsList(key)) return SplitEscaped(value, ':');
  return {std::string(value)};
}

}  // namespace

// Whether `path`, walked from `dirfd`, is a path in a mount: 0 when it is not (or the kernel
// will say what is wrong with it), else the call's error.
long MountHandler::MountPathError(Thread& t, int dirfd, const std::string& path) {
  if (path.empty()) return 0;
  Target target;
  if (int err = Resolve(t, dirfd, path, false, LastName::kFollow, &target)) {
    // A path the monitor must answer for (a virtual cwd or directory) but cannot resolve.
    return WalkStartsInMount(t, dirfd, path) ? err : 0;
  }
  return target.kind == Target::Kind::kHost ? 0 : -EINVAL;
}

// mount(2)'s options for a new mount or a remount: "key=value,..." (commas escaped as overlayfs
// reads them), at most a page.
Decision MountHandler::MountOptions(Thread& t, SyscallRegs& call) {
  if (!call.arg(4) || (call.arg(3) & (MS_BIND | MS_MOVE))) return Decision::Pass();
  std::string data;
  if (ReadString(*t.proc, call.arg(4), 4096, &data) != 0) return Decision::Pass();  // the kernel's
  for (const std::string& option : SplitEscaped(data, ',')) {
    const size_t eq = option.find('=');
    if (eq == std::string::npos) continue;
    for (const std::string& path : OptionPaths(option.substr(0, eq), option.substr(eq + 1))) {
      if (long err = MountPathError(t, AT_FDCWD, path)) return Decision::Emulate(err);
    }
  }
  return Decision::Pass();
}

// fsconfig(fd, cmd, key, value, aux): a directory named by a string option, or any option
// given as a path or a descriptor.
Decision MountHandler::Fsconfig(Thread& t, SyscallRegs& call) {
  const unsigned cmd = static_cast<unsigned>(call.arg(1));
  std::string key, value;
  if (cmd != FSCONFIG_SET_STRING && cmd != FSCONFIG_SET_PATH && cmd != FSCONFIG_SET_PATH_EMPTY &&
      cmd != FSCONFIG_SET_FD) {
    return Decision::Pass();
  }
  if (ReadString(*t.proc, call.arg(2), 256, &key) != 0) return Decision::Pass();
  const int aux = static_cast<int>(call.arg(4));
  if (cmd == FSCONFIG_SET_FD) {
    return ServedOf(t, aux) ? Decision::Emulate(-EINVAL) : Decision::Pass();
  }
  if (ReadString(*t.proc, call.arg(3), PATH_MAX, &value) != 0) return Decision::Pass();
  if (cmd == FSCONFIG_SET_STRING) {
    for (const std::string& path : OptionPaths(key, value)) {
      if (long err = MountPathError(t, AT_FDCWD, path)) return Decision::Emulate(err);
    }
    return Decision::Pass();
  }
  // FSCONFIG_SET_PATH(_EMPTY): `value` from the directory descriptor `aux`; empty, `aux` itself.
  if (value.empty()) {
    return cmd == FSCONFIG_SET_PATH_EMPTY && ServedOf(t, aux) ? Decision::Emulate(-EINVAL)
                                                              : Decision::Pass();
  }
  if (long err = MountPathError(t, aux, value)) return Decision::Emulate(err);
  return Decision::Pass();
}

Decision MountHandler::KernelMountCall(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
  if (nr == SYS_fsconfig) return Fsconfig(t, call);
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
  if (nr == SYS_mount) return MountOptions(t, call);
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
