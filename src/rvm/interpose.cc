// sigaction() and signal() for SIGSEGV, once librvm's handler is installed: the application's
// handler is recorded as the one librvm chains to instead of replacing librvm's. Every other call
// goes straight to the C library. A program linked with librvm (shared or static) resolves these
// names here before the C library's.
#include <signal.h>

#include <cstring>

#include "amino/rvm.h"
#include "rvm/fault.h"

extern "C" {

// glibc's signal(), under the name it also exports.
sighandler_t bsd_signal(int sig, sighandler_t handler) noexcept;

RVM_API int sigaction(int sig, const struct sigaction* act, struct sigaction* old) noexcept {
  if (sig != SIGSEGV || !amino::rvm::FaultHandlerInstalled()) {
    return amino::rvm::RealSigaction(sig, act, old);
  }
  return amino::rvm::SetApplicationAction(act, old);
}

RVM_API sighandler_t signal(int sig, sighandler_t handler) noexcept {
  if (sig != SIGSEGV || !amino::rvm::FaultHandlerInstalled()) return bsd_signal(sig, handler);
  // glibc's signal() semantics: BSD, the signal blocked in its handler, system calls restarted.
  struct sigaction act, old;
  std::memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  act.sa_flags = SA_RESTART;
  if (amino::rvm::SetApplicationAction(&act, &old) != 0) return SIG_ERR;
  return old.sa_handler;  // shares its storage with sa_sigaction, as signal() reports it
}

}  // extern "C"

void amino::rvm::LinkInterposition() {}
