// The real kernel as the oracle: run a system call against a scratch directory, optionally with
// other credentials, and report its errno the way the schema reports one.
#pragma once

#include <cerrno>
#include <functional>
#include <thread>

#include "schema/cred.h"

namespace amino::schema::testing {

// 0 when a system call returned >= 0, else errno.
inline int HostErr(long rc) { return rc < 0 ? errno : 0; }

// Runs `f` on a thread whose file-system uid/gid and supplementary groups are `cred`'s (root:
// the calling thread, unchanged). The credentials are set with raw system calls: glibc's
// setgroups/setfsuid wrappers would change every thread of the process. Leaving the uid 0 for a
// file-system uid drops CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN and CAP_FSETID from the thread's
// effective set, so the kernel checks permissions exactly as for that user.
void RunAs(const Cred& cred, const std::function<void()>& f);

// errno of `syscall()` run as `cred` (0 on success).
int HostErrAs(const Cred& cred, const std::function<long()>& syscall);

}  // namespace amino::schema::testing
