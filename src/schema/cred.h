// The credentials a file-system call is checked against: those of the calling process (a traced
// program's, not the monitor's, which may run as root).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace amino::schema {

// Capabilities that bear on file-system calls (linux/capability.h numbers), as bits of
// Cred::caps.
enum Capability : uint64_t {
  kCapChown = 1ull << 0,
  kCapDacOverride = 1ull << 1,
  kCapDacReadSearch = 1ull << 2,
  kCapFowner = 1ull << 3,
  kCapFsetid = 1ull << 4,
  kCapMknod = 1ull << 27,
  kCapSysAdmin = 1ull << 21,
};
inline constexpr uint64_t kAllCaps = ~0ull;

struct Cred {
  uid_t uid = 0;              // the file-system uid (fsuid; equal to the euid unless set apart)
  gid_t gid = 0;              // the file-system gid
  std::vector<gid_t> groups;  // supplementary groups
  // The effective capabilities. Privilege comes from these, not from uid 0, as in the kernel:
  // a uid-0 process without them is refused, a process of another uid with them is not.
  uint64_t caps = kAllCaps;

  static Cred Root() { return Cred{}; }
  // Without `caps`: a uid-0 caller has every capability, any other none (what exec gives).
  static Cred User(uid_t uid, gid_t gid, std::vector<gid_t> groups = {}) {
    return Cred{uid, gid, std::move(groups), uid == 0 ? kAllCaps : 0};
  }
  static Cred User(uid_t uid, gid_t gid, std::vector<gid_t> groups, uint64_t caps) {
    return Cred{uid, gid, std::move(groups), caps};
  }
  // The credentials of the calling process.
  static Cred Current();

  bool has(Capability cap) const { return (caps & cap) != 0; }
  bool in_group(gid_t g) const {
    return g == gid || std::find(groups.begin(), groups.end(), g) != groups.end();
  }
  // inode_owner_or_capable(): the owner, or CAP_FOWNER.
  bool owns(uid_t owner) const { return uid == owner || has(kCapFowner); }
  // in_group_or_capable(): in the group, or CAP_FSETID (keeps set-group-ID on chmod).
  bool in_group_or_fsetid(gid_t g) const { return in_group(g) || has(kCapFsetid); }
};

}  // namespace amino::schema
