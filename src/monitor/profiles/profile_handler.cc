#include "monitor/profiles/profile_handler.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "amino/amino.h"
#include "monitor/host/host_context.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::profiles {

ProfileHandler::ProfileHandler(std::unique_ptr<CallHandler> inner, TxnControl& txns,
                               std::vector<Profile> profiles, FILE* trace)
    : inner_(std::move(inner)), txns_(txns), profiles_(std::move(profiles)), trace_(trace) {
  counts_.resize(profiles_.size());
  for (const Profile& p : profiles_) {
    std::vector<size_t> keys;
    for (const Rule& r : p.rules) {
      size_t key = SIZE_MAX;
      if (r.event.kind == EventKind::kOpen || r.event.kind == EventKind::kClose) {
        const std::pair<std::string, bool> file{r.event.pattern, r.event.writing};
        auto it = std::find(files_.begin(), files_.end(), file);
        key = static_cast<size_t>(it - files_.begin());
        if (it == files_.end()) files_.push_back(file);
        any_file_rules_ = true;
      }
      keys.push_back(key);
    }
    rule_keys_.push_back(std::move(keys));
  }
}

ProfileHandler::ProcState& ProfileHandler::StateOf(const Thread& t) {
  ProcState& s = procs_[t.proc->tgid];
  s.threads.insert(t.tid);
  return s;
}

Decision ProfileHandler::OnEntry(Thread& t, SyscallRegs& call) {
  switch (call.nr()) {
    case SYS_execve:
    case SYS_execveat: {
      // The program as the caller names it, for exec patterns (the kernel's /proc/PID/exe
      // names a copy for a program stored in a mount).
      const bool at = call.nr() == SYS_execveat;
      std::string path;
      if (ReadString(*t.proc, call.arg(at ? 1 : 0), 4096, &path) == 0 && !path.empty()) {
        StateOf(t).exec_path =
            txns_.AbsolutePath(t, at ? static_cast<int>(call.arg(0)) : AT_FDCWD, path);
      }
      break;
    }
    case SYS_open:
    case SYS_creat:
      if (any_file_rules_) return Open(t, call, AT_FDCWD, call.arg(0));
      break;
    case SYS_openat:
    case SYS_openat2:
      if (any_file_rules_) return Open(t, call, static_cast<int>(call.arg(0)), call.arg(1));
      break;
    case SYS_close:
    case SYS_close_range:
    case SYS_dup2:
    case SYS_dup3: {
      if (!any_file_rules_) break;
      Decision d = inner_->OnEntry(t, call);
      if (d.kind != Decision::Kind::kPark && d.kind != Decision::Kind::kRestart) Closed(t);
      return d;
    }
    default:
      break;
  }
  return inner_->OnEntry(t, call);
}

void ProfileHandler::OnExit(Thread& t, SyscallRegs& call) {
  inner_->OnExit(t, call);
  if (auto it = pending_.find(t.tid); it != pending_.end() && !it->second.parked) {
    PendingOpen p = std::move(it->second);
    pending_.erase(it);
    Opened(t, p);
  }
  if (auto it = procs_.find(t.proc->tgid); it != procs_.end() && !it->second.sessions.empty()) {
    Closed(t);
  }
}

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
    for (size_t k : p.keys) {
      Happening h{EventKind::kOpen, p.path, s.program, {}, 0, writing, k};
      h.values.count = CountOf(s, k) + 1;
      h.values.depth = s.depth;
      for (uint64_t id : Fire(t, h)) p.began.push_back(id);
    }
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
    SessionFd& session = StateOf(t).sessions[fd];
    session.file = f.get();
    session.path = p.path;
    session.keys.insert(p.keys.begin(), p.keys.end());
    return;
  }
  // Failed, or not a file of a mount: not counted, and what its rules began did not happen.
  Undo(t, p.began);
}

