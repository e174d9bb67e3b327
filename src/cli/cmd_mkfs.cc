// amino mkfs [--owner UID:GID] [--mode MODE] DBDIR: creates an empty file system.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "schema/filesystem.h"

namespace amino::cli {

namespace {

// A decimal id below 2^32 - 1 ((uid_t)-1 means "no change" to chown and is never an owner).
bool ParseId(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (v >= 0xffffffffull) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

}  // namespace

Runner AddMkfs(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto owner = std::make_shared<std::string>();
  auto mode = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("mkfs", "Create an empty file system in DBDIR");
  cmd->footer(
      "DBDIR must be missing or empty (its parent must exist); it is made mode 0700 and its "
      "files 0600: the database is private to its owner. The root directory of the new file system "
      "belongs to whoever runs "
      "mkfs (effective uid and gid), mode 0755, unless --owner and --mode say otherwise.");
  cmd->add_option("--owner", *owner, "Owner of the root directory (numeric; default: yours)")
      ->type_name("UID:GID");
  cmd->add_option("--mode", *mode, "Permission bits of the root directory, octal (default 0755)")
      ->type_name("MODE");
  cmd->add_option("DBDIR", *dir, "Database directory")->required();
  return [dir, owner, mode] {
    schema::MkfsOptions options;
    if (!owner->empty()) {
      const size_t colon = owner->find(':');
      if (colon == std::string::npos || !ParseId(owner->substr(0, colon), &options.uid) ||
          !ParseId(owner->substr(colon + 1), &options.gid)) {
        Error("mkfs",
              "--owner " + Printable(*owner) +
                  ": expected UID:GID, two decimal numbers below 4294967295 (e.g. 1000:1000)");
        return kExitUsage;
      }
    }
    if (!mode->empty()) {
      if (mode->size() > 5 || mode->find_first_not_of("01234567") != std::string::npos) {
        Error("mkfs", "--mode " + Printable(*mode) +
                          ": expected octal permission bits, 0 to 7777 (e.g. 0755, 1777)");
        return kExitUsage;
      }
      const unsigned long bits = std::strtoul(mode->c_str(), nullptr, 8);
      if (bits > 07777) {
        Error("mkfs", "--mode " + Printable(*mode) +
                          ": expected octal permission bits, 0 to 7777 (e.g. 0755, 1777)");
        return kExitUsage;
      }
      options.mode = static_cast<mode_t>(bits);
    }
    schema::Status st = schema::FileSystem::Mkfs(*dir, options);
    if (!st.ok()) {
      std::string why = st.is_storage() ? Describe(st) : Printable(*dir) + ": " + Describe(st);
      // A missing parent is not created: say so rather than a bare "No such file or directory".
      if (st.error() == ENOENT) {
        why += " (the parent directory of DBDIR must exist: create it first, e.g. 'mkdir -p')";
      }
      Error("mkfs", why);
      return kExitFailure;
    }
    std::cout << "created an empty Amino file system in " << Printable(*dir) << std::endl;
    return kExitOk;
  };
}

}  // namespace amino::cli
