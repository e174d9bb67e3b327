// Threads and processes of the traced tree. A Thread is a kernel task (tid); a Process is a
// thread group (tgid). Descriptor tables and file-system contexts (cwd, umask) are separate
// objects shared exactly as clone() shares them (CLONE_FILES, CLONE_FS).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "monitor/working_dir.h"

namespace amino::monitor {

// An open file description the monitor services (a shadow descriptor's target).
struct OpenFile {
  virtual ~OpenFile() = default;
  // The inode of the kernel object the tracee holds in the file's place (a placeholder), to
  // recognise it when it is passed on; 0 when the tracee holds the kernel's own descriptor.
  ino_t placeholder_ino = 0;
};

struct FdTable {
  std::map<int, std::shared_ptr<OpenFile>> files;
};

struct FsContext {
  WorkingDir cwd;
  mode_t umask = 022;
  // The process called chroot (perhaps with success): "/" may not be the monitor's.
  bool root_changed = false;
};

class SharedRegion;

struct Process {
  pid_t tgid = 0;
  pid_t parent_tgid = 0;
  std::shared_ptr<FdTable> fds;
  std::shared_ptr<FsContext> fs;
  int mem_fd = -1;                       // /proc/TGID/mem, opened on first use; reopened after exec
  int pidfd = -1;                        // pidfd_open(tgid), likewise (ProcessPidFd)
  std::shared_ptr<SharedRegion> region;  // per address space; gone after exec
  ~Process();
};

// The process's pidfd, opened on first use and kept while the monitor follows the process (a
// descriptor copy per dup costs no pidfd_open then), or -errno.
int ProcessPidFd(Process& p);
// A copy of the process's descriptor `fd` in the monitor (pidfd_getfd: the same open file
// description), or -errno (EBADF: `fd` is not open).
int CopyProcessFd(Process& p, int fd);

// One address space: a Thread holds it, with every task that shares its memory (its threads,
// a CLONE_VM child), so the holders' count says whether another task could change the memory
// while the monitor looks at a call's arguments.
struct AddressSpace {};

struct Thread {
  enum class State {
    kRunning,        // resumed by the monitor
    kAwaitingStart,  // created by a clone event; its first stop has not arrived
    kEarlyStop,      // first stop arrived before the parent's clone event: held
  };
  pid_t tid = 0;
  std::shared_ptr<Process> proc;
  std::shared_ptr<AddressSpace> memory = std::make_shared<AddressSpace>();
  // Another traced task shares this one's memory.
  bool SharesMemory() const { return memory.use_count() > 1; }
  // Another traced task shares this one's descriptor table: a thread of its process (only
  // threads hold the process), or a process made with CLONE_FILES.
  bool SharesFdTable() const { return proc.use_count() > 1 || proc->fds.use_count() > 1; }
  State state = State::kRunning;
  bool want_exit_stop = false;     // resume with PTRACE_SYSCALL to see this call's exit
  bool exit_at_interrupt = false;  // a notified call's result is read at the interrupt stop
  bool stop_on_restart = false;    // a notified call is marked at the interrupt stop to stop
  bool restart_marked = false;     // ... and was: its mark is taken off at its seccomp stop
  bool restart_unmarked = false;   // ... and was, for the stop being handled
  // ... where it was let run: the kernel checks it against the filter again, which notifies
  // it, unmarked; that notification is answered at once (Tracer::PassRecheck).
  bool recheck_pending = false;
  unsigned long long recheck_args[6] = {};
  bool starting = false;        // the command's process before its exec: not traced yet
  bool in_syscall = false;      // ptrace backend: between entry and exit stops
  long pending_nr = -1;         // the call whose exit is awaited
  bool parked_seccomp = false;  // a parked call was stopped by the filter (not PTRACE_SYSCALL)
  long interrupted_nr = -1;     // a parked call given way to a signal: restarted at its exit
  unsigned long stop_data = 0;  // the filter's data at the last seccomp stop
  unsigned long long pending_args[6] = {};
  // The last notified call the kernel was let to run (or failed with ERESTARTSYS as a kernel
  // wait fails). An ERESTARTSYS at a signal-delivery stop for that very call is the kernel's
  // own; any other comes from the filter's wait, which a signal ends before the monitor sees
  // the call: nothing ran, and the call must run after the handler (see Tracer::HandleStop).
  struct NotifiedCall {
    long nr = -1;
    unsigned long long args[6] = {};
    unsigned long long ip = 0;
  } let_run;
  // Signals that arrived while the monitor ran calls in this thread, raised again for it
  // afterwards: their original siginfo, restored at their delivery stop.
  std::vector<siginfo_t> reraised;
};

class ProcessTable {
 public:
  Thread* Find(pid_t tid);
  // The first process of the tree.
  Thread& AddRoot(pid_t pid);
  // A task created by `parent` with clone `flags` (CLONE_THREAD, CLONE_FILES, CLONE_FS).
  Thread& AddChild(Thread& parent, pid_t tid, unsigned long flags);
  // A task whose first stop came before its parent's clone event.
  Thread& AddEarly(pid_t tid);
  // After exec by `tid`, which was `former_tid` before (a non-leader exec takes the leader's
  // tid): the other threads of the group are gone.
  Thread& OnExec(pid_t tid, pid_t former_tid);
  void Remove(pid_t tid);
  bool empty() const { return threads_.empty(); }
  size_t size() const { return threads_.size(); }

 private:
  std::unordered_map<pid_t, std::unique_ptr<Thread>> threads_;
};

}  // namespace amino::monitor
