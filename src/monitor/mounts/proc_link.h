// Paths through the magic links of /proc by which a program reaches a directory without naming
// it: /proc/{self,thread-self,PID}[/task/TID]/{cwd,root,fd/N} and /dev/fd/N, each possibly
// followed by more of a path. The kernel follows such a link to the object itself, so a path
// through one must be classified by what the link stands for, not by its text: a process whose
// current directory is in an Amino mount has, for the kernel, the host directory under the
// mount point as its cwd. Purely lexical: who PID is, and what the link stands for, is the
// caller's business.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace amino::monitor::mounts {

struct ProcLinkPath {
  enum class Kind { kNone, kCwd, kRoot, kFd };
  Kind kind = Kind::kNone;
  pid_t pid = 0;     // 0: the caller itself (self, thread-self, /dev/fd)
  int fd = -1;       // for kFd
  std::string rest;  // what follows the link ("" or starting with "/"), as given
};

// The link `path` goes through, found after "." components and repeated slashes before it (the
// parts before the link are evaluated lexically, as /proc has no links there that lead
// elsewhere); kNone when it goes through none.
ProcLinkPath ParseProcLink(std::string_view path);

}  // namespace amino::monitor::mounts
