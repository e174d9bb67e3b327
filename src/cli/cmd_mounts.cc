// amino mounts [--config FILE] [--mount MOUNTPOINT=DBDIR]...: the mount table `amino run`
// would use with the same options, and where each mount comes from. Creates nothing.
#include <sys/stat.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "monitor/mounts/mount_config.h"

namespace amino::cli {

namespace {

struct MountsOptions {
  std::string config;
  std::vector<std::string> mounts;
};

// Rows of columns separated by two spaces, each column as wide as its widest cell.
void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
  std::cout.flush();
}

}  // namespace

Runner AddMounts(CLI::App& app) {
  auto opts = std::make_shared<MountsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "mounts",
      "Print the mount table 'amino run' would use: mount point, database, durability "
      "and where each mount is declared");
  cmd->footer(
      "Mounts come from --mount arguments and from one mounts file: --config FILE, else "
      "$AMINO_CONFIG, else ${XDG_CONFIG_HOME:-~/.config}/amino/mounts if it exists; a --mount "
      "replaces the file's line for the same mount point. With no mount at all, ~/amino is "
      "mounted from ${XDG_DATA_HOME:-~/.local/share}/amino/default, created on first use. File "
      "lines read 'MOUNTPOINT DBDIR [OPTIONS]' (options: create, durability=async|sync, "
      "defaults); '#' starts a comment. Exit status 2 on a bad configuration.");
  cmd->add_option("--config", opts->config, "Mounts file to read")->type_name("FILE");
  cmd->add_option("--mount", opts->mounts, "Mount the file system in DBDIR at MOUNTPOINT")
      ->type_name("MOUNTPOINT=DBDIR")
      ->allow_extra_args(false);
  return [opts] {
    monitor::mounts::MountSources sources;
    sources.mount_args = opts->mounts;
    if (!opts->config.empty()) sources.config_file = opts->config;
    auto config = monitor::mounts::LoadMounts(sources, monitor::mounts::Environment::FromProcess());
    if (!config.ok()) {
      Error("mounts", config.error());
      return kExitUsage;
    }
    std::vector<std::vector<std::string>> rows = {
        {"MOUNT POINT", "DATABASE", "DURABILITY", "ORIGIN"}};
    for (const monitor::mounts::Mount& m : config->table.mounts()) {
      std::string durability =
          m.durability ? monitor::mounts::DurabilityName(*m.durability) : "async (default)";
      std::string db = Printable(m.db_dir);
      struct stat st;
      if (m.create && stat(m.db_dir.c_str(), &st) != 0) db += " (created on first use)";
      rows.push_back({Printable(m.point), db, durability, Printable(m.origin)});
    }
    PrintTable(rows);
    return kExitOk;
  };
}

}  // namespace amino::cli
