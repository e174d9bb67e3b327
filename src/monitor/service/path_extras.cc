// What a path call copies from the tracee besides its paths (path_call.h): an attribute name
// and value, a symlink's target, the times of the utime family. Read and checked in the
// kernel's order, before the paths are looked at.
#include <sys/syscall.h>
#include <sys/time.h>
#include <utime.h>

#include <cerrno>

#include "monitor/calls/validate.h"
#include "monitor/service/path_call.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

bool TimesOnDescriptor(long nr, const SyscallRegs& call) {
  return (nr == SYS_utimensat || nr == SYS_futimesat) && call.arg(1) == 0 &&
         static_cast<int>(call.arg(0)) != AT_FDCWD;
}

int ReadPathExtras(Process& p, const SyscallInfo& info, const SyscallRegs& call, PathExtras* x) {
  const long nr = info.nr;
  if (info.args[1] == Arg::kXattrName) {
    int err = ReadString(p, call.arg(1), calls::kXattrNameReadMax, &x->name);
    if (err && err != ENAMETOOLONG) return err;
    if (int e = calls::ValidateXattrName(x->name, err == ENAMETOOLONG)) return e;
    if (nr == SYS_setxattr || nr == SYS_lsetxattr) {
      const uint64_t size = call.arg(3);
      if (int e = calls::ValidateXattrValueSize(size)) return e;
      x->value.resize(size);
      if (size && ReadMemory(p, call.arg(2), x->value.data(), size) != 0) return EFAULT;
    }
    return 0;
  }
  switch (nr) {
    case SYS_symlink:
    case SYS_symlinkat:
      if (int err = ReadString(p, call.arg(0), PATH_MAX, &x->target)) return err;
      return x->target.empty() ? ENOENT : 0;
    case SYS_utime: {
      if (!call.arg(1)) return 0;
      utimbuf u;
      if (ReadMemory(p, call.arg(1), &u, sizeof u) != 0) return EFAULT;
      x->times[0] = {u.actime, 0};
      x->times[1] = {u.modtime, 0};
      x->has_times = true;
      return 0;
    }
    case SYS_utimes:
    case SYS_futimesat: {
      const uint64_t addr = call.arg(nr == SYS_utimes ? 1 : 2);
      if (!addr) return 0;
      timeval tv[2];
      if (ReadMemory(p, addr, tv, sizeof tv) != 0) return EFAULT;
      for (int i = 0; i < 2; ++i) {
        // Checked here: UTIME_NOW and UTIME_OMIT are not microseconds.
        if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000) return EINVAL;
        x->times[i] = {tv[i].tv_sec, tv[i].tv_usec * 1000};
      }
      x->has_times = true;
      return 0;
    }
    case SYS_utimensat: {
      if (call.arg(2)) {
        if (ReadMemory(p, call.arg(2), x->times, sizeof x->times) != 0) return EFAULT;
        x->has_times = true;
        if (calls::UtimesNothingToDo(x->times)) {
          x->nothing_to_do = true;
          return 0;
        }
      }
      return calls::ValidateUtimensatFlags(static_cast<unsigned>(call.arg(3)),
                                           TimesOnDescriptor(nr, call));
    }
    default:
      return 0;
  }
}

}  // namespace amino::monitor::service
