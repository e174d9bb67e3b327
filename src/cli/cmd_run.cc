// amino run [options] -- CMD ARGS...: runs a command under the monitor.
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "monitor/run.h"

namespace amino::cli {

Runner AddRun(CLI::App& app) {
  auto o = std::make_shared<monitor::RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run CMD and every process it starts under the Amino monitor. The exit status is CMD's "
      "(128+N when a signal N killed it).");
  cmd->add_option("--backend", o->backend,
                  "Interception: auto (the best the kernel offers), seccomp, ptrace")
      ->capture_default_str();
  cmd->add_flag("--stats", o->stats, "At exit, print stops per kind and per system call");
  CLI::Option* trace =
      cmd->add_option("--trace", o->trace_file,
                      "Print each trapped call strace-like: --trace to stderr, --trace=FILE to FILE")
          ->expected(0, 1);
  cmd->add_option("--emulate", o->emulate,
                  "host: the monitor performs every file call itself on the host file system");
  cmd->add_option("COMMAND", o->argv, "The command and its arguments (after --)")
      ->required()
      ->expected(-1);
  cmd->prefix_command();
  return [o, cmd, trace] {
    o->trace = trace->count() > 0;
    for (const std::string& extra : cmd->remaining()) o->argv.push_back(extra);
    return monitor::Run(*o);
  };
}

}  // namespace amino::cli
