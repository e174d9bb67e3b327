// librvm and the application's own SIGSEGV handler. Every scenario runs in a child process,
// because signal dispositions belong to the whole process.
#include <gtest/gtest.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>

#include <cstring>

#include "amino/rvm.h"
#include "rvm_test_util.h"

namespace amino::rvm::testing {
namespace {

sigjmp_buf g_jump;
volatile sig_atomic_t g_calls = 0;
void* volatile g_last_addr = nullptr;

void AppSigaction(int, siginfo_t* info, void*) {
  g_calls = g_calls + 1;
  g_last_addr = info->si_addr;
  siglongjmp(g_jump, 1);
}

void AppHandler(int) {
  g_calls = g_calls + 1;
  g_last_addr = nullptr;  // a plain handler is not told the address
  siglongjmp(g_jump, 1);
}

// Writes `value` to `p`; true if the write faulted into the application's handler.
bool WriteFaults(volatile char* p, char value) {
  if (sigsetjmp(g_jump, 1) != 0) return true;
  *p = value;
  return false;
}

void InstallAppSigaction() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = AppSigaction;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
}

// The checks shared by the scenarios, once the application's handler is in place (returns an
// exit code: 0 = all good, else the number of the failed check).
int CheckChaining() {
  rvm_region* r = nullptr;
  if (rvm_map(2 * PageBytes(), 0, &r) != 0) return 10;
  auto* m = static_cast<volatile char*>(rvm_base(r));
  void* guard = mmap(nullptr, PageBytes(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

  // RVM's faults never reach the application.
  rvm_begin();
  if (WriteFaults(m, 'a')) return 1;
  if (WriteFaults(m + PageBytes(), 'b')) return 2;
  rvm_commit();
  if (g_calls != 0) return 3;
  // A fault that is not RVM's does, with its address.
  if (!WriteFaults(static_cast<volatile char*>(guard), 'x')) return 4;
  if (g_calls != 1 || (g_last_addr != guard && g_last_addr != nullptr)) return 5;
  // So does a refused write (outside a transaction); the write does not happen.
  if (!WriteFaults(m, 'c')) return 6;
  if (g_calls != 2 || m[0] != 'a') return 7;
  // And RVM keeps working afterwards.
  rvm_begin();
  if (WriteFaults(m, 'd')) return 8;
  rvm_abort();
  if (m[0] != 'a' || g_calls != 2) return 9;
  return 0;
}

TEST(SignalTest, HandlerInstalledBeforeTheFirstRegionGetsForeignFaults) {
  EXPECT_EQ(RunInChild([] {
              InstallAppSigaction();
              return CheckChaining();
            }),
            0);
}

TEST(SignalTest, HandlerInstalledAfterTheFirstRegionGetsForeignFaults) {
  EXPECT_EQ(RunInChild([] {
              rvm_region* first = nullptr;
              if (rvm_map(PageBytes(), 0, &first) != 0) return 20;
              InstallAppSigaction();
              // sigaction reports the application's handler, not librvm's.
              struct sigaction now;
              if (sigaction(SIGSEGV, nullptr, &now) != 0) return 21;
              if (!(now.sa_flags & SA_SIGINFO) || now.sa_sigaction != AppSigaction) return 22;
              return CheckChaining();
            }),
            0);
}

TEST(SignalTest, HandlerInstalledWithSignalGetsForeignFaults) {
  EXPECT_EQ(RunInChild([] {
              rvm_region* first = nullptr;
              if (rvm_map(PageBytes(), 0, &first) != 0) return 20;
              if (signal(SIGSEGV, AppHandler) == SIG_ERR) return 21;
              if (signal(SIGSEGV, AppHandler) != AppHandler) return 22;
              return CheckChaining();
            }),
            0);
}

TEST(SignalTest, ResetHandHandlerRunsOnceThenTheDefaultKills) {
  int status = RunInChild([] {
    rvm_region* r = nullptr;
    if (rvm_map(PageBytes(), 0, &r) != 0) return 20;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = AppHandler;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGSEGV, &sa, nullptr);
    void* guard = mmap(nullptr, PageBytes(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!WriteFaults(static_cast<volatile char*>(guard), 'x') || g_calls != 1) return 21;
    rvm_begin();
    if (WriteFaults(static_cast<volatile char*>(rvm_base(r)), 'y')) return 22;  // RVM's still
    rvm_commit();
    WriteFaults(static_cast<volatile char*>(guard), 'x');
    return 23;  // not reached: the second foreign fault takes the default action
  });
  EXPECT_NE(status, 0);
  EXPECT_NE(status, 21);
  EXPECT_NE(status, 22);
  EXPECT_NE(status, 23);
}

sigset_t g_mask_in_handler;

void MaskRecordingHandler(int) {
  pthread_sigmask(SIG_SETMASK, nullptr, &g_mask_in_handler);
  siglongjmp(g_jump, 1);
}

TEST(SignalTest, TheApplicationsHandlerRunsWithTheMaskItAskedFor) {
  EXPECT_EQ(RunInChild([] {
              rvm_region* r = nullptr;
              if (rvm_map(PageBytes(), 0, &r) != 0) return 20;
              struct sigaction sa;
              std::memset(&sa, 0, sizeof sa);
              sa.sa_handler = MaskRecordingHandler;
              sigemptyset(&sa.sa_mask);
              sigaddset(&sa.sa_mask, SIGUSR1);
              sigaction(SIGSEGV, &sa, nullptr);
              sigset_t before;
              sigemptyset(&before);
              sigaddset(&before, SIGHUP);  // blocked by the interrupted code: stays blocked
              pthread_sigmask(SIG_SETMASK, &before, nullptr);
              void* guard =
                  mmap(nullptr, PageBytes(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
              if (!WriteFaults(static_cast<volatile char*>(guard), 'x')) return 21;
              if (sigismember(&g_mask_in_handler, SIGUSR1) != 1) return 22;
              if (sigismember(&g_mask_in_handler, SIGHUP) != 1) return 23;
              if (sigismember(&g_mask_in_handler, SIGSEGV) != 1) return 24;
              if (sigismember(&g_mask_in_handler, SIGUSR2) != 0) return 25;
              if (sigismember(&g_mask_in_handler, SIGTERM) != 0) return 26;
              return 0;
            }),
            0);
}

TEST(SignalTest, SigsegvSentWithKillGoesToTheApplication) {
  EXPECT_EQ(RunInChild([] {
              rvm_region* r = nullptr;
              if (rvm_map(PageBytes(), 0, &r) != 0) return 20;
              InstallAppSigaction();
              rvm_begin();
              if (sigsetjmp(g_jump, 1) == 0) {
                raise(SIGSEGV);
                return 21;
              }
              rvm_abort();
              return g_calls == 1 ? 0 : 22;
            }),
            0);
}

TEST(SignalDeathTest, WithoutAnApplicationHandlerAForeignFaultKills) {
  rvm_region* r = nullptr;
  ASSERT_EQ(rvm_map(PageBytes(), 0, &r), 0);
  EXPECT_DEATH(
      {
        void* guard = mmap(nullptr, PageBytes(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        *static_cast<volatile char*>(guard) = 1;
      },
      "");
  EXPECT_EQ(rvm_unmap(r), 0);
}

}  // namespace
}  // namespace amino::rvm::testing
