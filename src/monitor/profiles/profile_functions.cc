// ProfileHandler: call and return events of watched functions. Breakpoints are planted at
// the functions an exec or a library mapping brings (PlantNew); a stop at one is a call, or
// the return of a call under way, whose return address was replaced by the breakpoint's
// (OnBreakpoint). While a C++ exception passes, the calls under way have their real return
// addresses back, so the unwinder can walk through them (Unwinding).
#include <fnmatch.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "monitor/profiles/elf_symbols.h"
#include "monitor/profiles/profile_handler.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::profiles {

void ProfileHandler::LeaveFrame(Thread& t, Frame& f, const std::string& how) {
  while (!f.owned.empty()) {
    counts_[f.owned.back().profile].left_open++;
    EndOwned(t, f.owned, f.owned.size() - 1, false,
             "the end of a call of " + watched_[f.function].name + " (" + how + ")");
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
  if (const Hook hook = watched_[bp.function].hook; hook != Hook::kNone) {
    Unwinding(t, hook, regs.rsp);
    if (StepOver(*t.proc, bp, regs) == 0) ptrace(PTRACE_SETREGS, t.tid, 0, &regs);
    return true;
  }
  const Site at{addr, sp->second.symbol[addr], sp->second.object[addr]};
  Calls& calls = frames_[t.tid];
  if (!ReturnedTo(t, calls, regs, at)) CalledAt(t, calls, regs, bp, at);
  return true;
}

void ProfileHandler::LeaveInnermost(Thread& t, Calls& calls) {
  Frame& f = calls.live.back();
  if (f.exposed) {
    // An exception took it (caught where the monitor did not see the catch): its return
    // address is the real one, so no late return comes back here.
    LeaveFrame(t, f, "left by an exception");
  } else {
    LeaveFrame(t, f, "left without returning: longjmp");
    f.owned.clear();
    calls.left.push_back(std::move(f));
    if (calls.left.size() > kLeftKept) calls.left.erase(calls.left.begin());
  }
  calls.live.pop_back();
}

bool ProfileHandler::ReturnedTo(Thread& t, Calls& calls, user_regs_struct& regs, const Site& at) {
  std::vector<Frame>& frames = calls.live;
  for (size_t i = frames.size(); i-- > 0;) {
    if (frames[i].exposed || frames[i].entry != at.addr || frames[i].entry_rsp + 8 != regs.rsp) {
      continue;
    }
    // The return of call i. Calls begun after it and still open were left by a longjmp.
    while (frames.size() > i + 1) LeaveInnermost(t, calls);
    Frame f = std::move(frames.back());
    frames.pop_back();
    return_hits_++;
    regs.rip = f.return_to;
    if (ptrace(PTRACE_SETREGS, t.tid, 0, &regs) != 0) return true;
    if (f.inherited) return true;
    ProcState& s = StateOf(t);
    Happening h = Make(EventKind::kReturn, at.symbol, s.program);
    h.object = at.object;
    h.values.result = static_cast<int32_t>(regs.rax & 0xffffffff);
    h.values.depth = s.depth;
    h.frame = &f;
    Fire(t, h);
    LeaveFrame(t, f, "returned, and no rule ended its transaction");
    return true;
  }
  for (auto l = calls.left.begin(); l != calls.left.end(); ++l) {
    if (l->entry != at.addr || l->entry_rsp + 8 != regs.rsp) continue;
    // The return of a call judged left: it goes on where it was called from.
    regs.rip = l->return_to;
    calls.left.erase(l);
    return_hits_++;
    ptrace(PTRACE_SETREGS, t.tid, 0, &regs);
    return true;
  }
  return false;
}

void ProfileHandler::CalledAt(Thread& t, Calls& calls, user_regs_struct& regs, const Breakpoint& bp,
                              const Site& at) {
  std::vector<Frame>& frames = calls.live;
  uint64_t return_to = 0;
  if (ReadMemory(*t.proc, regs.rsp, &return_to, sizeof return_to) != 0) return;
  // Calls whose frames are above this one's were left without returning; one at the same
  // place was too, unless its own replaced return address is what this call returns to (a
  // tail call: it returns when this one does).
  while (!frames.empty() && (frames.back().entry_rsp < regs.rsp ||
                             (frames.back().entry_rsp == regs.rsp &&
                              (frames.back().exposed || return_to != frames.back().entry)))) {
    LeaveInnermost(t, calls);
  }
  call_hits_++;
  Frame f;
  f.function = bp.function;
  f.entry = at.addr;
  f.entry_rsp = regs.rsp;
  f.return_to = return_to;
  uint64_t addr = at.addr;
  if (WriteMemory(*t.proc, regs.rsp, &addr, sizeof addr) != 0 || StepOver(*t.proc, bp, regs) != 0 ||
      ptrace(PTRACE_SETREGS, t.tid, 0, &regs) != 0) {
    return;  // the thread is gone
  }
  frames.push_back(std::move(f));
  ProcState& s = StateOf(t);
  Happening h = Make(EventKind::kCall, at.symbol, s.program);
  h.object = at.object;
  h.values.depth = s.depth;
  h.frame = &frames.back();
  Fire(t, h);
}

void ProfileHandler::Unwinding(Thread& t, Hook hook, uint64_t rsp) {
  auto it = frames_.find(t.tid);
  if (it == frames_.end() || it->second.live.empty()) return;
  std::vector<Frame>& frames = it->second.live;
  if (hook == Hook::kUnwind) {
    // The unwinder starts (a throw, a rethrow, pthread_exit) or goes on after a cleanup: it
    // reads every return address above it, and may stop at any of these calls (a catch).
    unwind_hits_++;
    for (Frame& f : frames) {
      if (f.exposed) continue;
      if (WriteMemory(*t.proc, f.entry_rsp, &f.return_to, sizeof f.return_to) != 0) return;
      f.exposed = true;
    }
    return;
  }
  // A catch: the catching function called __cxa_begin_catch, so `rsp` lies just below its
  // frame. Calls whose return address lay at or below it were unwound; the others go on, and
  // their returns are caught again.
  while (!frames.empty() && frames.back().entry_rsp <= rsp) {
    LeaveFrame(t, frames.back(), "left by an exception");
    frames.pop_back();
  }
  for (Frame& f : frames) {
    if (!f.exposed) continue;
    uint64_t slot = 0;
    // A slot that no longer holds the return address: the frame is gone another way, and is
    // judged left at the thread's next watched stop.
    if (ReadMemory(*t.proc, f.entry_rsp, &slot, sizeof slot) != 0 || slot != f.return_to) continue;
    if (WriteMemory(*t.proc, f.entry_rsp, &f.entry, sizeof f.entry) != 0) return;
    f.exposed = false;
  }
}

namespace {

// An executable mapping of a file: where it starts and ends, and its file offset.
struct ExecMapping {
  std::string path;
  uint64_t start, end, offset;
};

std::vector<ExecMapping> ExecMappings(pid_t tgid) {
  std::vector<ExecMapping> execs;
  std::ifstream maps("/proc/" + std::to_string(tgid) + "/maps");
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
  return execs;
}

}  // namespace

void ProfileHandler::PlantNew(Thread& t) {
  Space& space = spaces_[t.proc->tgid];
  const std::vector<ExecMapping> execs = ExecMappings(t.proc->tgid);
  // Breakpoints in code no longer mapped there (dlclose) are forgotten, and the objects
  // searched with them: mapped again, they are searched again.
  for (auto it = space.sites.begin(); it != space.sites.end();) {
    const bool mapped = std::any_of(execs.begin(), execs.end(), [&](const ExecMapping& e) {
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
  for (const ExecMapping& e : execs) {
    const std::string key = e.path + "@" + std::to_string(e.start) + "@" + std::to_string(e.offset);
    if (space.searched.count(key)) continue;
    bool wanted = false;
    for (const Watched& w : watched_) wanted = wanted || MatchesPath(w.object, e.path);
    if (!wanted) continue;
    space.searched.insert(key);
    PlantInMapping(t, space, e.path, e.start, e.end, e.offset);
  }
}

void ProfileHandler::PlantInMapping(Thread& t, Space& space, const std::string& path,
                                    uint64_t start, uint64_t end, uint64_t offset) {
  ElfFunctions elf;
  std::string error;
  if (!ReadElfFunctions(path, watched_names_, &elf, &error)) return;
  // The segment this mapping is gives the load bias.
  auto segment = std::find_if(elf.loads.begin(), elf.loads.end(),
                              [&](const auto& l) { return l.first == offset; });
  if (segment == elf.loads.end()) return;
  const uint64_t bias = start - segment->second;
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
    if (bp.addr < start || bp.addr >= end || space.sites.count(bp.addr)) continue;
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

}  // namespace amino::monitor::profiles
