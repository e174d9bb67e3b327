// Advisory locks on served files (fcntl record locks, open file description locks, flock) with
// the kernel's semantics, conflicting across tracees and across every monitor that serves the
// same database. Each locked file has a lock file DBDIR/locks/<file id> that is never read or
// written; real kernel locks on it stand for the tracees' locks:
//  - POSIX record locks belong to a process and a file: each (file, process) pair gets its own
//    open file description of the lock file, on which they are taken as OFD locks. Processes
//    then conflict with each other and never with themselves, and closing that description
//    releases them all, as closing any descriptor of the file or exiting does.
//  - OFD locks and flock belong to an open file description: each ServedFile holding one gets
//    its own description of the lock file, closed once the ServedFile is gone.
// A request that would have to wait is reported as such: the caller parks the tracee and asks
// again, so the monitor never blocks. The monitor serves every tracee from one thread: the
// table of lock descriptions is the monitor's one instance.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <memory>

#include "monitor/service/served_file.h"

namespace amino::monitor::service {

struct LockOutcome {
  long result = 0;    // 0 or -errno
  bool wait = false;  // a blocking request would wait: ask again later
};

// fcntl(F_GETLK / F_SETLK / F_SETLKW) for process `tgid`, and F_OFD_GETLK / F_OFD_SETLK /
// F_OFD_SETLKW for the description `desc`. `fl` is the caller's struct with the range already
// made absolute (l_whence SEEK_SET; checked by the caller); F_GETLK fills it in.
LockOutcome FcntlLock(const std::shared_ptr<ServedFile>& desc, pid_t tgid, int cmd,
                      struct flock* fl);
// flock(2) `op` (LOCK_SH / LOCK_EX / LOCK_UN, maybe | LOCK_NB) for the description `desc`.
LockOutcome FlockLock(const std::shared_ptr<ServedFile>& desc, int op);

// Process `tgid` closed a descriptor of `file`: its record locks on that file are released.
// `file` nullptr: the process is gone, all its record locks are released.
void ReleaseProcessLocks(pid_t tgid, const ServedFile* file);
// The description `desc` is being destroyed: its OFD locks and flocks are released. (Others
// found gone are released at the next lock call or release anyway.)
void ReleaseDescriptionLocks(const ServedFile* desc);
// Grows whenever a lock may have been let go (a waiting request may then be granted).
uint64_t FileLockReleases();

}  // namespace amino::monitor::service
