// Calls of another ABI (int $0x80, the x32 bit) on a traced tree with mounts. They are not
// served: one that names a mount path or a served descriptor would reach the host directory
// under the mount point or the placeholder memfd, so it is refused; the others run as made.
#include <fcntl.h>
#include <sys/syscall.h>

#include <string>

#include "monitor/host/host_context.h"
#include "monitor/service/mount_handler.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

long MountHandler::OnForeignCall(Thread& t, const ForeignCall& c) {
  const SyscallInfo* info = c.native_nr < 0 ? nullptr : FindSyscall(c.native_nr);
  if (host::ChangesCredentials(c.native_nr)) {
    creds_.Invalidate(t.tid);  // what the monitor caches of the thread no longer holds
    return 0;
  }
  switch (c.native_nr) {
    case SYS_sync:
      (void)shared_maps_.WriteBackAll();
      for (auto& m : mounts_) (void)m->fs->FlushLog();
      return 0;
    case SYS_getcwd:
      return t.proc->fs->cwd.is_virtual() ? kRefusedForeign : 0;
    case SYS_close_range:
      return host::HoldsAnyIn(*t.proc->fds, c.args[0], c.args[1]) ? kRefusedForeign : 0;
    default:
      break;
  }
  if (!info || !info->file) return 0;
  // Paths and descriptors by the table's roles (a symbolic link's target and an attribute's
  // name are only text).
  for (int i = 0; i < 6; ++i) {
    const int fd = static_cast<int>(c.args[i]);
    switch (info->args[i]) {
      case Arg::kFd:
      case Arg::kDirFd:
        if (ServedOf(t, fd)) return kRefusedForeign;
        break;
      case Arg::kPath: {
        std::string path;
        if (ReadString(*t.proc, c.args[i], PATH_MAX, &path) != 0) break;  // the kernel: EFAULT
        const int dirfd =
            i > 0 && info->args[i - 1] == Arg::kDirFd ? static_cast<int>(c.args[i - 1]) : AT_FDCWD;
        Target target;
        if (int err = Resolve(t, dirfd, path, true, LastName::kFollow, &target)) return err;
        if (target.kind != Target::Kind::kHost) return kRefusedForeign;
        break;
      }
      default:
        break;
    }
  }
  return 0;
}

}  // namespace amino::monitor::service
