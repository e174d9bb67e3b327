// amino export DBDIR HOSTDIR: copies the file system out to a host directory, the inverse of
// import: `diff -r` finds no difference and stat shows the same modes, owners, times, link
// counts, sizes and holes.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/host_tree.h"
#include "cli/progress.h"
#include "schema/acl.h"
#include "schema/filesystem.h"

namespace amino::cli {
namespace {

using schema::FileId;
using schema::Result;
using schema::Status;
using schema::Transaction;

constexpr size_t kChunk = 256 * 1024;

bool IsErrno(const Status& s, int err) {
  return s.kind() == Status::Kind::kErrno && s.error() == err;
}

class Exporter {
 public:
  Exporter(schema::FileSystem& fs, std::string host_root, Progress& progress)
      : fs_(fs), root_(std::move(host_root)), progress_(progress), buf_(kChunk) {}

  // The whole copy, in one (reading) transaction; a retry copies over what the first attempt
  // wrote, which replaces it.
  Status Run(Transaction& t) {
    error_.clear();
    links_.clear();
    progress_.Reset();
    struct stat host_st;
    if (stat(root_.c_str(), &host_st) != 0) {
      if (errno != ENOENT) return HostFail(root_, errno);
      if (mkdir(root_.c_str(), 0700) != 0) return HostFail(root_, errno);
    } else if (!S_ISDIR(host_st.st_mode)) {
      return HostFail(root_, ENOTDIR);
    }
    Result<schema::Stat> st = fs_.GetStat(t, cred_, "/", false);
    AMINO_RETURN_IF_ERROR(Db("/", st.status()));
    AMINO_RETURN_IF_ERROR(CopyChildren(t, "/", root_));
    return SetAttributes(t, "/", root_, st->attr);
  }

  const std::string& error() const { return error_; }

 private:
  Status CopyChildren(Transaction& t, const std::string& db, const std::string& host) {
    AMINO_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(t, db));
    for (const std::string& name : names) {
      if (Interrupted()) {
        error_ = "interrupted";
        return Status::Errno(EINTR);
      }
      AMINO_RETURN_IF_ERROR(CopyEntry(t, schema::JoinPath(db, name), HostJoin(host, name)));
    }
    return Status::Ok();
  }

  Result<std::vector<std::string>> ListDir(Transaction& t, const std::string& db) {
    Result<std::vector<schema::DirEntry>> entries = ReadAllEntries(fs_, t, cred_, db);
    AMINO_RETURN_IF_ERROR(Db(db, entries.status()));
    std::vector<std::string> names;
    for (schema::DirEntry& e : *entries) names.push_back(std::move(e.name));
    std::sort(names.begin(), names.end());
    return names;
  }

  Status CopyEntry(Transaction& t, const std::string& db, const std::string& host) {
    Result<schema::Stat> st = fs_.GetStat(t, cred_, db, /*follow=*/false);
    AMINO_RETURN_IF_ERROR(Db(db, st.status()));
    const schema::Attr& a = st->attr;
    bool merge = false;
    AMINO_RETURN_IF_ERROR(MakeRoom(host, S_ISDIR(a.mode), &merge));
    progress_.AddFile();

    // Every further name of a file becomes a hard link to the first one exported.
    if (!S_ISDIR(a.mode) && a.nlink > 1) {
      auto [it, first] = links_.try_emplace(st->ino, host);
      if (!first) {
        if (link(it->second.c_str(), host.c_str()) != 0) return HostFail(host, errno);
        return Status::Ok();
      }
    }
    switch (a.mode & S_IFMT) {
      case S_IFDIR:
        // Owner-only until its attributes are copied, after its children.
        if (!merge && mkdir(host.c_str(), 0700) != 0) return HostFail(host, errno);
        AMINO_RETURN_IF_ERROR(CopyChildren(t, db, host));
        return SetAttributes(t, db, host, a);
      case S_IFREG:
        return CopyFile(t, db, host, a);
      case S_IFLNK: {
        Result<std::string> target = fs_.Readlink(t, cred_, db);
        AMINO_RETURN_IF_ERROR(Db(db, target.status()));
        if (symlink(target->c_str(), host.c_str()) != 0) return HostFail(host, errno);
        return SetAttributes(t, db, host, a);
      }
      default:  // FIFOs, sockets, devices
        if (mknod(host.c_str(), a.mode & (S_IFMT | 0777), a.rdev) != 0) {
          return HostFail(host, errno);
        }
        return SetAttributes(t, db, host, a);
    }
  }

