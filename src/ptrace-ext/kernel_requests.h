// Request numbers of the optional kernel patches in kernel-patches/ (DESIGN.md §2). Chosen in a
// range mainline Linux does not use, so an unpatched kernel answers EIO.
#pragma once

namespace amino::ptrace_ext {

inline constexpr int kPtraceSelect = 0x4a00;    // PTRACE_SELECT: choose the calls that stop
inline constexpr int kPtraceCheckEmu = 0x4a01;  // PTRACE_CHECKEMU: entry stop, skip if emulated
inline constexpr int kPtraceSysSkip = 0x4a02;   // PTRACE_SYSSKIP: skip the call, no exit stop

}  // namespace amino::ptrace_ext
