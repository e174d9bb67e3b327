#include "schema/cred.h"

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
  return c;
}

}  // namespace amino::schema
