// Breakpoints at the functions a profile watches (int3 written over a function's first byte),
// and stepping over the instruction each one displaced by performing it on the thread's
// registers, so the breakpoint never leaves the code: a thread entering the function while
// another is stopped there still stops. Only instructions functions begin with are performed
// (endbr64, push, mov %rsp,%rbp, sub $n,%rsp, xor of a register with itself); a function
// that begins otherwise cannot be watched (DecodeStep says so).
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <string>

#include "monitor/process_table.h"

namespace amino::monitor::profiles {

struct Breakpoint {
  uint64_t addr = 0;
  uint8_t original = 0;  // the byte int3 replaced
  enum class Step { kNop, kPush, kMovRspRbp, kSubRsp, kXorSelf } step = Step::kNop;
  int length = 0;       // of the displaced instruction
  int reg = 0;          // kPush, kXorSelf: the register (0 rax .. 15 r15, the encoding's order)
  bool wide = false;    // kXorSelf: 64-bit operands
  int64_t imm = 0;      // kSubRsp: the amount
  size_t function = 0;  // the handler's index of the watched function
};

// Decodes the instruction at `code` (`len` bytes): true with the step, length and operands
// set in *bp when it is one of those performed; false with *why otherwise.
bool DecodeStep(const uint8_t* code, size_t len, Breakpoint* bp, std::string* why);

// For a thread stopped just after executing the int3 of `bp` (rip = addr + 1): performs the
// displaced instruction on `regs` (and the stack, for a push) and moves rip past it.
// 0 or errno.
int StepOver(Process& p, const Breakpoint& bp, user_regs_struct& regs);

// Writes int3 at bp.addr, keeping the byte it replaces in bp->original. 0 or errno.
int Plant(Process& p, Breakpoint* bp);

}  // namespace amino::monitor::profiles
