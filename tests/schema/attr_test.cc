// Metadata: stat, chmod, chown, utimens, access, statfs. Errnos and the bits the kernel clears
// (setuid/setgid on chown) are checked against the kernel on a scratch directory.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

class AttrTest : public FsTest {
 protected:
  uint32_t HostPerm(const std::string& p) {
    struct stat st;
    EXPECT_EQ(lstat(H(p).c_str(), &st), 0);
    return st.st_mode & 07777;
  }
};

TEST_F(AttrTest, RootIsADirectoryWithIdOne) {
  Result<Stat> st = root().GetStat("/");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->ino, kRootId);
  EXPECT_EQ(FileType(*st), S_IFDIR);
  EXPECT_EQ(Perm(*st), 0755u);
  EXPECT_EQ(st->attr.nlink, 2u);
  EXPECT_EQ(st->attr.uid, 0u);
  for (const char* p : {"/.", "//", "/./."}) {
    Result<Stat> r = root().GetStat(p);
    ASSERT_TRUE(r.ok()) << p << ": " << r.status().message();
    EXPECT_EQ(r->ino, kRootId) << p;
  }
  // ".." at the root leaves the file system, as on a mount (filesystem.h): the monitor goes on
  // from the mount point's parent.
  for (auto [p, rest] : {std::pair{"/..", ".."}, {"/../x/y", "../x/y"}, {"/./../.", "../."}}) {
    Result<Stat> r = root().GetStat(p);
    ASSERT_FALSE(r.ok()) << p;
    EXPECT_TRUE(r.status().is_escape()) << p;
    EXPECT_EQ(r.status().escaped_path(), rest) << p;
  }
}

TEST_F(AttrTest, StatErrorsMatchTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("missing", "/dangling"));
  struct stat st;
  EXPECT_LINUX(root().GetStat("/none"), stat(H("/none").c_str(), &st));
  EXPECT_LINUX(root().GetStat("/f/x"), stat(H("/f/x").c_str(), &st));
  EXPECT_LINUX(root().GetStat("/f/"), stat(H("/f/").c_str(), &st));
  EXPECT_LINUX(root().GetStat("/f/."), stat(H("/f/.").c_str(), &st));
  EXPECT_LINUX(root().GetStat("/dangling"), stat(H("/dangling").c_str(), &st));
  EXPECT_LINUX(root().LStat("/dangling"), lstat(H("/dangling").c_str(), &st));
  EXPECT_ERRNO(root().GetStat(""), ENOENT);
}

TEST_F(AttrTest, ChmodSetsPermissionBitsAndFollowsLinks) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("f", "/l"));
  for (mode_t m : {07777, 0, 04711, 02750, 01777, 0644}) {
    EXPECT_LINUX(root().Chmod("/f", m), chmod(H("/f").c_str(), m));
    EXPECT_EQ(Perm(*root().GetStat("/f")), HostPerm("/f")) << std::oct << m;
    EXPECT_EQ(FileType(*root().GetStat("/f")), S_IFREG);
  }
  EXPECT_LINUX(root().Chmod("/l", 0600), chmod(H("/l").c_str(), 0600));
  EXPECT_EQ(Perm(*root().GetStat("/f")), 0600u);
  EXPECT_EQ(Perm(*root().LStat("/l")), 0777u);
  EXPECT_LINUX(root().Chmod("/none", 0600), chmod(H("/none").c_str(), 0600));
  // The type bits in the argument are ignored.
  ASSERT_TRUE(root().Chmod("/f", S_IFDIR | 0640).ok());
  EXPECT_EQ(FileType(*root().GetStat("/f")), S_IFREG);
  EXPECT_EQ(Perm(*root().GetStat("/f")), 0640u);
}

TEST_F(AttrTest, ChownChangesIdsAndClearsSetuidLikeTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  EXPECT_LINUX(root().Chown("/f", 1000, 1001), chown(H("/f").c_str(), 1000, 1001));
  Result<Stat> st = root().GetStat("/f");
  EXPECT_EQ(st->attr.uid, 1000u);
  EXPECT_EQ(st->attr.gid, 1001u);
  EXPECT_LINUX(root().Chown("/f", static_cast<uid_t>(-1), 7),
               chown(H("/f").c_str(), static_cast<uid_t>(-1), 7));
  st = root().GetStat("/f");
  EXPECT_EQ(st->attr.uid, 1000u);
  EXPECT_EQ(st->attr.gid, 7u);

  // Which of setuid/setgid survive a chown by root, for files and directories, with and without
  // group execute, and for chown(-1, -1).
  struct Case {
    const char* path;
    mode_t mode;
    uid_t uid;
    gid_t gid;
  };
  for (Case c : {Case{"/f", 06755, 0, 0}, Case{"/f", 06745, 5, 5}, Case{"/f", 06755, 5, 5},
                 Case{"/f", 06755, static_cast<uid_t>(-1), static_cast<gid_t>(-1)},
                 Case{"/d", 06755, 5, 5}, Case{"/d", 02755, 0, 0}}) {
    ASSERT_TRUE(root().Chmod(c.path, c.mode).ok());
    ASSERT_EQ(chmod(H(c.path).c_str(), c.mode), 0);
    EXPECT_LINUX(root().Chown(c.path, c.uid, c.gid), chown(H(c.path).c_str(), c.uid, c.gid));
    EXPECT_EQ(Perm(*root().GetStat(c.path)), HostPerm(c.path))
        << c.path << " mode 0" << std::oct << c.mode << " chown " << std::dec
        << static_cast<int>(c.uid) << ":" << static_cast<int>(c.gid);
  }
}

