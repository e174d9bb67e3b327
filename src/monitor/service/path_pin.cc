// Paths pinned for the kernel (issue 15, item 2): a call from a task whose memory another task
// shares, let through as a host call, is given the very bytes the monitor classified. Another
// thread that rewrites the path after the monitor's look (a host directory's name into a mount
// point's) would otherwise have the kernel walk the new path, under the mount point on the host.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "monitor/calls/validate.h"
#include "monitor/changed_root.h"
#include "monitor/service/mount_handler.h"
#include "monitor/shared_region.h"
#include "monitor/syscall_numbers.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

// Paths whose meaning depends on who walks them (/proc/self, /dev/tty, /dev/fd/N): the monitor
// cannot make such a call for the tracee. /dev/shm is a plain file system.
bool WalkerDependent(const std::string& abs) {
  auto under = [&](std::string_view dir) {
    return abs.starts_with(dir) && (abs.size() == dir.size() || abs[dir.size()] == '/');
  };
  return under("/proc") || under("/sys") || (under("/dev") && !under("/dev/shm"));
}

// Whether the monitor walks paths in task `tid`'s mount namespace. In another (the cover's, as
// root, or one the program made), a call the monitor makes would walk other mounts, and a
// descriptor it opened would belong to its own mounts (linkat from it: EXDEV).
bool SameMountNamespace(pid_t tid) {
  // The monitor's own never changes: it makes no namespace of its own after the start.
  static const struct stat mine = [] {
    struct stat st {};
    if (stat("/proc/self/ns/mnt", &st) != 0) st.st_ino = 0;
    return st;
  }();
  struct stat theirs;
  return mine.st_ino != 0 &&
         stat(("/proc/" + std::to_string(tid) + "/ns/mnt").c_str(), &theirs) == 0 &&
         mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev;
}

// The directory descriptor path slot `slot` is relative to (AT_FDCWD for the cwd).
int DirFdOf(const SyscallRegs& call, const PathSlot& slot) {
  return slot.dirfd_arg < 0 ? AT_FDCWD : static_cast<int>(call.arg(slot.dirfd_arg));
}

}  // namespace

bool MayChangeNamedFile(const SyscallRegs& call) {
  // O_PATH makes an open ignore O_CREAT and O_TRUNC: it only finds the file.
  auto writes = [](uint64_t flags) {
    return !(flags & O_PATH) && (flags & (O_CREAT | O_TRUNC | O_ACCMODE)) != O_RDONLY;
  };
  switch (call.nr()) {
    case SYS_open:
      return writes(call.arg(1));
    case SYS_openat:
      return writes(call.arg(2));
    case SYS_creat:
    case SYS_openat2:  // its flags are in memory another thread may change too
    case SYS_mkdir:
    case SYS_mkdirat:
    case SYS_mknod:
    case SYS_mknodat:
    case SYS_symlink:
    case SYS_symlinkat:
    case SYS_link:
    case SYS_linkat:
    case SYS_rename:
    case SYS_renameat:
    case SYS_renameat2:
    case SYS_unlink:
    case SYS_unlinkat:
    case SYS_rmdir:
    case SYS_truncate:
    case SYS_chmod:
    case SYS_fchmodat:
    case SYS_fchmodat2:
    case SYS_chown:
    case SYS_lchown:
    case SYS_fchownat:
    case SYS_utime:
    case SYS_utimes:
    case SYS_futimesat:
    case SYS_utimensat:
    case SYS_setxattr:
    case SYS_lsetxattr:
    case SYS_removexattr:
    case SYS_lremovexattr:
      return true;
    default:
      return false;
  }
}

void MountHandler::TakePaths(Thread& t, const SyscallRegs& call, StringSnapshot* snapshot) {
  const SyscallInfo* info = FindSyscall(call.nr());
  if (!info) return;
  PathSlot slots[2];
  const int n = PathSlots(*info, slots);
  for (int i = 0; i < n; ++i) {
    if (const uint64_t addr = call.arg(slots[i].arg)) (void)snapshot->Take(*t.proc, addr);
  }
}

