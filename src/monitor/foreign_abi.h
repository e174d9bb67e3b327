// System calls of another ABI made by a traced program: `int $0x80` (i386 numbers and
// registers, from 64-bit code or a 32-bit program) and the x32 bit. The monitor serves only
// x86-64 calls; a foreign call is described here by the x86-64 call of the same meaning, so that
// a handler can tell whether it names an Amino file or descriptor (and refuse it) or may run as
// made.
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <functional>
#include <string>

namespace amino::monitor {

enum class ForeignAbi { kI386, kX32 };

struct ForeignCall {
  ForeignAbi abi = ForeignAbi::kI386;
  long nr = -1;      // the number as made (with the x32 bit for x32)
  std::string name;  // its name in that ABI ("open", "stat64"), "syscall_N" when unknown
  // The x86-64 call whose descriptor and path arguments are these (stat64: stat), -1 if none.
  long native_nr = -1;
  // The arguments where the x86-64 call takes them: descriptors sign-extended from 32 bits,
  // pointers zero-extended.
  uint64_t args[6] = {};
};

// Reads `size` bytes of the tracee at `addr`; false when they cannot be read.
using ReadTracee = std::function<bool(uint64_t addr, void* out, size_t size)>;

// The call the registers of a foreign-ABI stop describe: x32 when the x32 bit is set, otherwise
// int $0x80. Arguments the old i386 mmap passes in memory are read with `read`.
ForeignCall DescribeForeign(const user_regs_struct& regs, const ReadTracee& read);

// "32-bit (int 0x80)" or "x32", for messages.
const char* ForeignAbiName(ForeignAbi abi);

}  // namespace amino::monitor
