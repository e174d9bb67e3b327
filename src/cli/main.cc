// amino: the monitor and the administrator tools of Amino file systems. Parses the command
// line and dispatches to the one subcommand named on it.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"

namespace {

int Main(int argc, char** argv) {
  using namespace amino::cli;
  CLI::App app{
      "Amino: ACID transactions for the POSIX file API. `amino run` runs a program under the "
      "monitor; the other subcommands create, check, repair, list, fill and copy out the "
      "Berkeley DB database that holds an Amino file system.",
      "amino"};
  app.set_version_flag("--version", std::string("amino ") + AMINO_VERSION);
  app.require_subcommand(1);

  std::vector<std::pair<CLI::App*, Runner>> commands;
  for (auto add : {AddRun, AddTxn, AddDoctor, AddMounts, AddMkfs, AddFsck, AddRecover, AddLs,
                   AddImport, AddExport}) {
    Runner run = add(app);
    commands.emplace_back(app.get_subcommands({}).back(), std::move(run));
  }

  argc = SplitRunCommand(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    // One line naming the subcommand, then where to look: exit status 2 for every usage error.
    std::string who;
    for (auto& [sub, run] : commands) {
      if (sub->parsed()) who = " " + sub->get_name();
    }
    std::cerr << "amino" << who << ": " << e.what() << " (see 'amino" << who << " --help')"
              << std::endl;
    return kExitUsage;
  }
  for (auto& [sub, run] : commands) {
    if (sub->parsed()) return run();
  }
  return kExitUsage;  // unreachable: require_subcommand(1)
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