void ProfileHandler::Closed(Thread& t) {
  ProcState& s = StateOf(t);
  const auto& files = t.proc->fds->files;
  for (auto it = s.sessions.begin(); it != s.sessions.end();) {
    auto now = files.find(it->first);
    if (now != files.end() && now->second.get() == it->second.file) {
      ++it;
      continue;
    }
    const SessionFd gone = std::move(it->second);
    it = s.sessions.erase(it);
    for (size_t k : gone.keys) {
      Happening h{EventKind::kClose, gone.path, s.program, {}, 0, false, k};
      h.values.count = CountOf(s, k);
      h.values.depth = s.depth;
      Fire(t, h);
    }
  }
}

int64_t ProfileHandler::CountOf(const ProcState& s, size_t key) {
  int64_t n = 0;
  for (const auto& [fd, session] : s.sessions) n += session.keys.count(key);
  return n;
}

void ProfileHandler::OnExec(Thread& t) {
  inner_->OnExec(t);
  ProcState& s = StateOf(t);
  // The other threads are gone (an exec by one of them continues under the leader's id).
  s.threads = {t.tid};
  pending_.erase(t.tid);
  if (!s.sessions.empty()) Closed(t);  // close-on-exec descriptors
  const std::string before = s.program;
  s.program =
      s.exec_path.empty() ? host::ReadLink("/proc/" + std::to_string(t.tid) + "/exe") : s.exec_path;
  s.exec_path.clear();
  Happening h{EventKind::kExec, s.program, before, {}, 0, false, SIZE_MAX};
  h.values.depth = s.depth;
  Fire(t, h);
}

void ProfileHandler::OnProcessExit(Thread& t, int wait_status) {
  ProcState& s = StateOf(t);
  Happening h{EventKind::kExit, s.program, s.program, {}, 0, false, SIZE_MAX};
  if (WIFSIGNALED(wait_status)) {
    h.values.signal = WTERMSIG(wait_status);
    h.values.status = 128 + h.values.signal;
  } else {
    h.values.status = WEXITSTATUS(wait_status);
  }
  h.values.depth = s.depth;
  Fire(t, h);
  while (!s.owned.empty()) {
    counts_[s.owned.back().profile].left_open++;
    EndOwned(t, s, s.owned.size() - 1, false, "left open at exit");
  }
  inner_->OnProcessExit(t, wait_status);
}

void ProfileHandler::OnTaskExit(Thread& t) {
  inner_->OnTaskExit(t);
  if (auto it = pending_.find(t.tid); it != pending_.end()) {
    const std::vector<uint64_t> began = it->second.began;
    pending_.erase(it);
    Undo(t, began);
  }
  auto it = procs_.find(t.proc->tgid);
  if (it == procs_.end()) return;
  it->second.threads.erase(t.tid);
  if (t.tid == t.proc->tgid) procs_.erase(it);
}

void ProfileHandler::OnSignal(Thread& t, int sig) {
  inner_->OnSignal(t, sig);
  ProcState& s = StateOf(t);
  const char* name = sigabbrev_np(sig);
  Happening h{EventKind::kSignal,
              std::string("SIG") + (name ? name : std::to_string(sig)),
              s.program,
              {},
              sig,
              false,
              SIZE_MAX};
  h.values.signal = sig;
  h.values.depth = s.depth;
  Fire(t, h);
}

void ProfileHandler::OnNewTask(Thread& parent, Thread& child, bool thread) {
  inner_->OnNewTask(parent, child, thread);
  ProcState& ps = StateOf(parent);
  if (thread) {
    ps.threads.insert(child.tid);
    // A thread of the owner is in the owner's transaction (a new thread otherwise has none).
    if (!ps.owned.empty()) txns_.Join(child.tid, ps.owned.back().id);
    return;
  }
  const int depth = ps.depth + 1;
  const std::string program = ps.program;
  std::vector<uint64_t> kept_out;
  for (const Owned& o : ps.owned) {
    if (o.private_) kept_out.push_back(o.id);
  }
  ProcState& cs = procs_[child.proc->tgid];
  cs.depth = depth;
  cs.program = program;
  cs.threads = {child.tid};
  for (auto it = kept_out.rbegin(); it != kept_out.rend(); ++it) txns_.Leave(child.tid, *it);
}

