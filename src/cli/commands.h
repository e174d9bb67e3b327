// The subcommands of `amino`. Each Add* function declares one subcommand and its options on
// `app` and returns the function that runs it once the command line has been parsed; the
// returned int is the process's exit status (see cli_util.h).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace amino::cli {

using Runner = std::function<int()>;

Runner AddMkfs(CLI::App& app);
Runner AddFsck(CLI::App& app);
Runner AddRecover(CLI::App& app);
Runner AddLs(CLI::App& app);
Runner AddImport(CLI::App& app);
Runner AddExport(CLI::App& app);
Runner AddRun(CLI::App& app);
// Takes the command words of `amino run` off the command line (they are not options of amino):
// returns how many leading arguments are left for the option parser.
int SplitRunCommand(int argc, char** argv);
Runner AddDoctor(CLI::App& app);
Runner AddMounts(CLI::App& app);
Runner AddTxn(CLI::App& app);
Runner AddProfile(CLI::App& app);

}  // namespace amino::cli
