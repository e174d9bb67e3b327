// The credentials a file-system call is checked against: those of the calling process (a traced
// program's, not the monitor's, which may run as root).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <vector>

namespace amino::schema {

struct Cred {
  uid_t uid = 0;              // the file-system uid (fsuid; equal to the euid unless set apart)
  gid_t gid = 0;              // the file-system gid
  std::vector<gid_t> groups;  // supplementary groups

  static Cred Root() { return Cred{}; }
  static Cred User(uid_t uid, gid_t gid, std::vector<gid_t> groups = {}) {
    return Cred{uid, gid, std::move(groups)};
  }
  // The credentials of the calling process.
  static Cred Current();

  // Root has CAP_DAC_OVERRIDE, CAP_FOWNER and CAP_CHOWN: it bypasses permission bits.
  bool privileged() const { return uid == 0; }
  bool in_group(gid_t g) const {
    return g == gid || std::find(groups.begin(), groups.end(), g) != groups.end();
  }
};

}  // namespace amino::schema
