// amino import DBDIR HOSTDIR: copies a host tree into the root of the file system like
// `cp -a --remove-destination HOSTDIR/. ROOT`, as one transaction: a failed or interrupted import
// changes nothing.
#include <fcntl.h>
#include <sys/stat.h>
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

using schema::Result;
using schema::Status;
using schema::Transaction;

constexpr size_t kChunk = 256 * 1024;

class Importer {
 public:
  Importer(schema::FileSystem& fs, std::string host_root, Progress& progress)
      : fs_(fs), root_(std::move(host_root)), progress_(progress), buf_(kChunk) {}

  // The whole copy: the body of one transaction, run again from scratch if it is retried.
  Status Run(Transaction& t) {
    error_.clear();
    warnings_.clear();
    links_.clear();
    progress_.Reset();
    struct stat st;  // HOSTDIR itself may be a symbolic link, as in cp -a HOSTDIR/.
    if (stat(root_.c_str(), &st) != 0) return HostFail(root_, errno);
    if (!S_ISDIR(st.st_mode)) return HostFail(root_, ENOTDIR);
    AMINO_RETURN_IF_ERROR(CopyChildren(t, root_, "/"));
    return SetAttributes(t, root_, "/", st);
  }

  // Why Run failed, naming the host file ("" for a failure of the database itself).
  const std::string& error() const { return error_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  Status CopyChildren(Transaction& t, const std::string& host, const std::string& db) {
    Result<std::vector<std::string>> names = host::ListDir(host);
    if (!names.ok()) return HostFail(host, names.status().error());
    for (const std::string& name : *names) {
      if (Interrupted()) {
        error_ = "interrupted";
        return Status::Errno(EINTR);
      }
      AMINO_RETURN_IF_ERROR(CopyEntry(t, HostJoin(host, name), schema::JoinPath(db, name)));
    }
    return Status::Ok();
  }

  Status CopyEntry(Transaction& t, const std::string& host, const std::string& db) {
    struct stat st;
    if (lstat(host.c_str(), &st) != 0) return HostFail(host, errno);
    bool merge = false;
    AMINO_RETURN_IF_ERROR(MakeRoom(t, host, db, S_ISDIR(st.st_mode), &merge));
    progress_.AddFile();

    // Every further name of a host inode becomes a hard link to the first one imported.
    if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
      auto [it, first] = links_.try_emplace({st.st_dev, st.st_ino}, db);
      if (!first) return Db(host, fs_.Link(t, cred_, it->second, db));
    }
    switch (st.st_mode & S_IFMT) {
      case S_IFDIR:
        // Owner-only until its attributes are copied, after its children, as cp does.
        if (!merge) AMINO_RETURN_IF_ERROR(Db(host, fs_.Mkdir(t, cred_, db, 0700).status()));
        AMINO_RETURN_IF_ERROR(CopyChildren(t, host, db));
        return SetAttributes(t, host, db, st);
      case S_IFREG:
        return CopyFile(t, host, db);
      case S_IFLNK: {
        Result<std::string> target = host::ReadLink(host);
        if (!target.ok()) return HostFail(host, target.status().error());
        AMINO_RETURN_IF_ERROR(Db(host, fs_.Symlink(t, cred_, *target, db)));
        return SetAttributes(t, host, db, st);
      }
      default:  // FIFOs, sockets, devices
        AMINO_RETURN_IF_ERROR(Db(host, fs_.Mknod(t, cred_, db, st.st_mode, st.st_rdev).status()));
        return SetAttributes(t, host, db, st);
    }
  }

  // Clears the way for `db` as cp --remove-destination does: directories merge, other files
  // are unlinked (a symbolic link is never written through), and a directory and a
  // non-directory never replace each other.
  Status MakeRoom(Transaction& t, const std::string& host, const std::string& db, bool is_dir,
                  bool* merge) {
    Result<schema::Stat> old = fs_.GetStat(t, cred_, db, /*follow=*/false);
    if (!old.ok()) {
      if (old.status().kind() == Status::Kind::kErrno && old.status().error() == ENOENT) {
        return Status::Ok();
      }
      return Db(host, old.status());
    }
    bool old_is_dir = S_ISDIR(old->attr.mode);
    if (is_dir && old_is_dir) {
      *merge = true;
      return Status::Ok();
    }
    if (is_dir) {
      return Fail(host, "cannot overwrite non-directory " + Printable(db) + " with a directory",
                  ENOTDIR);
    }
    if (old_is_dir) {
      return Fail(host, "cannot overwrite directory " + Printable(db) + " with a non-directory",
                  EISDIR);
    }
    return Db(host, fs_.Unlink(t, cred_, db));
  }

