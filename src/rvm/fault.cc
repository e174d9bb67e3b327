#include "rvm/fault.h"

#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>

#include "rvm/region.h"
#include "rvm/txn.h"

// glibc's implementation of sigaction, exported under this name as well: calling it reaches the
// kernel even though librvm defines sigaction itself (interpose.cc).
extern "C" int __sigaction(int sig, const struct sigaction* act, struct sigaction* old);

namespace amino::rvm {
namespace {

std::once_flag g_install_once;
int g_install_error = 0;
std::atomic<bool> g_installed{false};
// The application's SIGSEGV action. Replaced, never modified or freed, so that the handler can
// read it at any moment while another thread calls sigaction.
std::atomic<const struct sigaction*> g_app{nullptr};
std::mutex g_app_mu;

void Say(const char* message) {
  ssize_t unused = write(STDERR_FILENO, message, strlen(message));
  (void)unused;
}

struct sigaction DefaultAction() {
  struct sigaction a;
  std::memset(&a, 0, sizeof a);
  a.sa_handler = SIG_DFL;
  return a;
}
const struct sigaction kDefaultAction = DefaultAction();

// Hands a fault that is not librvm's to the application, or to the kernel's default action.
void Chain(int sig, siginfo_t* info, void* context) {
  const struct sigaction* app = g_app.load(std::memory_order_acquire);
  bool has_handler = app && (app->sa_flags & SA_SIGINFO
                                 ? app->sa_sigaction != nullptr
                                 : app->sa_handler != SIG_DFL && app->sa_handler != SIG_IGN);
  if (!has_handler) {
    if (app && app->sa_handler == SIG_IGN && info->si_code <= 0) return;  // sent, and ignored
    // Die as if no handler had been installed: with the default action back, the faulting
    // instruction runs again and the kernel ends the process with SIGSEGV.
    RealSigaction(sig, &kDefaultAction, nullptr);
    if (info->si_code <= 0) raise(sig);  // sent by kill(): nothing will run again
    return;
  }
  // Run the handler with the mask the kernel would have given it: the interrupted code's, plus
  // its sa_mask, plus the signal itself unless SA_NODEFER.
  sigset_t mask = static_cast<ucontext_t*>(context)->uc_sigmask;
  for (int s = 1; s < NSIG; ++s) {
    if (sigismember(&app->sa_mask, s) == 1) sigaddset(&mask, s);
  }
  if (!(app->sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
  sigset_t saved;
  pthread_sigmask(SIG_SETMASK, &mask, &saved);
  if (app->sa_flags & SA_RESETHAND) g_app.store(&kDefaultAction, std::memory_order_release);
  if (app->sa_flags & SA_SIGINFO) {
    app->sa_sigaction(sig, info, context);
  } else {
    app->sa_handler(sig);
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
}

void Handler(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  const char* reason = nullptr;
  // Only a protection fault raised by the kernel (not a signal sent with kill) on a page of a
  // region can be a first write.
  if (info->si_code == SEGV_ACCERR) {
    uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
    if (rvm_region* region = FindRegion(addr)) {
      ThreadTxn* txn = ThreadTxn::Current();
      int err = txn ? txn->OnWriteFault(region, addr, true) : EPERM;
      if (err == 0) {
        errno = saved_errno;
        return;
      }
      reason = err == EPERM   ? "rvm: write to a recoverable region outside a transaction\n"
               : err == EBUSY ? "rvm: write to a recoverable region that belongs to another "
                                "thread's transaction\n"
                              : "rvm: cannot save a before-image: out of memory or of kernel "
                                "mappings (vm.max_map_count)\n";
    }
  }
  // A refused write to a region is a mistake of the program's, worth a line even when its own
  // handler takes the fault.
  if (reason) Say(reason);
  Chain(sig, info, context);
  errno = saved_errno;
}

}  // namespace

int RealSigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  return __sigaction(sig, act, old);
}

int InstallFaultHandler() {
  std::call_once(g_install_once, [] {
    LinkInterposition();
    struct sigaction ours, previous;
    std::memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = Handler;
    // SA_ONSTACK: on the application's alternate stack if it has one, so that a stack overflow
    // still reaches the application's handler.
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    // Every signal waits while the handler updates the thread's undo log: a handler of the
    // application's that wrote a region in the middle of it would find the log half changed.
    sigfillset(&ours.sa_mask);
    std::lock_guard<std::mutex> lock(g_app_mu);
    if (RealSigaction(SIGSEGV, &ours, &previous) != 0) {
      g_install_error = errno;
      return;
    }
    g_app.store(new struct sigaction(previous), std::memory_order_release);
    g_installed.store(true, std::memory_order_release);
  });
  return g_install_error;
}

bool FaultHandlerInstalled() { return g_installed.load(std::memory_order_acquire); }

int SetApplicationAction(const struct sigaction* act, struct sigaction* old) {
  std::lock_guard<std::mutex> lock(g_app_mu);
  if (old) *old = *g_app.load(std::memory_order_acquire);
  if (act) {
    auto* copy = new (std::nothrow) struct sigaction(*act);
    if (!copy) {
      errno = ENOMEM;
      return -1;
    }
    // The previous copy is not freed: a handler running on another thread may still read it.
    g_app.store(copy, std::memory_order_release);
  }
  return 0;
}

}  // namespace amino::rvm
