// Defence in depth for the host directories under Amino mount points. The monitor serves every
// call it knows that names a mount; a way around it still unknown (a path rewritten by another
// thread after the monitor read it, a core dump in a cwd inside a mount, a chroot or an ancestor
// renamed) would reach the host directory under the mount point and write there unseen. In the
// traced tree's own mount namespace each such directory is covered by an empty, read-only
// mount, so such a write fails (EROFS) instead. The namespace receives the host's later mounts
// (a slave of it) and sends none back.
//
// Needs CAP_SYS_ADMIN (a monitor run as root); without it nothing is covered and `amino run`
// works as before. Run in the command's process after fork, before exec.
#pragma once

#include <string>
#include <vector>

namespace amino::monitor {

// Covers every directory of `points` that exists (a point inside another is covered by it);
// returns the number covered, or -errno when the namespace could not be made (EPERM without
// CAP_SYS_ADMIN).
int CoverMountPoints(std::vector<std::string> points);

}  // namespace amino::monitor
