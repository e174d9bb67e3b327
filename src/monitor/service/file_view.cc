#include "monitor/service/file_view.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>

#include <algorithm>
#include <mutex>

namespace amino::monitor::service {

namespace {

// Where a guarded read of this thread goes back to when it faults; null outside one.
thread_local sigjmp_buf* t_guard = nullptr;
struct sigaction g_previous;

void OnSigbus(int sig, siginfo_t* info, void* context) {
  if (sigjmp_buf* guard = t_guard) {
    t_guard = nullptr;
    siglongjmp(*guard, 1);  // SA_NODEFER: SIGBUS stays unblocked, no mask to restore
  }
  // Not a guarded read: what would have happened without this handler (the region files'
  // guard of the schema, or the default action when the access faults again).
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    signal(SIGBUS, SIG_DFL);
  }
}

void InstallOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
  });
}

constexpr size_t kGrain = 1 << 20;  // views are mapped in whole MiB, and at least doubled

}  // namespace

FileView::~FileView() {
  if (base_) munmap(const_cast<char*>(base_), len_);
}

FileView& FileView::operator=(FileView&& other) noexcept {
  if (this != &other) {
    if (base_) munmap(const_cast<char*>(base_), len_);
    base_ = std::exchange(other.base_, nullptr);
    len_ = std::exchange(other.len_, 0);
  }
  return *this;
}

bool FileView::Cover(int fd, uint64_t size) {
  if (base_ && size <= len_) return true;
  const uint64_t want = std::max<uint64_t>({size, 2 * len_, kGrain});
  const size_t len = static_cast<size_t>((want + kGrain - 1) / kGrain * kGrain);
  if (base_) munmap(const_cast<char*>(base_), len_);
  base_ = nullptr, len_ = 0;
  // Mapped past the end of the file: pages there are never read (they would fault).
  void* p = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return false;
  base_ = static_cast<const char*>(p), len_ = len;
  return true;
}

bool FileView::RunGuarded(void (*fn)(void*), void* arg) {
  InstallOnce();
  sigjmp_buf guard;
  if (sigsetjmp(guard, 0) != 0) return false;  // a read faulted (t_guard is cleared)
  t_guard = &guard;
  fn(arg);
  t_guard = nullptr;
  return true;
}

}  // namespace amino::monitor::service
