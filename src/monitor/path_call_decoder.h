// A path call as the kernel reads it, before it looks at a file: its register arguments
// checked (calls/validate.h), what it copies from memory besides its paths (an attribute's name
// and value, a symbolic link's target, the times of the utime family), its paths, then the stat
// calls' flags, which say whether they act on a descriptor. Both handlers decode path calls
// here, so both report these errors in the kernel's order; each then resolves the paths its
// own way.
#pragma once

#include <fcntl.h>
#include <time.h>

#include <optional>
#include <string>

#include "monitor/call_handler.h"
#include "monitor/process_table.h"
#include "monitor/syscall_regs.h"
#include "monitor/syscall_table.h"

namespace amino::monitor {

// The arguments besides the paths that Linux copies from memory and checks before it looks a
// path up: the xattr name and value, the times, the symbolic link's target.
struct PathExtras {
  std::string name;
  std::string value;
  std::string target;
  timespec times[2] = {};
  bool has_times = false;
  bool nothing_to_do = false;  // utimensat with both times UTIME_OMIT: succeeds at once
};

// 0 or the errno the call fails with before any path is looked at. The xattr calls of every
// form, f*xattr too, have their name (and value) read.
int ReadPathExtras(Process& p, const SyscallInfo& info, const SyscallRegs& call, PathExtras* x);

// utimensat and futimesat with a NULL path and a descriptor act on the descriptor itself.
bool TimesOnDescriptor(long nr, const SyscallRegs& call);

// One path argument: the register it is in and the directory it is relative to.
struct PathArg {
  int arg = -1;
  int dirfd = AT_FDCWD;
  bool empty_ok = false;
  bool null = false;  // a NULL pointer where the call allows one
  int read_err = 0;
  std::string path;
};

// The path arguments of `info`, with their directories as the tracee gave them.
int PathArgs(const SyscallInfo& info, const SyscallRegs& call, PathArg out[2]);

// A path call as read from the tracee, in the kernel's order: flags, what it copies before its
// paths, the paths, then the stat calls' flags (which say whether they act on a descriptor).
struct DecodedPathCall {
  PathExtras extras;
  PathArg paths[2];
  int n = 0;
  bool on_descriptor = false;  // the call acts on paths[0].dirfd itself
};

// Decodes `call` into `d`: nullopt when the call goes on with `d`, else its decision (an early
// error, or nothing to do). A path that cannot be read is left for its turn (read_err).
std::optional<Decision> DecodePathCall(Thread& t, const SyscallInfo& info, const SyscallRegs& call,
                                       DecodedPathCall* d);

}  // namespace amino::monitor
