// Paths of a process that called chroot: the monitor walks the host from its own root, so a
// path the process names from its root is mapped onto the host first, and a host path the
// kernel is to walk for the process is named from the process's root again.
//
// `root` is the process's root as the monitor names it (readlink of /proc/TID/root), an
// absolute host path; "/" is no change.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace amino::monitor {

// The host path for `path`, absolute as the process wrote it. ".." at the process's root stays
// there, as the kernel's walk keeps it: such components are dropped, lexically. Other
// components are kept as written (the walk that follows checks "x/.." against the kernel).
// With `keep_climbs`, a ".." that lexically climbs back to the root from a name before it is
// kept too: that name may be a link to a deeper directory ("/l/../.." is "/x" when l leads to
// /x/y), which only the walk's check against the kernel knows.
std::string HostPathInRoot(std::string_view root, std::string_view path, bool keep_climbs = false);

// `host` (a normal absolute host path) as the process names it from `root`; nullopt when it is
// not at or below the root, where no absolute path of the process reaches.
std::optional<std::string> PathFromRoot(std::string_view root, std::string_view host);

// What getcwd tells a process whose cwd is `host`: its name from the root, or the name the
// kernel gives a cwd outside the root, "(unreachable)" followed by the host path.
std::string CwdFromRoot(std::string_view root, std::string_view host);

}  // namespace amino::monitor
