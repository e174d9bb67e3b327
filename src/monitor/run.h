// `amino run`: the options of one traced run and the function that performs it.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "ptrace-ext/features.h"

namespace amino::monitor {

struct RunOptions {
  std::vector<std::string> argv;
  std::string backend = "auto";  // auto, seccomp, ptrace, kernel
  bool stats = false;
  bool trace = false;
  std::string trace_file;  // empty: stderr
  // What the monitor does with file calls: "amino" (serve the mounts; the default), "host"
  // (perform every file call itself on the host: AMINONULL), "none" (pass every call through:
  // AMINOTRACE).
  std::string emulate = "amino";
  std::vector<std::string> mounts;    // --mount MOUNTPOINT=DBDIR
  std::string config;                 // --config FILE
  std::string durability = "async";   // --durability async|sync|commit|external
  double lock_timeout = 10;           // --lock-timeout SECONDS (application transactions)
  std::vector<std::string> profiles;  // --profile NAME|FILE (profiles/profile_library.h)
};

// Runs the command to completion; returns `amino run`'s exit status. Usage errors are reported
// on stderr with exit status 2.
int Run(const RunOptions& options);

}  // namespace amino::monitor
