#include "monitor/profiles/profile_handler.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "amino/amino.h"
#include "monitor/host/host_context.h"
#include "monitor/profiles/elf_symbols.h"
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
      if (r.event.kind == EventKind::kCall || r.event.kind == EventKind::kReturn) {
        const bool known = std::any_of(watched_.begin(), watched_.end(), [&](const Watched& w) {
          return w.name == r.event.pattern && w.object == r.event.object;
        });
        if (!known) watched_.push_back({r.event.pattern, r.event.object});
        if (std::find(watched_names_.begin(), watched_names_.end(), r.event.pattern) ==
            watched_names_.end()) {
          watched_names_.push_back(r.event.pattern);
        }
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
    case SYS_mmap:
      if (!watched_.empty() && (call.arg(2) & PROT_EXEC) && !call.notified) {
        // A library mapped executable (the dynamic loader, dlopen): its functions are searched
        // at the call's exit.
        Decision d = inner_->OnEntry(t, call);
        if (d.kind == Decision::Kind::kPass || d.kind == Decision::Kind::kObserveExit) {
          mapping_[t.tid] = d.kind == Decision::Kind::kObserveExit;
          return Decision::ObserveExit();
        }
        return d;
      }
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
  if (auto it = mapping_.find(t.tid); it != mapping_.end()) {
    const bool inner_wants = it->second;
    mapping_.erase(it);
    if (inner_wants) inner_->OnExit(t, call);
    if (call.result() >= 0 || call.result() < -4095) PlantNew(t);
    return;
  }
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

void ProfileHandler::OnExec(Thread& t) {
  inner_->OnExec(t);
  ProcState& s = StateOf(t);
  // The other threads are gone (an exec by one of them continues under the leader's id): the
  // calls under way in any of them are over, and so are opens they were waiting in.
  const std::set<pid_t> threads = s.threads;
  s.threads = {t.tid};
  for (pid_t tid : threads) {
    if (auto it = pending_.find(tid); it != pending_.end()) {
      const std::vector<uint64_t> began = it->second.began;
      pending_.erase(it);
      Undo(t, began);
    }
    mapping_.erase(tid);
  }
  for (pid_t tid : threads) LeaveFrames(t, tid, "its program was replaced by exec");
  if (!s.sessions.empty()) Closed(t);  // close-on-exec descriptors
  const std::string before = s.program;
  s.program =
      s.exec_path.empty() ? host::ReadLink("/proc/" + std::to_string(t.tid) + "/exe") : s.exec_path;
  s.exec_path.clear();
  Happening h = Make(EventKind::kExec, s.program, before);
  h.values.depth = s.depth;
  Fire(t, h);
  if (!watched_.empty()) {
    spaces_[t.proc->tgid] = Space{};
    PlantNew(t);
  }
}

void ProfileHandler::OnProcessExit(Thread& t, int wait_status) {
  LeaveFrames(t, t.tid, "its thread ended");
  ProcState& s = StateOf(t);
  Happening h = Make(EventKind::kExit, s.program, s.program);
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
    EndOwned(t, s.owned, s.owned.size() - 1, false, "left open at exit");
  }
  inner_->OnProcessExit(t, wait_status);
}

void ProfileHandler::OnTaskExit(Thread& t) {
  LeaveFrames(t, t.tid, "its thread ended");
  frames_.erase(t.tid);
  mapping_.erase(t.tid);
  inner_->OnTaskExit(t);
  if (auto it = pending_.find(t.tid); it != pending_.end()) {
    const std::vector<uint64_t> began = it->second.began;
    pending_.erase(it);
    Undo(t, began);
  }
  auto it = procs_.find(t.proc->tgid);
  if (it == procs_.end()) return;
  it->second.threads.erase(t.tid);
  if (t.tid == t.proc->tgid) {
    procs_.erase(it);
    spaces_.erase(t.tid);
  }
}

void ProfileHandler::OnSignal(Thread& t, int sig) {
  inner_->OnSignal(t, sig);
  ProcState& s = StateOf(t);
  const char* name = sigabbrev_np(sig);
  Happening h =
      Make(EventKind::kSignal, std::string("SIG") + (name ? name : std::to_string(sig)), s.program);
  h.signal = sig;
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
  // The child's memory is a copy: its breakpoints, and the calls under way in the thread that
  // forked, whose returns come back to a breakpoint in the child too (it ends nothing there).
  if (auto sp = spaces_.find(parent.proc->tgid); sp != spaces_.end()) {
    Space copy = sp->second;
    spaces_[child.proc->tgid] = std::move(copy);
  }
  if (auto fr = frames_.find(parent.tid); fr != frames_.end()) {
    Calls copies = fr->second;
    for (Frame& f : copies.live) {
      f.owned.clear();
      f.inherited = true;
    }
    frames_[child.tid] = std::move(copies);
  }
  for (auto it = kept_out.rbegin(); it != kept_out.rend(); ++it) txns_.Leave(child.tid, *it);
}

