// Making a loaded mount table usable, once, before tracing starts: each mount point exists on
// the host as a directory (the kernel needs one to hold a cwd, and a real path for getcwd to
// name), and each database to be created exists as a file system.
#pragma once

#include <string>
#include <vector>

#include "monitor/mounts/config_error.h"
#include "monitor/mounts/mount_table.h"

namespace amino::monitor::mounts {

struct PreparedMounts {
  MountTable table;                  // host_point, host_dev and host_ino filled in
  std::vector<std::string> actions;  // what was done, one line each ("created ...")
  // What the user should hear of, one line each: a mount point created for a mount declared
  // on the command line or in a file (where a relative one is), and a host directory whose
  // entries the mount hides.
  std::vector<std::string> notices;
};

// For every mount: creates the mount point if missing (missing parents too; the mount point
// itself gets mode 0755); runs FileSystem::Mkfs (src/schema/filesystem.h) on the database
// directory of a `create` mount (the default is one) when it is missing or empty, creating
// missing parents with mode 0700; resolves the mount point's symbolic links (Mount::host_point).
// Refuses mount points that turn out to be one directory, or nested, once links are resolved,
// and two mounts whose database directories are one. Errors read "ORIGIN: what: why" (ORIGIN as
// in Mount::origin). Running it again on a prepared host changes nothing.
ConfigResult<PreparedMounts> PrepareMounts(const MountTable& table);

}  // namespace amino::monitor::mounts
