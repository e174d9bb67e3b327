// The monitor's end of a seccomp user-notification listener: receives the calls the filter
// queued and answers each one exactly once — let the kernel run it, give its result, or install
// a descriptor in the caller and return its number.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstdint>
#include <deque>

namespace amino::ptrace_ext {

struct Notification {
  uint64_t id = 0;
  pid_t tid = 0;
  seccomp_data data{};
};

class NotifyListener {
 public:
  NotifyListener() = default;
  explicit NotifyListener(int fd) : fd_(fd) {}
  ~NotifyListener();
  NotifyListener(const NotifyListener&) = delete;
  NotifyListener& operator=(const NotifyListener&) = delete;

  // Takes ownership of listener descriptor `fd`, closing the previous one.
  void Reset(int fd);
  int fd() const { return fd_; }
  // A descriptor that is readable while some traced task has a stop to report (the tracer's
  // SIGCHLD signalfd), for code that waits on a task and the listener at once.
  void set_stop_fd(int fd) { stop_fd_ = fd; }
  int stop_fd() const { return stop_fd_; }
  bool valid() const { return fd_ >= 0; }
  // Asks the kernel to wake the caller on the monitor's CPU and the monitor on the caller's
  // (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6): a notified call then costs no cross-CPU
  // wake-up. False where the kernel lacks it.
  bool SetSyncWakeUp();
  // Whether ReplyWithFd keeps the caller of the call received last and the monitor on one CPU
  // while it installs the descriptor (cpu_colocation.h). Only where no other task could see
  // the caller's CPUs narrowed meanwhile.
  void set_colocate(bool on) { colocate_ = on; }

  // Takes the next queued call; false if none could be taken (the caller died meanwhile: ENOENT
  // or EINTR) — poll again.
  bool Receive(Notification* n);
  // A call taken while the monitor waited for something else, kept for the main loop.
  void Defer(const Notification& n) { deferred_.push_back(n); }
  bool deferred() const { return !deferred_.empty(); }
  // A deferred call if there is one, else Receive.
  bool Next(Notification* n);
  // The kernel runs the call as the caller made it.
  bool Continue(uint64_t id);
  // The call returns `result` (-errno on failure) without running.
  bool Reply(uint64_t id, long result);
  // Installs a duplicate of the monitor's `fd` in the caller (at number `at` when it is >= 0,
  // replacing what is there, as dup2 does) and makes the call return its number. Returns the
  // number, or -errno (-ENOENT: the caller is gone).
  long ReplyWithFd(uint64_t id, int fd, bool cloexec, int at = -1);
  // Whether the call is still waiting for its answer (its thread was not killed).
  bool Pending(uint64_t id);

 private:
  int fd_ = -1;
  int stop_fd_ = -1;
  bool addfd_send_ = true;  // SECCOMP_ADDFD_FLAG_SEND works (Linux 5.14)
  bool colocate_ = false;
  uint64_t received_id_ = 0;  // the call Receive took last, and its thread
  pid_t received_tid_ = 0;
  std::deque<Notification> deferred_;
};

// The listener the filter created in `pid` (found among its descriptors as the anonymous inode
// "seccomp notify"), duplicated into the monitor. -errno on failure.
int TakeListener(pid_t pid);

}  // namespace amino::ptrace_ext
