// Differential test of path resolution. Two identical worlds on the host: in the native one the
// mounts' contents are ordinary directories and the kernel resolves every path; in the simulated
// one they live in Amino file systems, and a path goes through the resolver, the schema and the
// continuations exactly as the monitor's handler will drive them (path_resolver.h). Every path
// must reach the same file, or fail with the same errno, in both.
//
// Every object has a distinct mtime (its identity on both sides); objects outside both worlds
// are compared by device and inode. Host symbolic links pointing into a mount, which a lexical
// walk cannot see, are found by HostLinks (host_links.h) as the handler asks it.
//
// This header is the two worlds and the handler's loop over them (the fixture); the tests are in
// path_resolver_kernel_test.cc and path_resolver_dots_kernel_test.cc.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>

#include "monitor/mounts/host_links.h"
#include "monitor/mounts/lexical_path.h"
#include "monitor/mounts/path_resolver.h"
#include "monitor/mounts/test_support.h"
#include "schema/filesystem.h"

namespace amino::monitor::mounts {

using schema::Cred;
using schema::FileSystem;
using schema::Transaction;

inline constexpr time_t kBaseTime = 1'000'000'000;

struct Node {
  const char* rel;          // from the world's root; "amino/..." and "other/..." are the mounts'
  char kind;                // 'd', 'f' or 'l'
  const char* target = "";  // of a link; "@W" stands for the world's root
};

// Index + 1 is each node's identity (and its mtime above kBaseTime).
inline const Node kTree[] = {
    {"h", 'd'},
    {"h/sub", 'd'},
    {"h/file", 'f'},
    {"h/amino", 'd'},  // a host directory that a wrong lexical walk would take for the mount
    {"h/amino/hx", 'f'},
    {"amino2", 'd'},  // a string prefix of a mount point, not inside it
    {"amino2/z", 'f'},
    {"hl", 'l', "h"},
    {"deep", 'l', "h/sub"},
    {"habs", 'l', "@W/h/sub"},
    {"amino", 'd'},
    {"amino/d", 'd'},
    {"amino/d/e", 'd'},
    {"amino/d/f", 'f'},
    {"amino/g", 'f'},
    {"amino/rel", 'l', "d/e"},
    {"amino/up", 'l', "../h"},
    {"amino/upup", 'l', "../../"},
    {"amino/abs_h", 'l', "@W/h/sub"},
    {"amino/abs_in", 'l', "@W/amino/d"},
    {"amino/abs_other", 'l', "@W/other/x"},
    {"amino/loop", 'l', "loop"},
    {"amino/dotdot", 'l', ".."},
    {"amino/dangling", 'l', "nothing"},
    {"amino/d/back", 'l', "../../amino/g"},
    {"other", 'd'},
    {"other/x", 'd'},
    {"other/x/y", 'f'},
    {"other/back", 'l', "../amino/d"},
    // Host links into the mounts: to a mount point, to what only the mount has, in chains,
    // and through a mount link that leads out again.
    {"hin", 'l', "amino"},
    {"hin_d", 'l', "amino/d"},
    {"hin_g", 'l', "@W/amino/g"},
    {"h/up_in", 'l', "../amino/d/e"},
    {"hchain", 'l', "hin_d"},
    {"hin_up", 'l', "amino/up"},
    {"hworld", 'l', "@W"},
    {"h/to_other", 'l', "../other/x/"},
};
inline constexpr int kWorldRootId = 100;
inline const char* const kMounts[] = {"amino", "other"};

inline std::string MountOf(const std::string& rel) {
  for (const char* m : kMounts) {
    if (rel == m || rel.rfind(std::string(m) + "/", 0) == 0) return m;
  }
  return "";
}

inline std::string Target(const Node& n, const std::string& world) {
  std::string t = n.target;
  if (t.rfind("@W", 0) == 0) t = world + t.substr(2);
  return t;
}

// A name one byte longer than NAME_MAX.
inline const std::string kLong(256, 'L');

inline timespec Mtime(int id) { return timespec{kBaseTime + id, 0}; }

// One directory a relative path starts from, in both worlds.
struct Base {
  std::string native;  // world-relative directory ("" for the root)
  bool is_virtual;     // simulated as a virtual directory inside a mount
  std::string mount;   // is_virtual: "amino" or "other"
  std::string rel;     // is_virtual: mount-relative directory
};

class PathResolverKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    umask(022);
    native_ = scratch_ / "native";
    sim_ = scratch_ / "sim";
    BuildHost(native_, true);
    BuildHost(sim_, false);
    std::vector<Mount> mounts;
    for (const char* m : kMounts) {
      std::string db = scratch_ / (std::string("db-") + m);
      ASSERT_TRUE(FileSystem::Mkfs(db).ok());
      auto fs = FileSystem::Open(db);
      ASSERT_TRUE(fs.ok()) << fs.status().message();
      fs_[m] = std::move(fs).value();
      BuildSchema(*fs_[m], m);
      Mount mount;
      mount.point = mount.host_point = sim_ + "/" + m;
      mount.db_dir = db;
      struct stat st;
      ASSERT_EQ(stat(mount.point.c_str(), &st), 0);
      mount.host_dev = st.st_dev;
      mount.host_ino = st.st_ino;
      mounts.push_back(std::move(mount));
    }
    table_ = MountTable(std::move(mounts));
    for (const Mount& m : table_.mounts()) {
      std::string name = m.point.substr(sim_.size() + 1);
      by_name_[name] = &m;
      fs_by_mount_[&m] = fs_[name].get();
    }
    resolver_ = std::make_unique<PathResolver>(table_);
    links_ = std::make_unique<HostLinks>(table_, *resolver_);
  }

  void TearDown() override {
    for (int fd : open_fds_) close(fd);
  }

  // The world on the host; with `contents`, the mounts' contents too (the native world),
  // without them only empty mount points (the simulated world).
  void BuildHost(const std::string& world, bool contents) {
    testing::MakeDir(world);
    int id = 0;
    std::vector<std::pair<std::string, int>> made;
    for (const Node& n : kTree) {
      ++id;
      std::string rel = n.rel;
      std::string mount = MountOf(rel);
      if (!contents && !mount.empty() && rel != mount) continue;
      std::string p = world + "/" + rel;
      if (n.kind == 'd') {
        ASSERT_EQ(mkdir(p.c_str(), 0755), 0) << p;
      } else if (n.kind == 'f') {
        testing::WriteFile(p, rel);
      } else {
        ASSERT_EQ(symlink(Target(n, world).c_str(), p.c_str()), 0) << p;
      }
      // An empty mount point must never be what a simulated path reaches.
      made.emplace_back(p, !contents && rel == mount ? 999 : id);
    }
    made.emplace_back(world, kWorldRootId);
    for (auto& [p, object] : made) {
      timespec times[2] = {Mtime(object), Mtime(object)};
      ASSERT_EQ(utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << p;
      struct stat st;
      ASSERT_EQ(lstat(p.c_str(), &st), 0);
      host_ids_[{st.st_dev, st.st_ino}] = object;
    }
  }

  void BuildSchema(FileSystem& fs, const std::string& mount) {
    Cred root = Cred::Root();
    int id = 0;
    std::vector<std::pair<std::string, int>> made;
    for (const Node& n : kTree) {
      ++id;
      std::string rel = n.rel;
      if (MountOf(rel) != mount) continue;
      std::string p = rel == mount ? "/" : rel.substr(mount.size());
      made.emplace_back(p, id);
      if (p == "/") continue;
      Status st = fs.Run([&](Transaction& t) -> Status {
        if (n.kind == 'd') return fs.Mkdir(t, root, p, 0755).status();
        if (n.kind == 'l') return fs.Symlink(t, root, Target(n, sim_), p);
        auto o = fs.Open(t, root, p, O_CREAT | O_WRONLY, 0644);
        if (!o.ok()) return o.status();
        return fs.Close(t, o->id);
      });
      ASSERT_TRUE(st.ok()) << p << ": " << st.message();
    }
    for (auto& [p, object] : made) {
      timespec times[2] = {Mtime(object), Mtime(object)};
      Status st =
          fs.Run([&](Transaction& t) { return fs.Utimens(t, root, p, times, /*follow=*/false); });
      ASSERT_TRUE(st.ok()) << p << ": " << st.message();
    }
  }

  std::string HostIdentity(const struct stat& st) {
    auto it = host_ids_.find({st.st_dev, st.st_ino});
    char type = S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : 'f';
    if (it != host_ids_.end()) return std::string(1, type) + std::to_string(it->second);
    // Outside both worlds: the same object on both sides.
    return std::string(1, type) + " outside " + std::to_string(st.st_dev) + ":" +
           std::to_string(st.st_ino);
  }
  static std::string Errno(int err) { return std::string("errno ") + std::strerror(err); }

  // Opened once per directory (AMINO_MOUNTS_RANDOM_PATHS may ask for many paths).
  int DirFd(const std::string& dir) {
    if (auto it = dir_fds_.find(dir); it != dir_fds_.end()) return it->second;
    int fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << dir;
    open_fds_.push_back(fd);
    dir_fds_[dir] = fd;
    return fd;
  }

  std::string NativeStat(const Base& b, const std::string& path, bool follow) {
    int fd = DirFd(native_ + (b.native.empty() ? "" : "/" + b.native));
    std::string p = path;
    if (!p.empty() && p[0] == '/') p = native_ + p;
    struct stat st;
    int r = fstatat(fd, p.c_str(), &st, follow ? 0 : AT_SYMLINK_NOFOLLOW);
    return r == 0 ? HostIdentity(st) : Errno(errno);
  }

  // The handler's loop: classify, confirm lexical checks with the kernel, let the schema
  // resolve inside mounts, continue escapes on the host. `host` performs the call on the
  // kernel (dirfd, path); `amino` on a mount's file system.
  // `follow`: the call follows a last link; `makes_name`: it makes or removes the last name
  // (mkdir, rmdir), which no slash after it makes it follow (LastName::kNever in the handler).
  std::string Simulate(
      const Base& b, const std::string& arg, bool follow,
      const std::function<std::string(int, const std::string&)>& host,
      const std::function<std::string(FileSystem&, const std::string&, Status*)>& amino,
      bool makes_name = false) {
    std::string path = arg;
    if (!path.empty() && path[0] == '/') path = sim_ + path;
    std::string host_dir = sim_ + (b.native.empty() ? "" : "/" + b.native);
    PathBase base =
        b.is_virtual ? PathBase::Virtual(*by_name_.at(b.mount), b.rel) : PathBase::Host(host_dir);
    Result<ClassifiedPath> r = resolver_->Classify(base, path);
    std::string walked = path;
    // The path as written, absolute, that the kernel would walk if the result is the host's.
    std::string written = path.empty() || path[0] == '/' ? path : host_dir + "/" + path;
    bool linked = false;  // host links looked for on this result
    for (int hops = 0;; ++hops) {
      if (!r.ok()) return Errno(r.status().error());
      ClassifiedPath c = r.value();
      if ((c.is_host() || !c.check_path.empty()) && !linked && !written.empty()) {
        // The handler's order: host links before the lexical check (mount_resolve.cc).
        linked = true;
        std::string look = written;
        const bool slash = look.size() > 1 && look.back() == '/';
        while (makes_name && look.size() > 1 && look.back() == '/') look.pop_back();
        if (auto in = links_->IntoMount(look, follow)) {
          ++into_mounts_;
          r = std::move(*in);
          if (r.ok() && slash) r->trailing_slash = true;
          continue;
        }
      }
      if (!c.check_path.empty()) {
        struct stat at, expect;
        if (stat(c.check_path.c_str(), &at) != 0) return Errno(errno);
        if (stat(c.check_expect.c_str(), &expect) != 0 || at.st_dev != expect.st_dev ||
            at.st_ino != expect.st_ino) {
          ++rechecks_;
          int fd = open(c.check_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
          if (fd < 0) return Errno(errno);
          char real[kPathMax];
          ssize_t n = readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), real, sizeof real);
          close(fd);
          if (n <= 0) return Errno(errno);
          r = resolver_->Recheck(c, std::string_view(real, n), walked);
          continue;
        }
      }
      if (c.is_host()) {
        if (c.unchanged) {
          int fd = b.is_virtual ? AT_FDCWD : DirFd(host_dir);
          return host(fd, path);
        }
        return host(AT_FDCWD, c.path);
      }
      ++amino_calls_;
      Status st;
      std::string out = amino(*fs_by_mount_.at(c.mount), c.path, &st);
      if (st.ok()) return out;
      if (st.is_escape()) {
        if (hops >= 2 * kMaxEscapes) return Errno(ELOOP);
        ++escapes_;
        walked = st.escaped_path();
        written = walked[0] == '/' ? walked : c.mount->host_point + "/" + walked;
        linked = false;
        r = resolver_->ContinueOnHost(*c.mount, walked);
        continue;
      }
      return Errno(st.error());
    }
  }

  std::string SimStat(const Base& b, const std::string& arg, bool follow) {
    return Simulate(
        b, arg, follow,
        [&](int fd, const std::string& p) {
          struct stat st;
          int r = fstatat(fd, p.c_str(), &st, follow ? 0 : AT_SYMLINK_NOFOLLOW);
          return r == 0 ? HostIdentity(st) : Errno(errno);
        },
        [&](FileSystem& fs, const std::string& p, Status* status) -> std::string {
          Result<schema::Stat> st = Result<schema::Stat>(Status::Errno(EIO));
          *status = fs.Run([&](Transaction& t) {
            st = fs.GetStat(t, Cred::Root(), p, follow);
            return st.status();
          });
          if (!status->ok()) return "";
          mode_t m = st->attr.mode;
          char type = S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : 'f';
          return std::string(1, type) + std::to_string(st->attr.mtime.tv_sec - kBaseTime);
        });
  }

  void Compare(const Base& b, const std::string& path) {
    for (bool follow : {true, false}) {
      std::string native = NativeStat(b, path, follow);
      std::string sim = SimStat(b, path, follow);
      EXPECT_EQ(native, sim) << (follow ? "stat " : "lstat ") << "'" << path << "' from "
                             << (b.is_virtual ? "virtual " + b.mount + ":" + b.rel
                                              : "host " + b.native);
      ++compared_;
    }
  }

  static std::vector<Base> Bases() {
    return {{"", false, "", ""},
            {"h", false, "", ""},
            {"h/sub", false, "", ""},
            {"amino2", false, "", ""},
            {"amino", false, "", ""},
            {"amino", true, "amino", "/"},
            {"amino/d/e", true, "amino", "/d/e"},
            {"other/x", true, "other", "/x"}};
  }

  testing::ScratchDir scratch_;
  std::string native_, sim_;
  std::map<std::string, std::unique_ptr<FileSystem>> fs_;
  MountTable table_;
  std::map<std::string, const Mount*> by_name_;
  std::map<const Mount*, FileSystem*> fs_by_mount_;
  std::unique_ptr<PathResolver> resolver_;
  std::unique_ptr<HostLinks> links_;
  std::map<std::pair<dev_t, ino_t>, int> host_ids_;
  std::vector<int> open_fds_;
  std::map<std::string, int> dir_fds_;
  int compared_ = 0, amino_calls_ = 0, escapes_ = 0, rechecks_ = 0, into_mounts_ = 0;
};

}  // namespace amino::monitor::mounts
