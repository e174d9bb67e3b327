// Knobs for librvm's own tests only (not part of the C interface).
#pragma once

namespace amino::rvm::testing {

// Breaks commit on purpose: each page of a top-level commit is written in a Berkeley DB
// transaction of its own, so a crash during commit leaves a region half committed. The crash
// test's negative control uses it to show that its checker notices. `crash_after_pages` > 0:
// the process kills itself (SIGKILL) after that many such page commits, so that the crash
// lands inside a commit whatever the machine's speed.
void SetSplitCommitForTesting(bool on, unsigned crash_after_pages = 0);

}  // namespace amino::rvm::testing
