// Where profiles are found: `--profile NAME` names a shipped profile (NAME.profile in the
// profile directories), anything with a '/' or ending in ".profile" a file.
// The directories, in order: each of $AMINO_PROFILE_PATH (colon-separated), then the
// installed ones (share/amino/profiles beside the executable's bin/), then the source tree's
// profiles/ for an amino run from its build tree.
#pragma once

#include <string>
#include <vector>

#include "monitor/profiles/profile_parser.h"

namespace amino::monitor::profiles {

std::vector<std::string> ProfileDirs();

// The profile `spec` names, parsed; errors say where it was looked for.
Parsed FindProfile(const std::string& spec);

// The shipped profiles: the first of each name in ProfileDirs(), sorted by name.
std::vector<Parsed> ShippedProfiles();

}  // namespace amino::monitor::profiles
