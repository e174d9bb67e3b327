#include "host.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace amino::schema::testing {

void RunAs(const Cred& cred, const std::function<void()>& f) {
  if (cred.uid == 0 && cred.caps == kAllCaps && cred.gid == 0 && cred.groups.empty()) {
    f();
    return;
  }
  std::thread worker([&] {
    // Order matters: groups and gid while still privileged, the uid last.
    if (syscall(SYS_setgroups, cred.groups.size(), cred.groups.data()) != 0 ||
        syscall(SYS_setfsgid, cred.gid) < 0 || syscall(SYS_setfsuid, cred.uid) < 0 ||
        static_cast<uid_t>(syscall(SYS_setfsuid, -1)) != cred.uid ||
        static_cast<gid_t>(syscall(SYS_setfsgid, -1)) != cred.gid) {
      std::perror("RunAs: setting thread credentials");
      std::abort();  // a test running with the wrong credentials would prove nothing
    }
    f();
  });
  worker.join();
}

int HostErrAs(const Cred& cred, const std::function<long()>& call) {
  int err = 0;
  RunAs(cred, [&] { err = HostErr(call()); });
  return err;
}

}  // namespace amino::schema::testing
