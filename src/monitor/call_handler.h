// The seam between the tracer loop and what Amino does with a trapped call. The tracer owns
// processes, stops and signals; a CallHandler decides, at the call's entry, to let the kernel
// run it, to emulate it (skip it and supply the result), or to see its exit too.
#pragma once

#include "monitor/process_table.h"
#include "monitor/syscall_regs.h"

namespace amino::monitor {

struct Decision {
  enum class Kind { kPass, kEmulate, kObserveExit };
  Kind kind = Kind::kPass;
  long result = 0;  // kEmulate: the call's return value (-errno on failure)

  static Decision Pass() { return {}; }
  static Decision Emulate(long result) { return {Kind::kEmulate, result}; }
  static Decision ObserveExit() { return {Kind::kObserveExit, 0}; }
};

class CallHandler {
 public:
  virtual ~CallHandler() = default;
  // At the entry of a trapped call; `call` may be changed (argument rewriting) when the
  // decision is kPass or kObserveExit.
  virtual Decision OnEntry(Thread& t, SyscallRegs& call) = 0;
  // At the exit of a call for which OnEntry returned kObserveExit; `call` holds the result.
  virtual void OnExit(Thread& t, SyscallRegs& call) { (void)t, (void)call; }
};

// Lets every call through: the monitor is invisible (the AMINOTRACE configuration).
class PassThroughHandler : public CallHandler {
 public:
  Decision OnEntry(Thread&, SyscallRegs&) override { return Decision::Pass(); }
};

}  // namespace amino::monitor