std::vector<uint64_t> ProfileHandler::Fire(Thread& t, const Happening& h) {
  std::vector<uint64_t> began;
  for (size_t p = 0; p < profiles_.size(); ++p) {
    const std::vector<Rule>& rules = profiles_[p].rules;
    for (size_t i = 0; i < rules.size(); ++i) {
      // An open or close is seen by each rule with the count of that rule's files.
      Happening seen = h;
      const size_t key = rule_keys_[p][i];
      if (key != SIZE_MAX) {
        auto count = h.counts.find(key);
        if (count == h.counts.end()) continue;
        seen.values.count = count->second;
      }
      if (!Matches(rules[i], seen)) continue;
      for (const Action& a : rules[i].actions) Act(t, p, rules[i], a, seen, &began);
      break;
    }
  }
  return began;
}

bool ProfileHandler::Matches(const Rule& r, const Happening& h) const {
  if (r.event.kind != h.kind) return false;
  if (!MatchesPath(r.event.program, h.program)) return false;
  switch (h.kind) {
    case EventKind::kExec:
      if (!MatchesPath(r.event.pattern, h.subject)) return false;
      break;
    case EventKind::kOpen:
    case EventKind::kClose:
      break;  // the rule's files were matched by Fire
    case EventKind::kSignal:
      if (r.event.signal != h.signal) return false;
      break;
    case EventKind::kExit:
      break;
    case EventKind::kCall:
    case EventKind::kReturn:
      if (fnmatch(r.event.pattern.c_str(), h.subject.c_str(), 0) != 0 ||
          !MatchesPath(r.event.object, h.object)) {
        return false;
      }
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
  // A return's rules end what that call began; the others what the process owns.
  std::vector<Owned>& owned =
      h.frame && h.kind == EventKind::kReturn ? h.frame->owned : StateOf(t).owned;
  for (size_t i = owned.size(); i-- > 0;) {
    if (owned[i].profile != profile) continue;
    EndOwned(t, owned, i, commit, Describe(h) + " (" + r.where.ToString() + ")");
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
  live_[id] = profile;
  began->push_back(id);
  counts_[profile].begins++;
  if (h.frame) {
    // A call's transaction is its thread's alone.
    h.frame->owned.push_back({profile, id, a.private_});
  } else {
    ProcState& s = StateOf(t);
    s.owned.push_back({profile, id, a.private_});
    // The process's other threads that were where this one was go in with it.
    for (pid_t other : s.threads) {
      if (other != t.tid && txns_.CurrentOf(other) == before) txns_.Join(other, id);
    }
  }
  Trace(t, "profile " + name + ": begin transaction " + std::to_string(id) + " at " + cause);
}

void ProfileHandler::EndOwned(Thread& t, std::vector<Owned>& owned, size_t index, bool commit,
                              const std::string& cause) {
  const Owned o = owned[index];
  owned.erase(owned.begin() + static_cast<std::ptrdiff_t>(index));
  const ProcState& s = StateOf(t);
  live_.erase(o.id);
  const std::string& name = profiles_[o.profile].name;
  const long r = txns_.End(o.id, commit);
  if (r == -ENOENT) {
    // Ended already: with the transaction around it (a profile's of another scope), or by
    // the program's own libamino calls. What a commit here was meant to keep is gone.
    if (commit) {
      counts_[o.profile].lost++;
      std::fprintf(stderr,
                   "amino: profile %s: transaction %llu of process %d (%s) had already ended "
                   "(with the transaction it was nested in, or by the program) when %s: "
                   "nothing it did remains\n",
                   name.c_str(), static_cast<unsigned long long>(o.id),
                   static_cast<int>(t.proc->tgid), s.program.c_str(), cause.c_str());
    }
    return;
  }
  if (r < 0 && !(r == -AMINO_EABORTED && !commit)) {
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

void ProfileHandler::LeaveFrame(Thread& t, Frame& f, const std::string& how) {
  while (!f.owned.empty()) {
    counts_[f.owned.back().profile].left_open++;
    EndOwned(t, f.owned, f.owned.size() - 1, false, "a call of a watched function " + how);
  }
}

void ProfileHandler::LeaveFrames(Thread& t, pid_t tid, const std::string& how) {
  auto it = frames_.find(tid);
  if (it == frames_.end()) return;
  std::vector<Frame> frames = std::move(it->second.live);
  frames_.erase(it);
  for (auto f = frames.rbegin(); f != frames.rend(); ++f) LeaveFrame(t, *f, how);
}

bool ProfileHandler::OnBreakpoint(Thread& t) {
  auto sp = spaces_.find(t.proc->tgid);
  if (sp == spaces_.end()) return false;
  user_regs_struct regs;
  if (ptrace(PTRACE_GETREGS, t.tid, 0, &regs) != 0) return false;
  const uint64_t addr = regs.rip - 1;
  auto site = sp->second.sites.find(addr);
  if (site == sp->second.sites.end()) return false;
  const Breakpoint bp = site->second;
  const std::string symbol = sp->second.symbol[addr];
  const std::string object = sp->second.object[addr];
  ProcState& s = StateOf(t);
  Calls& calls = frames_[t.tid];
  std::vector<Frame>& frames = calls.live;
  // Moves the innermost call under way to the calls left, aborting what it began.
  auto leave_innermost = [&] {
    LeaveFrame(t, frames.back(), "was left without returning (longjmp)");
    frames.back().owned.clear();
    calls.left.push_back(std::move(frames.back()));
    frames.pop_back();
    if (calls.left.size() > kLeftKept) calls.left.erase(calls.left.begin());
  };
  for (size_t i = frames.size(); i-- > 0;) {
    if (frames[i].entry != addr || frames[i].entry_rsp + 8 != regs.rsp) continue;
    // The return of call i. Calls begun after it and still open were left by a longjmp.
    while (frames.size() > i + 1) leave_innermost();
    Frame f = std::move(frames.back());
    frames.pop_back();
    return_hits_++;
    regs.rip = f.return_to;
    if (ptrace(PTRACE_SETREGS, t.tid, 0, &regs) != 0) return true;
    if (f.inherited) return true;
    Happening h = Make(EventKind::kReturn, symbol, s.program);
    h.object = object;
    h.values.result = static_cast<int32_t>(regs.rax & 0xffffffff);
    h.values.depth = s.depth;
    h.frame = &f;
    Fire(t, h);
    LeaveFrame(t, f, "ended with no rule ending its transaction");
    return true;
  }
  for (auto l = calls.left.begin(); l != calls.left.end(); ++l) {
    if (l->entry != addr || l->entry_rsp + 8 != regs.rsp) continue;
    // The return of a call judged left: it goes on where it was called from.
    regs.rip = l->return_to;
    calls.left.erase(l);
    return_hits_++;
    ptrace(PTRACE_SETREGS, t.tid, 0, &regs);
    return true;
  }
  // A call.
  uint64_t return_to = 0;
  if (ReadMemory(*t.proc, regs.rsp, &return_to, sizeof return_to) != 0) return true;
  // Calls whose frames are above this one's were left without returning; one at the same
  // place was too, unless its own replaced return address is what this call returns to (a
  // tail call: it returns when this one does).
  while (!frames.empty() &&
         (frames.back().entry_rsp < regs.rsp ||
          (frames.back().entry_rsp == regs.rsp && return_to != frames.back().entry))) {
    leave_innermost();
  }
  call_hits_++;
  Frame f;
  f.function = bp.function;
  f.entry = addr;
  f.entry_rsp = regs.rsp;
  f.return_to = return_to;
  if (WriteMemory(*t.proc, regs.rsp, &addr, sizeof addr) != 0 || StepOver(*t.proc, bp, regs) != 0 ||
      ptrace(PTRACE_SETREGS, t.tid, 0, &regs) != 0) {
    return true;  // the thread is gone
  }
  frames.push_back(std::move(f));
  Happening h = Make(EventKind::kCall, symbol, s.program);
  h.object = object;
  h.values.depth = s.depth;
  h.frame = &frames.back();
  Fire(t, h);
  return true;
}

void ProfileHandler::PlantNew(Thread& t) {
  Space& space = spaces_[t.proc->tgid];
  // The executable mappings of files: where each starts and ends, and its file offset.
  struct Exec {
    std::string path;
    uint64_t start, end, offset;
  };
  std::vector<Exec> execs;
  std::ifstream maps("/proc/" + std::to_string(t.proc->tgid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in >> std::ws, path);
    if (path.empty() || path[0] != '/' || perms.size() < 3 || perms[2] != 'x') continue;
    const size_t dash = range.find('-');
    execs.push_back({path, std::stoull(range.substr(0, dash), nullptr, 16),
                     std::stoull(range.substr(dash + 1), nullptr, 16),
                     std::stoull(offset, nullptr, 16)});
  }
  // Breakpoints in code no longer mapped there (dlclose) are forgotten, and the objects
  // searched with them: mapped again, they are searched again.
  for (auto it = space.sites.begin(); it != space.sites.end();) {
    const bool mapped = std::any_of(execs.begin(), execs.end(), [&](const Exec& e) {
      return e.path == space.object[it->first] && it->first >= e.start && it->first < e.end;
    });
    if (mapped) {
      ++it;
      continue;
    }
    const std::string gone = space.object[it->first] + "@";
    std::erase_if(space.searched, [&](const std::string& key) { return key.rfind(gone, 0) == 0; });
    space.symbol.erase(it->first);
    space.object.erase(it->first);
    it = space.sites.erase(it);
  }
  for (const Exec& e : execs) {
    const std::string& path = e.path;
    const std::string key = path + "@" + std::to_string(e.start) + "@" + std::to_string(e.offset);
    if (space.searched.count(key)) continue;
    bool wanted = false;
    for (const Watched& w : watched_) wanted = wanted || MatchesPath(w.object, path);
    if (!wanted) continue;
    space.searched.insert(key);
    ElfFunctions elf;
    std::string error;
    if (!ReadElfFunctions(path, watched_names_, &elf, &error)) continue;
    // The segment this mapping is gives the load bias.
    auto segment = std::find_if(elf.loads.begin(), elf.loads.end(),
                                [&](const auto& l) { return l.first == e.offset; });
    if (segment == elf.loads.end()) continue;
    const uint64_t bias = e.start - segment->second;
    for (const auto& [name, value] : elf.functions) {
      size_t index = SIZE_MAX;
      for (size_t i = 0; i < watched_.size(); ++i) {
        if (fnmatch(watched_[i].name.c_str(), name.c_str(), 0) == 0 &&
            MatchesPath(watched_[i].object, path)) {
          if (index == SIZE_MAX) index = i;
          found_.insert(i);
        }
      }
      if (index == SIZE_MAX) continue;
      Breakpoint bp;
      bp.addr = bias + value;
      bp.function = index;
      // Only in this very mapping (another one of the file, as data, is not the code).
      if (bp.addr < e.start || bp.addr >= e.end || space.sites.count(bp.addr)) continue;
      uint8_t code[16];
      std::string why;
      if (ReadMemory(*t.proc, bp.addr, code, sizeof code) != 0 ||
          !DecodeStep(code, sizeof code, &bp, &why)) {
        if (unwatchable_.insert(name + "@" + path).second) {
          std::fprintf(stderr,
                       "amino: cannot watch function %s in %s: %s; rules on its calls and "
                       "returns do nothing there\n",
                       name.c_str(), path.c_str(),
                       why.empty() ? "its code cannot be read" : why.c_str());
        }
        continue;
      }
      if (Plant(*t.proc, &bp) != 0) continue;
      space.sites[bp.addr] = bp;
      planted_++;
      space.symbol[bp.addr] = name;
      space.object[bp.addr] = path;
      Trace(t, "breakpoint at " + name + " in " + path);
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
    case EventKind::kCall:
      return text + " of " + h.subject + " in " + h.object;
    case EventKind::kReturn:
      return text + " of " + h.subject + " in " + h.object + " with result " +
             std::to_string(h.values.result);
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

void ProfileHandler::Finish() {
  inner_->Finish();
  // A misspelt function name would otherwise leave a profile doing nothing without a word.
  for (size_t i = 0; i < watched_.size(); ++i) {
    if (found_.count(i)) continue;
    std::fprintf(stderr,
                 "amino: no function matching '%s'%s%s was found in the programs and libraries "
                 "run: the profile rules on it never applied\n",
                 watched_[i].name.c_str(), watched_[i].object.empty() ? "" : " in ",
                 watched_[i].object.c_str());
  }
}

void ProfileHandler::PrintStats(FILE* out) const {
  inner_->PrintStats(out);
  if (!watched_.empty()) {
    std::fprintf(
        out, "amino: profiles: %llu breakpoints placed, %llu calls and %llu returns caught\n",
        static_cast<unsigned long long>(planted_), static_cast<unsigned long long>(call_hits_),
        static_cast<unsigned long long>(return_hits_));
  }
  for (size_t p = 0; p < profiles_.size(); ++p) {
    const Counts& c = counts_[p];
    std::fprintf(
        out,
        "amino: profile %s: %llu begun (%llu times already inside one), %llu committed, "
        "%llu aborted (%llu left open), %llu aborted by the system, %llu ended with an outer "
        "one\n",
        profiles_[p].name.c_str(), static_cast<unsigned long long>(c.begins),
        static_cast<unsigned long long>(c.inside), static_cast<unsigned long long>(c.commits),
        static_cast<unsigned long long>(c.aborts), static_cast<unsigned long long>(c.left_open),
        static_cast<unsigned long long>(c.refused), static_cast<unsigned long long>(c.lost));
  }
}

}  // namespace amino::monitor::profiles
