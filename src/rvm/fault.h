// librvm's SIGSEGV handler and the application's handler behind it. Faults that are first writes
// inside the faulting thread's transaction are librvm's; every other SIGSEGV goes to the
// application's handler as if librvm were not there.
#pragma once

#include <signal.h>

namespace amino::rvm {

// Installs the handler once (the application's current one becomes the one chained to). Returns
// 0 or an errno value.
int InstallFaultHandler();
bool FaultHandlerInstalled();

// What sigaction(SIGSEGV, act, old) does once the handler is installed: records the
// application's handler without displacing librvm's.
int SetApplicationAction(const struct sigaction* act, struct sigaction* old);

// Defined beside the interposed sigaction(): calling it makes a static link take that object too.
void LinkInterposition();

// The C library's sigaction, underneath any interposition.
int RealSigaction(int sig, const struct sigaction* act, struct sigaction* old);

}  // namespace amino::rvm
