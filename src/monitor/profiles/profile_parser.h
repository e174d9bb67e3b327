// Reads profile files (the language is in docs/profiles.md). Every error names FILE:LINE:COL
// and says what was expected; a line with an error is skipped and the rest still checked, so
// one pass reports every error of a file.
#pragma once

#include <string>
#include <vector>

#include "monitor/profiles/profile.h"

namespace amino::monitor::profiles {

struct Parsed {
  Profile profile;
  std::vector<std::string> errors;  // "FILE:LINE:COL: message"; empty when the profile is good
  bool ok() const { return errors.empty(); }
};

// Parses `text`, read from `file` (named so in errors), as profile `name`.
Parsed ParseProfile(const std::string& text, const std::string& file, const std::string& name);

// Reads and parses the file at `path` (its name is the file name without ".profile").
Parsed ReadProfile(const std::string& path);

}  // namespace amino::monitor::profiles
