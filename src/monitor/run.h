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
  std::string emulate;     // "" (pass-through) or "host"
};

// Runs the command to completion; returns `amino run`'s exit status. Usage errors are reported
// on stderr with exit status 2.
int Run(const RunOptions& options);

}  // namespace amino::monitor
