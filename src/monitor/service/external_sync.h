// External synchrony (`--durability external`, DESIGN.md §4, after "Rethink the Sync"):
// commits are written to the operating system but not flushed, and the log is flushed before
// anything that could depend on them becomes visible outside the traced tree.
//
// This is the conservative first form of the contract: the dependency of every output is taken
// to be the latest commit (one flushed/unflushed state per mount, instead of a log position per
// process, file and channel), and the output waits at its call, the tracee stopped, until the
// flush is done. Observers outside the tree cannot tell it from `sync`; the price is a flush
// before each output that follows a commit, not one per commit.
#pragma once

#include <vector>

#include "monitor/syscall_regs.h"

namespace amino::monitor::service {

// Whether call `nr`, performed by the kernel (not served from a mount), may make something
// visible outside the traced tree: output to a terminal, pipe, socket or host file, a change
// of host file-system state, a signal, or an effect the monitor cannot follow (ioctl, shared
// mappings). Calls that only read are not.
bool MayBeObservedOutside(const SyscallRegs& call);

// The calls beyond the file calls that must be stopped to see output leave the tree.
std::vector<long> OutputCalls();

}  // namespace amino::monitor::service
