// A caller of the schema the way the monitor is one: every call runs in its own transaction
// through FileSystem::Run (committed on success, aborted on failure), with fixed credentials.
#pragma once

#include <fcntl.h>

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "schema/filesystem.h"

namespace amino::schema::testing {

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

// The errno of a call: 0 when it succeeded.
inline int Err(const Status& s) { return s.ok() ? 0 : s.error(); }
template <typename T>
int Err(const Result<T>& r) {
  return r.ok() ? 0 : r.status().error();
}

class Client {
 public:
  explicit Client(FileSystem* fs, Cred cred = Cred::Root()) : fs_(fs), cred_(std::move(cred)) {}
  Client As(Cred cred) const { return Client(fs_, std::move(cred)); }
  const Cred& cred() const { return cred_; }
  FileSystem* fs() const { return fs_; }

  // Runs `f(Transaction&)` (returning a Status or a Result) in its own transaction and returns
  // what it returned, or the transaction's failure if the commit itself failed.
  template <typename F>
  auto Txn(F&& f) -> std::invoke_result_t<F, Transaction&> {
    using R = std::invoke_result_t<F, Transaction&>;
    std::optional<R> out;
    Status st = fs_->Run([&](Transaction& t) -> Status {
      out.emplace(f(t));
      return StatusOf(*out);
    });
    if (!out || (!st.ok() && StatusOf(*out).ok())) return R(st);
    return std::move(*out);
  }

  Result<Stat> GetStat(std::string_view p, bool follow = true) {
    return Txn([&](Transaction& t) { return fs_->GetStat(t, cred_, p, follow); });
  }
  Result<Stat> LStat(std::string_view p) { return GetStat(p, false); }
  Status Access(std::string_view p, int mode, bool follow = true) {
    return Txn([&](Transaction& t) { return fs_->Access(t, cred_, p, mode, follow); });
  }
  Result<OpenResult> Open(std::string_view p, int flags, mode_t mode = 0) {
    return Txn([&](Transaction& t) { return fs_->Open(t, cred_, p, flags, mode); });
  }
  Status Close(FileId id) {
    return Txn([&](Transaction& t) { return fs_->Close(t, id); });
  }
  Status Reopen(FileId id) {
    return Txn([&](Transaction& t) { return fs_->Reopen(t, id); });
  }
  Result<Stat> Mknod(std::string_view p, mode_t mode, dev_t rdev = 0) {
    return Txn([&](Transaction& t) { return fs_->Mknod(t, cred_, p, mode, rdev); });
  }
  Result<Stat> Mkdir(std::string_view p, mode_t mode = 0755) {
    return Txn([&](Transaction& t) { return fs_->Mkdir(t, cred_, p, mode); });
  }
  Status Rmdir(std::string_view p) {
    return Txn([&](Transaction& t) { return fs_->Rmdir(t, cred_, p); });
  }
  Status Unlink(std::string_view p) {
    return Txn([&](Transaction& t) { return fs_->Unlink(t, cred_, p); });
  }
  Status Link(std::string_view from, std::string_view to, bool follow_old = false) {
    return Txn([&](Transaction& t) { return fs_->Link(t, cred_, from, to, follow_old); });
  }
  Status LinkFile(FileId id, std::string_view to, bool linkable) {
    return Txn([&](Transaction& t) { return fs_->LinkFile(t, cred_, id, to, linkable); });
  }
  Status Symlink(std::string_view target, std::string_view p) {
    return Txn([&](Transaction& t) { return fs_->Symlink(t, cred_, target, p); });
  }
  Result<std::string> Readlink(std::string_view p) {
    return Txn([&](Transaction& t) { return fs_->Readlink(t, cred_, p); });
  }
  Status Rename(std::string_view from, std::string_view to, unsigned flags = 0) {
    return Txn([&](Transaction& t) { return fs_->Rename(t, cred_, from, to, flags); });
  }
  Status Chmod(std::string_view p, mode_t mode, bool follow = true) {
    return Txn([&](Transaction& t) { return fs_->Chmod(t, cred_, p, mode, follow); });
  }
  Status Chown(std::string_view p, uid_t uid, gid_t gid, bool follow = true) {
    return Txn([&](Transaction& t) { return fs_->Chown(t, cred_, p, uid, gid, follow); });
  }
  Status Utimens(std::string_view p, const timespec* times, bool follow = true) {
    return Txn([&](Transaction& t) { return fs_->Utimens(t, cred_, p, times, follow); });
  }
  Status Truncate(std::string_view p, int64_t len) {
    return Txn([&](Transaction& t) { return fs_->Truncate(t, cred_, p, len); });
  }
  Result<std::string> GetXattr(std::string_view p, std::string_view name, bool follow = true) {
    return Txn([&](Transaction& t) { return fs_->GetXattr(t, cred_, p, name, follow); });
  }
  Status SetXattr(std::string_view p, std::string_view name, std::string_view value, int flags = 0,
                  bool follow = true) {
    return Txn(
        [&](Transaction& t) { return fs_->SetXattr(t, cred_, p, name, value, flags, follow); });
  }
  Result<std::vector<std::string>> ListXattr(std::string_view p, bool follow = true) {
    return Txn([&](Transaction& t) { return fs_->ListXattr(t, cred_, p, follow); });
  }
  Status RemoveXattr(std::string_view p, std::string_view name, bool follow = true) {
    return Txn([&](Transaction& t) { return fs_->RemoveXattr(t, cred_, p, name, follow); });
  }
  Result<struct statfs> StatFs() {
    return Txn([&](Transaction& t) { return fs_->StatFs(t); });
  }

