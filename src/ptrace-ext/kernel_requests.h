// Request numbers of the optional kernel patches in kernel-patches/ (DESIGN.md §2). Chosen in a
// range mainline Linux does not use, so an unpatched kernel answers EIO.
#pragma once

namespace amino::ptrace_ext {

// PTRACE_SELECT (addr = number of bits, data = bitmap of unsigned longs): only the calls whose
// bit is set stop; numbers at or above addr, and calls of other ABIs, always stop; addr 0 makes
// every call stop again. Inherited by children the tracer follows from a fork or clone.
inline constexpr int kPtraceSelect = 0x4a00;
// PTRACE_CHECKEMU, at a syscall-entry stop: skip the call (the tracer emulated it; rax is its
// result) and resume without an exit stop. EINVAL at any other stop.
inline constexpr int kPtraceCheckEmu = 0x4a01;
// PTRACE_SYSSKIP, at a syscall-entry stop: run the call and resume without its exit stop; the
// next selected call stops at entry. EINVAL at any other stop.
inline constexpr int kPtraceSysSkip = 0x4a02;
// The bitmap's size for PTRACE_SELECT: every x86-64 number the monitor can name.
inline constexpr unsigned kSelectBits = 1024;

}  // namespace amino::ptrace_ext
