#include "monitor/call_handler.h"

#include <cerrno>

#include "monitor/remote_syscall.h"
#include "monitor/shared_region.h"

namespace amino::monitor {

bool CallHandler::EnsureRegion(Thread& t, SyscallRegs& call, Decision* restart) {
  if (t.proc->region) return true;
  if (call.notified) {
    *restart = Decision::Emulate(-ENOMEM);
    return false;
  }
  RemoteSyscalls rs(t, call, false, exit_sink_, listener_);
  int err = 0;
  t.proc->region = SharedRegion::Create(t, rs, &err);
  if (!t.proc->region) {
    // Without a region the call cannot be served: it fails as the kernel would fail for lack
    // of memory.
    rs.ReturnFromCall(-ENOMEM);
    *restart = Decision::Restart();
    return false;
  }
  rs.Finish();
  *restart = Decision::Restart();
  return false;
}

}  // namespace amino::monitor