Decision MountHandler::PinPaths(Thread& t, SyscallRegs& call, const StringSnapshot& snapshot) {
  const SyscallInfo* info = FindSyscall(call.nr());
  if (!info) return Decision::Pass();
  PathSlot slots[2];
  const int n = PathSlots(*info, slots);
  std::string given[2];
  for (int i = 0; i < n; ++i) {
    const std::string* s = snapshot.Find(call.arg(slots[i].arg));
    // Unread (a bad pointer: the kernel's EFAULT) or empty (AT_EMPTY_PATH: the descriptor is
    // the file): nothing another thread could redirect.
    if (!s || s->empty()) return Decision::Pass();
    given[i] = *s;
  }
  if (pending_.count(t.tid)) return Decision::Pass();  // the handler awaits the exit itself
  if (!call.notified) {
    // Stopped: the kernel is given the same bytes in the shared region, which the tracee can
    // only read, relative to the same directories.
    Decision restart;
    if (!EnsureRegion(t, call, &restart)) return restart;
    SyscallRegs original = call;
    for (int i = 0; i < n; ++i) {
      const int arg = slots[i].arg;
      const uint64_t addr =
          t.proc->region->Put(t.tid, 4096 * static_cast<size_t>(arg & 3), given[i] + '\0');
      if (!addr) return Decision::Emulate(-ENAMETOOLONG);
      call.set_arg(arg, addr);
    }
    Pending p;
    p.kind = Pending::Kind::kRestore;
    p.original = original;
    pending_[t.tid] = std::move(p);
    return Decision::ObserveExit();
  }
  // Notified: the kernel would read the tracee's memory again, so the monitor makes the call
  // itself, as it does for a substitute: with the same bytes, from the same directories (the
  // host emulation walks a relative path from the tracee's own descriptor or cwd).
  if (!t.proc->region) return Decision::Pass();  // none made yet: no better than before
  // In a mount namespace of its own the call stays the kernel's: as root, the cover keeps the
  // host directories under mount points out of reach there (mount_cover.h).
  if (!SameMountNamespace(t.tid)) return Decision::Pass();
  const std::string root = RootOf(t);
  SyscallRegs with = call;
  std::string paths[2];
  for (int i = 0; i < n; ++i) {
    const int dirfd = DirFdOf(call, slots[i]);
    std::string named;  // the host path named, for the check below
    if (given[i][0] == '/') {
      paths[i] = named = HostPathInRoot(root, given[i]);
    } else {
      if (dirfd == AT_FDCWD && t.proc->fs->cwd.is_virtual()) return Decision::Pass();
      paths[i] = given[i];
      const std::string base =
          dirfd == AT_FDCWD
              ? HostCwd(t)
              : host::ReadLink("/proc/" + std::to_string(t.tid) + "/fd/" + std::to_string(dirfd));
      if (!base.empty() && base[0] == '/') named = base + "/" + given[i];
    }
    // Left to the kernel, unpinned: there the monitor would reach its own (after a chroot, as
    // the process names them too).
    if (WalkerDependent(named) || WalkerDependent(PathFromRoot(root, named).value_or(""))) {
      return Decision::Pass();
    }
    const int arg = slots[i].arg;
    const uint64_t addr =
        t.proc->region->Put(t.tid, 4096 * static_cast<size_t>(arg & 3), paths[i] + '\0');
    if (!addr) return Decision::Emulate(-ENAMETOOLONG);
    with.set_arg(arg, addr);
  }
  if (info->family == Family::kOpen) {
    open_how how{};
    if (int err = OpenHowOfCall(t, call, &how)) return Decision::Emulate(-err);
    // openat2's resolve flags are the monitor's to apply only with the kernel's walk; an
    // O_PATH description cannot be handed over (SECCOMP_IOCTL_NOTIF_ADDFD refuses it) and
    // changes nothing. Both are left to the kernel.
    if (how.resolve || (how.flags & O_PATH)) return Decision::Pass();
    return host_.OpenInstead(t, call, DirFdOf(call, slots[0]), paths[0], how, HostCredsOf(t));
  }
  return host_.PerformInstead(t, with, HostCredsOf(t));
}

int MountHandler::OpenHowOfCall(Thread& t, const SyscallRegs& call, open_how* how) {
  const long nr = call.nr();
  if (nr == SYS_openat2) {
    return ReadMemory(*t.proc, call.arg(2), how, sizeof *how) != 0 ? EFAULT : 0;
  }
  if (nr == SYS_creat) {
    *how = calls::OpenHowOf(O_CREAT | O_WRONLY | O_TRUNC, static_cast<mode_t>(call.arg(1)));
    return 0;
  }
  const int at = nr == SYS_openat ? 1 : 0;
  *how = calls::OpenHowOf(static_cast<unsigned>(call.arg(at + 1)),
                          static_cast<mode_t>(call.arg(at + 2)));
  return 0;
}

}  // namespace amino::monitor::service
