// Extended attributes: set/get/list/remove, XATTR_CREATE/REPLACE, limits, symbolic links,
// permissions, and that they belong to the file (shared by hard links, gone with the file).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

using XattrTest = FsTest;

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST_F(XattrTest, SetGetListRemove) {
  ASSERT_TRUE(root().WriteFile("/f", "").ok());
  ASSERT_TRUE(root().SetXattr("/f", "user.b", "two").ok());
  ASSERT_TRUE(root().SetXattr("/f", "user.a", std::string("o\0ne", 4)).ok());
  ASSERT_TRUE(root().SetXattr("/f", "user.empty", "").ok());
  EXPECT_EQ(*root().GetXattr("/f", "user.a"), std::string("o\0ne", 4));
  EXPECT_EQ(*root().GetXattr("/f", "user.empty"), "");
  EXPECT_EQ(Sorted(*root().ListXattr("/f")),
            (std::vector<std::string>{"user.a", "user.b", "user.empty"}));
  ASSERT_TRUE(root().SetXattr("/f", "user.b", "changed").ok());
  EXPECT_EQ(*root().GetXattr("/f", "user.b"), "changed");
  ASSERT_TRUE(root().RemoveXattr("/f", "user.b").ok());
  EXPECT_ERRNO(root().GetXattr("/f", "user.b"), ENODATA);
  EXPECT_ERRNO(root().RemoveXattr("/f", "user.b"), ENODATA);
  EXPECT_EQ(Sorted(*root().ListXattr("/f")), (std::vector<std::string>{"user.a", "user.empty"}));
  Reopen();
  EXPECT_EQ(*root().GetXattr("/f", "user.a"), std::string("o\0ne", 4));
}

TEST_F(XattrTest, FlagsAndErrorsMatchTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("f", "/l"));
  std::string f = H("/f"), l = H("/l"), d = H("/d");
  EXPECT_LINUX(root().SetXattr("/f", "user.x", "1", XATTR_REPLACE),
               setxattr(f.c_str(), "user.x", "1", 1, XATTR_REPLACE));
  EXPECT_LINUX(root().SetXattr("/f", "user.x", "1", XATTR_CREATE),
               setxattr(f.c_str(), "user.x", "1", 1, XATTR_CREATE));
  EXPECT_LINUX(root().SetXattr("/f", "user.x", "2", XATTR_CREATE),
               setxattr(f.c_str(), "user.x", "2", 1, XATTR_CREATE));
  EXPECT_LINUX(root().SetXattr("/f", "user.x", "3", XATTR_REPLACE),
               setxattr(f.c_str(), "user.x", "3", 1, XATTR_REPLACE));
  EXPECT_LINUX(root().SetXattr("/f", "user.x", "3", XATTR_CREATE | XATTR_REPLACE),
               setxattr(f.c_str(), "user.x", "3", 1, XATTR_CREATE | XATTR_REPLACE));
  EXPECT_LINUX(root().SetXattr("/f", "noprefix", "v"), setxattr(f.c_str(), "noprefix", "v", 1, 0));
  EXPECT_LINUX(root().SetXattr("/f", "user.", "v"), setxattr(f.c_str(), "user.", "v", 1, 0));
  EXPECT_LINUX(root().SetXattr("/f", "", "v"), setxattr(f.c_str(), "", "v", 1, 0));
  std::string longname = "user." + std::string(kXattrNameMax - 5, 'n');
  EXPECT_LINUX(root().SetXattr("/f", longname, "v"),
               setxattr(f.c_str(), longname.c_str(), "v", 1, 0));
  std::string toolong = longname + "n";
  EXPECT_LINUX(root().SetXattr("/f", toolong, "v"),
               setxattr(f.c_str(), toolong.c_str(), "v", 1, 0));
  std::string big(kXattrValueMax + 1, 'v');
  EXPECT_LINUX(root().SetXattr("/f", "user.big", big),
               setxattr(f.c_str(), "user.big", big.data(), big.size(), 0));
  char buf[16];
  EXPECT_LINUX(root().GetXattr("/f", "user.none"),
               getxattr(f.c_str(), "user.none", buf, sizeof buf));
  EXPECT_LINUX(root().GetXattr("/none", "user.x"), getxattr(H("/none").c_str(), "user.x", buf, 16));
  EXPECT_LINUX(root().RemoveXattr("/f", "user.none"), removexattr(f.c_str(), "user.none"));
  // user.* attributes are not allowed on symbolic links themselves.
  EXPECT_LINUX(root().SetXattr("/l", "user.x", "v", 0, /*follow=*/false),
               lsetxattr(l.c_str(), "user.x", "v", 1, 0));
  EXPECT_LINUX(root().GetXattr("/l", "user.x", /*follow=*/false),
               lgetxattr(l.c_str(), "user.x", buf, sizeof buf));
  EXPECT_LINUX(root().SetXattr("/l", "user.viaLink", "v"),
               setxattr(l.c_str(), "user.viaLink", "v", 1, 0));
  EXPECT_EQ(*root().GetXattr("/f", "user.viaLink"), "v");
  EXPECT_LINUX(root().SetXattr("/d", "user.x", "v"), setxattr(d.c_str(), "user.x", "v", 1, 0));
  EXPECT_LINUX(root().SetXattr("/f", "trusted.t", "v"),
               setxattr(f.c_str(), "trusted.t", "v", 1, 0));
}

