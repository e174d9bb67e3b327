// Starting the traced command: the filter's rules from the call table and the handler, the
// child that installs them and execs, and the monitor seizing it (tracer.h).
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "amino/amino.h"
#include "monitor/mount_cover.h"
#include "monitor/syscall_numbers.h"
#include "monitor/syscall_table.h"
#include "monitor/tracer.h"
#include "ptrace-ext/ptrace.h"
#include "ptrace-ext/seccomp_filter.h"

namespace amino::monitor {

using ptrace_ext::Backend;
using ptrace_ext::Ptrace;

std::vector<ptrace_ext::TrapRule> Tracer::FilterRules() {
  for (long nr : FileSyscalls()) trapped_.insert(nr);
  for (long nr : handler_.ExtraTrapped()) trapped_.insert(nr);
  const bool notify = options_.backend == Backend::kNotify;
  std::vector<ptrace_ext::TrapRule> rules;
  for (long nr : trapped_) {
    ptrace_ext::TrapRule r{nr, notify && !handler_.NeedsStop(nr)};
    if (r.notify) notified_.insert(nr);
    if (const auto when = handler_.TrapOnlyWhen(nr); !when.empty()) {
      using Op = CallHandler::TrapCondition::Op;
      for (const CallHandler::TrapCondition& c : when) {
        ptrace_ext::TrapRule one = r;
        one.arg = c.arg;
        if (c.op == Op::kEquals) {
          one.mask = ~uint64_t{0}, one.value = c.value;
        } else {
          one.cmp = ptrace_ext::TrapRule::Cmp::kGreater;
          one.value = c.op == Op::kNonzero ? 0 : c.value;
        }
        rules.push_back(one);
      }
      continue;
    }
    // Anonymous mappings are the loader's and malloc's bread and butter: only file mappings.
    if (nr == SYS_mmap) {
      r.arg = 3, r.mask = MAP_ANONYMOUS, r.value = 0;
      if (r.notify) {
        // A notified mmap the handler serves only at a stop is restarted with kStopMark in its
        // flags' upper half (StopOnRestart), which this rule stops.
        r.mask |= kStopMark;
        rules.push_back({nr, false, 3, MAP_ANONYMOUS | kStopMark, kStopMark});
      }
    }
    if (r.notify && (nr == SYS_open || nr == SYS_openat)) {
      // The listener cannot install an O_PATH descriptor (ADDFD takes only files that can be
      // read or written), so an O_PATH open the monitor must change (a substitute path: `..`
      // out of a mount, a stored link leading out of it) stops, to be given other registers.
      // Rare: glibc and coreutils open with O_PATH only in a few calls.
      const int flags_arg = nr == SYS_openat ? 2 : 1;
      ptrace_ext::TrapRule opath{nr, false, flags_arg, O_PATH, O_PATH};
      rules.push_back(opath);
      r.arg = flags_arg, r.mask = O_PATH, r.value = 0;
    }
    rules.push_back(r);
  }
  // A child must never escape tracing: CLONE_UNTRACED is taken out of clone's flags (a register
  // rewrite: a stop) and refused in clone3's (in memory the monitor does not write).
  rules.push_back({SYS_clone, false, 0, CLONE_UNTRACED, CLONE_UNTRACED});
  rules.push_back({SYS_clone3, notify});
  // Refusals (see Refusal) cost nothing in the filter; a call the handler traps anyway is
  // refused at its stop instead, since one call cannot have two unconditional actions.
  monitor_ = getpid();
  const uint64_t me = static_cast<uint32_t>(monitor_);
  const ptrace_ext::TrapRule refusals[] = {
      // io_uring's operations reach files with no system call to trap. ENOSYS, as on a kernel
      // built without it, is what its users (libuv, liburing programs) take for "fall back to
      // plain calls"; container runtimes refuse it too.
      {SYS_io_uring_setup, false, -1, 0, 0, ENOSYS},
      {SYS_io_uring_enter, false, -1, 0, 0, ENOSYS},
      {SYS_io_uring_register, false, -1, 0, 0, ENOSYS},
      // Pids are ints: the kernel ignores the upper half of the register, and so does the test.
      {SYS_pidfd_open, false, 0, 0xffffffff, me, EPERM},
      {SYS_ptrace, false, 1, 0xffffffff, me, EPERM},
      {SYS_process_vm_readv, false, 0, 0xffffffff, me, EPERM},
      {SYS_process_vm_writev, false, 0, 0xffffffff, me, EPERM},
  };
  for (const ptrace_ext::TrapRule& r : refusals) {
    if (!trapped_.count(r.nr)) rules.push_back(r);
  }
  // A filter with a listener stops to be refused (see Refusal). Under the notify backend the
  // kernel refuses it already: the monitor's filter has a listener.
  if (!notify) {
    rules.push_back({SYS_seccomp, false, 1, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                     SECCOMP_FILTER_FLAG_NEW_LISTENER});
  }
  return rules;
}

void Tracer::ExecCommand(const std::vector<ptrace_ext::TrapRule>& rules,
                         const std::vector<std::string>& covered, int sync_fd) {
  char c;
  while (read(sync_fd, &c, 1) < 0 && errno == EINTR) {
  }
  close(sync_fd);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the monitor blocks SIGCHLD for its signalfd
  (void)CoverMountPoints(covered);           // best effort: EPERM without CAP_SYS_ADMIN
  // Under the ptrace backend the monitor starts watching calls at this stop, so the
  // command's first traced call is its execve, as under the filter.
  if (StopsAtEveryEntry()) raise(SIGSTOP);
  if (!StopsAtEveryEntry()) {
    int listener = -1;
    std::string err = ptrace_ext::InstallFilter(rules, &listener);
    if (err.empty()) {
      err = ptrace_ext::InstallRefusalFrom(kFirstUnknownSyscall, AMINO_SYS_BASE,
                                           AMINO_SYS_BASE + AMINO_SYS_COUNT);
    }
    if (!err.empty()) {
      std::fprintf(stderr, "amino run: %s\n", err.c_str());
      _exit(126);
    }
    // The monitor takes the listener at this stop; it closes here at exec.
    if (listener >= 0) raise(SIGSTOP);
  }
  std::vector<char*> argv;
  for (const std::string& a : options_.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  int err = errno;
  std::fprintf(stderr, "amino run: %s: %s\n", argv[0], std::strerror(err));
  _exit(err == ENOENT ? 127 : 126);
}

bool Tracer::StartCommand() {
  const std::vector<ptrace_ext::TrapRule> rules = FilterRules();
  const std::vector<std::string> covered = handler_.CoveredPoints();
  int sync[2];
  if (pipe2(sync, O_CLOEXEC) != 0) return false;
  pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "amino run: fork: %s\n", std::strerror(errno));
    return false;
  }
  if (pid == 0) {
    close(sync[1]);
    ExecCommand(rules, covered, sync[0]);
  }
  close(sync[0]);
  long opts = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
              PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;
  if (!StopsAtEveryEntry()) opts |= PTRACE_O_TRACESECCOMP;
  if (Ptrace(PTRACE_SEIZE, pid, 0, opts) != 0 || Ptrace(PTRACE_INTERRUPT, pid) != 0) {
    std::fprintf(stderr, "amino run: cannot trace: %s\n", std::strerror(errno));
    kill(pid, SIGKILL);
    close(sync[1]);
    return false;
  }
  // Not dumpable from here on: no process of the monitor's uid without CAP_SYS_PTRACE can
  // attach to it, read or write its memory, or take its descriptors (the listener) with
  // pidfd_getfd. Only now: the child was forked dumpable, so the monitor could seize it.
  // Its own /proc/self entries stay readable to it (the kernel lets a thread group at itself).
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    std::fprintf(stderr, "amino run: prctl(PR_SET_DUMPABLE): %s\n", std::strerror(errno));
    kill(pid, SIGKILL);
    close(sync[1]);
    return false;
  }
  root_ = pid;
  table_.AddRoot(pid).starting = StopsAtEveryEntry() || options_.backend == Backend::kNotify;
  close(sync[1]);  // the child may go on: it is traced
  return true;
}

}  // namespace amino::monitor
