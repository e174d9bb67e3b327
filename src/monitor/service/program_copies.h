// Host copies of programs stored in a mount, for the kernel to exec (exec_call.h): the kernel
// can only run what it can open.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "schema/cred.h"

namespace amino::monitor::service {

// The owner, group and set-id bits of a stored set-user-ID or set-group-ID program.
struct SetId {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t bits = 0;  // S_ISUID, S_ISGID
  mode_t perm = 0;  // the stored permission bits (0777)
};

// The permission bits of a set-id program's copy: the stored read and execute bits, so that the
// kernel lets only those whom the stored file lets run it (or a descriptor of it); but when the
// caller's permission came from a stored ACL, which the copy does not carry, 0555 as for other
// programs (the exec permission was checked on the stored file).
mode_t SetIdCopyMode(const SetId& s, const schema::Cred& caller);

// ROOT/TID/NAME: one directory per thread, so that a copy keeps the program's name (the kernel
// names the process after the file it runs) while concurrent execs stay apart. ROOT is made on
// first use where files may be executed, and removed with everything in it at exit.
class ProgramCopies {
 public:
  static ProgramCopies& Get();
  ~ProgramCopies();

  // The path of a new copy of `bytes` named `name` for thread `tid`, or 0 and -errno. A
  // `setid` program's copy is owned by its stored owner and group with its set-id bits, in a
  // directory of its own (RemoveProgramCopy removes both). Any other copy may be run by anyone
  // (the exec permission was checked on the stored file), and read only when `readable`: when
  // the caller may read the stored file.
  int Write(pid_t tid, const std::string& name, std::string_view bytes,
            const std::optional<SetId>& setid, const schema::Cred& caller, bool readable,
            std::string* path);

 private:
  ProgramCopies() = default;
  bool MakeRoot();
  bool MakeRootIn(unsigned long refuse);
  std::string root_;
  uint64_t writes_ = 0;
};

// Removes the copy at `path` made for an exec, and the directory of its own that a set-user-ID
// or set-group-ID program's copy lies in.
void RemoveProgramCopy(const std::string& path);

}  // namespace amino::monitor::service
