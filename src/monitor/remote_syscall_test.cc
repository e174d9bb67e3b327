// RemoteSyscalls on a real traced process: calls run in the tracee, and a process that ends
// while one of its calls is in flight is reported gone, never waited for.
#include "monitor/remote_syscall.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "ptrace-ext/ptrace.h"

namespace amino::monitor {
namespace {

using ptrace_ext::Ptrace;

int go_pipe[2];

// The second thread of the traced child: ends the whole process when told to.
void* EndProcessWhenTold(void*) {
  char c;
  while (read(go_pipe[0], &c, 1) < 0 && errno == EINTR) {
  }
  usleep(100 * 1000);  // the leader is in its injected call by then
  syscall(SYS_exit_group, 7);
  return nullptr;
}

// The traced child: starts the thread, then calls getpid until the test stops it there.
[[noreturn]] void Child(bool with_thread) {
  raise(SIGSTOP);
  pthread_t thread;
  if (with_thread && pthread_create(&thread, nullptr, EndProcessWhenTold, nullptr) != 0) _exit(100);
  for (;;) syscall(SYS_getpid);
}

// Traces a forked child to the entry stop of one of its getpid calls.
class TracedChild {
 public:
  explicit TracedChild(bool with_thread) {
    EXPECT_EQ(pipe(go_pipe), 0);
    pid_ = fork();
    if (pid_ == 0) Child(with_thread);
    EXPECT_EQ(Ptrace(PTRACE_SEIZE, pid_, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE), 0);
  }
  ~TracedChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      while (waitpid(-1, nullptr, __WALL) > 0) {
      }
    }
    close(go_pipe[0]);
    close(go_pipe[1]);
  }

  // Runs the child (and its thread, untraced between stops) until its leader is at a getpid
  // entry stop; the registers there in `regs`.
  bool StopAtGetpid(SyscallRegs* regs, bool want_thread) {
    bool thread_running = !want_thread;  // its first stop seen and resumed
    for (;;) {
      int status;
      const pid_t tid = waitpid(-1, &status, __WALL);
      if (tid < 0 || !WIFSTOPPED(status)) return false;
      if (tid != pid_) {
        Ptrace(PTRACE_CONT, tid);  // the thread: runs until the process ends
        thread_running = true;
        continue;
      }
      if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
        Ptrace(PTRACE_GETREGS, pid_, 0, &regs->regs);
        const bool entry = regs->regs.rax == static_cast<unsigned long long>(-ENOSYS);
        if (entry && regs->nr() == SYS_getpid && thread_running) return true;
      }
      const int sig = WSTOPSIG(status);
      const bool deliver = status >> 16 == 0 && sig != (SIGTRAP | 0x80) && sig != SIGSTOP;
      Ptrace(PTRACE_SYSCALL, pid_, 0, deliver ? sig : 0);
    }
  }

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

TEST(RemoteSyscallsTest, RunsCallsInTheTraceeAndPutsItsOwnCallBack) {
  TracedChild child(false);
  SyscallRegs regs;
  ASSERT_TRUE(child.StopAtGetpid(&regs, false));
  Thread t;
  t.tid = child.pid();
  RemoteSyscalls remote(t, regs, false, [](pid_t, int) {});
  // getppid in the child is the test; gettid is the child itself.
  EXPECT_EQ(remote.Call(SYS_getppid), getpid());
  EXPECT_EQ(remote.Call(SYS_gettid), child.pid());
  EXPECT_TRUE(remote.alive());
  ASSERT_TRUE(remote.Finish());
  // The child's own getpid runs again from its start: the next stop is its entry.
  ASSERT_EQ(Ptrace(PTRACE_SYSCALL, child.pid()), 0);
  int status;
  ASSERT_EQ(waitpid(child.pid(), &status, __WALL), child.pid());
  ASSERT_TRUE(WIFSTOPPED(status));
  SyscallRegs again;
  Ptrace(PTRACE_GETREGS, child.pid(), 0, &again.regs);
  EXPECT_EQ(again.nr(), SYS_getpid);
  EXPECT_EQ(again.regs.rax, static_cast<unsigned long long>(-ENOSYS));
}

TEST(RemoteSyscallsTest, ProcessEndedByAnotherThreadDuringACallIsReportedGone) {
  // The leader is in an injected pause() when its other thread calls exit_group. The kernel
  // reports a leader's end only after the other threads are reaped, which is the tracer's
  // work: waiting for the leader alone would never return.
  TracedChild child(true);
  SyscallRegs regs;
  ASSERT_TRUE(child.StopAtGetpid(&regs, true));
  Thread t;
  t.tid = child.pid();
  std::map<pid_t, int> reported;
  RemoteSyscalls remote(t, regs, false, [&](pid_t tid, int status) { reported[tid] = status; });
  ASSERT_EQ(write(go_pipe[1], "g", 1), 1);
  alarm(20);  // a wait that never ends fails the test rather than hanging it
  EXPECT_EQ(remote.Call(SYS_pause), -ESRCH);
  alarm(0);
  EXPECT_FALSE(remote.alive());
  // Every task's end is left to the tracer: the thread first, then the leader with the status.
  int leader_status = -1;
  for (;;) {
    int status;
    const pid_t tid = waitpid(-1, &status, __WALL);
    if (tid < 0) break;
    if (tid == child.pid() && (WIFEXITED(status) || WIFSIGNALED(status))) leader_status = status;
  }
  ASSERT_TRUE(WIFEXITED(leader_status));
  EXPECT_EQ(WEXITSTATUS(leader_status), 7);
  EXPECT_TRUE(reported.empty());
}

}  // namespace
}  // namespace amino::monitor
