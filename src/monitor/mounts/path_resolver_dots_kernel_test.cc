// Path resolution against the kernel: a trailing slash and a last "." or ".." reach the call
// (the worlds are in path_resolver_kernel_world.h).
#include <gtest/gtest.h>

#include "monitor/mounts/path_resolver_kernel_world.h"

namespace amino::monitor::mounts {
namespace {

// Calls whose outcome depends on a trailing slash or a last "." / "..": the resolver keeps
// them for the schema and for the kernel. Long by design: one table of cases, each the same
// check against the kernel.
TEST_F(PathResolverKernelTest, TrailingSlashAndLastDotReachTheCall) {
  Base root{"", false, "", ""};
  auto both =
      [&](const std::string& what, const std::string& path,
          const std::function<int(int, const char*)>& host,
          const std::function<Status(FileSystem&, Transaction&, const std::string&)>& amino) {
        int fd = DirFd(native_);
        std::string native = host(fd, path.c_str()) == 0 ? "ok" : Errno(errno);
        std::string sim = Simulate(
            root, path, what == "create",
            [&](int dirfd, const std::string& p) {
              return host(dirfd, p.c_str()) == 0 ? std::string("ok") : Errno(errno);
            },
            [&](FileSystem& fs, const std::string& p, Status* st) {
              *st = fs.Run([&](Transaction& t) { return amino(fs, t, p); });
              return std::string("ok");
            },
            what == "mkdir" || what == "rmdir");
        EXPECT_EQ(native, sim) << what << " " << path;
      };
  Cred root_cred = Cred::Root();
  auto mkdir_both = [&](const std::string& p) {
    both(
        "mkdir", p, [](int fd, const char* q) { return mkdirat(fd, q, 0755); },
        [&](FileSystem& fs, Transaction& t, const std::string& q) {
          return fs.Mkdir(t, root_cred, q, 0755).status();
        });
  };
  auto rmdir_both = [&](const std::string& p) {
    both(
        "rmdir", p, [](int fd, const char* q) { return unlinkat(fd, q, AT_REMOVEDIR); },
        [&](FileSystem& fs, Transaction& t, const std::string& q) {
          return fs.Rmdir(t, root_cred, q);
        });
  };
  auto create_both = [&](const std::string& p) {
    both(
        "create", p,
        [](int fd, const char* q) {
          int f = openat(fd, q, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
          if (f >= 0) close(f);
          return f >= 0 ? 0 : -1;
        },
        [&](FileSystem& fs, Transaction& t, const std::string& q) {
          auto o = fs.Open(t, root_cred, q, O_CREAT | O_WRONLY, 0644);
          if (!o.ok()) return o.status();
          return fs.Close(t, o->id);
        });
  };
  mkdir_both("amino/n1/");
  mkdir_both("amino/n1/");
  mkdir_both("amino/d/f/");
  mkdir_both("amino/missing/n/");
  mkdir_both("amino/" + kLong);
  mkdir_both("amino/up/n2/");  // through a link out of the mount: made on the host
  create_both("amino/newfile/");
  create_both("amino/g/");
  create_both("amino/d/e/.");
  create_both("amino/n3");
  rmdir_both("amino/d/e/.");
  rmdir_both("amino/d/e/..");
  rmdir_both("amino/..");
  rmdir_both("amino/g/");
  rmdir_both("amino/n1/");
  rmdir_both("amino/up/n2/.");
  rmdir_both("amino/up/n2");
  // Through host links into the mount.
  mkdir_both("hin/n4");
  mkdir_both("hin_d/n5/");
  mkdir_both("hin_g");
  create_both("hin_d/e/n6");
  create_both("hin/missing/n7");
  create_both("h/up_in/n8");
  rmdir_both("hin_d/n5");
  rmdir_both("hin/");  // the link itself, with a slash: ENOTDIR
  mkdir_both("hin/");
  rmdir_both("hin_d/");
  rmdir_both("hin");
  // The trees agree afterwards (new files have no identity: compare their type).
  for (const char* p : {"amino/n1", "amino/n3", "h/n2", "amino/newfile", "amino/d/e", "amino/n4",
                        "amino/d/n5", "amino/d/e/n6", "amino/d/e/n8", "hin"}) {
    std::string native = NativeStat(root, p, false);
    std::string sim = SimStat(root, p, false);
    EXPECT_EQ(native.substr(0, 1), sim.substr(0, 1)) << p << ": " << native << " / " << sim;
    EXPECT_EQ(native.rfind("errno", 0) == 0 ? native : "", sim.rfind("errno", 0) == 0 ? sim : "")
        << p;
  }
}

}  // namespace
}  // namespace amino::monitor::mounts
