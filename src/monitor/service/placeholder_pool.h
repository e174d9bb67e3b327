// Placeholders (the memfds a served descriptor is in the tracee, mount_open.cc) made ahead of
// the opens that need them, by a thread of their own. Making one costs a memfd_create and, for
// an open that is not O_RDWR, a reopen through /proc with the open's access mode (so that
// /proc/PID/fdinfo shows it): about 7 µs of the monitor's time in every such open, which the
// thread moves off the served call onto a CPU nothing else wants (the thread runs SCHED_IDLE;
// a monitor that may use one CPU only has no thread and makes each on the spot).
#pragma once

#include <sys/types.h>

#include <array>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace amino::monitor::service {

class PlaceholderPool {
 public:
  PlaceholderPool() : use_thread_(Worthwhile()) {}
  ~PlaceholderPool();  // stops the thread; closes what was not taken
  PlaceholderPool(const PlaceholderPool&) = delete;
  PlaceholderPool& operator=(const PlaceholderPool&) = delete;

  struct Placeholder {
    int fd = -1;  // -errno when it could not be made
    ino_t ino = 0;
  };
  // A placeholder whose open flags show `shown` (access mode and status flags); -1: the plain
  // memfd (O_RDWR). Close-on-exec in the monitor; the caller owns the descriptor.
  Placeholder Take(int shown);

  // Whether this process may run on more than one CPU: only then is there a thread.
  static bool Worthwhile();
  // The ones taken ready, and those made on the spot (stats, tests).
  uint64_t taken_ready() const { return taken_ready_; }
  uint64_t made_on_the_spot() const { return on_the_spot_; }

 private:
  enum Kind { kPlain, kReadOnly, kWriteOnly, kKinds };
  static Placeholder Make(int shown);  // -1: plain
  static int ShownOf(Kind k);
  void Fill(std::stop_token stop);
  void StartOnce();

  std::mutex mu_;
  std::condition_variable_any wake_;
  std::array<std::deque<Placeholder>, kKinds> ready_fds_;
  const bool use_thread_;
  std::jthread filler_;
  uint64_t taken_ready_ = 0;
  uint64_t on_the_spot_ = 0;
};

}  // namespace amino::monitor::service
