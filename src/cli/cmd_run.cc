// amino run [options] -- CMD ARGS...: runs a command under the monitor.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "monitor/run.h"

namespace amino::cli {

namespace {
std::vector<std::string>& CommandWords() {
  static std::vector<std::string> words;
  return words;
}
}  // namespace

int SplitRunCommand(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "run") return argc;
  // Options of `amino run` that take a separate value.
  static const char* kValued[] = {"--backend",    "--emulate",      "--mount",  "--config",
                                  "--durability", "--lock-timeout", "--profile"};
  for (int i = 2; i < argc; ++i) {
    std::string w = argv[i];
    if (w == "--") {
      CommandWords().assign(argv + i + 1, argv + argc);
      return i;
    }
    if (w.size() > 1 && w[0] == '-') {
      for (const char* v : kValued) {
        if (w == v) ++i;
      }
      continue;
    }
    CommandWords().assign(argv + i, argv + argc);
    return i;
  }
  return argc;
}

Runner AddRun(CLI::App& app) {
  auto o = std::make_shared<monitor::RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run CMD and every process it starts under the Amino monitor. The exit status is CMD's "
      "(128+N when a signal N killed it).");
  cmd->add_option("--backend", o->backend,
                  "Interception: auto (the best the kernel offers), notify (seccomp user "
                  "notification, ptrace stops only where registers change), seccomp (a ptrace "
                  "stop per trapped call), ptrace (entry and exit stops on every call)")
      ->capture_default_str();
  cmd->add_flag("--stats", o->stats, "At exit, print stops per kind and per system call");
  CLI::Option* trace =
      cmd->add_option(
             "--trace", o->trace_file,
             "Print each trapped call strace-like: --trace to stderr, --trace=FILE to FILE")
          ->expected(0, 1);
  cmd->add_option("--emulate", o->emulate,
                  "What happens to file calls: amino (calls on Amino mounts are served from "
                  "their databases, the others go to the kernel), host (the monitor performs "
                  "every file call itself on the host file system), none (every call goes to "
                  "the kernel: tracing only)")
      ->capture_default_str();
  cmd->add_option("--mount", o->mounts,
                  "Mount the Amino file system in DBDIR at MOUNTPOINT (repeatable; make one "
                  "with 'amino mkfs DBDIR')")
      ->type_name("MOUNTPOINT=DBDIR")
      ->allow_extra_args(false);
  cmd->add_option("--config", o->config,
                  "Mounts file (default: $AMINO_CONFIG, else ~/.config/amino/mounts; see "
                  "'amino mounts --help')")
      ->type_name("FILE");
  cmd->add_option("--durability", o->durability,
                  "async: a commit reaches the OS (survives a crash of the monitor); sync: "
                  "every commit is flushed to the disk (survives a machine crash); commit: "
                  "only application commits (libamino, 'amino txn') are flushed; external: commits "
                  "are flushed before any output that could depend on them leaves the command "
                  "(to a terminal, pipe, socket, host file, another process), so no one outside "
                  "can tell it from sync")
      ->capture_default_str();
  cmd->add_option("--lock-timeout", o->lock_timeout,
                  "An application transaction whose call waits longer than this for a lock is "
                  "aborted (its calls and commit then fail with EDEADLK)")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd->add_option("--profile", o->profiles,
                  "Transactions for the command from a profile: a shipped one by NAME ('amino "
                  "profile list') or a FILE (repeatable; see 'amino profile --help')")
      ->type_name("NAME|FILE")
      ->allow_extra_args(false);
  cmd->footer("The command follows the options, after an optional '--': amino run -- CMD ARGS...");
  return [o, trace] {
    o->trace = trace->count() > 0;
    o->argv = CommandWords();
    if (o->argv.empty()) {
      std::fprintf(stderr, "amino run: no command given (see 'amino run --help')\n");
      return 2;
    }
    return monitor::Run(*o);
  };
}

}  // namespace amino::cli
