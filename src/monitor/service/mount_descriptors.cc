// The life cycle of shadow descriptors: the descriptor calls (descriptor_calls.h), where a served
// file gives up its record locks and shared-mapping stores as a descriptor of it goes, and fcntl.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <span>
#include <string>

#include "monitor/calls/validate.h"
#include "monitor/remote_syscall.h"
#include "monitor/service/file_locks.h"
#include "monitor/service/mount_handler.h"
#include "monitor/shadow_fds.h"
#include "monitor/shared_region.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

Decision MountHandler::Descriptors(Thread& t, SyscallRegs& call) {
  if (std::optional<Decision> d = descriptors_.OnEntry(t, call, listener_)) return *d;
  if (call.nr() == SYS_sendmsg) {
    // A datagram to a socket bound in a mount (mount_sockets.cc).
    if (std::optional<Decision> d = SendMsgTo(t, call)) return *d;
  }
  return Decision::Pass();
}

void MountHandler::Closing(Thread& t, OpenFile& f) {
  auto* served = dynamic_cast<ServedFile*>(&f);
  if (!served) return;
  ReleaseProcessLocks(t.proc->tgid, served);
  // Stores through its shared mappings reach the schema (a conflict leaves them for the next
  // occasion).
  if (!shared_maps_.empty()) (void)shared_maps_.WriteBack(*served->mfs, served->id);
}

Decision MountHandler::Fcntl(Thread& t, SyscallRegs& call, ServedFile& f) {
  const int cmd = static_cast<int>(call.arg(1));
  // check_fcntl_cmd(): what an O_PATH descriptor allows; anything else, unknown commands
  // included, is EBADF.
  if ((f.flags & O_PATH) && cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC && cmd != F_GETFD &&
      cmd != F_SETFD && cmd != F_GETFL) {
    return Decision::Emulate(-EBADF);
  }
  switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
      return Descriptors(t, call);
    case F_GETFD:
    case F_SETFD:
      return Decision::Pass();  // the descriptor flag lives on the placeholder
    case F_GETFL: {
      // The kernel sets O_LARGEFILE on every 64-bit open (glibc's O_LARGEFILE is 0 here).
      constexpr int kKernelLargeFile = 0100000;
      return Decision::Emulate(f.flags | (f.flags & O_PATH ? 0 : kKernelLargeFile));
    }
    case F_SETFL: {
      // The flags Linux lets F_SETFL change; O_DIRECT is accepted and has no effect here.
      constexpr int kSettable = O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME | O_NONBLOCK;
      if (f.flags & O_PATH) return Decision::Emulate(-EBADF);
      const int want = static_cast<int>(call.arg(2));
      if ((want & O_NOATIME) && !(f.flags & O_NOATIME)) {
        // Only the owner (or a privileged caller) may set O_NOATIME.
        const schema::Cred cred = CredOf(t);
        uid_t owner = 0;
        Decision d = RunOnFile(
            f,
            [&](schema::Transaction& txn) {
              auto st = f.mfs->fs->FStat(txn, f.id);
              if (!st.ok()) return st.status();
              owner = st->attr.uid;
              return schema::Status::Ok();
            },
            [] { return 0L; });
        if (d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
        if (!cred.owns(owner)) return Decision::Emulate(-EPERM);
      }
      f.flags = (f.flags & ~kSettable) | (want & kSettable);
      return Decision::Emulate(0);
    }
    case F_GETLK:
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_GETLK:
    case F_OFD_SETLK:
    case F_OFD_SETLKW:
      return ServeFd(t, call, f);
    case F_GETOWN:
    case F_SETOWN:
    case F_GETSIG:
    case F_SETSIG:
    case F_GETOWN_EX:
    case F_SETOWN_EX:
      return Decision::Pass();  // signal-driven I/O on the placeholder: never signalled
    case F_GETLEASE:
      return Decision::Emulate(F_UNLCK);
    case F_SETLEASE:
    case F_NOTIFY:
      return Decision::Emulate(-EINVAL);
    case F_ADD_SEALS:
    case F_GET_SEALS:
      return Decision::Emulate(-EINVAL);
    case F_GETPIPE_SZ:
    case F_SETPIPE_SZ:
      return Decision::Emulate(-EBADF);
    default:
      return Decision::Emulate(-EINVAL);
  }
}

}  // namespace amino::monitor::service
