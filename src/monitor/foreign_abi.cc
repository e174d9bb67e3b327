#include "monitor/foreign_abi.h"

#include <seccomp.h>
#include <sys/syscall.h>

#include <cstdlib>
#include <string_view>

#include "monitor/syscall_numbers.h"
#include "monitor/syscall_table.h"

namespace amino::monitor {
namespace {

// i386 calls with no x86-64 namesake, by the x86-64 call that takes the same descriptors and
// paths in the same places (the structures they fill differ, which does not matter here).
struct Alias {
  std::string_view i386;
  long native;
};
// clang-format off
constexpr Alias kAliases[] = {
    {"oldstat", SYS_stat},          {"stat64", SYS_stat},
    {"oldlstat", SYS_lstat},        {"lstat64", SYS_lstat},
    {"oldfstat", SYS_fstat},        {"fstat64", SYS_fstat},
    {"fstatat64", SYS_newfstatat},  {"fcntl64", SYS_fcntl},
    {"_llseek", SYS_lseek},         {"readdir", SYS_getdents},
    {"truncate64", SYS_truncate},   {"ftruncate64", SYS_ftruncate},
    {"statfs64", SYS_statfs},       {"fstatfs64", SYS_fstatfs},
    {"chown32", SYS_chown},         {"lchown32", SYS_lchown},
    {"fchown32", SYS_fchown},       {"sendfile64", SYS_sendfile},
    {"mmap2", SYS_mmap},            {"fadvise64_64", SYS_fadvise64},
    {"utimensat_time64", SYS_utimensat},
    {"setuid32", SYS_setuid},       {"setgid32", SYS_setgid},
    {"setreuid32", SYS_setreuid},   {"setregid32", SYS_setregid},
    {"setresuid32", SYS_setresuid}, {"setresgid32", SYS_setresgid},
    {"setfsuid32", SYS_setfsuid},   {"setfsgid32", SYS_setfsgid},
    {"setgroups32", SYS_setgroups},
};
// clang-format on

std::string NameOf(uint32_t arch, long nr) {
  char* name = seccomp_syscall_resolve_num_arch(arch, static_cast<int>(nr));
  if (!name) return "syscall_" + std::to_string(nr);
  std::string s(name);
  std::free(name);
  return s;
}

long NativeOf(const std::string& name) {
  for (const Alias& a : kAliases) {
    if (a.i386 == name) return a.native;
  }
  const int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name.c_str());
  return nr < 0 ? -1 : nr;
}

uint64_t SignExtend32(uint64_t v) {
  return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v & 0xffffffff)));
}

}  // namespace

ForeignCall DescribeForeign(const user_regs_struct& regs, const ReadTracee& read) {
  ForeignCall c;
  c.nr = static_cast<long>(regs.orig_rax);
  uint64_t raw[6];
  if (regs.orig_rax & kX32SyscallBit) {
    c.abi = ForeignAbi::kX32;
    c.name = NameOf(SCMP_ARCH_X32, c.nr);
    if (c.name.starts_with("syscall_")) c.name = NameOf(SCMP_ARCH_X32, c.nr & ~kX32SyscallBit);
    const uint64_t r[6] = {regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9};
    for (int i = 0; i < 6; ++i) raw[i] = r[i];
  } else {
    c.abi = ForeignAbi::kI386;
    c.name = NameOf(SCMP_ARCH_X86, c.nr);
    const uint64_t r[6] = {regs.rbx, regs.rcx, regs.rdx, regs.rsi, regs.rdi, regs.rbp};
    for (int i = 0; i < 6; ++i) raw[i] = r[i] & 0xffffffff;
    if (c.name == "mmap") {
      // The old i386 mmap takes one pointer to its six 32-bit arguments.
      uint32_t in_memory[6] = {};
      if (read(raw[0], in_memory, sizeof in_memory)) {
        for (int i = 0; i < 6; ++i) raw[i] = in_memory[i];
      } else {
        for (uint64_t& v : raw) v = 0;
        raw[4] = static_cast<uint64_t>(-1);  // unreadable: the kernel fails it with EFAULT
      }
    } else if (c.name == "fanotify_mark") {
      // Its 64-bit mask takes two registers: the directory and path come one later.
      raw[3] = raw[4];
      raw[4] = raw[5];
    }
  }
  c.native_nr = NativeOf(c.name);
  const SyscallInfo* info = c.native_nr < 0 ? nullptr : FindSyscall(c.native_nr);
  for (int i = 0; i < 6; ++i) {
    const bool descriptor = info && (info->args[i] == Arg::kFd || info->args[i] == Arg::kDirFd);
    c.args[i] = descriptor ? SignExtend32(raw[i]) : raw[i];
  }
  return c;
}

const char* ForeignAbiName(ForeignAbi abi) {
  return abi == ForeignAbi::kX32 ? "x32" : "32-bit (int 0x80)";
}

}  // namespace amino::monitor