  Status CopyFile(Transaction& t, const std::string& host, const std::string& db) {
    // O_NOATIME: reading the source leaves it as it was (allowed to its owner and to root).
    int fd = open(host.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
    if (fd < 0 && errno == EPERM) fd = open(host.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return HostFail(host, errno);
    host::Fd in(fd);
    struct stat st;
    if (fstat(in.get(), &st) != 0) return HostFail(host, errno);
    const uint64_t size = static_cast<uint64_t>(st.st_size);

    Result<schema::OpenResult> file = fs_.Open(t, cred_, db, O_WRONLY | O_CREAT | O_EXCL, 0600);
    AMINO_RETURN_IF_ERROR(Db(host, file.status()));
    const schema::FileId id = file->id;

    // Only the data extents: holes stay holes, and a trailing hole is a truncate.
    Result<std::vector<host::Extent>> extents = host::DataExtents(in.get(), size);
    if (!extents.ok()) return HostFail(host, extents.status().error());
    uint64_t end = 0;
    for (const host::Extent& e : *extents) {
      for (uint64_t off = e.begin; off < e.end;) {
        size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, e.end - off));
        Result<size_t> got = host::ReadAt(in.get(), off, buf_.data(), want);
        if (!got.ok()) return HostFail(host, got.status().error());
        if (*got == 0) break;  // the file shrank while being read
        Result<size_t> wrote = fs_.Write(t, cred_, id, off, buf_.data(), *got);
        AMINO_RETURN_IF_ERROR(Db(host, wrote.status()));
        if (*wrote != *got) return Fail(host, "short write to " + Printable(db), EIO);
        off += *got;
        end = off;
        progress_.AddBytes(*got);
      }
    }
    if (end < size) AMINO_RETURN_IF_ERROR(Db(host, fs_.FTruncate(t, cred_, id, size)));

    Result<host::Xattrs> xattrs = host::GetXattrs(host);
    if (!xattrs.ok()) return HostFail(host, xattrs.status().error());
    for (const auto& [name, value] : *xattrs) {
      if (SkipXattr(host, name)) continue;
      AMINO_RETURN_IF_ERROR(Db(host, fs_.FSetXattr(t, cred_, id, name, value, 0)));
    }
    if (!HasXattr(*xattrs, schema::kAclAccessName)) {
      // Not the access ACL a default ACL of the directory gave it: the host file has none.
      AMINO_RETURN_IF_ERROR(Db(host, fs_.FRemoveXattr(t, cred_, id, schema::kAclAccessName)));
    }
    // chown clears set-user-ID and set-group-ID: the mode comes after it.
    AMINO_RETURN_IF_ERROR(Db(host, fs_.FChown(t, cred_, id, st.st_uid, st.st_gid)));
    AMINO_RETURN_IF_ERROR(Db(host, fs_.FChmod(t, cred_, id, st.st_mode & 07777)));
    const timespec times[2] = {st.st_atim, st.st_mtim};
    AMINO_RETURN_IF_ERROR(Db(host, fs_.FUtimens(t, cred_, id, times)));
    return Db(host, fs_.Close(t, id));
  }

  // Extended attributes, owner, mode and times of `db` from `st`, in the order that keeps each
  // (chown clears set-ID bits; anything but the times changes the mtime of nothing here).
  Status SetAttributes(Transaction& t, const std::string& host, const std::string& db,
                       const struct stat& st) {
    Result<host::Xattrs> xattrs = host::GetXattrs(host);
    if (!xattrs.ok()) return HostFail(host, xattrs.status().error());
    for (const auto& [name, value] : *xattrs) {
      if (SkipXattr(host, name)) continue;
      AMINO_RETURN_IF_ERROR(Db(host, fs_.SetXattr(t, cred_, db, name, value, 0, false)));
    }
    // Only the host's ACLs: none a default ACL of the directory gave, none a merged directory
    // had (symbolic links have none).
    for (std::string_view acl : {schema::kAclAccessName, schema::kAclDefaultName}) {
      if (S_ISLNK(st.st_mode) || HasXattr(*xattrs, acl)) continue;
      AMINO_RETURN_IF_ERROR(Db(host, fs_.RemoveXattr(t, cred_, db, acl, false)));
    }
    AMINO_RETURN_IF_ERROR(Db(host, fs_.Chown(t, cred_, db, st.st_uid, st.st_gid, false)));
    if (!S_ISLNK(st.st_mode)) {  // a symbolic link's mode is always 0777
      AMINO_RETURN_IF_ERROR(Db(host, fs_.Chmod(t, cred_, db, st.st_mode & 07777, false)));
    }
    const timespec times[2] = {st.st_atim, st.st_mtim};
    return Db(host, fs_.Utimens(t, cred_, db, times, false));
  }

