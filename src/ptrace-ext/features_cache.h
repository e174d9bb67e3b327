// What ProbeKernel found, kept for the rest of the boot: the probe forks and traces a child,
// about 2.5 ms of every `amino run` (a shell loop of short commands starts it thousands of
// times). A kept answer is used only by the same user, in the same boot, on the same kernel, by
// the same amino binary, from a process in the same seccomp and ptrace state (a monitor inside
// another one finds other features); anything else probes again.
#pragma once

#include <string>

#include "ptrace-ext/features.h"

namespace amino::ptrace_ext {

// The features, from the file kept in `dir` when it matches, else probed (and kept there when
// `dir` is private to the caller). An empty `dir` means $XDG_RUNTIME_DIR, else /dev/shm.
KernelFeatures ProbeKernelKept(const std::string& dir = "");

// What identifies the situation a probe answered for (boot, kernel, user, binary, seccomp and
// ptrace state of the caller), one "name value" line each.
std::string ProbeSituation();

// The text a kept answer is stored as, and back: false for anything malformed or incomplete.
std::string EncodeFeatures(const KernelFeatures& f);
bool DecodeFeatures(const std::string& text, KernelFeatures* f);

}  // namespace amino::ptrace_ext
