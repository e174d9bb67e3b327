// amino profile list|check: the shipped transaction profiles, and checking profile files
// before a run (docs/profiles.md).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "monitor/profiles/profile_library.h"

namespace amino::cli {

Runner AddProfile(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "List the shipped transaction profiles, or check profile files");
  cmd->require_subcommand(1);
  CLI::App* list = cmd->add_subcommand(
      "list", "Each shipped profile ('amino run --profile NAME') with what it guarantees");
  CLI::App* check = cmd->add_subcommand(
      "check", "Check profile files (or shipped profiles by name): every error as FILE:LINE:COL");
  check
      ->add_option("PROFILE", *files,
                   "A profile file (a path with '/' or ending in .profile) "
                   "or the name of a shipped one")
      ->required();
  cmd->footer(
      "A profile begins, commits and aborts transactions for an unmodified program at events "
      "of its life (exec, exit, opens and closes, signals). The language and the shipped "
      "profiles are described in docs/profiles.md; set AMINO_PROFILE_PATH to add directories.");
  return [list, check, files] {
    if (list->parsed()) {
      int status = kExitOk;
      const auto found = monitor::profiles::ShippedProfiles();
      if (found.empty()) {
        Error("profile", "no profile directory found (set AMINO_PROFILE_PATH)");
        return kExitFailure;
      }
      for (const auto& p : found) {
        if (!p.ok()) {
          for (const auto& e : p.errors) Error("profile", e);
          status = kExitFailure;
          continue;
        }
        std::cout << p.profile.name << "\n    " << p.profile.path << "\n";
        if (!p.profile.description.empty()) std::cout << "    " << p.profile.description << "\n";
      }
      std::cout.flush();
      return status;
    }
    (void)check;
    int status = kExitOk;
    for (const std::string& spec : *files) {
      const auto p = monitor::profiles::FindProfile(spec);
      if (!p.ok()) {
        for (const auto& e : p.errors) std::cerr << e << "\n";
        status = kExitFailure;
        continue;
      }
      std::cout << p.profile.path << ": " << p.profile.rules.size() << " rule"
                << (p.profile.rules.size() == 1 ? "" : "s") << ", good\n";
    }
    std::cout.flush();
    return status;
  };
}

}  // namespace amino::cli
