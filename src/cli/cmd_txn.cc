// amino txn begin|commit|abort|status: application transactions for shell scripts. Run under
// `amino run`, each acts on the transaction of the process that runs it (the shell), whose
// later commands then work inside it: amino run -- sh -c 'amino txn begin; mv a b; amino txn
// commit'.
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "amino/amino.h"
#include "cli/cli_util.h"
#include "cli/commands.h"

namespace amino::cli {
namespace {

// The pseudo-call for the parent process: >= 0, or -errno.
long ForParent(long nr) {
  long r = syscall(nr, AMINO_TARGET_PARENT);
  return r < 0 ? -errno : r;
}

std::string Why(const std::string& action, long err) {
  switch (-err) {
    case ENOSYS:
      return "not running under 'amino run' (transactions exist only there)";
    case ESRCH:
      return "the process that runs 'amino txn' is not traced by 'amino run'";
    case ENOENT:
      return "no transaction is open";
    case EBUSY:
      return "a nested transaction begun in another thread or process is still open";
    case AMINO_EABORTED:
      return "the transaction was aborted by the system (a deadlock or a lock timeout): "
             "nothing it did remains";
    default:
      return action + ": " + std::strerror(static_cast<int>(-err));
  }
}

}  // namespace

Runner AddTxn(CLI::App& app) {
  auto action = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "txn", "Begin, commit or abort the transaction of the shell that runs this command");
  cmd->add_option("ACTION", *action, "begin, commit, abort or status")
      ->required()
      ->check(CLI::IsMember({"begin", "commit", "abort", "status"}));
  cmd->footer(
      "Under 'amino run', the transaction belongs to the process that runs 'amino txn' (a shell "
      "script): every file call it and the commands it starts make on an Amino mount until "
      "'amino txn commit' or 'amino txn abort' is part of it. 'begin' inside a transaction "
      "starts a nested one. A transaction left open when the shell exits is aborted. 'status' "
      "prints the transaction's id and nesting depth, or 'none'.");
  return [action] {
    if (*action == "status") {
      long id = ForParent(AMINO_SYS_CURRENT);
      long depth = id > 0 ? ForParent(AMINO_SYS_DEPTH) : 0;
      if (id < 0 || depth < 0) {
        Error("txn", Why("status", id < 0 ? id : depth));
        return kExitFailure;
      }
      if (id == 0) {
        std::cout << "none" << std::endl;
      } else {
        std::cout << "transaction " << id << ", depth " << depth << std::endl;
      }
      return kExitOk;
    }
    const long nr = *action == "begin"    ? AMINO_SYS_BEGIN
                    : *action == "commit" ? AMINO_SYS_COMMIT
                                          : AMINO_SYS_ABORT;
    long r = ForParent(nr);
    if (r < 0) {
      Error("txn", Why(*action, r));
      return kExitFailure;
    }
    return kExitOk;
  };
}

}  // namespace amino::cli
