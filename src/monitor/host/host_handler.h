// --emulate=host: the monitor performs every file call on the host file system itself, as a
// stand-in for Amino's database (the AMINONULL configuration, and the reference for
// differential tests). Regular files and directories opened by a tracee become shadow
// descriptors: the tracee holds a placeholder memfd, the monitor the real descriptor, and every
// call on it is served by the monitor through memory transfers. Paths under /proc, /sys and
// /dev, other file types, exec and chdir are left to the kernel.
#pragma once

#include <linux/openat2.h>
#include <sys/stat.h>

#include <map>
#include <memory>
#include <unordered_map>

#include "monitor/call_handler.h"
#include "monitor/descriptor_calls.h"
#include "monitor/host/host_context.h"

namespace amino::monitor::host {

class HostHandler : public CallHandler {
 public:
  Decision OnEntry(Thread& t, SyscallRegs& call) override;
  void OnExit(Thread& t, SyscallRegs& call) override;
  void OnExec(Thread& t) override;
  void OnTaskExit(Thread& t) override;
  std::vector<long> ExtraTrapped() const override;
  bool NeedsStop(long nr) const override;
  std::vector<TrapCondition> TrapOnlyWhen(long nr) const override;
  bool Emulates() const override { return true; }
  long OnForeignCall(Thread& t, const ForeignCall& call) override;

  // The host file system for another handler (the mount handler), for notified calls that
  // leave a mount: the kernel cannot be given other registers, so the monitor performs them on
  // the host path, as the tracee with credentials `c` (the caller's record of them). No shadow
  // comes of either, and nothing else of this handler is used.
  //
  // A notified open whose path the caller replaced with `host_path`, an absolute host path:
  // the monitor opens it as the tracee, `how` applied, and the tracee gets the real descriptor
  // (/proc shows the directory, fchdir and getdents are the kernel's).
  Decision OpenInstead(SyscallRegs& call, const std::string& host_path, const open_how& how,
                       const Creds& c);
  // The same for `path` relative to the tracee `t`'s directory descriptor `dirfd` (or its cwd),
  // walked from there as the kernel would (ResolveDirFd); an absolute `path` is the host's.
  Decision OpenInstead(Thread& t, SyscallRegs& call, int dirfd, const std::string& path,
                       const open_how& how, const Creds& c);
  // Any other notified call whose path arguments the caller replaced (`with`) by absolute host
  // paths in the shared region: performed, on paths under /proc, /sys and /dev too (which
  // OnEntry leaves to the kernel). A call that is not a path call fails with ENOSYS, never
  // made as the tracee made it.
  Decision PerformInstead(Thread& t, SyscallRegs& with, const Creds& c);

 private:
  // What a thread's rewritten call needs at its exit (the descriptor calls' own: descriptors_).
  struct Pending {
    enum class Kind {
      kNone,
      kRestore,  // only the registers to put back (a path through the shared region)
      kOpen,
      kOnRealFd,  // mmap or fchdir made again on the real descriptor, closed at the exit
    } kind = Kind::kNone;
    SyscallRegs original;  // registers to put back (argument registers) at the exit
    std::shared_ptr<HostFile> file;
    int temp_fd = -1;  // kOnRealFd: the monitor's descriptor, passed to the tracee
  };
  // An mmap or fchdir of a shadow: made again by the kernel on the shadow's own open file
  // description, passed to the tracee for the time of the call (so a file that was unlinked,
  // renamed or had its permissions changed since it was opened behaves as natively).
  Decision OnRealFd(Thread& t, SyscallRegs& call, HostFile& f, int fd_arg);
  // Whether `tid`'s call `nr` is one this handler is making again on a real descriptor (an
  // mmap or fchdir of a shadow): its entry and exit are this handler's.
  bool MakingAgain(pid_t tid, long nr) const;
  // The tracee's umask is applied to each emulated creation; the monitor's must not add to it.
  // (Cleared at the first call: the command was forked with the caller's umask.)
  void ClearOwnUmask();

  Decision OpenCall(Thread& t, SyscallRegs& call);
  // `how`: the open_how the kernel uses (built from open/openat's arguments or openat2's),
  // already checked.
  Decision Open(Thread& t, SyscallRegs& call, int dirfd, uint64_t path_addr, const open_how& how);
  // Under notification: the tracee gets its descriptor from the listener.
  Decision OpenNotified(Thread& t, SyscallRegs& call, int hfd, int flags);
  // OpenInstead's open of `path` relative to the monitor's descriptor `dfd` (or AT_FDCWD).
  Decision OpenAt(SyscallRegs& call, int dfd, const std::string& path, const open_how& how,
                  const Creds& c);
  Decision OpenSpecialNotified(SyscallRegs& call, int dfd, const std::string& path, int flags,
                               const struct stat& st, const Creds& c);
  Decision Fcntl(Thread& t, SyscallRegs& call);
  Decision Mmap(Thread& t, SyscallRegs& call);
  Decision Fchdir(Thread& t, SyscallRegs& call);
  Decision DataCall(Thread& t, SyscallRegs& call, HostFile& f);
  // `instead`: for PerformInstead, which must not leave a call to the kernel.
  Decision PathCall(Thread& t, SyscallRegs& call, const Creds& c, bool instead = false);
  const Creds& CredsOf(Thread& t);

  // close, dup, close_range and SCM_RIGHTS on the shadows; a closed shadow's process gives up
  // its record locks on the file.
  DescriptorCalls descriptors_{[this](Thread& t, OpenFile& f) { ReleasePosixLocksOf(t, f); }};

  // POSIX record locks belong to a process and a file, not to a descriptor: each (file,
  // process) pair gets its own open file description in the monitor, on which the locks are
  // taken as OFD locks. Locks of different processes then conflict, a process never conflicts
  // with itself, and closing the description releases them, as closing any descriptor of the
  // file does for a process.
  struct FileKey {
    dev_t dev;
    ino_t ino;
    auto operator<=>(const FileKey&) const = default;
  };
  Decision PosixLock(Thread& t, SyscallRegs& call, HostFile& f);
  void ReleasePosixLocks(pid_t tgid, const FileKey* file);
  // A descriptor of `f` (a shadow) in t's process is closed.
  void ReleasePosixLocksOf(Thread& t, OpenFile& f);
  std::map<FileKey, std::map<pid_t, int>> lock_fds_;

  CredCache creds_;
  bool umask_cleared_ = false;
  std::unordered_map<pid_t, Pending> pending_;
};

}  // namespace amino::monitor::host