  Result<Stat> FStat(FileId id) {
    return Txn([&](Transaction& t) { return fs_->FStat(t, id); });
  }
  Result<std::string> Read(FileId id, uint64_t off, size_t len) {
    return Txn([&](Transaction& t) -> Result<std::string> {
      std::string buf(len, '\0');
      Result<size_t> n = fs_->Read(t, id, off, buf.data(), len);
      if (!n.ok()) return n.status();
      buf.resize(*n);
      return buf;
    });
  }
  Result<size_t> Write(FileId id, uint64_t off, std::string_view data) {
    return Txn(
        [&](Transaction& t) { return fs_->Write(t, cred_, id, off, data.data(), data.size()); });
  }
  Result<uint64_t> Append(FileId id, std::string_view data) {
    return Txn([&](Transaction& t) { return fs_->Append(t, cred_, id, data.data(), data.size()); });
  }
  Status FTruncate(FileId id, int64_t len) {
    return Txn([&](Transaction& t) { return fs_->FTruncate(t, cred_, id, len); });
  }
  Status FChmod(FileId id, mode_t mode) {
    return Txn([&](Transaction& t) { return fs_->FChmod(t, cred_, id, mode); });
  }
  Status FChown(FileId id, uid_t uid, gid_t gid) {
    return Txn([&](Transaction& t) { return fs_->FChown(t, cred_, id, uid, gid); });
  }
  Result<uint64_t> SeekData(FileId id, uint64_t off) {
    return Txn([&](Transaction& t) { return fs_->SeekData(t, id, off); });
  }
  Result<uint64_t> SeekHole(FileId id, uint64_t off) {
    return Txn([&](Transaction& t) { return fs_->SeekHole(t, id, off); });
  }
  Result<std::vector<DirEntry>> ReadDir(FileId dir, std::string_view after, size_t max) {
    return Txn([&](Transaction& t) { return fs_->ReadDir(t, dir, after, max); });
  }
  Result<std::vector<std::string>> Names(FileId id) {
    return Txn([&](Transaction& t) { return fs_->Names(t, id); });
  }

  // --- Conveniences: several calls in one transaction -------------------------------------
  // Creates or truncates `p` (mode 0644 unless given) and writes `data` into it.
  Status WriteFile(std::string_view p, std::string_view data, mode_t mode = 0644) {
    return Txn([&](Transaction& t) -> Status {
      Result<OpenResult> o = fs_->Open(t, cred_, p, O_WRONLY | O_CREAT | O_TRUNC, mode);
      if (!o.ok()) return o.status();
      Result<size_t> n = fs_->Write(t, cred_, o->id, 0, data.data(), data.size());
      Status closed = fs_->Close(t, o->id);
      if (!n.ok()) return n.status();
      if (*n != data.size()) return Status::Errno(EIO);
      return closed;
    });
  }
  // The whole content of `p`.
  Result<std::string> ReadFile(std::string_view p) {
    return Txn([&](Transaction& t) -> Result<std::string> {
      Result<OpenResult> o = fs_->Open(t, cred_, p, O_RDONLY);
      if (!o.ok()) return o.status();
      std::string out;
      std::string buf(1 << 16, '\0');
      for (;;) {
        Result<size_t> n = fs_->Read(t, o->id, out.size(), buf.data(), buf.size());
        if (!n.ok()) return n.status();
        if (*n == 0) break;
        out.append(buf.data(), *n);
      }
      Status closed = fs_->Close(t, o->id);
      if (!closed.ok()) return closed;
      return out;
    });
  }
  // The entries of directory `p` in the order ReadDir returns them, read `batch` at a time.
  Result<std::vector<DirEntry>> List(std::string_view p, size_t batch = 64) {
    return Txn([&](Transaction& t) -> Result<std::vector<DirEntry>> {
      Result<OpenResult> o = fs_->Open(t, cred_, p, O_RDONLY | O_DIRECTORY);
      if (!o.ok()) return o.status();
      std::vector<DirEntry> out;
      std::string after;
      for (;;) {
        Result<std::vector<DirEntry>> part = fs_->ReadDir(t, o->id, after, batch);
        if (!part.ok()) return part.status();
        if (part->empty()) break;
        after = part->back().name;
        for (DirEntry& e : *part) out.push_back(std::move(e));
      }
      Status closed = fs_->Close(t, o->id);
      if (!closed.ok()) return closed;
      return out;
    });
  }
  // Just the names of List(p).
  Result<std::vector<std::string>> ListNames(std::string_view p, size_t batch = 64) {
    Result<std::vector<DirEntry>> l = List(p, batch);
    if (!l.ok()) return l.status();
    std::vector<std::string> names;
    for (const DirEntry& e : *l) names.push_back(e.name);
    return names;
  }

 private:
  FileSystem* fs_;
  Cred cred_;
};

}  // namespace amino::schema::testing
