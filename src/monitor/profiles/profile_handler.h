// `amino run --profile`: transactions for unmodified programs (docs/profiles.md). Wraps the
// handler that serves the mounts and, at the events the profiles name — an exec, a process's
// exit, an open or close of a matching served file, a signal's delivery — begins, commits and
// aborts application transactions through TxnControl, exactly as libamino's calls would.
//
// A transaction a profile begins belongs to the process whose event began it (its owner):
// every thread of the owner is in it, and processes it starts later too unless the rule said
// `private`. Commit and abort end the owner's innermost transaction of that profile; a
// transaction its owner leaves open at exit is aborted after the exit rules ran.
//
// Files: profile_handler.cc (calls on their way, process events, --trace, --stats),
// profile_rules.cc (running rules; begin and end), profile_sessions.cc (opens and closes),
// profile_functions.cc (breakpoints; calls and returns of watched functions).
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "monitor/call_handler.h"
#include "monitor/profiles/breakpoints.h"
#include "monitor/profiles/profile.h"
#include "monitor/txn_control.h"

namespace amino::monitor::profiles {

class ProfileHandler : public CallHandler {
 public:
  // `trace`: where --trace prints each begin, commit and abort with its cause (null: nowhere).
  ProfileHandler(std::unique_ptr<CallHandler> inner, TxnControl& txns,
                 std::vector<Profile> profiles, FILE* trace);

  Decision OnEntry(Thread& t, SyscallRegs& call) override;
  void OnExit(Thread& t, SyscallRegs& call) override;
  void OnExec(Thread& t) override;
  void OnProcessExit(Thread& t, int wait_status) override;
  void OnTaskExit(Thread& t) override;
  void OnSignal(Thread& t, int sig) override;
  bool OnBreakpoint(Thread& t) override;
  void OnNewTask(Thread& parent, Thread& child, bool thread) override;
  void Finish() override;
  void PrintStats(FILE* out) const override;
  bool NeedsStop(long nr) const override { return inner_->NeedsStop(nr); }
  std::vector<TrapCondition> TrapOnlyWhen(long nr) const override {
    return inner_->TrapOnlyWhen(nr);
  }
  long OnForeignCall(Thread& t, const ForeignCall& call) override {
    return inner_->OnForeignCall(t, call);
  }
  bool Emulates() const override { return inner_->Emulates(); }
  uint64_t Releases() const override { return inner_->Releases(); }
  std::vector<long> ExtraTrapped() const override { return inner_->ExtraTrapped(); }
  std::vector<std::string> CoveredPoints() const override { return inner_->CoveredPoints(); }
  void SetExitSink(std::function<void(pid_t, int)> sink) override { inner_->SetExitSink(sink); }
  void SetProcessTable(ProcessTable* table) override {
    table_ = table;
    inner_->SetProcessTable(table);
  }
  void SetListener(ptrace_ext::NotifyListener* listener) override { inner_->SetListener(listener); }