TEST_F(XattrTest, PermissionsMatchTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/ro", "", 0644));
  ASSERT_NO_FATAL_FAILURE(BothFile("/rw", "", 0666));
  ASSERT_NO_FATAL_FAILURE(BothFile("/none", "", 0600));
  ASSERT_NO_FATAL_FAILURE(BothDir("/sticky", 01777));
  for (const char* p : {"/ro", "/rw", "/none", "/sticky"}) {
    ASSERT_TRUE(root().SetXattr(p, "user.x", "v").ok());
    ASSERT_EQ(setxattr(H(p).c_str(), "user.x", "v", 1, 0), 0);
  }
  Cred u = Cred::User(1000, 1000);
  Client c = user(1000, 1000);
  for (const char* p : {"/ro", "/rw", "/none", "/sticky"}) {
    std::string hp = H(p);
    char buf[16];
    EXPECT_EQ(
        ErrName(Err(c.GetXattr(p, "user.x"))),
        ErrName(HostErrAs(u, [&] { return getxattr(hp.c_str(), "user.x", buf, sizeof buf); })))
        << p;
    EXPECT_EQ(ErrName(Err(c.SetXattr(p, "user.y", "w"))),
              ErrName(HostErrAs(u, [&] { return setxattr(hp.c_str(), "user.y", "w", 1, 0); })))
        << p;
    EXPECT_EQ(ErrName(Err(c.RemoveXattr(p, "user.x"))),
              ErrName(HostErrAs(u, [&] { return removexattr(hp.c_str(), "user.x"); })))
        << p;
  }
}

// The permission check comes before the name's own errors (a bare prefix, an unknown one), and
// user.* is refused on files other than regular files and directories (a FIFO, a socket).
TEST_F(XattrTest, PermissionComesBeforeTheNameAsInTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/none", "", 0600));
  ASSERT_TRUE(root().Mknod("/fifo", S_IFIFO | 0666).ok());
  ASSERT_EQ(mknod(H("/fifo").c_str(), S_IFIFO | 0666, 0), 0);
  ASSERT_TRUE(root().Mknod("/sock", S_IFSOCK | 0666).ok());
  ASSERT_EQ(mknod(H("/sock").c_str(), S_IFSOCK | 0666, 0), 0);
  for (const Cred& cred : {Cred::Root(), Cred::User(1000, 1000)}) {
    Client who = root().As(cred);
    for (const char* p : {"/none", "/fifo", "/sock"}) {
      std::string hp = H(p);
      for (const char* name : {"user.", "user.x", "trusted.", "security.", "other.x"}) {
        // The host side of a user keeps CAP_SYS_ADMIN (HostErrAs changes file-system ids):
        // trusted.* and security.* are compared as root only.
        if (cred.uid != 0 && std::string_view(name).find("user.") != 0 &&
            std::string_view(name) != "other.x") {
          continue;
        }
        char buf[16];
        EXPECT_EQ(ErrName(Err(who.SetXattr(p, name, "v"))),
                  ErrName(HostErrAs(cred, [&] { return setxattr(hp.c_str(), name, "v", 1, 0); })))
            << "setxattr " << p << " " << name << " as uid " << cred.uid;
        EXPECT_EQ(
            ErrName(Err(who.GetXattr(p, name))),
            ErrName(HostErrAs(cred, [&] { return getxattr(hp.c_str(), name, buf, sizeof buf); })))
            << "getxattr " << p << " " << name << " as uid " << cred.uid;
        EXPECT_EQ(ErrName(Err(who.RemoveXattr(p, name))),
                  ErrName(HostErrAs(cred, [&] { return removexattr(hp.c_str(), name); })))
            << "removexattr " << p << " " << name << " as uid " << cred.uid;
      }
    }
  }
}

TEST_F(XattrTest, AttributesBelongToTheFile) {
  ASSERT_TRUE(root().WriteFile("/f", "").ok());
  ASSERT_TRUE(root().SetXattr("/f", "user.k", "v").ok());
  ASSERT_TRUE(root().Link("/f", "/g").ok());
  EXPECT_EQ(*root().GetXattr("/g", "user.k"), "v");
  ASSERT_TRUE(root().Rename("/f", "/h").ok());
  EXPECT_EQ(*root().GetXattr("/h", "user.k"), "v");
  ASSERT_TRUE(root().Unlink("/h").ok());
  ASSERT_TRUE(root().Unlink("/g").ok());
  // A new file never inherits the attributes of a freed one.
  ASSERT_TRUE(root().WriteFile("/f", "").ok());
  EXPECT_EQ(*root().ListXattr("/f"), std::vector<std::string>{});
  // Fsck (in TearDown) finds no attribute left behind by the freed file.
}

}  // namespace
}  // namespace amino::schema::testing
