// Where the mount table comes from. Precedence, highest first:
//
//  1. `--mount MOUNTPOINT=DBDIR` arguments (repeatable), split at the first '='. "~" and "~/"
//     expand as in the file; relative paths are taken from the current directory. Command-line
//     mounts are never created: DBDIR must exist (make it with `amino mkfs DBDIR`).
//  2. One mounts file (format in mount_file.h), the first of:
//       --config FILE                                    (must exist)
//       $AMINO_CONFIG, when set and not empty            (must exist)
//       ${XDG_CONFIG_HOME:-~/.config}/amino/mounts       (read only if it exists)
//     Only that file is read.
//  The table is the file's mounts plus the command line's; a --mount whose mount point is one
//  of the file's replaces that line (the command line wins), and the replaced line is not
//  checked against the host.
//  3. The embedded default, used only when 1 and 2 give no mount at all:
//       ~/amino  backed by  ${XDG_DATA_HOME:-~/.local/share}/amino/default  (created on first use)
//
// Refused, with "FILE:LINE:COL: message" for a line of the file, "--mount 'ARG': message" for
// an argument, "default mount: message" for the default: syntax errors and unknown options
// (mount_file.h); a relative mount point or database directory in the file; "/" as a mount
// point; two mounts on one mount point (within the file, or twice on the command line); a mount
// point inside another (nested mounts); two mounts on one database directory; a database
// directory inside a mount point; a database directory that does not exist and is not to be
// created; a mount point or database directory that exists but is not a directory. Paths are
// compared lexically here; PrepareMounts (mount_prepare.h) compares them again once symbolic
// links are resolved. A conflict between a file line and a --mount names the argument.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "monitor/mounts/config_error.h"
#include "monitor/mounts/mount_table.h"

namespace amino::monitor::mounts {

// What the command line says.
struct MountSources {
  std::vector<std::string> mount_args;     // each "MOUNTPOINT=DBDIR", as given to --mount
  std::optional<std::string> config_file;  // --config FILE
};

// What the process environment says (taken apart so tests can give their own).
struct Environment {
  std::string home;                         // $HOME, else the user's passwd entry; "" when unknown
  std::string xdg_config_home;              // $XDG_CONFIG_HOME when absolute, else ""
  std::string xdg_data_home;                // $XDG_DATA_HOME when absolute, else ""
  std::optional<std::string> amino_config;  // $AMINO_CONFIG when set and not empty
  std::string cwd;                          // for relative --mount paths

  static Environment FromProcess();
  // ${XDG_CONFIG_HOME:-~/.config}/amino/mounts ("" when neither is known).
  std::string DefaultConfigFile() const;
  // ${XDG_DATA_HOME:-~/.local/share}/amino/default ("" when neither is known).
  std::string DefaultDatabase() const;
};

struct MountConfig {
  MountTable table;         // sorted by mount point
  std::string file;         // the mounts file that was read; "" when none
  bool is_default = false;  // the table is the embedded default
};

// Reads and checks the configuration. Looks at the host only with stat(2) and by reading the
// mounts file; creates nothing.
ConfigResult<MountConfig> LoadMounts(const MountSources& sources, const Environment& env);

}  // namespace amino::monitor::mounts
