// The schema side of the model test: every op through FileSystem, each in its own transaction
// (Client), with open files as FileIds in slots as the monitor keeps them.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <set>

#include "client.h"
#include "model_side.h"

namespace amino::schema::testing::model {
namespace {

std::string StatOf(const Stat& st) {
  const Attr& a = st.attr;
  return StatString(a.mode, a.nlink, a.uid, a.gid, a.size);
}

// The times utimens set explicitly (one it left alone, UTIME_OMIT, keeps a value from the
// file's creation or last write, which the two sides took from different clocks).
std::string TimesOf(const Stat& st, const timespec* set) {
  std::string s;
  char buf[64];
  const timespec* got[2] = {&st.attr.atime, &st.attr.mtime};
  for (int i = 0; i < 2; ++i) {
    if (set[i].tv_nsec == UTIME_OMIT) continue;
    std::snprintf(buf, sizeof buf, "%s=%lld.%09ld ", i == 0 ? "atime" : "mtime",
                  static_cast<long long>(got[i]->tv_sec), got[i]->tv_nsec);
    s += buf;
  }
  return s;
}

char TypeChar(unsigned char d_type) {
  switch (d_type) {
    case DT_REG:
      return 'f';
    case DT_DIR:
      return 'd';
    case DT_LNK:
      return 'l';
    default:
      return '?';
  }
}

// A failure of the storage itself (conflict, I/O) is never what the kernel would say: report it
// in the outcome so that it shows as a mismatch with its message.
template <typename R>
Outcome Fail(const R& r) {
  const Status& s = StatusOf(r);
  Outcome o{s.error(), {}, false};
  if (s.is_conflict() || s.is_storage()) o.value = "[" + s.message() + "]";
  return o;
}

class SchemaSide : public Side {
 public:
  explicit SchemaSide(FileSystem* fs) : fs_(fs) {}
  ~SchemaSide() override { CloseAll(); }

  Outcome Apply(const Op& op) override {
    bool slot_op = IsSlotOp(op.kind);
    if (slot_op && op.kind != Kind::kOpen && !open_[op.slot]) return Outcome{0, {}, true};
    if (slot_op && op.kind != Kind::kOpen) {
      if (std::optional<Outcome> bad = FdCheck(op, flags_[op.slot])) return *bad;
    }
    if (op.kind == Kind::kOpen && open_[op.slot]) CloseSlot(op.slot);
    Client c(fs_, CredOf(op.cred));
    Outcome out = Call(c, op);
    if (out.err == 0) After(op, &out);
    return out;
  }

  void CloseAll() override {
    for (int i = 0; i < kSlots; ++i) CloseSlot(i);
  }

  bool Snapshot(Tree* tree, std::string* error) override {
    tree->clear();
    if (!Walk("/", tree, error)) return false;
    // Names() must list exactly the paths the walk found for each file.
    std::map<uint64_t, std::set<std::string>> by_ino;
    for (const auto& [path, e] : *tree) {
      if (!S_ISDIR(e.mode)) by_ino[e.ino].insert(path);
    }
    Client root(fs_);
    for (const auto& [ino, paths] : by_ino) {
      Result<std::vector<std::string>> names = root.Names(ino);
      if (!names.ok()) {
        *error = "Names(" + std::to_string(ino) + "): " + names.status().message();
        return false;
      }
      std::set<std::string> got(names->begin(), names->end());
      if (got != paths) {
        *error = "Names(" + std::to_string(ino) + ") = {";
        for (const std::string& n : got) *error += n + " ";
        *error += "} but the tree has {";
        for (const std::string& n : paths) *error += n + " ";
        *error += "}";
        return false;
      }
    }
    return true;
  }

 private:
  static bool IsSlotOp(Kind k) {
    return k == Kind::kOpen || k == Kind::kClose || k == Kind::kRead || k == Kind::kWrite ||
           k == Kind::kFTruncate || k == Kind::kFStat || k == Kind::kSeekData ||
           k == Kind::kSeekHole;
  }

  void CloseSlot(int slot) {
    if (open_[slot]) (void)Client(fs_).Close(ids_[slot]);
    open_[slot] = false;
  }

