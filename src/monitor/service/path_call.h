// One call on paths being served in a mount's schema. MountHandler::PathCall (mount_paths.cc)
// reads the call's arguments in the kernel's order and finds where each path leads; when the
// schema serves it, a ServedPathCall runs it, by family:
//   path_call.cc         the per-call transaction on a path or a descriptor's file (Run)
//   path_call_attrs.cc   stat, statfs, access, chmod, chown, times, truncate, xattrs
//   path_call_names.cc   mkdir, mknod, rmdir, unlink, symlink, readlink; link and rename
#pragma once

#include <functional>
#include <string>

#include "monitor/path_call_decoder.h"
#include "monitor/service/mount_handler.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

std::string WithoutTrailingSlashes(std::string path);

// A rename or link whose two paths are both on the host: the kernel does it, given substitutes
// for the paths that need them (each in its own slot of the shared region); a notified one,
// `host` does it as the tracee with `creds`.
Decision OnHostPair(Thread& t, SyscallRegs& call, const int args[2], const Target targets[2],
                    const std::function<Decision(int, const std::string&)>& substitute,
                    host::HostHandler& host, const host::Creds& creds);

// After a successful call: writes `v` to the tracee at `addr`, returning `r` or -EFAULT.
template <typename T>
long CopyOut(Thread& t, uint64_t addr, const T& v, long r = 0) {
  return WriteMemory(*t.proc, addr, &v, sizeof v) == 0 ? r : -EFAULT;
}

class ServedPathCall {
 public:
  // `targets` (n of them, with their argument registers `path_args`) are served ones, or the
  // first is a descriptor's file; `extras` what the call copied besides its paths, read and
  // checked once, before the paths (ReadPathExtras). `reruns`: how often a rename or link was
  // run again after a path left the mount and came back into it.
  ServedPathCall(MountHandler& h, Thread& t, SyscallRegs& call, Target* targets, int n,
                 int* path_args, const PathExtras& extras, int reruns);
  Decision Serve();

 private:
  using OnPath =
      std::function<schema::Status(MountFs& m, schema::Transaction& txn, const std::string& rel)>;
  using OnId =
      std::function<schema::Status(MountFs& m, schema::Transaction& txn, schema::FileId id)>;

  Decision Stats();       // stat, lstat, newfstatat, statx, statfs
  Decision Attributes();  // access, chmod, chown, times, truncate
  Decision Xattrs();      // the path forms of the xattr calls
  Decision Names();       // mkdir, mknod, rmdir, unlink, symlink, readlink
  Decision Pair();        // link, rename

  // Runs the call's body on its path or, with AT_EMPTY_PATH, on the descriptor's file.
  Decision Run(const OnPath& on_path, const OnId& on_id, const MountHandler::Done& done);
  // The same for calls that need the file's status.
  Decision RunStat(bool follow, const std::function<long(const schema::Stat&)>& done);
  // A body for calls that have no descriptor form.
  static schema::Status NoId(MountFs&, schema::Transaction&, schema::FileId) {
    return schema::Status::Errno(ENOENT);
  }
  // A file target that is not a descriptor's (AT_EMPTY_PATH) is "." in a removed working
  // directory: what Linux answers for "." there.
  static OnId IsDirError(int err) {
    return [err](MountFs&, schema::Transaction&, schema::FileId) {
      return schema::Status::Errno(err);
    };
  }
  static long Ok() { return 0; }

  MountHandler& h;
  Thread& t;
  SyscallRegs& call;
  Target* targets;
  int n;
  int* path_args;
  int reruns;
  const long nr;
  const uint64_t a1, a2, a3, a4;
  const PathExtras& x;
  Target& target;
  const int arg;
  const bool on_file;
  ServedFile* file;
  schema::Cred cred;
  MountFs* where = nullptr;  // the mount the body ran in (an escape may lead to another)
};

}  // namespace amino::monitor::service
