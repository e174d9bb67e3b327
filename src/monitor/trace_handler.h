// --trace: prints each trapped call strace-like ("[pid 12] openat(AT_FDCWD, "f", O_RDONLY) = 3")
// around another handler, whose decisions it does not change (it only asks to see the exit).
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>

#include "monitor/call_handler.h"

namespace amino::monitor {

class TraceHandler : public CallHandler {
 public:
  TraceHandler(std::unique_ptr<CallHandler> inner, FILE* out)
      : inner_(std::move(inner)), out_(out) {}
  Decision OnEntry(Thread& t, SyscallRegs& call) override;
  void OnExit(Thread& t, SyscallRegs& call) override;
  void OnExec(Thread& t) override { inner_->OnExec(t); }
  void OnProcessExit(Thread& t, int wait_status) override { inner_->OnProcessExit(t, wait_status); }
  void OnTaskExit(Thread& t) override { inner_->OnTaskExit(t); }
  void OnSignal(Thread& t, int sig) override { inner_->OnSignal(t, sig); }
  bool OnBreakpoint(Thread& t) override { return inner_->OnBreakpoint(t); }
  void PrintStats(FILE* out) const override { inner_->PrintStats(out); }
  void OnNewTask(Thread& parent, Thread& child, bool thread) override {
    inner_->OnNewTask(parent, child, thread);
  }
  void Finish() override { inner_->Finish(); }
  std::vector<long> ExtraTrapped() const override { return inner_->ExtraTrapped(); }
  std::vector<std::string> CoveredPoints() const override { return inner_->CoveredPoints(); }
  // Every call's result is printed, so every call stops at its exit.
  bool NeedsStop(long) const override { return true; }
  bool Emulates() const override { return inner_->Emulates(); }
  uint64_t Releases() const override { return inner_->Releases(); }
  void SetListener(ptrace_ext::NotifyListener* listener) override { inner_->SetListener(listener); }
  void SetExitSink(std::function<void(pid_t, int)> sink) override { inner_->SetExitSink(sink); }
  void SetProcessTable(ProcessTable* table) override { inner_->SetProcessTable(table); }

 private:
  void Print(const Thread& t, const std::string& text, long result);
  std::unique_ptr<CallHandler> inner_;
  FILE* out_;
  struct Pending {
    std::string text;
    bool inner_wants_exit = false;
  };
  std::unordered_map<pid_t, Pending> pending_;
};

// The call formatted as "name(arg, ...)" with paths read from the tracee.
std::string FormatCall(Thread& t, const SyscallRegs& call);

}  // namespace amino::monitor
