// ProfileHandler: open and close events (file sessions). An open's rules run before the file
// is opened, so a transaction they begin holds the open itself; a session is an open file
// description, over when no descriptor of the process refers to it any more.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>

#include <algorithm>

#include "monitor/profiles/profile_handler.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::profiles {

Decision ProfileHandler::Open(Thread& t, SyscallRegs& call, int dirfd, uint64_t path_addr) {
  std::string raw;
  if (ReadString(*t.proc, path_addr, 4096, &raw) != 0 || raw.empty()) {
    return inner_->OnEntry(t, call);
  }
  PendingOpen p;
  p.path = txns_.AbsolutePath(t, dirfd, raw);
  if (auto it = pending_.find(t.tid); it != pending_.end()) {
    // The same open asked again after a wait keeps what its rules began; any other call means
    // the waiting one gave way (to a signal) and did not happen.
    PendingOpen old = std::move(it->second);
    pending_.erase(it);
    if (old.parked && old.path == p.path) {
      p = std::move(old);
    } else {
      Undo(t, old.began);
    }
  }
  if (p.path.empty()) return inner_->OnEntry(t, call);
  if (!p.fired) {
    int flags = 0;
    if (call.nr() == SYS_open) {
      flags = static_cast<int>(call.arg(1));
    } else if (call.nr() == SYS_creat) {
      flags = O_WRONLY;
    } else if (call.nr() == SYS_openat) {
      flags = static_cast<int>(call.arg(2));
    } else {
      open_how how{};
      if (ReadMemory(*t.proc, call.arg(2), &how, sizeof how) == 0) {
        flags = static_cast<int>(how.flags);
      }
    }
    const bool writing = (flags & O_ACCMODE) == O_WRONLY || (flags & O_ACCMODE) == O_RDWR;
    for (size_t k = 0; k < files_.size(); ++k) {
      if (MatchesPath(files_[k].first, p.path) && (!files_[k].second || writing)) {
        p.keys.push_back(k);
      }
    }
    if (p.keys.empty()) return inner_->OnEntry(t, call);
    p.fired = true;
    ProcState& s = StateOf(t);
    Happening h = Make(EventKind::kOpen, p.path, s.program);
    h.writing = writing;
    for (size_t k : p.keys) h.counts[k] = CountOf(s, k) + 1;
    h.values.depth = s.depth;
    p.began = Fire(t, h);
  }
  p.before.clear();
  for (const auto& [fd, f] : t.proc->fds->files) p.before[fd] = f.get();
  Decision d = inner_->OnEntry(t, call);
  switch (d.kind) {
    case Decision::Kind::kObserveExit:
      pending_[t.tid] = std::move(p);
      break;
    case Decision::Kind::kPark:
    case Decision::Kind::kRestart:
      p.parked = true;
      pending_[t.tid] = std::move(p);
      break;
    default:
      Opened(t, p);
      break;
  }
  return d;
}

void ProfileHandler::Opened(Thread& t, PendingOpen& p) {
  for (const auto& [fd, f] : t.proc->fds->files) {
    auto was = p.before.find(fd);
    if (was != p.before.end() && was->second == f.get()) continue;
    std::string path;
    bool writing = false;
    if (!txns_.ServedPath(t, fd, &path, &writing)) continue;
    Session session;
    session.file = f;
    session.path = p.path;
    session.keys.insert(p.keys.begin(), p.keys.end());
    StateOf(t).sessions.push_back(std::move(session));
    return;
  }
  // Failed, or not a file of a mount: not counted, and what its rules began did not happen.
  Undo(t, p.began);
}

void ProfileHandler::Closed(Thread& t) {
  ProcState& s = StateOf(t);
  const auto& files = t.proc->fds->files;
  for (size_t i = 0; i < s.sessions.size();) {
    const std::shared_ptr<OpenFile> file = s.sessions[i].file.lock();
    const bool open = file && std::any_of(files.begin(), files.end(),
                                          [&](const auto& entry) { return entry.second == file; });
    if (open) {
      ++i;
      continue;
    }
    const Session gone = std::move(s.sessions[i]);
    s.sessions.erase(s.sessions.begin() + static_cast<std::ptrdiff_t>(i));
    Happening h = Make(EventKind::kClose, gone.path, s.program);
    for (size_t k : gone.keys) h.counts[k] = CountOf(s, k);
    h.values.depth = s.depth;
    Fire(t, h);
  }
}

int64_t ProfileHandler::CountOf(const ProcState& s, size_t key) {
  int64_t n = 0;
  for (const Session& session : s.sessions) n += static_cast<int64_t>(session.keys.count(key));
  return n;
}

}  // namespace amino::monitor::profiles
