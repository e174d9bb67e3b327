// amino recover DBDIR: runs Berkeley DB recovery, clears what dead processes left behind (open
// counts, orphaned files) and writes a checkpoint.
#include <iostream>
#include <memory>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "schema/filesystem.h"
#include "schema/records.h"
#include "schema/store.h"

namespace amino::cli {
namespace {

// What dead processes can leave: files without a name kept for an open descriptor, and open
// counts of descriptors nobody holds any more.
struct Leftovers {
  uint64_t orphans = 0;
  uint64_t open_files = 0;
};

schema::Result<Leftovers> CountLeftovers(schema::Store& store) {
  Leftovers out;
  {
    schema::Cursor c(store.orphan(), nullptr);
    AMINO_RETURN_IF_ERROR(c.status());
    AMINO_ASSIGN_OR_RETURN(bool more, c.First());
    for (; more;) {
      ++out.orphans;
      AMINO_ASSIGN_OR_RETURN(more, c.Next());
    }
  }
  schema::Cursor c(store.inode(), nullptr);
  AMINO_RETURN_IF_ERROR(c.status());
  AMINO_ASSIGN_OR_RETURN(bool more, c.First());
  for (; more;) {
    schema::FileId id;
    schema::InodeValue inode;
    if (c.key().size() == 8 && schema::ParseIdKey(c.key(), &id) && id != schema::kSuperblockId &&
        schema::DecodeInodeValue(c.value(), &inode) && inode.open_count > 0) {
      ++out.open_files;
    }
    AMINO_ASSIGN_OR_RETURN(more, c.Next());
  }
  return out;
}

}  // namespace

Runner AddRecover(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("recover", "Recover DBDIR and clear what dead processes left behind");
  cmd->footer(
      "Runs database recovery (no other process may have DBDIR open), removes files that were "
      "unlinked while open by processes that have died, resets their open counts, and writes a "
      "checkpoint. Prints what it did.");
  cmd->add_option("DBDIR", *dir, "Database directory")->required();
  return [dir] {
    const std::string shown = Printable(*dir);
    if (schema::Status st = CheckDatabaseDir(*dir); !st.ok()) {
      Error("recover", shown + ": " + Describe(st));
      return kExitUsage;
    }
    Leftovers before;
    {
      schema::Store::Options options;
      options.force_recovery = true;
      auto store = schema::Store::Open(*dir, options);
      if (!store.ok()) {
        Error("recover", Describe(store.status()));
        return kExitUsage;
      }
      std::cout << shown << ": recovery run" << std::endl;
      auto counted = CountLeftovers(**store);
      if (!counted.ok()) {
        Error("recover", shown + ": " + Describe(counted.status()));
        return kExitFailure;
      }
      before = *counted;
    }
    // Opening the file system alone is what clears the leftovers.
    std::unique_ptr<schema::FileSystem> fs = OpenFileSystem("recover", *dir);
    if (!fs) return kExitUsage;
    if (!fs->store().sole_user()) {
      Error("recover", shown +
                           ": another process opened the file system during recovery; "
                           "leftovers not removed");
      return kExitFailure;
    }
    auto after = CountLeftovers(fs->store());
    if (!after.ok()) {
      Error("recover", shown + ": " + Describe(after.status()));
      return kExitFailure;
    }
    std::cout << shown << ": removed " << before.orphans - after->orphans
              << " orphaned file(s), reset " << before.open_files - after->open_files
              << " stale open count(s)" << std::endl;
    if (after->orphans != 0 || after->open_files != 0) {
      Error("recover", shown + ": " + std::to_string(after->orphans) + " orphaned file(s) and " +
                           std::to_string(after->open_files) + " open count(s) remain");
      return kExitFailure;
    }
    if (schema::Status st = fs->Checkpoint(); !st.ok()) {
      Error("recover", shown + ": checkpoint: " + Describe(st));
      return kExitFailure;
    }
    std::cout << shown << ": checkpoint written" << std::endl;
    return kExitOk;
  };
}

}  // namespace amino::cli
