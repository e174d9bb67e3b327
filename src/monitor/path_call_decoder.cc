#include "monitor/path_call_decoder.h"

#include <limits.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <utime.h>

#include <array>
#include <cerrno>

#include "monitor/calls/validate.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor {

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
    if (nr == SYS_setxattr || nr == SYS_lsetxattr || nr == SYS_fsetxattr) {
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

// The path arguments of `info`, with their directories as the tracee gave them.
int PathArgs(const SyscallInfo& info, const SyscallRegs& call, PathArg out[2]) {
  std::array<uint64_t, 6> regs;
  for (int i = 0; i < 6; ++i) regs[static_cast<size_t>(i)] = call.arg(i);
  PathSlot slots[2];
  const int n = PathSlots(info, slots);
  for (int i = 0; i < n; ++i) {
    PathArg& p = out[i];
    p.arg = slots[i].arg;
    if (slots[i].dirfd_arg >= 0) p.dirfd = static_cast<int>(call.arg(slots[i].dirfd_arg));
    p.empty_ok = calls::EmptyPathAllowed(info.nr, p.arg, regs);
  }
  return n;
}

// nullopt when the call goes on with `d`, else its decision (an early error, nothing to do).
std::optional<Decision> DecodePathCall(Thread& t, const SyscallInfo& info, const SyscallRegs& call,
                                       DecodedPathCall* d) {
  const long nr = info.nr;
  std::array<uint64_t, 6> regs;
  for (int i = 0; i < 6; ++i) regs[static_cast<size_t>(i)] = call.arg(i);
  if (int err = calls::EarlyErrno(nr, regs)) return Decision::Emulate(-err);
  if (int err = ReadPathExtras(*t.proc, info, call, &d->extras)) return Decision::Emulate(-err);
  if (d->extras.nothing_to_do) return Decision::Emulate(0);

  PathArg* paths = d->paths;
  d->n = PathArgs(info, call, paths);
  for (int i = 0; i < d->n; ++i) {
    PathArg& p = paths[i];
    const uint64_t addr = call.arg(p.arg);
    const bool stat_call = nr == SYS_newfstatat || nr == SYS_statx;
    if (addr == 0 && (TimesOnDescriptor(nr, call) || (stat_call && p.empty_ok))) {
      p.null = true;
      continue;
    }
    p.read_err = ReadString(*t.proc, addr, PATH_MAX, &p.path);
  }

  // The stat calls check their flags after reading the path, which decides whether they look
  // at a descriptor or a path.
  d->on_descriptor = TimesOnDescriptor(nr, call);
  if (nr == SYS_newfstatat || nr == SYS_statx) {
    const unsigned flags = static_cast<unsigned>(call.arg(nr == SYS_statx ? 2 : 3));
    const bool empty = paths[0].null || (paths[0].read_err == 0 && paths[0].path.empty());
    d->on_descriptor = calls::StatsDescriptorItself(nr, paths[0].dirfd, empty, flags);
    const int err =
        nr == SYS_statx
            ? calls::ValidateStatx(flags, static_cast<unsigned>(call.arg(3)), d->on_descriptor)
            : (d->on_descriptor ? 0 : calls::ValidateFstatatFlags(flags));
    if (err) return Decision::Emulate(-err);
    if (d->on_descriptor) paths[0].empty_ok = true;
  }
  if (d->on_descriptor && !(paths[0].null || paths[0].path.empty())) d->on_descriptor = false;
  return std::nullopt;
}

}  // namespace amino::monitor
