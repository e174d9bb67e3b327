#include "monitor/profiles/profile_library.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "monitor/host/host_context.h"

namespace amino::monitor::profiles {
namespace {

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::vector<std::string> ProfileDirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("AMINO_PROFILE_PATH"); env && *env) {
    std::string all = env;
    size_t start = 0;
    while (start <= all.size()) {
      size_t colon = all.find(':', start);
      if (colon == std::string::npos) colon = all.size();
      if (colon > start) dirs.push_back(all.substr(start, colon - start));
      start = colon + 1;
    }
  }
  // An installed amino: PREFIX/bin/amino beside PREFIX/share/amino/profiles.
  const std::string exe = host::ReadLink("/proc/self/exe");
  if (const size_t slash = exe.rfind('/'); slash != std::string::npos && slash > 0) {
    const std::string bin = exe.substr(0, slash);
    const std::string installed = bin.substr(0, bin.rfind('/')) + "/share/amino/profiles";
    if (IsDir(installed)) dirs.push_back(installed);
  }
#ifdef AMINO_SOURCE_PROFILES
  if (IsDir(AMINO_SOURCE_PROFILES)) dirs.push_back(AMINO_SOURCE_PROFILES);
#endif
  return dirs;
}

Parsed FindProfile(const std::string& spec) {
  if (spec.find('/') != std::string::npos || spec.ends_with(".profile")) return ReadProfile(spec);
  // NAME:ARG: profile NAME with ${ARG} standing for ARG (per-function:update).
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::vector<std::string> dirs = ProfileDirs();
  for (const std::string& dir : dirs) {
    const std::string path = dir + "/" + name + ".profile";
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;
    Parsed template_ = ReadProfile(path);
    if (!template_.ok()) return template_;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    std::string body = text.str();
    if (colon == std::string::npos) {
      if (body.find("${ARG}") == std::string::npos) return template_;
      Parsed wrong;
      wrong.errors.push_back("profile '" + name + "' needs an argument: " + name + ":NAME");
      return wrong;
    }
    const std::string arg = spec.substr(colon + 1);
    if (body.find("${ARG}") == std::string::npos) {
      Parsed wrong;
      wrong.errors.push_back("profile '" + name + "' takes no argument (" + spec + ")");
      return wrong;
    }
    if (arg.empty() || arg.find_first_of(" \t\"#,=!<>") != std::string::npos) {
      Parsed wrong;
      wrong.errors.push_back("'" + arg + "' cannot stand for ${ARG} in profile '" + name +
                             "' (a name without blanks, quotes or operators)");
      return wrong;
    }
    for (size_t at; (at = body.find("${ARG}")) != std::string::npos;) body.replace(at, 6, arg);
    return ParseProfile(body, path, spec);
  }
  Parsed missing;
  std::string where;
  for (const std::string& dir : dirs) where += (where.empty() ? "" : ", ") + dir;
  missing.errors.push_back("no profile named '" + spec + "' (looked in " +
                           (where.empty() ? std::string("no profile directory") : where) +
                           "; 'amino profile list' shows them; a file is named by a path with "
                           "a '/')");
  return missing;
}

std::vector<Parsed> ShippedProfiles() {
  std::map<std::string, std::string> found;  // name -> path, the first directory wins
  for (const std::string& dir : ProfileDirs()) {
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() <= 8 || !name.ends_with(".profile")) continue;
      found.emplace(name.substr(0, name.size() - 8), dir + "/" + name);
    }
    closedir(d);
  }
  std::vector<Parsed> out;
  for (const auto& [name, path] : found) out.push_back(ReadProfile(path));
  return out;
}

}  // namespace amino::monitor::profiles
