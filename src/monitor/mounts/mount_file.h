// The mounts file, in the spirit of fstab(5): one mount per line,
//
//   MOUNTPOINT  DBDIR  [OPTIONS]
//
// fields separated by spaces or tabs. A field that starts with '#' begins a comment that runs
// to the end of the line; blank lines are ignored. A field that is "~" or starts with "~/" has
// the "~" replaced by the home directory ("~user" is not supported). A space, tab, backslash or
// '#' inside a field is written as an octal escape like fstab's: \040 (space), \011 (tab),
// \134 (backslash), \043 ('#'); any byte but NUL may be written \ooo. Both paths must be
// absolute after expansion; they are normalised lexically ("/a/./b/" is "/a/b").
// OPTIONS is a comma-separated list of:
//   create             create the file system (mkfs) on first use when DBDIR is missing or empty
//   durability=async   commits reach the OS (survive a crash of the monitor, not of the machine)
//   durability=sync    every top-level commit is flushed to the disk
//   defaults           no option (a placeholder, as in fstab)
// Every error names the place: "FILE:LINE:COL: message", columns counted in bytes from 1.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/mounts/config_error.h"
#include "monitor/mounts/mount_table.h"

namespace amino::monitor::mounts {

// One line of a mounts file, checked on its own (mount_config.h checks lines against each
// other and against the host).
struct MountEntry {
  std::string point;   // normal absolute
  std::string db_dir;  // normal absolute
  std::optional<Durability> durability;
  bool create = false;
  // Where it was declared, for messages about it.
  std::string file;
  int line = 0;
  int point_column = 0;
  int db_column = 0;

  // "FILE:LINE:COL: " for the mount point or database field.
  std::string PointWhere() const;
  std::string DbWhere() const;
};

// Parses the text of a mounts file named `file_name` (used in messages). `home` is the home
// directory "~" expands to; empty when unknown (then "~" is an error).
ConfigResult<std::vector<MountEntry>> ParseMountsFile(std::string_view file_name,
                                                      std::string_view text, std::string_view home);

// Expands a leading "~" or "~/" (the rule of the file, shared by --mount): the expanded path,
// or an error message without a location.
ConfigResult<std::string> ExpandTilde(std::string_view path, std::string_view home);

}  // namespace amino::monitor::mounts
