#include "monitor/service/placeholder_pool.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

namespace amino::monitor::service {

namespace {
// Kept ready of each kind: an open burst (tar x, a compiler's headers) takes them faster than
// one thread makes them, and the rest come on the spot.
constexpr size_t kTarget = 16;
// Status flags fcntl(F_SETFL) can give a taken placeholder; O_DSYNC and O_SYNC cannot be set so.
constexpr int kSettable = O_APPEND | O_NONBLOCK | O_NOATIME;
}  // namespace

PlaceholderPool::~PlaceholderPool() {
  if (filler_.joinable()) {
    filler_.request_stop();
    filler_.join();
  }
  for (auto& q : ready_fds_) {
    for (const Placeholder& p : q) close(p.fd);
  }
}

int PlaceholderPool::ShownOf(Kind k) {
  switch (k) {
    case kReadOnly:
      return O_RDONLY;
    case kWriteOnly:
      return O_WRONLY;
    default:
      return -1;
  }
}

PlaceholderPool::Placeholder PlaceholderPool::Make(int shown) {
  int fd = memfd_create("amino", MFD_CLOEXEC);
  if (fd < 0) return {-errno, 0};
  if (shown >= 0) {
    // Reopened relative to the monitor's /proc/self/fd, held open: a third less than walking
    // "/proc/self/fd/N" from the root each time.
    static const int fd_dir = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
    const std::string name = std::to_string(fd);
    const int reopened = fd_dir >= 0 ? openat(fd_dir, name.c_str(), shown | O_CLOEXEC)
                                     : open(("/proc/self/fd/" + name).c_str(), shown | O_CLOEXEC);
    if (reopened >= 0) {
      close(fd);
      fd = reopened;
    }
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return {-err, 0};
  }
  return {fd, st.st_ino};
}

bool PlaceholderPool::Worthwhile() {
  // On one CPU the thread's work only adds its switches to the call's.
  cpu_set_t cpus;
  return sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
}

void PlaceholderPool::StartOnce() {
  if (filler_.joinable() || !use_thread_) return;
  // The thread takes no signal: the monitor's are read from a signalfd by its main thread.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  filler_ = std::jthread([this](std::stop_token stop) { Fill(stop); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void PlaceholderPool::Fill(std::stop_token stop) {
  // Only a CPU nothing else wants: never ahead of the monitor or the programs it serves.
  sched_param idle{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    int low = -1;
    for (int k = 0; k < kKinds; ++k) {
      const size_t n = ready_fds_[k].size();
      if (n < kTarget && (low < 0 || n < ready_fds_[low].size())) low = k;
    }
    if (low < 0) {
      wake_.wait(lock, stop, [&] {
        for (const auto& q : ready_fds_) {
          if (q.size() < kTarget) return true;
        }
        return false;
      });
      continue;
    }
    lock.unlock();
    Placeholder p = Make(ShownOf(static_cast<Kind>(low)));
    lock.lock();
    if (p.fd < 0) {
      // Out of descriptors or memory: the opens make their own (and report the error).
      wake_.wait_for(lock, stop, std::chrono::milliseconds(100), [] { return false; });
      continue;
    }
    ready_fds_[low].push_back(p);
  }
}

PlaceholderPool::Placeholder PlaceholderPool::Take(int shown) {
  Kind kind = kPlain;
  int extra = 0;
  if (shown >= 0) {
    const int acc = shown & O_ACCMODE;
    extra = shown & ~O_ACCMODE;
    if (extra & ~kSettable) {
      ++on_the_spot_;
      return Make(shown);
    }
    kind = acc == O_RDONLY ? kReadOnly : acc == O_WRONLY ? kWriteOnly : kPlain;
  }
  Placeholder p;
  bool low = false;
  {
    std::lock_guard lock(mu_);
    StartOnce();
    auto& q = ready_fds_[kind];
    if (!q.empty()) {
      p = q.front();
      q.pop_front();
    }
    low = use_thread_ && q.size() < kTarget / 2;
  }
  if (low) wake_.notify_one();
  if (p.fd >= 0) {
    ++taken_ready_;
  } else {
    ++on_the_spot_;
    p = Make(ShownOf(kind));
    if (p.fd < 0) return p;
  }
  if (extra && fcntl(p.fd, F_SETFL, extra) != 0) {
    const int err = errno;
    close(p.fd);
    return {-err, 0};
  }
  return p;
}

}  // namespace amino::monitor::service