  // Clears the way for `host` as cp --remove-destination does: directories merge, other files
  // are unlinked (a symbolic link is never written through), and a directory and a
  // non-directory never replace each other.
  Status MakeRoom(const std::string& host, bool is_dir, bool* merge) {
    struct stat old;
    if (lstat(host.c_str(), &old) != 0) {
      return errno == ENOENT ? Status::Ok() : HostFail(host, errno);
    }
    if (is_dir && S_ISDIR(old.st_mode)) {
      *merge = true;
      return Status::Ok();
    }
    if (is_dir) return Fail(host, "cannot overwrite a non-directory with a directory", ENOTDIR);
    if (S_ISDIR(old.st_mode)) {
      return Fail(host, "cannot overwrite a directory with a non-directory", EISDIR);
    }
    if (unlink(host.c_str()) != 0) return HostFail(host, errno);
    return Status::Ok();
  }

  Status CopyFile(Transaction& t, const std::string& db, const std::string& host,
                  const schema::Attr& a) {
    Result<schema::OpenResult> file = fs_.Open(t, cred_, db, O_RDONLY);
    AMINO_RETURN_IF_ERROR(Db(db, file.status()));
    const FileId id = file->id;
    host::Fd out(open(host.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out.valid()) return HostFail(host, errno);

    // Only the data extents: holes stay holes, and a trailing hole is a truncate.
    for (uint64_t offset = 0; offset < a.size;) {
      Result<uint64_t> data = fs_.SeekData(t, id, offset);
      if (!data.ok() && IsErrno(data.status(), ENXIO)) break;
      AMINO_RETURN_IF_ERROR(Db(db, data.status()));
      Result<uint64_t> hole = fs_.SeekHole(t, id, *data);
      AMINO_RETURN_IF_ERROR(Db(db, hole.status()));
      const uint64_t end = std::min(*hole, a.size);
      if (*data >= end) break;
      for (uint64_t off = *data; off < end;) {
        size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, end - off));
        Result<size_t> got = fs_.Read(t, id, off, buf_.data(), want);
        AMINO_RETURN_IF_ERROR(Db(db, got.status()));
        if (*got == 0) return Fail(host, "short read from " + Printable(db), EIO);
        Status wrote = host::WriteAt(out.get(), off, buf_.data(), *got);
        if (!wrote.ok()) return HostFail(host, wrote.error());
        off += *got;
        progress_.AddBytes(*got);
      }
      offset = end;
    }
    if (ftruncate(out.get(), static_cast<off_t>(a.size)) != 0) return HostFail(host, errno);

    Result<std::vector<std::string>> names = fs_.FListXattr(t, cred_, id);
    AMINO_RETURN_IF_ERROR(Db(db, names.status()));
    for (const std::string& name : *names) {
      Result<std::string> value = fs_.FGetXattr(t, cred_, id, name);
      AMINO_RETURN_IF_ERROR(Db(db, value.status()));
      if (fsetxattr(out.get(), name.c_str(), value->data(), value->size(), 0) != 0) {
        return HostFail(host, errno, " (extended attribute " + Printable(name) + ")");
      }
    }
    // Not an access ACL the host directory's default ACL gave it, when the file has none.
    if (!Listed(*names, schema::kAclAccessName) &&
        fremovexattr(out.get(), schema::kAclAccessName.data()) != 0 && !NoAcl(errno)) {
      return HostFail(host, errno);
    }
    // chown clears set-user-ID and set-group-ID: the mode comes after it.
    if (fchown(out.get(), a.uid, a.gid) != 0) return HostFail(host, errno);
    if (fchmod(out.get(), a.mode & 07777) != 0) return HostFail(host, errno);
    const timespec times[2] = {a.atime, a.mtime};
    if (futimens(out.get(), times) != 0) return HostFail(host, errno);
    Status closed = out.Close();
    if (!closed.ok()) return HostFail(host, closed.error());
    return Db(db, fs_.Close(t, id));
  }

