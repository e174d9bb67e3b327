// Permissions as the calling process's credentials give them (the monitor runs as root; its
// callers do not): search/read/write, sticky directories, ownership changes, setgid
// directories, and the setuid/setgid bits the kernel clears. Every case is run as the same user
// against the kernel (a thread with that fsuid/fsgid/groups) and must give the same errno.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

class PermissionTest : public FsTest {
 protected:
  const Cred alice = Cred::User(1000, 1000);
  const Cred bob = Cred::User(1001, 1001, {1000});
  const Cred carol = Cred::User(1002, 1002);

  Client As(const Cred& c) { return Client(fs_.get(), c); }
  struct stat HostStat(const std::string& p) {
    struct stat st {};
    EXPECT_EQ(lstat(H(p).c_str(), &st), 0) << p;
    return st;
  }
  void ExpectSameAttrs(const std::string& p) {
    Result<Stat> s = root().LStat(p);
    ASSERT_TRUE(s.ok()) << p << ": " << s.status().message();
    struct stat h = HostStat(p);
    EXPECT_EQ(s->attr.mode, h.st_mode)
        << p << std::oct << " schema 0" << s->attr.mode << " host 0" << h.st_mode;
    EXPECT_EQ(s->attr.uid, h.st_uid) << p;
    EXPECT_EQ(s->attr.gid, h.st_gid) << p;
  }
};

#define EXPECT_SAME_AS(cred, schema_call, host_body)                       \
  EXPECT_EQ(ErrName(Err(As(cred).schema_call)),                            \
            ErrName(HostErrAs(cred, [&]() -> long { return host_body; }))) \
      << #schema_call << " as uid " << (cred).uid

TEST_F(PermissionTest, SearchReadAndWriteOnDirectories) {
  for (mode_t m : {0700, 0711, 0744, 0755, 0733, 0777, 0300}) {
    std::string d = "/d" + std::to_string(m);
    ASSERT_NO_FATAL_FAILURE(BothDir(d, 0755));
    ASSERT_NO_FATAL_FAILURE(BothFile(d + "/f", "x"));
    ASSERT_TRUE(root().Chmod(d, m).ok());
    ASSERT_EQ(chmod(H(d).c_str(), m), 0);
    std::string hd = H(d), hf = H(d + "/f"), hn = H(d + "/new"), hm = H(d + "/m");
    struct stat st;
    EXPECT_SAME_AS(alice, GetStat(d + "/f"), stat(hf.c_str(), &st));
    EXPECT_SAME_AS(alice, Open(d, O_RDONLY | O_DIRECTORY), [&] {
      int fd = open(hd.c_str(), O_RDONLY | O_DIRECTORY);
      if (fd >= 0) close(fd);
      return fd;
    }());
    EXPECT_SAME_AS(alice, Open(d + "/new", O_WRONLY | O_CREAT | O_EXCL, 0644), [&] {
      int fd = open(hn.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
      if (fd >= 0) close(fd);
      return fd;
    }());
    EXPECT_SAME_AS(alice, Mkdir(d + "/m", 0755), mkdir(hm.c_str(), 0755));
    EXPECT_SAME_AS(alice, Unlink(d + "/f"), unlink(hf.c_str()));
    EXPECT_SAME_AS(alice, Symlink("t", d + "/s"), symlink("t", H(d + "/s").c_str()));
  }
}

TEST_F(PermissionTest, ListingNeedsReadButNotSearch) {
  ASSERT_TRUE(root().Mkdir("/r", 0744).ok());
  ASSERT_TRUE(root().WriteFile("/r/f", "").ok());
  Result<std::vector<std::string>> names = As(alice).ListNames("/r");
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_EQ(*names, std::vector<std::string>{"f"});
  EXPECT_ERRNO(As(alice).GetStat("/r/f"), EACCES);
}

TEST_F(PermissionTest, StickyDirectories) {
  ASSERT_NO_FATAL_FAILURE(BothDir("/tmp", 01777));
  for (const Cred& c : {alice, bob}) {
    std::string p = "/tmp/" + std::to_string(c.uid);
    Result<OpenResult> o = As(c).Open(p, O_WRONLY | O_CREAT | O_EXCL, 0666);
    ASSERT_TRUE(o.ok()) << o.status().message();
    ASSERT_TRUE(root().Close(o->id).ok());
    std::string hp = H(p);
    ASSERT_EQ(HostErrAs(c,
                        [&]() -> long {
                          int fd = open(hp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
                          if (fd >= 0) close(fd);
                          return fd;
                        }),
              0);
  }
  std::string a = H("/tmp/1000"), b = H("/tmp/1001"), n = H("/tmp/new");
  EXPECT_SAME_AS(bob, Unlink("/tmp/1000"), unlink(a.c_str()));
  EXPECT_SAME_AS(bob, Rename("/tmp/1000", "/tmp/new"), rename(a.c_str(), n.c_str()));
  EXPECT_SAME_AS(bob, Rename("/tmp/1001", "/tmp/1000"), rename(b.c_str(), a.c_str()));
  EXPECT_SAME_AS(carol, Unlink("/tmp/1001"), unlink(b.c_str()));
  // The file's owner and the directory's owner may.
  ASSERT_NO_FATAL_FAILURE(BothChown("/tmp", 1002, 1002));
  EXPECT_SAME_AS(carol, Unlink("/tmp/1001"), unlink(b.c_str()));
  EXPECT_SAME_AS(alice, Rename("/tmp/1000", "/tmp/new"), rename(a.c_str(), n.c_str()));
  EXPECT_SAME_AS(bob, Rmdir("/tmp"), rmdir(H("/tmp").c_str()));
}

TEST_F(PermissionTest, ChmodAndChownByOthersAreEPERM) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "", 0666));
  ASSERT_NO_FATAL_FAILURE(BothChown("/f", 1000, 1000));
  std::string f = H("/f");
  EXPECT_SAME_AS(bob, Chmod("/f", 0777), chmod(f.c_str(), 0777));
  EXPECT_SAME_AS(bob, Chown("/f", 1001, static_cast<gid_t>(-1)), chown(f.c_str(), 1001, -1));
  EXPECT_SAME_AS(alice, Chown("/f", 1001, static_cast<gid_t>(-1)), chown(f.c_str(), 1001, -1));
  EXPECT_SAME_AS(alice, Chown("/f", static_cast<uid_t>(-1), 1001), chown(f.c_str(), -1, 1001));
  EXPECT_SAME_AS(alice, Chown("/f", static_cast<uid_t>(-1), static_cast<gid_t>(-1)),
                 chown(f.c_str(), -1, -1));
  EXPECT_SAME_AS(alice, Chmod("/f", 0600), chmod(f.c_str(), 0600));
  ExpectSameAttrs("/f");
}

