// amino mkfs DBDIR: creates an empty file system.
#include <iostream>
#include <memory>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "schema/filesystem.h"

namespace amino::cli {

Runner AddMkfs(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("mkfs", "Create an empty file system in DBDIR");
  cmd->footer("The root directory is mode 0755, owned by root. DBDIR must be missing or empty.");
  cmd->add_option("DBDIR", *dir, "Database directory")->required();
  return [dir] {
    schema::Status st = schema::FileSystem::Mkfs(*dir);
    if (!st.ok()) {
      Error("mkfs", st.is_storage() ? Describe(st) : Printable(*dir) + ": " + Describe(st));
      return kExitFailure;
    }
    std::cout << "created an empty Amino file system in " << Printable(*dir) << std::endl;
    return kExitOk;
  };
}

}  // namespace amino::cli
