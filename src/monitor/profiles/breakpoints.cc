#include "monitor/profiles/breakpoints.h"

#include <cerrno>
#include <cstdio>

#include "monitor/tracee_memory.h"

namespace amino::monitor::profiles {
namespace {

unsigned long long& Reg(user_regs_struct& r, int n) {
  switch (n) {
    case 0:
      return r.rax;
    case 1:
      return r.rcx;
    case 2:
      return r.rdx;
    case 3:
      return r.rbx;
    case 4:
      return r.rsp;
    case 5:
      return r.rbp;
    case 6:
      return r.rsi;
    case 7:
      return r.rdi;
    case 8:
      return r.r8;
    case 9:
      return r.r9;
    case 10:
      return r.r10;
    case 11:
      return r.r11;
    case 12:
      return r.r12;
    case 13:
      return r.r13;
    case 14:
      return r.r14;
    default:
      return r.r15;
  }
}

constexpr unsigned long long kCF = 1, kPF = 1 << 2, kAF = 1 << 4, kZF = 1 << 6, kSF = 1 << 7,
                             kOF = 1 << 11;

bool EvenParity(uint64_t v) { return __builtin_parity(static_cast<unsigned>(v & 0xff)) == 0; }

}  // namespace

bool DecodeStep(const uint8_t* c, size_t len, Breakpoint* bp, std::string* why) {
  auto at = [&](size_t i) -> int { return i < len ? c[i] : -1; };
  if (at(0) == 0xf3 && at(1) == 0x0f && at(2) == 0x1e && at(3) == 0xfa) {  // endbr64
    bp->step = Breakpoint::Step::kNop;
    bp->length = 4;
    return true;
  }
  if (at(0) >= 0x50 && at(0) <= 0x57) {  // push r64
    bp->step = Breakpoint::Step::kPush;
    bp->reg = at(0) - 0x50;
    bp->length = 1;
    return true;
  }
  if (at(0) == 0x41 && at(1) >= 0x50 && at(1) <= 0x57) {  // push r8..r15
    bp->step = Breakpoint::Step::kPush;
    bp->reg = 8 + at(1) - 0x50;
    bp->length = 2;
    return true;
  }
  if (at(0) == 0x48 && ((at(1) == 0x89 && at(2) == 0xe5) || (at(1) == 0x8b && at(2) == 0xec))) {
    bp->step = Breakpoint::Step::kMovRspRbp;
    bp->length = 3;
    return true;
  }
  if (at(0) == 0x48 && at(1) == 0x83 && at(2) == 0xec && at(3) >= 0) {  // sub $imm8,%rsp
    bp->step = Breakpoint::Step::kSubRsp;
    bp->imm = static_cast<int8_t>(at(3));
    bp->length = 4;
    return true;
  }
  if (at(0) == 0x48 && at(1) == 0x81 && at(2) == 0xec && len >= 7) {  // sub $imm32,%rsp
    int32_t imm;
    __builtin_memcpy(&imm, c + 3, 4);
    bp->step = Breakpoint::Step::kSubRsp;
    bp->imm = imm;
    bp->length = 7;
    return true;
  }
  // xor %r32,%r32 / xor %r64,%r64 of one register (31 or 33, modrm 11 r r), REX optional.
  size_t i = 0;
  int rex = 0;
  if (at(0) >= 0x40 && at(0) <= 0x4f) rex = at(i++);
  if ((at(i) == 0x31 || at(i) == 0x33) && at(i + 1) >= 0xc0) {
    const int modrm = at(i + 1);
    const int reg = ((modrm >> 3) & 7) | ((rex & 4) ? 8 : 0);
    const int rm = (modrm & 7) | ((rex & 1) ? 8 : 0);
    if (reg == rm && !(rex & 2)) {
      bp->step = Breakpoint::Step::kXorSelf;
      bp->reg = reg;
      bp->wide = rex & 8;
      bp->length = static_cast<int>(i) + 2;
      return true;
    }
  }
  char bytes[64];
  std::snprintf(bytes, sizeof bytes, "%02x %02x %02x %02x", at(0) & 0xff, at(1) & 0xff,
                at(2) & 0xff, at(3) & 0xff);
  *why = std::string("its first instruction (") + bytes +
         " ...) is not one the monitor steps over (endbr64, push, mov %rsp,%rbp, sub $n,%rsp, "
         "xor of a register with itself)";
  return false;
}

int StepOver(Process& p, const Breakpoint& bp, user_regs_struct& regs) {
  switch (bp.step) {
    case Breakpoint::Step::kNop:
      break;
    case Breakpoint::Step::kPush: {
      const uint64_t value = Reg(regs, bp.reg);  // push %rsp pushes the value before
      const uint64_t sp = regs.rsp - 8;
      if (int err = WriteMemory(p, sp, &value, sizeof value); err != 0) return err;
      regs.rsp = sp;
      break;
    }
    case Breakpoint::Step::kMovRspRbp:
      regs.rbp = regs.rsp;
      break;
    case Breakpoint::Step::kSubRsp: {
      const uint64_t a = regs.rsp, b = static_cast<uint64_t>(bp.imm), r = a - b;
      unsigned long long f = regs.eflags & ~(kCF | kPF | kAF | kZF | kSF | kOF);
      if (a < b) f |= kCF;
      if (EvenParity(r)) f |= kPF;
      if ((a ^ b ^ r) & 0x10) f |= kAF;
      if (r == 0) f |= kZF;
      if (r >> 63) f |= kSF;
      if (((a ^ b) & (a ^ r)) >> 63) f |= kOF;
      regs.rsp = r;
      regs.eflags = f;
      break;
    }
    case Breakpoint::Step::kXorSelf:
      // A 32-bit result clears the upper half too; flags as for a zero result (AF undefined,
      // left clear).
      Reg(regs, bp.reg) = 0;
      regs.eflags = (regs.eflags & ~(kCF | kPF | kAF | kZF | kSF | kOF)) | kZF | kPF;
      break;
  }
  regs.rip = bp.addr + static_cast<uint64_t>(bp.length);
  return 0;
}

int Plant(Process& p, Breakpoint* bp) {
  uint8_t original;
  if (ReadMemory(p, bp->addr, &original, 1) != 0) return EFAULT;
  const uint8_t int3 = 0xcc;
  if (int err = WriteMemory(p, bp->addr, &int3, 1); err != 0) return err;
  bp->original = original;
  return 0;
}

}  // namespace amino::monitor::profiles