  // system.* attributes are the host kernel's own; of them only the POSIX ACLs mean something
  // in the file system, and they are copied.
  bool SkipXattr(const std::string& host, const std::string& name) {
    if (name.rfind("system.", 0) != 0) return false;
    if (name == schema::kAclAccessName || name == schema::kAclDefaultName) return false;
    warnings_.push_back(Printable(host) + ": extended attribute " + Printable(name) +
                        " not imported (system namespace)");
    return true;
  }

  static bool HasXattr(const host::Xattrs& xattrs, std::string_view name) {
    return std::any_of(xattrs.begin(), xattrs.end(),
                       [&](const auto& x) { return x.first == name; });
  }

  // A database result for the file `host`: conflicts pass through untouched so the
  // transaction is retried.
  Status Db(const std::string& host, Status s) {
    if (!s.ok() && !s.is_conflict()) error_ = Printable(host) + ": " + Describe(s);
    return s;
  }

  Status HostFail(const std::string& host, int err) {
    error_ = Printable(host) + ": " + ErrnoText(err);
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
  std::vector<std::string> warnings_;
  std::map<std::pair<dev_t, ino_t>, std::string> links_;  // host inode -> first name imported
};

}  // namespace

Runner AddImport(CLI::App& app) {
  struct Options {
    std::string dir;
    std::string host;
    bool progress = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "import", "Copy a host directory's contents into the file system, in one transaction");
  cmd->footer(
      "Copies the contents of HOSTDIR into the root of the file system in DBDIR, like "
      "`cp -a --remove-destination HOSTDIR/. ROOT`: recursively, keeping modes, owners, times, "
      "symbolic links, hard links, holes, extended attributes (except system.*) and special "
      "files. Existing entries are replaced (never written through); directories are merged. The "
      "import is one transaction: when it fails or is "
      "interrupted, the file system is left as it was.");
  cmd->add_option("DBDIR", opt->dir, "Database directory")->required();
  cmd->add_option("HOSTDIR", opt->host, "Host directory to copy from")->required();
  cmd->add_flag("--progress", opt->progress,
                "Report files and bytes on stderr even when it is not a terminal");
  return [opt] {
    struct stat st;
    if (stat(opt->host.c_str(), &st) != 0) {
      Error("import", Printable(opt->host) + ": " + ErrnoText(errno));
      return kExitFailure;
    }
    if (!S_ISDIR(st.st_mode)) {
      Error("import", Printable(opt->host) + ": " + ErrnoText(ENOTDIR));
      return kExitFailure;
    }
    std::unique_ptr<schema::FileSystem> fs = OpenFileSystem("import", opt->dir);
    if (!fs) return kExitUsage;
    // Copying the database into itself would read files while writing them.
    if (PathIsWithin(opt->dir, opt->host)) {
      Error("import", Printable(opt->dir) + ": the database directory is inside " +
                          Printable(opt->host) + "; cannot import a file system into itself");
      return kExitFailure;
    }
    CatchInterrupts();
    Progress progress("import", opt->progress);
    Importer importer(*fs, opt->host, progress);
    Status st_run = fs->Run([&](Transaction& t) { return importer.Run(t); });
    progress.Finish(st_run.ok());
    for (const std::string& w : importer.warnings()) Warning("import", w);
    if (!st_run.ok()) {
      std::string why = importer.error().empty() ? Describe(st_run) : importer.error();
      Error("import", why + " (nothing was imported)");
      return kExitFailure;
    }
    return kExitOk;
  };
}

}  // namespace amino::cli
