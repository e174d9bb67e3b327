// exec of programs stored in a mount (DESIGN.md §2).
//
// The kernel can only run what it can open, so a program stored in a mount is copied to a
// host file (in a directory private to the monitor; the copy is removed when the exec has
// happened or failed) and the call is given that path. A script is not copied: its interpreter
// is run as the kernel's binfmt_script would run it, with the script's own path as argument, so
// the interpreter reads the script through the monitor and $0, __file__ and paths relative to
// the script stay Amino paths. The #! line is read here, interpreters are followed in turn (one
// may be stored in a mount itself, or a script on the host may name one), and the kernel is
// given only the last program. A set-user-ID or set-group-ID program's copy carries the stored
// owner, group, set-id bits and execute permissions, so the kernel's exec changes the ids as it
// would natively, for those who may run the stored program; only a monitor running as root can
// make it (otherwise the copy runs with the caller's ids, as on a nosuid mount). Nobody may keep
// it: it is written in a directory of root's, mode 0700, with a name nobody can guess, opened
// read-only by the monitor and removed with its directory before the tracee is given that
// descriptor (close-on-exec) and made to exec it with execveat(fd, "", AT_EMPTY_PATH); a failed
// exec closes the descriptor again. A file without a name cannot be linked back (not even
// through /proc), and the process is named after the copy's last name, the stored one.
//
// Known differences from a native exec of the same file: /proc/self/exe and AT_EXECFN name the
// copy (a set-id program's AT_EXECFN is /dev/fd/N, its /proc/self/exe ends in "(deleted)"), and
// $ORIGIN in a stored program's run path is the copy's directory; a process running a stored script
// is named after its interpreter (comm), not after the script; a stored file open for writing can
// be executed (no ETXTBSY); an interpreter named in a #! line that lies inside a mount is found,
// which the kernel could not do.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "monitor/remote_syscall.h"
#include "monitor/service/mount_handler.h"
#include "monitor/service/program_copies.h"

namespace amino::monitor::service {

// How the tracee names a host file: `path` relative to `dirfd` (the file itself when empty).
struct HostRef {
  int dirfd = AT_FDCWD;
  std::string path;
  bool nofollow = false;
};

// One execve or execveat at its ptrace stop, from the path to the registers the kernel runs:
//   1. the program and its interpreters are found (FindProgram), stored ones read;
//   2. a stored program is copied for the kernel (Materialize), a set-id copy passed as a
//      descriptor;
//   3. argv gains the interpreters' names (PlaceArguments), and the call is rewritten.
class ExecCall {
 public:
  ExecCall(MountHandler& h, Thread& t, SyscallRegs& call);
  Decision Run();

 private:
  // The exec of a set-id copy by the descriptor passed for it: seen at its exit.
  std::optional<Decision> ResumePassed();
  // Steps 1-3; each returns the call's decision when it ends the exec's handling early.
  std::optional<Decision> FindProgram();
  // Reads the stored program `target` names (depth: how many interpreters deep): its head,
  // and all of it unless it is a script. nullopt once read (`target` may now be a host path
  // the stored path led to), else the call's decision.
  std::optional<Decision> ReadStored(int depth);
  std::optional<Decision> CheckHostScripts();
  std::optional<Decision> Materialize();
  std::optional<Decision> PlaceArguments();
  Decision Rewrite();
  // Fails the exec after step 2 began (the copy removed, a passed descriptor closed).
  Decision Fail(int err);

  MountHandler& h;
  Thread& t;
  SyscallRegs& call;
  const bool at;
  const int dirfd;
  const int path_arg;
  const uint64_t argv_addr;
  const uint64_t envp_addr;
  const int flags;
  std::string path;
  Target target;
  Target first;  // where the path led before any interpreter
  // The program's name for its interpreter (bprm->filename), and whether the interpreter can
  // open it after the exec (not through a close-on-exec descriptor).
  std::string filename;
  bool name_usable = true;
  schema::Cred cred;
  // argv for the program finally run: `front` followed by the tracee's own from `skip` on.
  std::vector<std::string> front;
  size_t skip = 0;
  bool monitor_runs_it = false;       // a stored program, or an interpreter found differently
  std::vector<HostRef> host_scripts;  // host scripts passed over: their checks are ours then
  HostRef host;                       // the current program, when on the host
  std::string head;                   // the current program's first bytes
  std::string bytes;                  // a stored program to run: its contents
  bool stored = false;
  bool readable = true;        // the caller may read the stored program (not only run it)
  std::optional<SetId> setid;  // its owner when it is set-user-ID or set-group-ID
  std::vector<uint64_t> argv;  // the tracee's argv pointers
  std::string copy;            // the host copy of a stored program
  std::string exec_path;       // what the kernel is given to run
  std::optional<RemoteSyscalls> rs;
  long exec_fd = -1;  // a set-id copy's descriptor in the tracee
  uint64_t path_addr = 0;
  uint64_t new_argv = 0;
};

}  // namespace amino::monitor::service
