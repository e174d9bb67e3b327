// amino: the monitor and the administrator tools of Amino file systems. Parses the command
// line and dispatches to the one subcommand named on it.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"

namespace {

// Levenshtein distance, for suggesting the subcommand a mistyped word was meant to be.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The first word must be a subcommand or a top-level flag: CLI11 alone says only that a
// subcommand is required, without naming the word it did not know.
std::string FirstWordError(const CLI::App& app, const std::string& word) {
  if (word == "-h" || word == "--help" || word == "--version") return "";
  if (!word.empty() && word[0] == '-') return "unknown option '" + word + "'";
  std::string best;
  size_t best_distance = 3;  // suggest only close matches
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == word) return "";
    const size_t d = EditDistance(word, sub->get_name());
    if (d < best_distance) best_distance = d, best = sub->get_name();
  }
  std::string msg = "unknown subcommand '" + word + "'";
  if (!best.empty()) msg += " (did you mean '" + best + "'?)";
  return msg;
}

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
  for (auto add : {AddRun, AddTxn, AddProfile, AddDoctor, AddMounts, AddMkfs, AddFsck, AddRecover,
                   AddLs, AddImport, AddExport}) {
    Runner run = add(app);
    commands.emplace_back(app.get_subcommands({}).back(), std::move(run));
  }

  if (argc > 1) {
    if (std::string why = FirstWordError(app, argv[1]); !why.empty()) {
      std::cerr << "amino: " << why << " (see 'amino --help')" << std::endl;
      return kExitUsage;
    }
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
