// The seam between the tracer loop and what Amino does with a trapped call. The tracer owns
// processes, stops and signals; a CallHandler decides, at the call's entry, to let the kernel
// run it, to emulate it (skip it and supply the result), or to see its exit too.
#pragma once

#include <errno.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <vector>

#include "monitor/foreign_abi.h"
#include "monitor/process_table.h"
#include "monitor/syscall_regs.h"
#include "ptrace-ext/notify_listener.h"

namespace amino::monitor {

// The result of a foreign call refused by OnForeignCall (the monitor says why on stderr).
constexpr long kRefusedForeign = -ENOSYS;

struct Decision {
  enum class Kind {
    kPass,         // the kernel runs the call (with registers as `call` now holds them)
    kEmulate,      // skip the call; `result` is its return value (-errno on failure)
    kObserveExit,  // the kernel runs it; OnExit sees the result
    kRestart,      // the handler injected calls and re-armed the call: resume as is
    kPark,         // cannot proceed now (a lock is held): keep the thread stopped, ask again
    kReplied,      // a notified call the handler answered itself (with a descriptor)
    kStopFirst,    // a notified call the handler serves only at a ptrace stop: it is restarted
                   // to stop for the tracer (Tracer::StopOnRestart; mmap only), then asked again
  };
  Kind kind = Kind::kPass;
  long result = 0;
  // kPark: whether a signal ends the wait as it ends the kernel's own interruptible waits
  // (locks, pipes, FIFOs: EINTR without SA_RESTART). A wait the kernel would not have (another
  // transaction's lock, a log flush) is invisible: the call runs again after the handler.
  bool interruptible = true;
  // kPark: the wait is for a lock (another transaction's, a file lock). It may end when the
  // handler's Releases() grows, or when a holder in another process lets go: the call is tried
  // again then, and otherwise at pauses that grow while the wait lasts. Other waits (a pipe,
  // a FIFO's peer, a log flush) are tried again every 200 µs.
  bool lock_wait = false;

