// amino fsck DBDIR: checks the schema's invariants over the raw databases.
#include <iostream>
#include <memory>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "schema/fsck.h"
#include "schema/store.h"

namespace amino::cli {

Runner AddFsck(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("fsck", "Check every invariant of the file system in DBDIR");
  cmd->footer(
      "Prints one line per violation (INVARIANT: detail). Exit status: 0 consistent, 1 "
      "violations found, 2 usage error or the database could not be opened or read.");
  cmd->add_option("DBDIR", *dir, "Database directory")->required();
  return [dir] {
    if (schema::Status st = CheckDatabaseDir(*dir); !st.ok()) {
      Error("fsck", Printable(*dir) + ": " + Describe(st));
      return kExitUsage;
    }
    // The store, not the file system: opening a FileSystem would remove orphans and reset open
    // counts, repairing what fsck is asked to check. (Crash recovery still runs when needed.)
    auto store = schema::Store::Open(*dir, {});
    if (!store.ok()) {
      Error("fsck", Describe(store.status()));
      return kExitUsage;
    }
    // Nothing here clears what dead users left, so others need not wait for the check.
    if ((*store)->sole_user()) {
      if (schema::Status st = (*store)->ShareWithOthers(); !st.ok()) {
        Error("fsck", Printable(*dir) + ": " + Describe(st));
        return kExitUsage;
      }
    }
    auto violations = schema::Fsck(**store);
    if (!violations.ok()) {
      Error("fsck", Printable(*dir) + ": cannot check: " + Describe(violations.status()));
      return kExitUsage;
    }
    for (const schema::Violation& v : *violations) {
      std::cout << v.invariant << ": " << Printable(v.detail) << "\n";
    }
    if (!violations->empty()) {
      schema::Store::NoteDamage();
      std::cout.flush();
      std::cerr << "amino fsck: " << Printable(*dir) << ": " << violations->size() << " violation"
                << (violations->size() == 1 ? "" : "s") << std::endl;
      return kExitFailure;
    }
    std::cout << Printable(*dir) << ": consistent" << std::endl;
    return kExitOk;
  };
}

}  // namespace amino::cli
