#include "monitor/call_handler.h"

#include <fcntl.h>

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

std::vector<CallHandler::TrapCondition> FcntlTrappedCommands() {
  static_assert(F_DUPFD == 0 && F_GETFD == 1 && F_SETFD == 2 && F_GETFL == 3);
  using Op = CallHandler::TrapCondition::Op;
  // A command with bits above the int's 32 is trapped too: the kernel reads only those 32, and
  // the handler casts as the kernel does.
  return {{1, Op::kEquals, F_DUPFD}, {1, Op::kEquals, F_GETFL}, {1, Op::kAbove, F_GETFL}};
}

}  // namespace amino::monitor