TEST_F(AttrTest, ChownOfASymlinkWithoutFollowing) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("f", "/l"));
  ASSERT_TRUE(root().Chown("/l", 1000, 1000, /*follow=*/false).ok());
  EXPECT_EQ(root().LStat("/l")->attr.uid, 1000u);
  EXPECT_EQ(root().GetStat("/f")->attr.uid, 0u);
  ASSERT_TRUE(root().Chown("/l", 1001, 1001).ok());
  EXPECT_EQ(root().GetStat("/f")->attr.uid, 1001u);
}

TEST_F(AttrTest, UtimensStoresExactTimes) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("f", "/l"));
  timespec t[2] = {{1234567890, 123456789}, {987654321, 999999999}};
  ASSERT_TRUE(root().Utimens("/f", t).ok());
  Result<Stat> st = root().GetStat("/f");
  EXPECT_EQ(st->attr.atime.tv_sec, 1234567890);
  EXPECT_EQ(st->attr.atime.tv_nsec, 123456789);
  EXPECT_EQ(st->attr.mtime.tv_sec, 987654321);
  EXPECT_EQ(st->attr.mtime.tv_nsec, 999999999);

  timespec omit[2] = {{5, UTIME_OMIT}, {42, 0}};
  ASSERT_TRUE(root().Utimens("/f", omit).ok());
  st = root().GetStat("/f");
  EXPECT_EQ(st->attr.atime.tv_sec, 1234567890);
  EXPECT_EQ(st->attr.mtime.tv_sec, 42);

  timespec before;  // the clock changes are stamped by (a tick at a time: change_clock.h)
  clock_gettime(CLOCK_REALTIME_COARSE, &before);
  timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  ASSERT_TRUE(root().Utimens("/f", now).ok());
  st = root().GetStat("/f");
  EXPECT_GE(st->attr.atime.tv_sec, before.tv_sec);
  EXPECT_EQ(st->attr.mtime.tv_sec, 42);
  ASSERT_TRUE(root().Utimens("/f", nullptr).ok());
  EXPECT_GE(root().GetStat("/f")->attr.mtime.tv_sec, before.tv_sec);

  // Without following, the link's own times change and the target's do not.
  ASSERT_TRUE(root().Utimens("/f", t).ok());
  timespec u[2] = {{1, 1}, {2, 2}};
  ASSERT_TRUE(root().Utimens("/l", u, /*follow=*/false).ok());
  EXPECT_EQ(root().LStat("/l")->attr.mtime.tv_sec, 2);
  EXPECT_EQ(root().GetStat("/f")->attr.mtime.tv_sec, 987654321);

  // Both UTIME_OMIT: Linux returns success without even looking the path up.
  timespec omit2[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
  EXPECT_LINUX(root().Utimens("/none", omit2), utimensat(AT_FDCWD, H("/none").c_str(), omit2, 0));
  timespec bad[2] = {{0, 1000000000}, {0, 0}};
  EXPECT_LINUX(root().Utimens("/f", bad), utimensat(AT_FDCWD, H("/f").c_str(), bad, 0));
  EXPECT_LINUX(root().Utimens("/none", t), utimensat(AT_FDCWD, H("/none").c_str(), t, 0));
}

TEST_F(AttrTest, UtimensPermissionsMatchTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/mine"));
  ASSERT_NO_FATAL_FAILURE(BothFile("/writable", "", 0666));
  ASSERT_NO_FATAL_FAILURE(BothFile("/readonly", "", 0644));
  ASSERT_NO_FATAL_FAILURE(BothChown("/mine", 1000, 1000));
  Cred u = Cred::User(1000, 1000);
  timespec t[2] = {{100, 0}, {200, 0}};
  timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  for (const char* p : {"/mine", "/writable", "/readonly"}) {
    std::string hp = H(p);
    EXPECT_EQ(ErrName(Err(user(1000, 1000).Utimens(p, t))),
              ErrName(HostErrAs(u, [&] { return utimensat(AT_FDCWD, hp.c_str(), t, 0); })))
        << p << " explicit times";
    EXPECT_EQ(ErrName(Err(user(1000, 1000).Utimens(p, nullptr))),
              ErrName(HostErrAs(u, [&] { return utimensat(AT_FDCWD, hp.c_str(), nullptr, 0); })))
        << p << " now";
    EXPECT_EQ(ErrName(Err(user(1000, 1000).Utimens(p, now))),
              ErrName(HostErrAs(u, [&] { return utimensat(AT_FDCWD, hp.c_str(), now, 0); })))
        << p << " UTIME_NOW";
  }
}

