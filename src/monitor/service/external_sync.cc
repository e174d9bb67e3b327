#include "monitor/service/external_sync.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <vector>

namespace amino::monitor::service {

bool MayBeObservedOutside(const SyscallRegs& call) {
  switch (call.nr()) {
    // Reading, looking up and descriptor bookkeeping change nothing anyone else can see.
    case SYS_read:
    case SYS_pread64:
    case SYS_readv:
    case SYS_preadv:
    case SYS_preadv2:
    case SYS_lseek:
    case SYS_fstat:
    case SYS_stat:
    case SYS_lstat:
    case SYS_newfstatat:
    case SYS_statx:
    case SYS_statfs:
    case SYS_fstatfs:
    case SYS_access:
    case SYS_faccessat:
    case SYS_faccessat2:
    case SYS_readlink:
    case SYS_readlinkat:
    case SYS_getdents:
    case SYS_getdents64:
    case SYS_getcwd:
    case SYS_chdir:
    case SYS_fchdir:
    case SYS_close:
    case SYS_close_range:
    case SYS_dup:
    case SYS_dup2:
    case SYS_dup3:
    case SYS_getxattr:
    case SYS_lgetxattr:
    case SYS_fgetxattr:
    case SYS_listxattr:
    case SYS_llistxattr:
    case SYS_flistxattr:
    case SYS_fadvise64:
    case SYS_readahead:
    case SYS_execve:
    case SYS_execveat:
    case SYS_memfd_create:
    case SYS_recvmsg:
    case SYS_fsync:
    case SYS_fdatasync:
    case SYS_sync:
    case SYS_syncfs:
      return false;
    case SYS_open:
      return call.arg(1) & (O_CREAT | O_TRUNC);
    case SYS_creat:
      return true;
    case SYS_openat:
      return call.arg(2) & (O_CREAT | O_TRUNC);
    case SYS_openat2:
      return true;  // flags are in memory: taken as creating
    case SYS_fcntl:
      switch (call.arg(1)) {
        case F_SETLK:
        case F_SETLKW:
        case F_OFD_SETLK:
        case F_OFD_SETLKW:
        case F_SETLEASE:
          return true;  // other processes see locks
        default:
          return false;
      }
    case SYS_mmap: {
      // A shared writable mapping of a host file: its writes cannot be followed.
      const uint64_t type = call.arg(3) & MAP_TYPE;
      return (type == MAP_SHARED || type == MAP_SHARED_VALIDATE) && (call.arg(2) & PROT_WRITE) &&
             !(call.arg(3) & MAP_ANONYMOUS);
    }
    default:
      return true;  // writes, sends, host file-system changes, ioctl, signals
  }
}

std::vector<long> OutputCalls() {
  return {SYS_sendto,
          SYS_sendmmsg,
          SYS_kill,
          SYS_tkill,
          SYS_tgkill,
          SYS_vmsplice,
          SYS_rt_sigqueueinfo,
          SYS_rt_tgsigqueueinfo,
          SYS_pidfd_send_signal,
          SYS_process_vm_writev,
          SYS_io_uring_enter};
}

}  // namespace amino::monitor::service
