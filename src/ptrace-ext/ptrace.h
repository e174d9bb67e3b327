// One way to call ptrace: the raw system call with int requests, so the requests of newer
// kernels and of Amino's kernel patches need no casts. (PEEK* requests are not used: with the
// raw call they store the word through `data`.)
#pragma once

#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>

namespace amino::ptrace_ext {

inline long Ptrace(int request, pid_t tid, uintptr_t addr = 0, uintptr_t data = 0) {
  return syscall(SYS_ptrace, request, tid, addr, data);
}
inline long Ptrace(int request, pid_t tid, uintptr_t addr, const void* data) {
  return syscall(SYS_ptrace, request, tid, addr, data);
}

}  // namespace amino::ptrace_ext