std::vector<uint64_t> ProfileHandler::Fire(Thread& t, const Happening& h) {
  std::vector<uint64_t> began;
  for (size_t p = 0; p < profiles_.size(); ++p) {
    const std::vector<Rule>& rules = profiles_[p].rules;
    for (size_t i = 0; i < rules.size(); ++i) {
      if (!Matches(rules[i], h, rule_keys_[p][i])) continue;
      for (const Action& a : rules[i].actions) Act(t, p, rules[i], a, h, &began);
      break;
    }
  }
  return began;
}

bool ProfileHandler::Matches(const Rule& r, const Happening& h, size_t key) const {
  if (r.event.kind != h.kind) return false;
  if (!MatchesPath(r.event.program, h.program)) return false;
  switch (h.kind) {
    case EventKind::kExec:
      if (!MatchesPath(r.event.pattern, h.subject)) return false;
      break;
    case EventKind::kOpen:
    case EventKind::kClose:
      if (key != h.key) return false;
      break;
    case EventKind::kSignal:
      if (r.event.signal != h.signal) return false;
      break;
    case EventKind::kExit:
      break;
  }
  return Holds(r.when, h.values);
}

void ProfileHandler::Act(Thread& t, size_t profile, const Rule& r, const Action& a,
                         const Happening& h, std::vector<uint64_t>* began) {
  bool commit = false;
  switch (a.kind) {
    case Action::Kind::kBegin:
      Begin(t, profile, r, a, h, began);
      return;
    case Action::Kind::kCommit:
      commit = true;
      break;
    case Action::Kind::kAbort:
      commit = false;
      break;
    case Action::Kind::kCommitIf:
      commit = Holds(a.condition, h.values);
      break;
    case Action::Kind::kAbortIf:
      commit = !Holds(a.condition, h.values);
      break;
  }
  ProcState& s = StateOf(t);
  for (size_t i = s.owned.size(); i-- > 0;) {
    if (s.owned[i].profile != profile) continue;
    EndOwned(t, s, i, commit, Describe(h) + " (" + r.where.ToString() + ")");
    return;
  }
  // Nothing to end: the process owns no transaction of this profile (a child of the owner).
}

void ProfileHandler::Begin(Thread& t, size_t profile, const Rule& r, const Action& a,
                           const Happening& h, std::vector<uint64_t>* began) {
  const std::string& name = profiles_[profile].name;
  const std::string cause = Describe(h) + " (" + r.where.ToString() + ")";
  if (!a.nested) {
    for (const auto& [id, p] : live_) {
      if (p == profile && txns_.Within(t.tid, id)) {
        counts_[profile].inside++;
        Trace(t, "profile " + name + ": already in transaction " + std::to_string(id) + " at " +
                     cause);
        return;
      }
    }
  }
  const uint64_t before = txns_.CurrentOf(t.tid);
  const long r_id = txns_.BeginFor(t);
  if (r_id < 0) {
    std::fprintf(stderr, "amino: profile %s: cannot begin a transaction for process %d at %s: %s\n",
                 name.c_str(), static_cast<int>(t.proc->tgid), cause.c_str(),
                 r_id == -AMINO_EABORTED ? "the transaction it is in was aborted by the system"
                                         : std::strerror(static_cast<int>(-r_id)));
    return;
  }
  const uint64_t id = static_cast<uint64_t>(r_id);
  ProcState& s = StateOf(t);
  s.owned.push_back({profile, id, a.private_});
  live_[id] = profile;
  began->push_back(id);
  counts_[profile].begins++;
  // The process's other threads that were where this one was go in with it.
  for (pid_t other : s.threads) {
    if (other != t.tid && txns_.CurrentOf(other) == before) txns_.Join(other, id);
  }
  Trace(t, "profile " + name + ": begin transaction " + std::to_string(id) + " at " + cause);
}

