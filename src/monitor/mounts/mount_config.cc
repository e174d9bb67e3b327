// The sources of the mount table and their checks (see mount_config.h).
#include "monitor/mounts/mount_config.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "monitor/mounts/lexical_path.h"
#include "monitor/mounts/mount_file.h"

namespace amino::monitor::mounts {

namespace {

// A mount on its way into the table, with what messages about it need.
struct Candidate {
  Mount mount;
  std::string point_where;  // message prefix blaming its mount point: "F:L:C: ", "--mount 'A': "
  std::string db_where;     // ... its database directory
  std::string label;        // how other messages name it: "F:L", "--mount 'A'", "the default"
  bool from_command_line = false;
};

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// Reads a whole file; 0 or an errno.
int ReadFile(const std::string& path, std::string* text) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return EISDIR;
  }
  text->clear();
  char buf[8192];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return err;
    }
    if (n == 0) break;
    text->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return 0;
}

// Which file to read, and whether it must exist. "" when there is none to read.
struct FileChoice {
  std::string path;
  bool required = false;
  std::string why;  // for messages: " (from AMINO_CONFIG)" or ""
};

FileChoice ChooseFile(const MountSources& sources, const Environment& env) {
  if (sources.config_file) return {*sources.config_file, true, ""};
  if (env.amino_config) return {*env.amino_config, true, " (from AMINO_CONFIG)"};
  return {env.DefaultConfigFile(), false, ""};
}

ConfigResult<Candidate> FromArgument(const std::string& arg, const Environment& env) {
  std::string where = "--mount " + Quoted(arg) + ": ";
  size_t eq = arg.find('=');
  if (eq == std::string::npos) {
    return ConfigError{where + "expected MOUNTPOINT=DBDIR"};
  }
  std::string parts[2] = {arg.substr(0, eq), arg.substr(eq + 1)};
  std::string normal[2];
  for (int k = 0; k < 2; ++k) {
    const char* what = k == 0 ? "mount point" : "database directory";
    if (parts[k].empty())
      return ConfigError{where + "empty " + what + " (expected MOUNTPOINT=DBDIR)"};
    ConfigResult<std::string> expanded = ExpandTilde(parts[k], env.home);
    if (!expanded.ok()) return ConfigError{where + expanded.error()};
    std::string p = std::move(expanded).value();
    if (p[0] != '/') {
      if (env.cwd.empty() || env.cwd[0] != '/') {
        return ConfigError{where + "relative " + what + " and no current directory"};
      }
      p = env.cwd + "/" + p;
    }
    normal[k] = NormalizeAbsolute(p);
  }
  if (normal[0] == "/") return ConfigError{where + "the root directory cannot be a mount point"};
  Candidate c;
  c.mount.point = normal[0];
  c.mount.db_dir = normal[1];
  c.mount.origin = "--mount";
  c.point_where = c.db_where = where;
  c.label = "--mount " + Quoted(arg);
  c.from_command_line = true;
  return c;
}

Candidate FromEntry(const MountEntry& e) {
  Candidate c;
  c.mount.point = e.point;
  c.mount.db_dir = e.db_dir;
  c.mount.durability = e.durability;
  c.mount.create = e.create;
  c.mount.origin = e.file + ":" + std::to_string(e.line);
  c.point_where = e.PointWhere();
  c.db_where = e.DbWhere();
  c.label = c.mount.origin;
  return c;
}

// `b` (declared later) against `a`: the first conflict, blamed on `b`; "" when none.
std::string Conflict(const Candidate& a, const Candidate& b) {
  const Mount& ma = a.mount;
  const Mount& mb = b.mount;
  if (ma.point == mb.point) {
    return b.point_where + "mount point " + mb.point + " is already mounted by " + a.label;
  }
  if (IsWithin(mb.point, ma.point)) {
    return b.point_where + "mount point " + mb.point + " is inside mount point " + ma.point + " (" +
           a.label + "): nested mounts are not supported";
  }
  if (IsWithin(ma.point, mb.point)) {
    return b.point_where + "mount point " + mb.point + " contains mount point " + ma.point + " (" +
           a.label + "): nested mounts are not supported";
  }
  if (ma.db_dir == mb.db_dir) {
    return b.db_where + "database directory " + mb.db_dir + " is already mounted at " + ma.point +
           " (" + a.label + ")";
  }
  if (IsWithin(mb.db_dir, ma.point)) {
    return b.db_where + "database directory " + mb.db_dir + " is inside mount point " + ma.point +
           " (" + a.label + "): programs under the monitor could not reach it";
  }
  if (IsWithin(ma.db_dir, mb.point)) {
    return b.point_where + "mount point " + mb.point + " contains database directory " + ma.db_dir +
           " (" + a.label + "): programs under the monitor could not reach it";
  }
  return "";
}

// A mount on its own, lexically.
std::string SelfConflict(const Candidate& c) {
  if (IsWithin(c.mount.db_dir, c.mount.point)) {
    return c.db_where + "database directory " + c.mount.db_dir + " is inside its own mount point " +
           c.mount.point;
  }
  return "";
}