 private:
  // A transaction a profile began.
  struct Owned {
    size_t profile = 0;
    uint64_t id = 0;
    bool private_ = false;
  };
  // An open file description a process opened on files some open or close rule names: open
  // while any descriptor of the process refers to it (dup2 onto stdout and close of the
  // original keeps it open, as the file stays open).
  struct Session {
    std::weak_ptr<OpenFile> file;
    std::string path;       // as opened
    std::set<size_t> keys;  // the rule keys (files_) whose pattern it matched
  };
  // A call of a watched function under way in a thread: its return comes back to the
  // function's breakpoint (the return address was replaced by it), with the stack pointer just
  // above where it was at entry.
  struct Frame {
    size_t function = 0;
    uint64_t entry = 0;        // the breakpoint: the function's entry, and where it returns to
    uint64_t entry_rsp = 0;    // at entry (pointing at the return address)
    uint64_t return_to = 0;    // the real return address
    std::vector<Owned> owned;  // transactions its call rules began, innermost last
    bool inherited = false;    // a forked child's copy of its parent's call: nothing to end
    bool exposed = false;      // the real return address is back (an exception is under way)
  };
  // A watched function: a name pattern and an object pattern of call and return rules, or
  // one of the C++ runtime's functions the monitor watches for itself while exceptions pass
  // watched calls (Unwinding).
  enum class Hook { kNone, kUnwind, kCatch };
  struct Watched {
    std::string name, object;
    Hook hook = Hook::kNone;
  };
  // Breakpoints of one address space, and the objects already searched for watched functions.
  struct Space {
    std::map<uint64_t, Breakpoint> sites;
    std::map<uint64_t, std::string> symbol;  // by site: the function's name
    std::map<uint64_t, std::string> object;  // by site: the object's path
    std::set<std::string> searched;          // "PATH@BASE"
  };
  struct ProcState {
    int depth = 0;
    std::string program;       // the path of its last exec, as the program named it
    std::string exec_path;     // the path of the exec under way
    std::vector<Owned> owned;  // innermost last
    std::vector<Session> sessions;
    std::set<pid_t> threads;
  };
  // An open whose outcome is not known yet, and the transactions its rules began.
  struct PendingOpen {
    std::string path;
    std::vector<uint64_t> began;
    std::map<int, const OpenFile*> before;
    std::vector<size_t> keys;  // the keys the path matches, the descriptor counted under them
    bool fired = false;        // its open rules ran
    bool parked = false;       // it waits: asked again later
  };
  struct Counts {
    uint64_t begins = 0, inside = 0, commits = 0, aborts = 0, refused = 0, left_open = 0, lost = 0;
  };
  // Something that happened, with the values its conditions see.
  struct Happening {
    EventKind kind = EventKind::kExec;
    std::string subject;  // the program (exec, exit) or file (open, close), or the signal
    std::string program;  // the program the process runs (before the exec, for exec)
    Values values;
    int signal = 0;
    bool writing = false;
    // open, close: the rule keys the file matches, and the count of each after the event.
    std::map<size_t, int64_t> counts;
    std::string object;              // call, return: the object defining the function
    Frame* frame = nullptr;          // call, return: the call's frame (its transactions)
    uint64_t txn = 0;                // conflict: the transaction the system aborted
    size_t only_profile = SIZE_MAX;  // conflict: the profile that began it
  };
  static Happening Make(EventKind kind, std::string subject, std::string program) {
    Happening h;
    h.kind = kind;
    h.subject = std::move(subject);
    h.program = std::move(program);
    return h;
  }

  ProcState& StateOf(const Thread& t);
  Decision Dispatch(Thread& t, SyscallRegs& call);  // OnEntry, call by call
  // Runs the first rule of each profile that matches; returns the transactions it began.
  std::vector<uint64_t> Fire(Thread& t, const Happening& h);
  bool Matches(const Rule& r, const Happening& h) const;
  void Act(Thread& t, size_t profile, const Rule& r, const Action& a, const Happening& h,
           std::vector<uint64_t>* began);
  void Begin(Thread& t, size_t profile, const Rule& r, const Action& a, const Happening& h,
             std::vector<uint64_t>* began);
  // Commits or aborts owned[index] (of `t`'s process or one of its calls) and reports how it
  // ended.
  void EndOwned(Thread& t, std::vector<Owned>& owned, size_t index, bool commit,
                const std::string& cause);
  // Aborts what a call begun and never ended (the thread left it another way, or ended).
  void LeaveFrame(Thread& t, Frame& f, const std::string& how);
  void LeaveFrames(Thread& t, pid_t tid, const std::string& how);
  // A stop at an unwinder's start (kUnwind): the thread's calls under way get their real
  // return addresses back, as the unwinder reads them; at a catch (kCatch, `rsp` in the
  // catching frame), the calls below it were left (aborted) and the others are watched again.
  void Unwinding(Thread& t, Hook hook, uint64_t rsp);
  // Searches the objects mapped executable in `t`'s address space for watched functions not
  // searched yet and plants breakpoints at them.
  void PlantNew(Thread& t);
  // Plants breakpoints at the watched functions of the object at `path`, mapped executable at
  // [start, end) from file offset `offset`.
  void PlantInMapping(Thread& t, Space& space, const std::string& path, uint64_t start,
                      uint64_t end, uint64_t offset);
  // Aborts, as if never begun, the transactions an open's rules began when it did not happen.
  void Undo(Thread& t, const std::vector<uint64_t>& began);
  static int64_t CountOf(const ProcState& s, size_t key);
  Decision Open(Thread& t, SyscallRegs& call, int dirfd, uint64_t path_addr);
  void Opened(Thread& t, PendingOpen& p);
  // Descriptors of sessions that are gone (closed, replaced, closed on exec): close events.
  void Closed(Thread& t);
  void Trace(const Thread& t, const std::string& text);
  std::string Describe(const Happening& h) const;