  static Decision Pass() { return {}; }
  static Decision Emulate(long result) { return {Kind::kEmulate, result}; }
  static Decision ObserveExit() { return {Kind::kObserveExit, 0}; }
  static Decision Restart() { return {Kind::kRestart, 0}; }
  static Decision Park() { return {Kind::kPark, 0}; }
  static Decision ParkInvisibly() { return {Kind::kPark, 0, false}; }
  static Decision ParkForLock(bool interruptible) { return {Kind::kPark, 0, interruptible, true}; }
  static Decision Replied() { return {Kind::kReplied, 0}; }
  static Decision StopFirst() { return {Kind::kStopFirst, 0}; }
};

class CallHandler {
 public:
  virtual ~CallHandler() = default;
  // At the entry of a trapped call; `call` may be changed (argument rewriting) when the
  // decision is kPass or kObserveExit. A notified call (call.notified) allows only kPass,
  // kEmulate, kPark and kReplied, and kObserveExit for a call that neither waits nor restarts
  // (fcntl's copies): the kernel runs it as made, and the thread is interrupted on its way
  // back to user space, where OnExit sees the result. A notified mmap may also be kStopFirst:
  // it comes back as a stopped call.
  virtual Decision OnEntry(Thread& t, SyscallRegs& call) = 0;
  // Whether the handler may need a ptrace stop for call `nr` (to rewrite registers, inject
  // calls or see the exit). The others reach it by notification when the backend offers it.
  virtual bool NeedsStop(long nr) const {
    (void)nr;
    return false;
  }
  // For a call the handler traps: the argument values that are the only reason it does (a
  // pointer given, some commands of several); the call is trapped, by a stop or a notification
  // as NeedsStop says, only when one of the conditions holds. Empty: always trapped.
  struct TrapCondition {
    enum class Op : uint8_t { kNonzero, kEquals, kAbove };
    int arg;
    Op op;
    uint64_t value = 0;  // for kEquals and kAbove (the whole 64-bit register, unsigned)
  };
  virtual std::vector<TrapCondition> TrapOnlyWhen(long nr) const {
    (void)nr;
    return {};
  }
  // A call of another ABI (foreign_abi.h), which no handler serves: 0 lets the kernel run it as
  // made; otherwise it fails with this value (-errno). kRefusedForeign refuses one that names a
  // file or descriptor the handler serves, which the kernel would get wrong.
  virtual long OnForeignCall(Thread& t, const ForeignCall& call) {
    (void)t, (void)call;
    return 0;
  }
  // Whether the handler performs calls itself (instead of only letting them through).
  virtual bool Emulates() const { return false; }
  // A count that grows whenever a lock that calls parked by Decision::ParkForLock may wait for
  // was released within this monitor (an application transaction ended, a file lock went).
  virtual uint64_t Releases() const { return 0; }
  // At the exit of a call for which OnEntry returned kObserveExit; `call` holds the result.
  virtual void OnExit(Thread& t, SyscallRegs& call) { (void)t, (void)call; }
  // After exec replaced a process's image (close-on-exec descriptors are gone).
  virtual void OnExec(Thread& t) { (void)t; }
  // A process ended (`t` is its leader; `wait_status` as waitpid gives it), before
  // OnTaskExit for the leader.
  virtual void OnProcessExit(Thread& t, int wait_status) { (void)t, (void)wait_status; }
  // A task ended (its process ended too when t.tid is the process's id).
  virtual void OnTaskExit(Thread& t) { (void)t; }
  // `t` stopped at an int3 (SIGTRAP from the kernel): true when it was one of the handler's
  // breakpoints, whose registers the handler has set; the signal is then not delivered.
  virtual bool OnBreakpoint(Thread& t) {
    (void)t;
    return false;
  }
  // Signal `sig` is being delivered to `t` (at its signal-delivery stop).
  virtual void OnSignal(Thread& t, int sig) { (void)t, (void)sig; }
  // The traced tree has ended, before `amino run` reports its status (or dies of the same
  // signal): whatever must be settled before anyone outside can see the end.
  virtual void Finish() {}
  // `amino run --stats`: the handler's own figures, after the tracer's.
  virtual void PrintStats(FILE* out) const { (void)out; }
  // A task was created by `parent` (`thread`: in its thread group, with CLONE_THREAD).
  virtual void OnNewTask(Thread& parent, Thread& child, bool thread) {
    (void)parent, (void)child, (void)thread;
  }
  // Extra calls the filter must trap for this handler.
  virtual std::vector<long> ExtraTrapped() const { return {}; }
  // Host directories the traced tree must never write to (those under mount points):
  // covered in its mount namespace where the monitor may (mount_cover.h).
  virtual std::vector<std::string> CoveredPoints() const { return {}; }
  // Where a handler that injects calls reports a tracee that died meanwhile.
  virtual void SetExitSink(std::function<void(pid_t, int)> sink) { exit_sink_ = std::move(sink); }
  // The tracer's table, for handlers that look at other tracees (descriptors passed by path).
  virtual void SetProcessTable(ProcessTable* table) { table_ = table; }
  // The tracer's listener, under the notify backend: to answer a notified call with a
  // descriptor, and for injected calls, which the filter may queue there too.
  virtual void SetListener(ptrace_ext::NotifyListener* listener) { listener_ = listener; }

 protected:
  // Makes sure the thread's address space has its shared region (shared_region.h), created by
  // calls injected at a ptrace stop. True when it exists; otherwise *restart says how the call
  // goes on: made again once the region is there, or failed with ENOMEM (always for a notified
  // call, which cannot have calls injected).
  bool EnsureRegion(Thread& t, SyscallRegs& call, Decision* restart);

  ProcessTable* table_ = nullptr;
  ptrace_ext::NotifyListener* listener_ = nullptr;
  std::function<void(pid_t, int)> exit_sink_ = [](pid_t, int) {};
};

// The fcntl commands a handler with shadow descriptors must see: all but F_GETFD and F_SETFD,
// whose close-on-exec flag lives on the descriptor the tracee holds and is looked at again at
// exec (as TrapOnlyWhen's conditions: commands 0 and 3, and every value above 3).
std::vector<CallHandler::TrapCondition> FcntlTrappedCommands();

// Lets every call through: the monitor is invisible (the AMINOTRACE configuration).
class PassThroughHandler : public CallHandler {
 public:
  Decision OnEntry(Thread&, SyscallRegs&) override { return Decision::Pass(); }
};

}  // namespace amino::monitor