  static bool Listed(const std::vector<std::string>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  }
  // Removing an ACL failed only because there is none (or the host has no ACLs at all).
  static bool NoAcl(int err) { return err == ENODATA || err == EOPNOTSUPP; }

  // Extended attributes, owner, mode and times of `host` from the database, times last.
  Status SetAttributes(Transaction& t, const std::string& db, const std::string& host,
                       const schema::Attr& a) {
    Result<std::vector<std::string>> names = fs_.ListXattr(t, cred_, db, false);
    AMINO_RETURN_IF_ERROR(Db(db, names.status()));
    for (const std::string& name : *names) {
      Result<std::string> value = fs_.GetXattr(t, cred_, db, name, false);
      AMINO_RETURN_IF_ERROR(Db(db, value.status()));
      Status set = host::SetXattr(host, name, *value);
      if (!set.ok()) {
        return HostFail(host, set.error(), " (extended attribute " + Printable(name) + ")");
      }
    }
    // Only the file's ACLs: none inherited on the host, none a merged directory had.
    for (std::string_view acl : {schema::kAclAccessName, schema::kAclDefaultName}) {
      if (S_ISLNK(a.mode) || Listed(*names, acl)) continue;
      if (lremovexattr(host.c_str(), acl.data()) != 0 && !NoAcl(errno)) {
        return HostFail(host, errno);
      }
    }
    if (lchown(host.c_str(), a.uid, a.gid) != 0) return HostFail(host, errno);
    if (!S_ISLNK(a.mode) && chmod(host.c_str(), a.mode & 07777) != 0) {
      return HostFail(host, errno);
    }
    const timespec times[2] = {a.atime, a.mtime};
    if (utimensat(AT_FDCWD, host.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
      return HostFail(host, errno);
    }
    return Status::Ok();
  }

  // A database result for the file `db`: conflicts pass through untouched so the transaction
  // is retried.
  Status Db(const std::string& db, Status s) {
    if (!s.ok() && !s.is_conflict()) error_ = Printable(db) + ": " + Describe(s);
    return s;
  }

  Status HostFail(const std::string& host, int err, const std::string& what = "") {
    error_ = Printable(host) + ": " + ErrnoText(err) + what;
    return Status::Errno(err);
  }

  Status Fail(const std::string& host, const std::string& reason, int err) {
    error_ = Printable(host) + ": " + reason;
    return Status::Errno(err);
  }

  schema::FileSystem& fs_;
  const std::string root_;
  Progress& progress_;
  const schema::Cred cred_ = schema::Cred::Root();
  std::vector<char> buf_;
  std::string error_;
  std::map<FileId, std::string> links_;  // file -> first host name exported
};

}  // namespace

Runner AddExport(CLI::App& app) {
  struct Options {
    std::string dir;
    std::string host;
    bool progress = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("export", "Copy the file system out to a host directory");
  cmd->footer(
      "Copies the file system in DBDIR out to HOSTDIR (created if missing), the inverse of "
      "import: modes, owners, times, symbolic links, hard links, holes, extended attributes "
      "and special files are kept. Existing host entries are replaced (never written through, "
      "as by cp --remove-destination); directories are merged.");
  cmd->add_option("DBDIR", opt->dir, "Database directory")->required();
  cmd->add_option("HOSTDIR", opt->host, "Host directory to copy to")->required();
  cmd->add_flag("--progress", opt->progress,
                "Report files and bytes on stderr even when it is not a terminal");
  return [opt] {
    std::unique_ptr<schema::FileSystem> fs = OpenFileSystem("export", opt->dir);
    if (!fs) return kExitUsage;
    // Files of the file system must never replace the database's own files.
    if (PathIsWithin(opt->host, opt->dir)) {
      Error("export", Printable(opt->host) + ": inside the database directory " +
                          Printable(opt->dir) + "; choose another destination");
      return kExitFailure;
    }
    CatchInterrupts();
    Progress progress("export", opt->progress);
    Exporter exporter(*fs, opt->host, progress);
    Status st = fs->Run([&](Transaction& t) { return exporter.Run(t); });
    progress.Finish(st.ok());
    if (!st.ok()) {
      Error("export", exporter.error().empty() ? Describe(st) : exporter.error());
      return kExitFailure;
    }
    return kExitOk;
  };
}

}  // namespace amino::cli
