// Whether a signal waits to be delivered to a thread: a call the monitor holds (parked on a
// lock) must then give way to it, as the kernel's interruptible waits do.
#pragma once

#include <sys/types.h>

namespace amino::monitor {

// The kernel's ERESTARTSYS: a call that returns it while a signal is pending is restarted after
// the signal (or fails with EINTR when the handler lacks SA_RESTART). Never seen by programs.
constexpr long kERestartSys = 512;
// The kernel's ERESTARTNOINTR: the call is restarted after the signal whatever its handler's
// flags, as if the signal had come just before the call.
constexpr long kERestartNoIntr = 513;

// True when /proc/TID/status shows a pending (thread or process) signal the thread does not
// block and does not ignore: ignored by SIG_IGN, or by default (SIGCHLD, SIGURG, SIGWINCH,
// SIGCONT) while no handler catches it. A traced thread's ignored signals are queued for the
// tracer, but natively they never end a wait. False if the thread is gone.
bool SignalPending(pid_t tid);

}  // namespace amino::monitor
