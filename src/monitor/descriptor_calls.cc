#include "monitor/descriptor_calls.h"

#include <fcntl.h>
#include <sys/syscall.h>

#include "monitor/shadow_fds.h"

namespace amino::monitor {

Decision DescriptorCalls::Observe(Thread& t, const SyscallRegs& call, Pending::Kind kind,
                                  std::shared_ptr<OpenFile> file, int old_fd) {
  Pending& p = pending_[t.tid];
  p.kind = kind;
  p.original = call;
  p.file = std::move(file);
  p.old_fd = old_fd;
  return Decision::ObserveExit();
}

std::optional<Decision> DescriptorCalls::OnEntry(Thread& t, const SyscallRegs& call,
                                                 ptrace_ext::NotifyListener* listener) {
  const long nr = call.nr();
  auto& files = t.proc->fds->files;
  const int a0 = static_cast<int>(call.arg(0));
  auto tracked = [&](int fd) -> std::shared_ptr<OpenFile> {
    auto it = files.find(fd);
    return it == files.end() ? nullptr : it->second;
  };
  switch (nr) {
    case SYS_close:
      if (auto f = tracked(a0)) {
        closing_(t, *f);
        files.erase(a0);  // close releases the number even when it fails
      }
      return Decision::Pass();
    case SYS_close_range:
      if (files.empty()) return Decision::Pass();
      return Observe(t, call, Pending::Kind::kCloseRange);
    case SYS_fcntl: {
      const int cmd = static_cast<int>(call.arg(1));
      if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) return std::nullopt;
      std::shared_ptr<OpenFile> f = tracked(a0);
      if (!f) return Decision::Pass();
      // A notified copy is made here when its number cannot change hands meanwhile: the
      // lowest free one (ADDFD's own choice), or any when the caller alone uses its table.
      // Otherwise the kernel makes it, and its number is read on the way back (ObserveExit).
      const bool lowest = static_cast<unsigned>(call.arg(2)) == 0;
      if (call.notified && listener && (lowest || !t.SharesFdTable())) {
        return DupAtNotification(t, call, *listener, [&](OpenFile& file) { closing_(t, file); });
      }
      return Observe(t, call, Pending::Kind::kDup, std::move(f), a0);
    }
    case SYS_dup:
    case SYS_dup2:
    case SYS_dup3: {
      if (call.notified && listener) {
        return DupAtNotification(t, call, *listener, [&](OpenFile& f) { closing_(t, f); });
      }
      std::shared_ptr<OpenFile> f = tracked(a0);
      const bool replaces = nr != SYS_dup && tracked(static_cast<int>(call.arg(1)));
      if (!f && !replaces) return Decision::Pass();
      return Observe(t, call, Pending::Kind::kDup, std::move(f), a0);
    }
    case SYS_sendmsg:
      for (int fd : PassedFds(*t.proc, call.arg(1))) {
        if (auto f = tracked(fd); f && f->placeholder_ino)
          in_flight_.emplace(f->placeholder_ino, f);
      }
      return std::nullopt;
    case SYS_recvmsg:
      return Observe(t, call, Pending::Kind::kRecvMsg);
    default:
      return std::nullopt;
  }
}

bool DescriptorCalls::OnExit(Thread& t, SyscallRegs& call) {
  auto it = pending_.find(t.tid);
  if (it == pending_.end()) return false;
  Pending p = std::move(it->second);
  pending_.erase(it);
  const long r = call.result();
  auto& files = t.proc->fds->files;
  switch (p.kind) {
    case Pending::Kind::kDup:
      if (r >= 0 && r != p.old_fd) {
        const int fd = static_cast<int>(r);
        // dup2 and dup3 closed what was at the new number.
        if (auto replaced = files.find(fd); replaced != files.end()) {
          closing_(t, *replaced->second);
          files.erase(replaced);
        }
        if (p.file) files[fd] = std::move(p.file);
      }
      break;
    case Pending::Kind::kCloseRange:
      if (r == 0) ApplyCloseRange(t, p.original, [&](OpenFile& f) { closing_(t, f); });
      break;
    case Pending::Kind::kRecvMsg:
      if (r >= 0) AdoptReceived(t, p.original, in_flight_, by_ino_);
      break;
  }
  call = WithOwnArguments(p.original, call);
  return true;
}

}  // namespace amino::monitor