  std::unique_ptr<CallHandler> inner_;
  TxnControl& txns_;
  std::vector<Profile> profiles_;
  FILE* trace_;
  // The distinct (pattern, write) pairs of open and close rules; a rule's key is its index.
  std::vector<std::pair<std::string, bool>> files_;
  std::vector<std::vector<size_t>> rule_keys_;  // [profile][rule] -> key (SIZE_MAX: none)
  bool any_file_rules_ = false;
  std::unordered_map<pid_t, ProcState> procs_;      // by tgid
  std::unordered_map<pid_t, PendingOpen> pending_;  // by tid
  // Transactions begun, by id: their profile and the thread that began them.
  struct Live {
    size_t profile = 0;
    pid_t tid = 0;
  };
  std::unordered_map<uint64_t, Live> live_;
  std::vector<uint64_t> doomed_;    // aborted by the system, not yet seen by the rules
  std::set<uint64_t> doomed_seen_;  // seen, and counted: not counted again at their end
  // Runs the conflict rules for the transactions the system aborted since the last time.
  void HandleDoomed();
  // Where `t`'s transactions are kept: its process's, and each call under way in `t`.
  std::vector<std::vector<Owned>*> OwnedLists(Thread& t);
  std::vector<Counts> counts_;
  std::vector<Watched> watched_;  // the profiles' functions, then the hooks
  size_t profile_watched_ = 0;    // how many of watched_ are the profiles'
  std::vector<std::string> watched_names_;
  std::unordered_map<pid_t, Space> spaces_;  // by tgid
  // Calls under way in a thread (innermost last), and calls judged left (by longjmp, or a
  // stack switch) whose return may still come back to a breakpoint: it is sent on to the real
  // return address, never taken for a new call.
  struct Calls {
    std::vector<Frame> live;
    std::vector<Frame> left;  // the latest kLeftKept
  };
  static constexpr size_t kLeftKept = 64;
  std::unordered_map<pid_t, Calls> frames_;  // by tid
  // A breakpoint hit: its address, the function's name and the object defining it.
  struct Site {
    uint64_t addr;
    std::string symbol, object;
  };
  // Moves the innermost call under way to the calls left, aborting what it began.
  void LeaveInnermost(Thread& t, Calls& calls);
  // At a breakpoint: true when it was the return of a call under way or left (the thread sent
  // on to the real return address, the return rules run); otherwise it is a call.
  bool ReturnedTo(Thread& t, Calls& calls, user_regs_struct& regs, const Site& at);
  // A call of a watched function: its return address replaced, the call rules run.
  void CalledAt(Thread& t, Calls& calls, user_regs_struct& regs, const Breakpoint& bp,
                const Site& at);
  std::unordered_map<pid_t, bool> mapping_;  // exec mmaps under way: whether the inner handler
                                             // asked for the exit too
  std::set<std::string> unwatchable_;        // reported once each
  std::set<size_t> found_;                   // watched functions found in some object
  // --stats: breakpoints placed, and their hits as calls and as returns.
  uint64_t planted_ = 0, call_hits_ = 0, return_hits_ = 0, unwind_hits_ = 0;
};

}  // namespace amino::monitor::profiles
