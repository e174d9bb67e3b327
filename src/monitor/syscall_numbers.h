// Numbers of x86-64 system calls newer than the oldest C library headers Amino builds with
// (Debian 12's glibc 2.36 has no fchmodat2, Linux 6.6), defined once for every file that names
// them.
#pragma once

#include <sys/syscall.h>

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
