// amino ls [-R] DBDIR [PATH]: an `ls -l` style listing read straight from the database.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "schema/filesystem.h"

namespace amino::cli {
namespace {

using schema::Status;

std::string ModeString(uint32_t mode) {
  std::string s(10, '-');
  switch (mode & S_IFMT) {
    case S_IFDIR:
      s[0] = 'd';
      break;
    case S_IFLNK:
      s[0] = 'l';
      break;
    case S_IFIFO:
      s[0] = 'p';
      break;
    case S_IFSOCK:
      s[0] = 's';
      break;
    case S_IFCHR:
      s[0] = 'c';
      break;
    case S_IFBLK:
      s[0] = 'b';
      break;
    default:
      break;
  }
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i) {
    if (mode & (0400 >> i)) s[1 + i] = rwx[i];
  }
  // The special bits take the execute column: lower case when execute is also set.
  auto special = [&](int col, uint32_t bit, char with_x, char without_x) {
    if (mode & bit) s[col] = s[col] == '-' ? without_x : with_x;
  };
  special(3, S_ISUID, 's', 'S');
  special(6, S_ISGID, 's', 'S');
  special(9, S_ISVTX, 't', 'T');
  return s;
}

std::string FormatTime(const timespec& ts) {
  time_t secs = ts.tv_sec;
  struct tm tm;
  if (!localtime_r(&secs, &tm)) return std::to_string(secs);
  char buf[64];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// One line of output, column by column.
struct Row {
  std::string mode, nlink, owner, group, size, time, name;
};

class Lister {
 public:
  Lister(schema::FileSystem& fs, bool recursive) : fs_(fs), recursive_(recursive) {}

  // Appends the listing of `path` to `out`.
  Status List(schema::Transaction& t, const std::string& path, std::string* out) {
    AMINO_ASSIGN_OR_RETURN(schema::Stat st, fs_.GetStat(t, cred_, path, /*follow=*/false));
    if (!S_ISDIR(st.attr.mode)) {
      AMINO_ASSIGN_OR_RETURN(Row row, MakeRow(t, path, Printable(path), st));
      Print({row}, out);
      return Status::Ok();
    }
    return ListDir(t, path, out, /*first=*/true);
  }

 private:
  Status ListDir(schema::Transaction& t, const std::string& path, std::string* out, bool first) {
    if (recursive_) {
      if (!first) *out += "\n";
      *out += Printable(path) + ":\n";
    }
    AMINO_ASSIGN_OR_RETURN(std::vector<schema::DirEntry> entries,
                           ReadAllEntries(fs_, t, cred_, path));
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    std::vector<Row> rows;
    std::vector<std::string> subdirs;
    uint64_t blocks = 0;
    for (const schema::DirEntry& e : entries) {
      std::string child = schema::JoinPath(path, e.name);
      AMINO_ASSIGN_OR_RETURN(schema::Stat st, fs_.GetStat(t, cred_, child, /*follow=*/false));
      AMINO_ASSIGN_OR_RETURN(Row row, MakeRow(t, child, Printable(e.name), st));
      rows.push_back(std::move(row));
      blocks += st.attr.blocks;
      if (S_ISDIR(st.attr.mode)) subdirs.push_back(child);
    }
    *out += "total " + std::to_string((blocks + 1) / 2) + "\n";  // 1 KiB units, like ls
    Print(rows, out);
    if (recursive_) {
      for (const std::string& sub : subdirs) AMINO_RETURN_IF_ERROR(ListDir(t, sub, out, false));
    }
    return Status::Ok();
  }

  schema::Result<Row> MakeRow(schema::Transaction& t, const std::string& path, std::string name,
                              const schema::Stat& st) {
    const schema::Attr& a = st.attr;
    Row r;
    r.mode = ModeString(a.mode);
    r.nlink = std::to_string(a.nlink);
    r.owner = UserName(a.uid);
    r.group = GroupName(a.gid);
    if (S_ISCHR(a.mode) || S_ISBLK(a.mode)) {
      r.size = std::to_string(major(a.rdev)) + ", " + std::to_string(minor(a.rdev));
    } else {
      r.size = std::to_string(a.size);
    }
    r.time = FormatTime(a.mtime);
    r.name = std::move(name);
    if (S_ISLNK(a.mode)) {
      AMINO_ASSIGN_OR_RETURN(std::string target, fs_.Readlink(t, cred_, path));
      r.name += " -> " + Printable(target);
    }
    return r;
  }

  static void Print(const std::vector<Row>& rows, std::string* out) {
    size_t w_nlink = 0, w_owner = 0, w_group = 0, w_size = 0;
    for (const Row& r : rows) {
      w_nlink = std::max(w_nlink, r.nlink.size());
      w_owner = std::max(w_owner, r.owner.size());
      w_group = std::max(w_group, r.group.size());
      w_size = std::max(w_size, r.size.size());
    }
    auto right = [](const std::string& s, size_t w) { return std::string(w - s.size(), ' ') + s; };
    auto left = [](const std::string& s, size_t w) { return s + std::string(w - s.size(), ' '); };
    for (const Row& r : rows) {
      *out += r.mode + " " + right(r.nlink, w_nlink) + " " + left(r.owner, w_owner) + " " +
              left(r.group, w_group) + " " + right(r.size, w_size) + " " + r.time + " " + r.name +
              "\n";
    }
  }

  std::string UserName(uid_t uid) {
    auto it = users_.find(uid);
    if (it != users_.end()) return it->second;
    const passwd* pw = getpwuid(uid);
    return users_[uid] = pw ? Printable(pw->pw_name) : std::to_string(uid);
  }

  std::string GroupName(gid_t gid) {
    auto it = groups_.find(gid);
    if (it != groups_.end()) return it->second;
    const group* gr = getgrgid(gid);
    return groups_[gid] = gr ? Printable(gr->gr_name) : std::to_string(gid);
  }

  schema::FileSystem& fs_;
  const bool recursive_;
  const schema::Cred cred_ = schema::Cred::Root();
  std::map<uid_t, std::string> users_;
  std::map<gid_t, std::string> groups_;
};

}  // namespace

Runner AddLs(CLI::App& app) {
  struct Options {
    bool recursive = false;
    std::string dir;
    std::string path = "/";
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("ls", "List a path of the file system in DBDIR like ls -l");
  cmd->footer(
      "A directory lists its entries sorted by name, anything else lists itself. Names are "
      "printed with control characters and invalid UTF-8 escaped as \\n, \\t, \\\\ or "
      "\\ooo, so one entry is one line.");
  cmd->add_flag("-R,--recursive", opt->recursive, "List subdirectories recursively");
  cmd->add_option("DBDIR", opt->dir, "Database directory")->required();
  cmd->add_option("PATH", opt->path, "Path inside the file system, starting with /");
  return [opt] {
    if (opt->path.empty() || opt->path[0] != '/') {
      Error("ls", Printable(opt->path) + ": paths inside the file system start with /");
      return kExitUsage;
    }
    std::unique_ptr<schema::FileSystem> fs = OpenFileSystem("ls", opt->dir);
    if (!fs) return kExitUsage;
    Lister lister(*fs, opt->recursive);
    std::string out;
    Status st = fs->Run([&](schema::Transaction& t) {
      out.clear();  // a retried transaction starts over
      return lister.List(t, opt->path, &out);
    });
    if (!st.ok()) {
      Error("ls", Printable(opt->path) + ": " + Describe(st));
      return kExitFailure;
    }
    std::cout << out << std::flush;
    return kExitOk;
  };
}

}  // namespace amino::cli