  Outcome Call(Client& c, const Op& op) {
    FileId id = ids_[op.slot];
    switch (op.kind) {
      case Kind::kOpen: {
        Result<OpenResult> r = c.Open(op.a, op.flags, op.mode);
        if (!r.ok()) return Fail(r);
        ids_[op.slot] = r->id;
        flags_[op.slot] = op.flags;
        open_[op.slot] = true;
        return {};
      }
      case Kind::kClose: {
        Status s = c.Close(id);
        open_[op.slot] = false;
        return s.ok() ? Outcome{} : Fail(s);
      }
      case Kind::kRead: {
        Result<std::string> r = c.Read(id, op.off, static_cast<size_t>(op.len));
        if (!r.ok()) return Fail(r);
        return Outcome{0, DataString(*r), false};
      }
      case Kind::kWrite: {
        std::string data = Payload(op.fill, static_cast<size_t>(op.len));
        if (flags_[op.slot] & O_APPEND) {
          Result<uint64_t> r = c.Append(id, data);
          if (!r.ok()) return Fail(r);
          return Outcome{0, "n=" + std::to_string(data.size()) + " at=" + std::to_string(*r),
                         false};
        }
        Result<size_t> r = c.Write(id, op.off, data);
        if (!r.ok()) return Fail(r);
        return Outcome{0, "n=" + std::to_string(*r), false};
      }
      case Kind::kFTruncate: {
        Status s = c.FTruncate(id, op.len);
        return s.ok() ? Outcome{} : Fail(s);
      }
      case Kind::kFStat: {
        Result<Stat> r = c.FStat(id);
        if (!r.ok()) return Fail(r);
        return Outcome{0, StatOf(*r), false};
      }
      case Kind::kSeekData:
      case Kind::kSeekHole: {
        Result<Stat> st = c.FStat(id);
        if (st.ok() && S_ISDIR(st->attr.mode)) return Outcome{0, "directory", false};
        Result<uint64_t> r =
            op.kind == Kind::kSeekData ? c.SeekData(id, op.off) : c.SeekHole(id, op.off);
        if (!r.ok()) return Fail(r);
        return Outcome{0, "pos=" + std::to_string(*r), false};
      }
      case Kind::kTruncate:
        return Done(c.Truncate(op.a, op.len));
      case Kind::kUnlink:
        return Done(c.Unlink(op.a));
      case Kind::kMkdir: {
        Result<Stat> r = c.Mkdir(op.a, op.mode);
        return r.ok() ? Outcome{} : Fail(r);
      }
      case Kind::kRmdir:
        return Done(c.Rmdir(op.a));
      case Kind::kRename:
        return Done(c.Rename(op.a, op.b, static_cast<unsigned>(op.flags)));
      case Kind::kLink:
        return Done(c.Link(op.a, op.b));
      case Kind::kSymlink:
        return Done(c.Symlink(op.a, op.b));
      case Kind::kReadlink: {
        Result<std::string> r = c.Readlink(op.a);
        if (!r.ok()) return Fail(r);
        return Outcome{0, *r, false};
      }
      case Kind::kChmod:
        return Done(c.Chmod(op.a, op.mode));
      case Kind::kChown:
        return Done(c.Chown(op.a, op.uid, op.gid));
      case Kind::kUtimens:
        return Done(c.Utimens(op.a, op.times, op.follow));
      case Kind::kSetXattr:
        return Done(c.SetXattr(op.a, op.name, Payload(op.fill, static_cast<size_t>(op.len)),
                               op.flags, op.follow));
      case Kind::kGetXattr: {
        Result<std::string> r = c.GetXattr(op.a, op.name, op.follow);
        if (!r.ok()) return Fail(r);
        return Outcome{0, DataString(*r), false};
      }
      case Kind::kRemoveXattr:
        return Done(c.RemoveXattr(op.a, op.name, op.follow));
      case Kind::kListXattr: {
        Result<std::vector<std::string>> r = c.ListXattr(op.a, op.follow);
        if (!r.ok()) return Fail(r);
        std::vector<std::string> names = *r;
        std::sort(names.begin(), names.end());
        std::string v;
        for (const std::string& n : names) v += n + ",";
        return Outcome{0, v, false};
      }
      case Kind::kStat: {
        Result<Stat> sa = c.GetStat(op.a, op.follow);
        if (!sa.ok()) return Fail(sa);
        Result<Stat> sb = c.GetStat(op.b, op.follow);
        std::string same = !sb.ok() ? "-" : (sa->ino == sb->ino ? "1" : "0");
        return Outcome{0, StatOf(*sa) + " same=" + same, false};
      }
      case Kind::kAccess:
        return Done(c.Access(op.a, op.flags, op.follow));
      case Kind::kReadDir:
        return ReadDir(c, op.a);
    }
    return {};
  }

