#include "schema/cred.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace amino::schema {

Cred Cred::Current() {
  Cred c;
  c.uid = geteuid();
  c.gid = getegid();
  int n = getgroups(0, nullptr);
  if (n > 0) {
    c.groups.resize(static_cast<size_t>(n));
    n = getgroups(n, c.groups.data());
    c.groups.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) == 0) {
    c.caps = data[0].effective | (static_cast<uint64_t>(data[1].effective) << 32);
  } else {
    c.caps = c.uid == 0 ? kAllCaps : 0;
  }
  return c;
}

}  // namespace amino::schema
