// ProfileHandler: the calls it looks at on their way to the mount handler, and the events of
// processes (exec, exit, signals, new tasks); --trace and --stats. Rules run in
// profile_rules.cc, opens and closes in profile_sessions.cc, function calls in
// profile_functions.cc.
#include "monitor/profiles/profile_handler.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>

#include "monitor/host/host_context.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::profiles {

ProfileHandler::ProfileHandler(std::unique_ptr<CallHandler> inner, TxnControl& txns,
                               std::vector<Profile> profiles, FILE* trace)
    : inner_(std::move(inner)), txns_(txns), profiles_(std::move(profiles)), trace_(trace) {
  counts_.resize(profiles_.size());
  txns_.SetDoomedSink([this](uint64_t id) { doomed_.push_back(id); });
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
  profile_watched_ = watched_.size();
  if (!watched_.empty()) {
    // Where C++ exceptions (and pthread_exit's forced unwinding) start, and where one is
    // caught: the unwinder must not meet a replaced return address (Unwinding).
    for (const char* name : {"_Unwind_RaiseException", "_Unwind_Resume",
                             "_Unwind_Resume_or_Rethrow", "_Unwind_ForcedUnwind"}) {
      watched_.push_back({name, "", Hook::kUnwind});
      watched_names_.push_back(name);
    }
    watched_.push_back({"__cxa_begin_catch", "", Hook::kCatch});
    watched_names_.push_back("__cxa_begin_catch");
  }
}

std::vector<std::vector<ProfileHandler::Owned>*> ProfileHandler::OwnedLists(Thread& t) {
  std::vector<std::vector<Owned>*> lists{&StateOf(t).owned};
  if (auto it = frames_.find(t.tid); it != frames_.end()) {
    for (Frame& f : it->second.live) lists.push_back(&f.owned);
  }
  return lists;
}

void ProfileHandler::HandleDoomed() {
  std::vector<uint64_t> doomed = std::move(doomed_);
  doomed_.clear();
  for (uint64_t id : doomed) {
    auto live = live_.find(id);
    if (live == live_.end() || !table_) continue;
    Thread* t = table_->Find(live->second.tid);
    if (!t || !t->proc) continue;
    const ProcState& s = StateOf(*t);
    Happening h = Make(EventKind::kConflict, "transaction " + std::to_string(id), s.program);
    h.values.depth = s.depth;
    h.txn = id;
    h.only_profile = live->second.profile;
    counts_[live->second.profile].refused++;
    doomed_seen_.insert(id);
    Fire(*t, h);
  }
}

ProfileHandler::ProcState& ProfileHandler::StateOf(const Thread& t) {
  ProcState& s = procs_[t.proc->tgid];
  s.threads.insert(t.tid);
  return s;
}

Decision ProfileHandler::OnEntry(Thread& t, SyscallRegs& call) {
  const Decision d = Dispatch(t, call);
  if (!doomed_.empty()) HandleDoomed();
  return d;
}

Decision ProfileHandler::Dispatch(Thread& t, SyscallRegs& call) {
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
      if (!watched_.empty() && (call.arg(2) & PROT_EXEC)) {
        // A library mapped executable (the dynamic loader, dlopen): its functions are searched
        // at the call's exit, which a notified call shows only once it stops.
        if (call.notified) return Decision::StopFirst();
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
  if (!doomed_.empty()) HandleDoomed();
  if (auto it = pending_.find(t.tid); it != pending_.end() && !it->second.parked) {
    PendingOpen p = std::move(it->second);
    pending_.erase(it);
    Opened(t, p);
  }
  if (auto it = procs_.find(t.proc->tgid); it != procs_.end() && !it->second.sessions.empty()) {
    Closed(t);
  }
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
  for (pid_t tid : threads) LeaveFrames(t, tid, "its program replaced by exec");
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
    case EventKind::kConflict:
      return text + ": " + h.subject + " was aborted by the system";
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
  for (size_t i = 0; i < profile_watched_; ++i) {
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
        out,
        "amino: profiles: %llu breakpoints placed, %llu calls and %llu returns caught, %llu "
        "exceptions met\n",
        static_cast<unsigned long long>(planted_), static_cast<unsigned long long>(call_hits_),
        static_cast<unsigned long long>(return_hits_),
        static_cast<unsigned long long>(unwind_hits_));
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