  // The monitor's getdents: open, then batches resumed after the last name, then close, each
  // call in its own transaction. Small batches exercise the cursor.
  Outcome ReadDir(Client& c, const std::string& path) {
    Result<OpenResult> o = c.Open(path, O_RDONLY | O_DIRECTORY);
    if (!o.ok()) return Fail(o);
    std::vector<std::string> names;
    std::string after;
    Outcome out;
    for (;;) {
      Result<std::vector<DirEntry>> part = c.ReadDir(o->id, after, 2);
      if (!part.ok()) {
        out = Fail(part);
        break;
      }
      if (part->empty()) break;
      for (const DirEntry& e : *part) names.push_back(e.name + ":" + TypeChar(e.type));
      after = part->back().name;
    }
    Status closed = c.Close(o->id);
    if (out.err != 0) return out;
    if (!closed.ok()) return Fail(closed);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) out.value += n + ",";
    return out;
  }

  static Outcome Done(const Status& s) { return s.ok() ? Outcome{} : Fail(s); }

  void After(const Op& op, Outcome* out) {
    Client root(fs_);
    switch (op.kind) {
      case Kind::kOpen:
      case Kind::kFTruncate: {
        Result<Stat> r = root.FStat(ids_[op.slot]);
        out->value = r.ok() ? StatOf(*r) : "fstat failed: " + r.status().message();
        break;
      }
      case Kind::kMkdir:
      case Kind::kChmod:
      case Kind::kChown:
      case Kind::kTruncate: {
        Result<Stat> r = root.GetStat(op.a);
        if (r.ok()) out->value = StatOf(*r);
        break;
      }
      case Kind::kUtimens: {
        Result<Stat> r = root.GetStat(op.a, op.follow);
        if (r.ok()) out->value = TimesOf(*r, op.times);
        break;
      }
      default:
        break;
    }
  }

  bool Walk(const std::string& rel, Tree* tree, std::string* error) {
    Client root(fs_);
    Result<Stat> st = root.LStat(rel);
    if (!st.ok()) {
      *error = "schema lstat " + rel + ": " + st.status().message();
      return false;
    }
    const Attr& a = st->attr;
    Entry& e = (*tree)[rel];
    e.mode = a.mode;
    e.nlink = a.nlink;
    e.uid = a.uid;
    e.gid = a.gid;
    e.size = S_ISDIR(a.mode) ? 0 : a.size;
    e.ino = st->ino;
    Result<std::vector<std::string>> xnames = root.ListXattr(rel, false);
    if (!xnames.ok()) {
      *error = "schema listxattr " + rel + ": " + xnames.status().message();
      return false;
    }
    for (const std::string& n : *xnames) {
      Result<std::string> v = root.GetXattr(rel, n, false);
      if (!v.ok()) {
        *error = "schema getxattr " + rel + " " + n + ": " + v.status().message();
        return false;
      }
      e.xattrs[n] = *v;
    }
    if (S_ISLNK(a.mode)) {
      Result<std::string> t = root.Readlink(rel);
      if (!t.ok()) {
        *error = "schema readlink " + rel + ": " + t.status().message();
        return false;
      }
      e.target = *t;
    } else if (S_ISREG(a.mode)) {
      Result<std::string> data = root.ReadFile(rel);
      if (!data.ok()) {
        *error = "schema read " + rel + ": " + data.status().message();
        return false;
      }
      e.content = *data;
    } else if (S_ISDIR(a.mode)) {
      Result<std::vector<DirEntry>> entries = root.List(rel, 3);
      if (!entries.ok()) {
        *error = "schema readdir " + rel + ": " + entries.status().message();
        return false;
      }
      for (const DirEntry& d : *entries) {
        std::string child = rel == "/" ? "/" + d.name : rel + "/" + d.name;
        if (!Walk(child, tree, error)) return false;
        const Entry& ce = (*tree)[child];
        if (d.ino != ce.ino || static_cast<uint32_t>(DTTOIF(d.type)) != (ce.mode & S_IFMT)) {
          *error = "schema readdir " + rel + ": entry " + d.name + " has ino " +
                   std::to_string(d.ino) + " type " + std::to_string(d.type) +
                   " but lstat says ino " + std::to_string(ce.ino) + " mode " +
                   std::to_string(ce.mode);
          return false;
        }
      }
    }
    return true;
  }

  FileSystem* fs_;
  std::array<FileId, kSlots> ids_{};
  std::array<int, kSlots> flags_{};
  std::array<bool, kSlots> open_{};
};

}  // namespace

std::unique_ptr<Side> MakeSchemaSide(FileSystem* fs) { return std::make_unique<SchemaSide>(fs); }

}  // namespace amino::schema::testing::model