// chown(-1, -1) changes nothing, but on a setuid/setgid file it would clear those bits, which
// only the owner may do: a stranger gets EPERM and the bits stay.
TEST_F(PermissionTest, NoOpChownByAStrangerOfASetgidFile) {
  for (mode_t m : {02755, 04755, 0755}) {
    std::string p = "/s" + std::to_string(m);
    ASSERT_NO_FATAL_FAILURE(BothFile(p, "", m));
    ASSERT_TRUE(root().Chmod(p, m).ok());
    ASSERT_EQ(chmod(H(p).c_str(), m), 0);
    std::string hp = H(p);
    EXPECT_SAME_AS(alice, Chown(p, static_cast<uid_t>(-1), static_cast<gid_t>(-1)),
                   chown(hp.c_str(), -1, -1));
    ExpectSameAttrs(p);
  }
}

TEST_F(PermissionTest, SetgidDirectoriesPassTheirGroupOn) {
  ASSERT_NO_FATAL_FAILURE(BothDir("/shared", 02777));
  ASSERT_NO_FATAL_FAILURE(BothChown("/shared", 0, 1000));
  ASSERT_TRUE(root().Chmod("/shared", 02777).ok());  // chown cleared nothing on a directory,
  ASSERT_EQ(chmod(H("/shared").c_str(), 02777), 0);  // but make sure of the starting point
  for (const Cred& c : {alice, bob, carol}) {
    std::string u = std::to_string(c.uid);
    std::string f = "/shared/f" + u, d = "/shared/d" + u, g = "/shared/g" + u;
    std::string hf = H(f), hd = H(d), hg = H(g);
    EXPECT_SAME_AS(c, Open(f, O_WRONLY | O_CREAT | O_EXCL, 0644), [&] {
      int fd = open(hf.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
      if (fd >= 0) close(fd);
      return fd;
    }());
    // A file asking for setgid in a group its creator is not in loses the bit.
    EXPECT_SAME_AS(c, Open(g, O_WRONLY | O_CREAT | O_EXCL, 02755), [&] {
      int fd = open(hg.c_str(), O_WRONLY | O_CREAT | O_EXCL, 02755);
      if (fd >= 0) close(fd);
      return fd;
    }());
    EXPECT_SAME_AS(c, Mkdir(d, 0755), mkdir(hd.c_str(), 0755));
    ExpectSameAttrs(f);
    ExpectSameAttrs(g);
    ExpectSameAttrs(d);
  }
  EXPECT_EQ(root().GetStat("/shared/d1002")->attr.gid, 1000u);
  EXPECT_EQ(Perm(*root().GetStat("/shared/d1002")) & S_ISGID, static_cast<uint32_t>(S_ISGID));
}

TEST_F(PermissionTest, WritingAsNonOwnerClearsSetuidAndSetgid) {
  for (mode_t m : {04777, 02777, 06777, 02767, 04767}) {
    std::string p = "/f" + std::to_string(m);
    ASSERT_NO_FATAL_FAILURE(BothFile(p, "", m));
    ASSERT_TRUE(root().Chmod(p, m).ok());
    ASSERT_EQ(chmod(H(p).c_str(), m), 0);
    std::string hp = H(p);
    for (const Cred& c : {alice, Cred::Root()}) {
      Client cl = As(c);
      Result<OpenResult> o = cl.Open(p, O_WRONLY);
      ASSERT_TRUE(o.ok()) << o.status().message();
      EXPECT_TRUE(cl.Write(o->id, 0, "w").ok());
      EXPECT_TRUE(root().Close(o->id).ok());
      ASSERT_EQ(HostErrAs(c,
                          [&]() -> long {
                            int fd = open(hp.c_str(), O_WRONLY);
                            if (fd < 0) return fd;
                            long n = write(fd, "w", 1);
                            close(fd);
                            return n;
                          }),
                0);
      ExpectSameAttrs(p);
    }
  }
}

TEST_F(PermissionTest, TruncateAsNonOwnerClearsSetuidAndSetgid) {
  for (mode_t m : {04777, 02777, 02767}) {
    std::string p = "/t" + std::to_string(m);
    ASSERT_NO_FATAL_FAILURE(BothFile(p, "data", m));
    ASSERT_TRUE(root().Chmod(p, m).ok());
    ASSERT_EQ(chmod(H(p).c_str(), m), 0);
    std::string hp = H(p);
    EXPECT_SAME_AS(alice, Truncate(p, 1), truncate(hp.c_str(), 1));
    ExpectSameAttrs(p);
  }
}

TEST_F(PermissionTest, OpenWithTruncateClearsSetuidAndSetgidAsATruncateDoes) {
  // Whatever the size was: an empty file loses them too.
  for (const std::string& data : {std::string("data"), std::string()}) {
    for (mode_t m : {04777, 02777, 02767, 06777}) {
      std::string p = "/o" + std::to_string(m) + "-" + std::to_string(data.size());
      ASSERT_NO_FATAL_FAILURE(BothFile(p, data, m));
      ASSERT_TRUE(root().Chmod(p, m).ok());
      ASSERT_EQ(chmod(H(p).c_str(), m), 0);
      std::string hp = H(p);
      EXPECT_SAME_AS(alice, Open(p, O_WRONLY | O_TRUNC), [&] {
        const int fd = open(hp.c_str(), O_WRONLY | O_TRUNC);
        if (fd >= 0) close(fd);
        return fd;
      }());
      ExpectSameAttrs(p);
    }
  }
}

// fs.protected_hardlinks (1 by default on Debian, as on this host): a user may link only to a
// file they own or could open for reading and writing, and never to a setuid file or a
// directory; otherwise EPERM, even before the directory's own permission is checked.
TEST_F(PermissionTest, HardLinksToOthersFilesFollowTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothDir("/pub", 0777));
  ASSERT_NO_FATAL_FAILURE(BothFile("/rootfile", "", 0644));
  ASSERT_NO_FATAL_FAILURE(BothFile("/shared", "", 0666));
  ASSERT_NO_FATAL_FAILURE(BothFile("/suid", "", 04777));
  ASSERT_TRUE(root().Chmod("/suid", 04777).ok());
  ASSERT_EQ(chmod(H("/suid").c_str(), 04777), 0);
  ASSERT_NO_FATAL_FAILURE(BothFile("/pub/mine", "", 0600));
  ASSERT_NO_FATAL_FAILURE(BothChown("/pub/mine", 1000, 1000));
  ASSERT_NO_FATAL_FAILURE(BothDir("/dir", 0755));
  int i = 0;
  for (const char* from : {"/rootfile", "/shared", "/suid", "/pub/mine", "/dir", "/"}) {
    for (const char* dir : {"/pub/", "/"}) {
      std::string to = std::string(dir) + "l" + std::to_string(i++);
      std::string hf = H(from), ht = H(to);
      EXPECT_SAME_AS(alice, Link(from, to), link(hf.c_str(), ht.c_str())) << " " << from;
    }
  }
}

TEST_F(PermissionTest, RenameOfADirectoryNeedsWriteOnItToUpdateDotDot) {
  ASSERT_NO_FATAL_FAILURE(BothDir("/a", 0777));
  ASSERT_NO_FATAL_FAILURE(BothDir("/b", 0777));
  ASSERT_NO_FATAL_FAILURE(BothDir("/a/sub", 0755));  // owned by root: alice cannot write it
  std::string from = H("/a/sub"), to = H("/b/sub"), same = H("/a/sub2");
  EXPECT_SAME_AS(alice, Rename("/a/sub", "/b/sub"), rename(from.c_str(), to.c_str()));
  EXPECT_SAME_AS(alice, Rename("/a/sub", "/a/sub2"), rename(from.c_str(), same.c_str()));
}

}  // namespace
}  // namespace amino::schema::testing