// Every pair of `all` in declaration order; the first conflict, blamed on the later one.
std::string FirstConflict(const std::vector<Candidate>& all) {
  for (size_t i = 0; i < all.size(); ++i) {
    if (std::string self = SelfConflict(all[i]); !self.empty()) return self;
    for (size_t j = 0; j < i; ++j) {
      if (std::string conflict = Conflict(all[j], all[i]); !conflict.empty()) return conflict;
    }
  }
  return "";
}

// The host side of one mount: what exists must be a directory; a database must exist unless
// it is to be created.
std::string CheckHost(const Candidate& c) {
  struct stat st;
  const Mount& m = c.mount;
  if (stat(m.point.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return c.point_where + "mount point " + m.point + " exists and is not a directory";
    }
  } else if (errno != ENOENT) {
    return c.point_where + "mount point " + m.point + ": " + std::strerror(errno);
  }
  if (stat(m.db_dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return c.db_where + "database directory " + m.db_dir + " is not a directory";
    }
  } else if (errno == ENOENT) {
    if (!m.create) {
      return c.db_where + "database directory " + m.db_dir + " does not exist (create it with " +
             "'amino mkfs " + m.db_dir + "'" +
             (c.from_command_line ? "" : ", or add the option 'create'") + ")";
    }
  } else {
    return c.db_where + "database directory " + m.db_dir + ": " + std::strerror(errno);
  }
  return "";
}

}  // namespace

Environment Environment::FromProcess() {
  Environment env;
  if (const char* h = getenv("HOME"); h && h[0] == '/') {
    env.home = h;
  } else {
    struct passwd pw;
    struct passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (getpwuid_r(getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found && found->pw_dir &&
        found->pw_dir[0] == '/') {
      env.home = found->pw_dir;
    }
  }
  // The XDG base directory specification: relative values are invalid and ignored.
  if (const char* x = getenv("XDG_CONFIG_HOME"); x && x[0] == '/') env.xdg_config_home = x;
  if (const char* x = getenv("XDG_DATA_HOME"); x && x[0] == '/') env.xdg_data_home = x;
  if (const char* c = getenv("AMINO_CONFIG"); c && c[0] != '\0') env.amino_config = c;
  std::vector<char> cwd(kPathMax);
  if (getcwd(cwd.data(), cwd.size())) env.cwd = cwd.data();
  return env;
}

std::string Environment::DefaultConfigFile() const {
  if (!xdg_config_home.empty()) return xdg_config_home + "/amino/mounts";
  if (!home.empty()) return home + "/.config/amino/mounts";
  return "";
}

std::string Environment::DefaultDatabase() const {
  if (!xdg_data_home.empty()) return xdg_data_home + "/amino/default";
  if (!home.empty()) return home + "/.local/share/amino/default";
  return "";
}

ConfigResult<MountConfig> LoadMounts(const MountSources& sources, const Environment& env) {
  MountConfig config;
  std::vector<Candidate> all;

  FileChoice file = ChooseFile(sources, env);
  if (!file.path.empty()) {
    std::string text;
    int err = ReadFile(file.path, &text);
    if (err == 0) {
      ConfigResult<std::vector<MountEntry>> entries = ParseMountsFile(file.path, text, env.home);
      if (!entries.ok()) return ConfigError{entries.error()};
      for (const MountEntry& e : *entries) all.push_back(FromEntry(e));
      config.file = file.path;
      // The file must be valid on its own, whatever the command line replaces.
      if (std::string conflict = FirstConflict(all); !conflict.empty()) {
        return ConfigError{conflict};
      }
    } else if (err != ENOENT || file.required) {
      return ConfigError{file.path + file.why + ": " + std::strerror(err)};
    }
  }

  for (const std::string& arg : sources.mount_args) {
    ConfigResult<Candidate> c = FromArgument(arg, env);
    if (!c.ok()) return ConfigError{c.error()};
    auto same = std::find_if(all.begin(), all.end(),
                             [&](const Candidate& x) { return x.mount.point == c->mount.point; });
    if (same != all.end() && !same->from_command_line) {
      all.erase(same);  // the command line replaces the file's line for this mount point
    }
    all.push_back(std::move(c).value());
  }

  if (all.empty()) {
    Candidate d;
    if (env.home.empty()) {
      return ConfigError{"default mount: the home directory is unknown (HOME is not set)"};
    }
    d.mount.point = NormalizeAbsolute(env.home + "/amino");
    d.mount.db_dir = NormalizeAbsolute(env.DefaultDatabase());
    d.mount.create = true;
    d.mount.origin = "default";
    d.point_where = d.db_where = "default mount: ";
    d.label = "the default mount";
    all.push_back(std::move(d));
    config.is_default = true;
  }

  if (std::string conflict = FirstConflict(all); !conflict.empty()) return ConfigError{conflict};
  for (const Candidate& c : all) {
    std::string problem = CheckHost(c);
    if (!problem.empty()) return ConfigError{problem};
  }

  std::vector<Mount> mounts;
  for (Candidate& c : all) {
    c.mount.host_point = c.mount.point;
    mounts.push_back(std::move(c.mount));
  }
  std::sort(mounts.begin(), mounts.end(),
            [](const Mount& a, const Mount& b) { return a.point < b.point; });
  config.table = MountTable(std::move(mounts));
  return config;
}

}  // namespace amino::monitor::mounts