void ProfileHandler::EndOwned(Thread& t, ProcState& s, size_t index, bool commit,
                              const std::string& cause) {
  const Owned o = s.owned[index];
  s.owned.erase(s.owned.begin() + static_cast<std::ptrdiff_t>(index));
  live_.erase(o.id);
  const std::string& name = profiles_[o.profile].name;
  const long r = txns_.End(o.id, commit);
  if (r == -ENOENT) return;  // ended already (by the system, or the program itself)
  if (r < 0) {
    counts_[o.profile].refused++;
    std::fprintf(
        stderr,
        "amino: profile %s: the transaction of process %d (%s) %s: nothing it did "
        "remains\n",
        name.c_str(), static_cast<int>(t.proc->tgid), s.program.c_str(),
        r == -AMINO_EABORTED
            ? "was aborted by the system (a deadlock or a lock timeout)"
            : (std::string("could not commit: ") + std::strerror(static_cast<int>(-r))).c_str());
    Trace(t, "profile " + name + ": transaction " + std::to_string(o.id) + " could not commit at " +
                 cause);
    return;
  }
  (commit ? counts_[o.profile].commits : counts_[o.profile].aborts)++;
  Trace(t, "profile " + name + ": " + (commit ? "commit" : "abort") + " transaction " +
               std::to_string(o.id) + " at " + cause);
}

void ProfileHandler::Undo(Thread& t, const std::vector<uint64_t>& began) {
  ProcState& s = StateOf(t);
  for (auto id = began.rbegin(); id != began.rend(); ++id) {
    for (size_t i = 0; i < s.owned.size(); ++i) {
      if (s.owned[i].id != *id) continue;
      const size_t profile = s.owned[i].profile;
      s.owned.erase(s.owned.begin() + static_cast<std::ptrdiff_t>(i));
      live_.erase(*id);
      (void)txns_.End(*id, false);
      counts_[profile].begins--;
      Trace(t, "profile " + profiles_[profile].name + ": transaction " + std::to_string(*id) +
                   " withdrawn: its open did not happen");
      break;
    }
  }
}

std::string ProfileHandler::Describe(const Happening& h) const {
  std::string text = EventName(h.kind);
  switch (h.kind) {
    case EventKind::kExec:
      return text + " " + h.subject;
    case EventKind::kOpen:
    case EventKind::kClose:
      return text + " " + h.subject + " (count " + std::to_string(h.values.count) + ")";
    case EventKind::kSignal:
      return text + " " + h.subject;
    case EventKind::kExit:
      if (h.values.signal)
        return text + " of " + h.subject + " killed by signal " + std::to_string(h.values.signal);
      return text + " of " + h.subject + " with status " + std::to_string(h.values.status);
  }
  return text;
}

void ProfileHandler::Trace(const Thread& t, const std::string& text) {
  if (!trace_) return;
  std::fprintf(trace_, "[pid %d] amino: %s\n", static_cast<int>(t.tid), text.c_str());
  std::fflush(trace_);
}

void ProfileHandler::PrintStats(FILE* out) const {
  inner_->PrintStats(out);
  for (size_t p = 0; p < profiles_.size(); ++p) {
    const Counts& c = counts_[p];
    std::fprintf(
        out,
        "amino: profile %s: %llu begun (%llu times already inside one), %llu committed, "
        "%llu aborted (%llu left open at exit), %llu aborted by the system\n",
        profiles_[p].name.c_str(), static_cast<unsigned long long>(c.begins),
        static_cast<unsigned long long>(c.inside), static_cast<unsigned long long>(c.commits),
        static_cast<unsigned long long>(c.aborts), static_cast<unsigned long long>(c.left_open),
        static_cast<unsigned long long>(c.refused));
  }
}

}  // namespace amino::monitor::profiles