TEST_F(AttrTest, ChmodAndChownByOthersMatchTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/mine"));
  ASSERT_NO_FATAL_FAILURE(BothFile("/theirs"));
  ASSERT_NO_FATAL_FAILURE(BothChown("/mine", 1000, 1000));
  Cred u = Cred::User(1000, 1000, {50});
  Client c = user(1000, 1000, {50});
  auto host = [&](const std::function<long()>& f) { return ErrName(HostErrAs(u, f)); };
  std::string mine = H("/mine"), theirs = H("/theirs");
  EXPECT_EQ(ErrName(Err(c.Chmod("/theirs", 0777))),
            host([&] { return chmod(theirs.c_str(), 0777); }));
  EXPECT_EQ(ErrName(Err(c.Chmod("/mine", 0600))), host([&] { return chmod(mine.c_str(), 0600); }));
  // Setting setgid on a file whose group the owner is not in: the bit is silently dropped.
  EXPECT_EQ(ErrName(Err(c.Chown("/mine", static_cast<uid_t>(-1), 0))),
            host([&] { return chown(mine.c_str(), static_cast<uid_t>(-1), 0); }));
  EXPECT_EQ(ErrName(Err(c.Chown("/mine", static_cast<uid_t>(-1), 50))),
            host([&] { return chown(mine.c_str(), static_cast<uid_t>(-1), 50); }));
  EXPECT_EQ(root().GetStat("/mine")->attr.gid, 50u);
  EXPECT_EQ(ErrName(Err(c.Chown("/mine", 1001, static_cast<gid_t>(-1)))),
            host([&] { return chown(mine.c_str(), 1001, static_cast<gid_t>(-1)); }));
  EXPECT_EQ(ErrName(Err(c.Chown("/mine", 1000, static_cast<gid_t>(-1)))),
            host([&] { return chown(mine.c_str(), 1000, static_cast<gid_t>(-1)); }));
  EXPECT_EQ(ErrName(Err(c.Chmod("/mine", 02755))),
            host([&] { return chmod(mine.c_str(), 02755); }));
  EXPECT_EQ(Perm(*root().GetStat("/mine")), HostPerm("/mine"));
  ASSERT_TRUE(root().Chown("/mine", 1000, 0).ok());
  ASSERT_EQ(chown(mine.c_str(), 1000, 0), 0);
  EXPECT_EQ(ErrName(Err(c.Chmod("/mine", 02755))),
            host([&] { return chmod(mine.c_str(), 02755); }));
  EXPECT_EQ(Perm(*root().GetStat("/mine")), HostPerm("/mine"));
}

TEST_F(AttrTest, AccessMatchesTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/rw", "", 0644));
  ASSERT_NO_FATAL_FAILURE(BothFile("/x", "", 0744));
  ASSERT_NO_FATAL_FAILURE(BothFile("/none", "", 0));
  ASSERT_NO_FATAL_FAILURE(BothDir("/d0", 0));
  ASSERT_NO_FATAL_FAILURE(BothFile("/g", "", 0070));
  ASSERT_NO_FATAL_FAILURE(BothChown("/g", 0, 50));
  for (const Cred& cred : {Cred::Root(), Cred::User(1000, 1000), Cred::User(1000, 1000, {50})}) {
    Client c(fs_.get(), cred);
    for (const char* p : {"/rw", "/x", "/none", "/d0", "/g", "/missing", "/rw/x"}) {
      for (int mode : {F_OK, R_OK, W_OK, X_OK, R_OK | W_OK | X_OK}) {
        std::string hp = H(p);
        EXPECT_EQ(
            ErrName(Err(c.Access(p, mode))),
            ErrName(HostErrAs(
                cred,
                [&] { return syscall(SYS_faccessat2, AT_FDCWD, hp.c_str(), mode, AT_EACCESS); })))
            << p << " mode " << mode << " uid " << cred.uid;
      }
    }
  }
}

TEST_F(AttrTest, StatFsReportsTheSchema) {
  Result<struct statfs> s = root().StatFs();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(static_cast<uint32_t>(s->f_type), kStatfsMagic);
  EXPECT_EQ(s->f_namelen, static_cast<long>(kNameMax));
  EXPECT_GT(s->f_bsize, 0);
}

}  // namespace
}  // namespace amino::schema::testing
