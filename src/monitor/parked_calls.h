// Calls that cannot proceed yet (Decision::kPark): the threads wait, and the tracer tries each
// call again when it may succeed.
//
// A call that waits for a lock (Decision::lock_wait) can succeed once the lock is let go.
// Within this monitor that is an event the handler counts (CallHandler::Releases): the call is
// tried again after the count grows. A holder in another process (another `amino run` on the
// same database) lets go unseen, so lock waits are also tried at pauses that double from
// 200 µs to 10 ms while the wait lasts. Trying them after every call served made contended
// transactions livelock: the retries and their signal checks (a read of /proc) took the CPU
// the lock holders needed.
//
// Other waits (a pipe, a FIFO's peer, a log flush) end unseen, often by a step of another
// traced call (a FIFO's writer opens while its reader waits in the monitor): they are tried
// whenever the tracer looks, after every call it serves and at least every 200 µs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "monitor/syscall_regs.h"

namespace amino::monitor {

struct ParkedCall {
  pid_t tid = 0;
  bool notified = false;      // waits on the listener, not in a ptrace stop
  SyscallRegs call;           // the notified call, to hand to the handler again
  bool interruptible = true;  // a signal ends the wait (Decision::interruptible)
  bool lock_wait = false;     // Decision::lock_wait
  // Set by ParkedCalls.
  uint64_t releases = 0;  // the handler's Releases() when parked
  uint64_t due_ns = 0;    // when it is tried again at the latest
  uint64_t pause_ns = 0;  // the pause that ends at due_ns
  bool due = false;       // taken because its time came (not for a release): signals are
                          // looked for then
};

class ParkedCalls {
 public:
  static constexpr uint64_t kPauseNs = 200'000;
  static constexpr uint64_t kMaxLockPauseNs = 10'000'000;

  // `p` waits from `now_ns`; `releases` is the handler's count now. A call taken by TakeReady
  // and parked again before EndRetries goes on with the pauses it had.
  void Park(ParkedCall p, uint64_t now_ns, uint64_t releases);
  // Removes and returns the calls to try now: every wait but a lock wait; lock waits whose time
  // came, or whose count of releases is no longer what it was when they were parked.
  std::vector<ParkedCall> TakeReady(uint64_t now_ns, uint64_t releases);
  // After trying what TakeReady gave: calls parked from now on wait afresh.
  void EndRetries() { carried_.clear(); }
  // Nanoseconds until a call must be tried (0: one is ready), or -1 when none waits.
  int64_t WaitNs(uint64_t now_ns, uint64_t releases) const;
  bool empty() const { return calls_.empty(); }
  size_t size() const { return calls_.size(); }

 private:
  std::vector<ParkedCall> calls_;
  std::unordered_map<pid_t, uint64_t> carried_;  // taken calls' next pause, by thread
};

}  // namespace amino::monitor
