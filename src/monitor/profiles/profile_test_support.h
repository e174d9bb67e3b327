// What the profile-language tests share (profile_parser_test.cc, profile_parser_fuzz_test.cc):
// dumps of parsed rules that compare whole ASTs, a temporary directory, $AMINO_PROFILE_PATH set
// for one test, and the shipped profiles (AMINO_SHIPPED_PROFILES, set by CMake).
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "monitor/profiles/profile.h"

namespace amino::monitor::profiles::testing {

inline constexpr char kNulMessage[] = ": a NUL byte (a profile is a text file)";

inline std::string Join(const std::vector<std::string>& all) {
  std::string out;
  for (const std::string& each : all) out += each + "\n";
  return out;
}

// The lines of `text` as a reader numbers them: split at '\n', a last line without one counts.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t newline = text.find('\n', start);
    if (newline == std::string::npos) newline = text.size();
    lines.push_back(text.substr(start, newline - start));
    start = newline + 1;
  }
  return lines;
}

inline const char* OpName(Compare op) {
  switch (op) {
    case Compare::kEq:
      return "==";
    case Compare::kNe:
      return "!=";
    case Compare::kLt:
      return "<";
    case Compare::kLe:
      return "<=";
    case Compare::kGt:
      return ">";
    case Compare::kGe:
      return ">=";
  }
  return "?";
}

inline std::string Dump(const Condition& c) {
  std::string out;
  for (const Comparison& each : c.all) {
    if (!out.empty()) out += " and ";
    out += std::string(VariableName(each.variable)) + " " + OpName(each.op) + " " +
           std::to_string(each.value);
  }
  return out;
}

inline std::string Dump(const Action& a) {
  switch (a.kind) {
    case Action::Kind::kBegin:
      return std::string("begin") + (a.nested ? " nested" : "") + (a.private_ ? " private" : "") +
             (a.condition.all.empty() ? "" : " ?" + Dump(a.condition));
    case Action::Kind::kCommit:
    case Action::Kind::kAbort:
      return std::string(a.kind == Action::Kind::kCommit ? "commit" : "abort") +
             (a.nested || a.private_ ? " ?flags" : "") +
             (a.condition.all.empty() ? "" : " ?" + Dump(a.condition));
    case Action::Kind::kCommitIf:
      return "commit-if " + Dump(a.condition) + (a.nested || a.private_ ? " ?flags" : "");
    case Action::Kind::kAbortIf:
      return "abort-if " + Dump(a.condition) + (a.nested || a.private_ ? " ?flags" : "");
    case Action::Kind::kKill:
      return std::string("kill") + (a.nested || a.private_ ? " ?flags" : "");
  }
  return "?";
}

// Every field of a rule, so that comparing dumps compares the whole AST.
inline std::string Dump(const Rule& r) {
  std::string out = r.where.ToString() + " " + EventName(r.event.kind) + " pattern=[" +
                    r.event.pattern + "] by=[" + r.event.program +
                    "] write=" + (r.event.writing ? "1" : "0") +
                    " signal=" + std::to_string(r.event.signal) + " when[" + Dump(r.when) + "] do[";
  for (size_t i = 0; i < r.actions.size(); ++i) out += (i ? ", " : "") + Dump(r.actions[i]);
  return out + "]";
}

inline std::vector<std::string> DumpRules(const Profile& p) {
  std::vector<std::string> out;
  for (const Rule& r : p.rules) out.push_back(Dump(r));
  return out;
}

// A temporary directory, removed with what it holds.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/amino-profile-test-XXXXXX";
    if (mkdtemp(tmpl)) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

 private:
  std::string path_;
};

// Sets $AMINO_PROFILE_PATH for one test, restoring what the environment had.
class ScopedProfilePath {
 public:
  explicit ScopedProfilePath(const std::string& value) {
    if (const char* old = getenv("AMINO_PROFILE_PATH")) old_ = old;
    setenv("AMINO_PROFILE_PATH", value.c_str(), 1);
  }
  ~ScopedProfilePath() {
    if (old_) {
      setenv("AMINO_PROFILE_PATH", old_->c_str(), 1);
    } else {
      unsetenv("AMINO_PROFILE_PATH");
    }
  }

 private:
  std::optional<std::string> old_;
};

inline std::vector<std::filesystem::path> ShippedFiles() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(AMINO_SHIPPED_PROFILES)) {
    if (entry.path().extension() == ".profile") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace amino::monitor::profiles::testing
