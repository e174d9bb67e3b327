// Parsing the mounts file (see mount_file.h).
#include "monitor/mounts/mount_file.h"

#include "monitor/mounts/lexical_path.h"

namespace amino::monitor::mounts {

namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// One whitespace-separated field of a line, as written.
struct Field {
  std::string_view raw;
  int column;  // 1-based byte column of its first byte
};

std::string Where(std::string_view file, int line, int column) {
  return std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
}

// Shows a field as written, for messages.
std::string Quoted(std::string_view raw) { return "'" + std::string(raw) + "'"; }

// Undoes the octal escapes of a field. On error, *bad_offset is the offset of the backslash.
bool Unescape(std::string_view raw, std::string* out, size_t* bad_offset) {
  out->clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\') {
      out->push_back(raw[i]);
      continue;
    }
    int value = 0;
    bool octal = i + 3 < raw.size();  // three digits follow
    for (size_t k = 1; octal && k <= 3; ++k) {
      if (raw[i + k] < '0' || raw[i + k] > '7') {
        octal = false;
      } else {
        value = value * 8 + (raw[i + k] - '0');
      }
    }
    if (!octal || value == 0 || value > 255) {
      *bad_offset = i;
      return false;
    }
    out->push_back(static_cast<char>(value));
    i += 3;
  }
  return true;
}

}  // namespace

std::string MountEntry::PointWhere() const { return Where(file, line, point_column); }
std::string MountEntry::DbWhere() const { return Where(file, line, db_column); }

ConfigResult<std::string> ExpandTilde(std::string_view path, std::string_view home) {
  if (path.empty() || path[0] != '~') return std::string(path);
  if (path.size() > 1 && path[1] != '/') {
    return ConfigError{"'~user' is not supported: write the path of " +
                       std::string(path.substr(0, path.find('/'))) + " out"};
  }
  if (home.empty() || home[0] != '/') {
    return ConfigError{"cannot expand '~': the home directory is unknown (HOME is not set)"};
  }
  return std::string(home) + std::string(path.substr(1));
}

// Long by design: one pass over the file's lines, with the line and column of every error.
ConfigResult<std::vector<MountEntry>> ParseMountsFile(std::string_view file_name,
                                                      std::string_view text,
                                                      std::string_view home) {
  std::vector<MountEntry> entries;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    auto where = [&](size_t offset) {
      return Where(file_name, line_no, static_cast<int>(offset) + 1);
    };
    if (size_t nul = line.find('\0'); nul != std::string_view::npos) {
      return ConfigError{where(nul) + "NUL byte in the file"};
    }

    std::vector<Field> fields;
    size_t i = 0;
    while (i < line.size()) {
      if (IsBlank(line[i])) {
        ++i;
        continue;
      }
      if (line[i] == '#') break;  // a comment to the end of the line
      size_t j = i;
      while (j < line.size() && !IsBlank(line[j])) ++j;
      fields.push_back({line.substr(i, j - i), static_cast<int>(i) + 1});
      i = j;
    }
    if (fields.empty()) continue;
    if (fields.size() == 1) {
      return ConfigError{where(line.find_last_not_of(" \t\r") + 1) +
                         "missing database directory after the mount point (expected "
                         "'MOUNTPOINT DBDIR [OPTIONS]')"};
    }
    if (fields.size() > 3) {
      return ConfigError{where(fields[3].column - 1) + "unexpected field " + Quoted(fields[3].raw) +
                         " (expected 'MOUNTPOINT DBDIR [OPTIONS]'; write a space in a path as "
                         "\\040)"};
    }

    MountEntry e;
    e.file = std::string(file_name);
    e.line = line_no;
    e.point_column = fields[0].column;
    e.db_column = fields[1].column;

    // The two paths: unescape, expand "~", require absolute, normalise.
    for (int k = 0; k < 2; ++k) {
      const Field& f = fields[k];
      const char* what = k == 0 ? "mount point" : "database directory";
      std::string value;
      size_t bad = 0;
      if (!Unescape(f.raw, &value, &bad)) {
        return ConfigError{where(f.column - 1 + bad) + "bad escape in " + std::string(what) +
                           " (write a byte as \\ooo, three octal digits, not \\000)"};
      }
      // "~" is expanded only when written as such: "\176" is a literal tilde.
      if (f.raw[0] == '~') {
        ConfigResult<std::string> expanded = ExpandTilde(value, home);
        if (!expanded.ok()) return ConfigError{where(f.column - 1) + expanded.error()};
        value = std::move(expanded).value();
      }
      if (value.empty() || value[0] != '/') {
        return ConfigError{where(f.column - 1) + "relative " + what + " " + Quoted(f.raw) +
                           ": write an absolute path (or one starting with ~/)"};
      }
      (k == 0 ? e.point : e.db_dir) = NormalizeAbsolute(value);
    }
    if (e.point == "/") {
      return ConfigError{e.PointWhere() + "the root directory cannot be a mount point"};
    }

    if (fields.size() == 3) {
      std::string_view opts = fields[2].raw;
      size_t start = 0;
      for (;;) {
        size_t comma = opts.find(',', start);
        if (comma == std::string_view::npos) comma = opts.size();
        std::string_view opt = opts.substr(start, comma - start);
        size_t col = static_cast<size_t>(fields[2].column - 1) + start;
        if (opt.empty()) return ConfigError{where(col) + "empty option"};
        if (opt == "create") {
          e.create = true;
        } else if (opt == "defaults") {
          // nothing: fstab's placeholder
        } else if (opt.substr(0, 11) == "durability=") {
          std::string_view v = opt.substr(11);
          if (e.durability) return ConfigError{where(col) + "durability given twice"};
          if (v == "async") {
            e.durability = Durability::kAsync;
          } else if (v == "sync") {
            e.durability = Durability::kSync;
          } else {
            return ConfigError{where(col + 11) + "unknown durability " + Quoted(v) +
                               " (async or sync)"};
          }
        } else {
          return ConfigError{where(col) + "unknown option " + Quoted(opt) +
                             " (known: create, durability=async, durability=sync, defaults)"};
        }
        if (comma == opts.size()) break;
        start = comma + 1;
      }
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace amino::monitor::mounts
