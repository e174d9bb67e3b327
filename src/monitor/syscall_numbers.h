// Numbers of x86-64 system calls newer than the oldest C library headers Amino builds with
// (Debian 12's glibc 2.36 has no fchmodat2, Linux 6.6), defined once for every file that names
// them.
#pragma once

#include <sys/syscall.h>

#include <cstdint>

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

// The first x86-64 call number the monitor does not know. From setxattrat (Linux 6.13) on, the
// new calls take paths (the *xattrat family, open_tree_attr, file_getattr, file_setattr) and
// the monitor serves none: in a traced tree every call from here up fails with ENOSYS, as on a
// kernel that predates it, and programs fall back to the calls the monitor serves. So does any
// call added to the kernel later, which could name a file in a mount unseen.
constexpr long kFirstUnknownSyscall = 463;

// The bit that marks a call of the x32 ABI in the x86-64 call number.
constexpr uint64_t kX32SyscallBit = 0x40000000;
