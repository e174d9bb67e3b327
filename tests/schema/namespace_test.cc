// Names: create, mkdir, rmdir, unlink, link, symlink, readlink, rename. Each errno is checked
// against the kernel on the same tree in a scratch directory.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

class NamespaceTest : public FsTest {
 protected:
  int HostRename(const std::string& a, const std::string& b, unsigned flags = 0) {
    return static_cast<int>(
        syscall(SYS_renameat2, AT_FDCWD, H(a).c_str(), AT_FDCWD, H(b).c_str(), flags));
  }
};

TEST_F(NamespaceTest, CreateGivesAnEmptyFileWithTheGivenModeAndCallersIds) {
  Result<OpenResult> o = user(1000, 100).Open("/f", O_CREAT | O_WRONLY, 0640);
  // Root owns "/" (0755): user 1000 may not create in it.
  EXPECT_ERRNO(o, EACCES);
  ASSERT_TRUE(root().Chmod("/", 0777).ok());
  o = user(1000, 100).Open("/f", O_CREAT | O_WRONLY, 0640);
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_TRUE(o->created);
  EXPECT_TRUE(root().Close(o->id).ok());
  Result<Stat> st = root().GetStat("/f");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(FileType(*st), S_IFREG);
  EXPECT_EQ(Perm(*st), 0640u);
  EXPECT_EQ(st->attr.nlink, 1u);
  EXPECT_EQ(st->attr.uid, 1000u);
  EXPECT_EQ(st->attr.gid, 100u);
  EXPECT_EQ(st->attr.size, 0u);
  EXPECT_EQ(st->ino, o->id);

  o = root().Open("/f", O_CREAT | O_RDONLY, 0600);
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->created);
  EXPECT_TRUE(root().Close(o->id).ok());
  EXPECT_EQ(Perm(*root().GetStat("/f")), 0640u);  // an existing file keeps its mode
}

TEST_F(NamespaceTest, MknodMakesRegularFilesAndFifos) {
  Result<Stat> r = root().Mknod("/reg", S_IFREG | 0600);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(FileType(*root().GetStat("/reg")), S_IFREG);
  r = root().Mknod("/fifo", S_IFIFO | 0644);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(FileType(*root().GetStat("/fifo")), S_IFIFO);
  ASSERT_EQ(mknod(H("/reg").c_str(), S_IFREG | 0600, 0), 0);
  EXPECT_LINUX(root().Mknod("/reg", S_IFREG | 0600), mknod(H("/reg").c_str(), S_IFREG | 0600, 0));
  // Devices need CAP_MKNOD, which a user does not have.
  ASSERT_TRUE(root().Chmod("/", 0777).ok());
  ASSERT_EQ(chmod(H("/").c_str(), 0777), 0);
  EXPECT_EQ(ErrName(Err(user(1000, 1000).Mknod("/dev", S_IFCHR | 0600, makedev(1, 3)))),
            ErrName(HostErrAs(Cred::User(1000, 1000), [&] {
              return static_cast<long>(mknod(H("/dev").c_str(), S_IFCHR | 0600, makedev(1, 3)));
            })));
}

TEST_F(NamespaceTest, MkdirAndRmdirKeepLinkCounts) {
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  Result<Stat> d = root().GetStat("/d");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(FileType(*d), S_IFDIR);
  EXPECT_EQ(d->attr.nlink, 2u);
  EXPECT_EQ(root().GetStat("/")->attr.nlink, 3u);
  ASSERT_NO_FATAL_FAILURE(BothDir("/d/e"));
  EXPECT_EQ(root().GetStat("/d")->attr.nlink, 3u);

  EXPECT_LINUX(root().Mkdir("/d"), mkdir(H("/d").c_str(), 0755));
  EXPECT_LINUX(root().Mkdir("/missing/x"), mkdir(H("/missing/x").c_str(), 0755));
  EXPECT_LINUX(root().Rmdir("/d"), rmdir(H("/d").c_str()));
  EXPECT_LINUX(root().Rmdir("/d/."), rmdir(H("/d/.").c_str()));
  EXPECT_LINUX(root().Rmdir("/d/e/.."), rmdir(H("/d/e/..").c_str()));
  EXPECT_LINUX(root().Rmdir("/nope"), rmdir(H("/nope").c_str()));
  EXPECT_LINUX(root().Rmdir("/d/e/"), rmdir(H("/d/e/").c_str()));
  EXPECT_EQ(root().GetStat("/d")->attr.nlink, 2u);
  EXPECT_LINUX(root().Rmdir("/d"), rmdir(H("/d").c_str()));
  EXPECT_EQ(root().GetStat("/")->attr.nlink, 2u);
  EXPECT_ERRNO(root().GetStat("/d"), ENOENT);
  // The root of a mount cannot be removed.
  EXPECT_ERRNO(root().Rmdir("/"), EBUSY);
}

TEST_F(NamespaceTest, MkdirWithTrailingSlashAndThroughFiles) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f"));
  EXPECT_LINUX(root().Mkdir("/d/"), mkdir(H("/d/").c_str(), 0755));
  EXPECT_LINUX(root().Mkdir("/f/x"), mkdir(H("/f/x").c_str(), 0755));
  EXPECT_LINUX(root().Mkdir("/f"), mkdir(H("/f").c_str(), 0755));
  EXPECT_LINUX(root().Mkdir("/f/"), mkdir(H("/f/").c_str(), 0755));
  EXPECT_LINUX(root().Rmdir("/f"), rmdir(H("/f").c_str()));
  EXPECT_LINUX(root().Mkdir("/"), mkdir(H("/").c_str(), 0755));
}

TEST_F(NamespaceTest, UnlinkRemovesOnlyNonDirectories) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "data"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  EXPECT_LINUX(root().Unlink("/d"), unlink(H("/d").c_str()));
  EXPECT_LINUX(root().Unlink("/f/"), unlink(H("/f/").c_str()));
  EXPECT_LINUX(root().Unlink("/f/x"), unlink(H("/f/x").c_str()));
  EXPECT_LINUX(root().Unlink("/none/x"), unlink(H("/none/x").c_str()));
  EXPECT_LINUX(root().Unlink("/f"), unlink(H("/f").c_str()));
  EXPECT_LINUX(root().Unlink("/f"), unlink(H("/f").c_str()));
  EXPECT_ERRNO(root().GetStat("/f"), ENOENT);
  EXPECT_ERRNO(root().Unlink("/"), EISDIR);
}

TEST_F(NamespaceTest, SymlinkStoresTargetVerbatim) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "hello"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("f", "/l"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("no/such//target/", "/dangling"));
  Result<std::string> t = root().Readlink("/dangling");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "no/such//target/");
  Result<Stat> l = root().LStat("/l");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(FileType(*l), S_IFLNK);
  EXPECT_EQ(Perm(*l), 0777u);
  EXPECT_EQ(l->attr.size, 1u);  // the target's length
  Result<Stat> f = root().GetStat("/l");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(FileType(*f), S_IFREG);
  EXPECT_EQ(f->ino, root().GetStat("/f")->ino);
  EXPECT_EQ(*root().ReadFile("/l"), "hello");

  char buf[64];
  EXPECT_LINUX(root().Readlink("/f"), readlink(H("/f").c_str(), buf, sizeof buf));
  EXPECT_LINUX(root().Readlink("/nope"), readlink(H("/nope").c_str(), buf, sizeof buf));
  EXPECT_LINUX(root().Symlink("x", "/f"), symlink("x", H("/f").c_str()));
  EXPECT_LINUX(root().Symlink("x", "/l"), symlink("x", H("/l").c_str()));
  EXPECT_LINUX(root().Symlink("", "/empty"), symlink("", H("/empty").c_str()));
  EXPECT_LINUX(root().Symlink("x", "/nodir/l"), symlink("x", H("/nodir/l").c_str()));
  EXPECT_LINUX(root().GetStat("/dangling"), access(H("/dangling").c_str(), F_OK));
  EXPECT_LINUX(root().Symlink("x", "/l2/"), symlink("x", H("/l2/").c_str()));
  std::string longest(kSymlinkMax, 'x');
  EXPECT_LINUX(root().Symlink(longest, "/long"), symlink(longest.c_str(), H("/long").c_str()));
  std::string too_long(kSymlinkMax + 1, 'x');
  EXPECT_LINUX(root().Symlink(too_long, "/toolong"),
               symlink(too_long.c_str(), H("/toolong").c_str()));
}

TEST_F(NamespaceTest, LinkAddsANameToTheSameFile) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "x"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("f", "/l"));
  EXPECT_LINUX(root().Link("/f", "/g"), link(H("/f").c_str(), H("/g").c_str()));
  EXPECT_EQ(root().GetStat("/f")->ino, root().GetStat("/g")->ino);
  EXPECT_LINUX(root().Link("/f", "/g"), link(H("/f").c_str(), H("/g").c_str()));
  EXPECT_LINUX(root().Link("/d", "/d2"), link(H("/d").c_str(), H("/d2").c_str()));
  EXPECT_LINUX(root().Link("/nope", "/n2"), link(H("/nope").c_str(), H("/n2").c_str()));
  EXPECT_LINUX(root().Link("/f", "/nodir/x"), link(H("/f").c_str(), H("/nodir/x").c_str()));
  EXPECT_LINUX(root().Link("/f/", "/x"), link(H("/f/").c_str(), H("/x").c_str()));
  EXPECT_LINUX(root().Link("/f", "/d"), link(H("/f").c_str(), H("/d").c_str()));
  // link(2) does not follow a symbolic link: the new name is another name of the link.
  EXPECT_LINUX(root().Link("/l", "/l2"), link(H("/l").c_str(), H("/l2").c_str()));
  Result<Stat> l2 = root().LStat("/l2");
  ASSERT_TRUE(l2.ok());
  EXPECT_EQ(FileType(*l2), S_IFLNK);
  EXPECT_EQ(l2->ino, root().LStat("/l")->ino);
  // linkat(AT_SYMLINK_FOLLOW) links the target instead.
  ASSERT_TRUE(root().Link("/l", "/f3", /*follow_old=*/true).ok());
  EXPECT_EQ(root().LStat("/f3")->ino, root().GetStat("/f")->ino);
  EXPECT_EQ(root().GetStat("/f")->attr.nlink, 3u);
}

TEST_F(NamespaceTest, RenameFilesAndDirectories) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/a", "A"));
  ASSERT_NO_FATAL_FAILURE(BothFile("/b", "B"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/e"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/full"));
  ASSERT_NO_FATAL_FAILURE(BothFile("/full/x"));

  FileId a = root().GetStat("/a")->ino;
  EXPECT_LINUX(root().Rename("/a", "/b"), HostRename("/a", "/b"));
  EXPECT_EQ(root().GetStat("/b")->ino, a);
  EXPECT_EQ(*root().ReadFile("/b"), "A");
  EXPECT_ERRNO(root().GetStat("/a"), ENOENT);

  EXPECT_LINUX(root().Rename("/b", "/d"), HostRename("/b", "/d"));
  EXPECT_LINUX(root().Rename("/d", "/b"), HostRename("/d", "/b"));
  EXPECT_LINUX(root().Rename("/d", "/full"), HostRename("/d", "/full"));
  EXPECT_LINUX(root().Rename("/d", "/d/sub"), HostRename("/d", "/d/sub"));
  EXPECT_LINUX(root().Rename("/nope", "/x"), HostRename("/nope", "/x"));
  EXPECT_LINUX(root().Rename("/b", "/nodir/x"), HostRename("/b", "/nodir/x"));
  EXPECT_LINUX(root().Rename("/b/", "/c"), HostRename("/b/", "/c"));
  EXPECT_LINUX(root().Rename("/d/.", "/c"), HostRename("/d/.", "/c"));
  EXPECT_LINUX(root().Rename("/b", "/b"), HostRename("/b", "/b"));
  EXPECT_ERRNO(root().Rename("/", "/x"), EBUSY);

  // A directory onto an empty directory replaces it; link counts follow.
  FileId d = root().GetStat("/d")->ino;
  EXPECT_LINUX(root().Rename("/d", "/e"), HostRename("/d", "/e"));
  EXPECT_EQ(root().GetStat("/e")->ino, d);
  EXPECT_EQ(root().GetStat("/")->attr.nlink, 4u);  // ".", "..", e, full

  EXPECT_LINUX(root().Rename("/e", "/full/e"), HostRename("/e", "/full/e"));
  EXPECT_EQ(root().GetStat("/")->attr.nlink, 3u);
  EXPECT_EQ(root().GetStat("/full")->attr.nlink, 3u);
  EXPECT_EQ(root().ListNames("/full").value(), (std::vector<std::string>{"e", "x"}));
}

TEST_F(NamespaceTest, RenameNoreplaceAndExchange) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "F"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  ASSERT_NO_FATAL_FAILURE(BothFile("/d/inner", "I"));
  EXPECT_LINUX(root().Rename("/f", "/d", RENAME_NOREPLACE),
               HostRename("/f", "/d", RENAME_NOREPLACE));
  EXPECT_LINUX(root().Rename("/f", "/g", RENAME_EXCHANGE), HostRename("/f", "/g", RENAME_EXCHANGE));
  EXPECT_LINUX(root().Rename("/f", "/d", RENAME_EXCHANGE | RENAME_NOREPLACE),
               HostRename("/f", "/d", RENAME_EXCHANGE | RENAME_NOREPLACE));
  FileId f = root().GetStat("/f")->ino;
  FileId d = root().GetStat("/d")->ino;
  EXPECT_LINUX(root().Rename("/f", "/d", RENAME_EXCHANGE), HostRename("/f", "/d", RENAME_EXCHANGE));
  EXPECT_EQ(root().GetStat("/f")->ino, d);
  EXPECT_EQ(root().GetStat("/d")->ino, f);
  EXPECT_EQ(*root().ReadFile("/f/inner"), "I");  // the subtree moved with the directory
  EXPECT_EQ(*root().ReadFile("/d"), "F");
  EXPECT_LINUX(root().Rename("/d", "/f/d", RENAME_EXCHANGE),
               HostRename("/d", "/f/d", RENAME_EXCHANGE));
  EXPECT_LINUX(root().Rename("/f", "/f/inner", RENAME_EXCHANGE),
               HostRename("/f", "/f/inner", RENAME_EXCHANGE));
  EXPECT_LINUX(root().Rename("/d", "/e", RENAME_NOREPLACE),
               HostRename("/d", "/e", RENAME_NOREPLACE));
  EXPECT_EQ(*root().ReadFile("/e"), "F");
}

TEST_F(NamespaceTest, RenameOfAFileOntoItselfWithTrailingSlashIsENOTDIR) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f"));
  for (unsigned flags : {0u, unsigned{RENAME_NOREPLACE}, unsigned{RENAME_EXCHANGE}}) {
    EXPECT_LINUX(root().Rename("/f", "/f/", flags), HostRename("/f", "/f/", flags)) << flags;
    EXPECT_LINUX(root().Rename("/f/", "/f", flags), HostRename("/f/", "/f", flags)) << flags;
  }
}

TEST_F(NamespaceTest, ExchangeAcrossDirectoriesKeepsLinkCounts) {
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  ASSERT_NO_FATAL_FAILURE(BothFile("/d/f"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/a"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/a/sub"));
  // A directory and a file trade places across two parents: each parent's subdirectory count
  // changes by one.
  EXPECT_LINUX(root().Rename("/a", "/d/f", RENAME_EXCHANGE),
               HostRename("/a", "/d/f", RENAME_EXCHANGE));
  for (const char* p : {"/", "/d", "/d/f", "/a"}) {
    struct stat st;
    ASSERT_EQ(lstat(H(p).c_str(), &st), 0) << p;
    Result<Stat> s = root().LStat(p);
    ASSERT_TRUE(s.ok()) << p;
    EXPECT_EQ(s->attr.nlink, st.st_nlink) << p;
    EXPECT_EQ(FileType(*s), st.st_mode & S_IFMT) << p;
  }
}

TEST_F(NamespaceTest, MkdirKeepsOnlyPermissionAndStickyBits) {
  for (mode_t m : {07777, 04755, 02755, 01777, 02644}) {
    std::string p = "/d" + std::to_string(m);
    ASSERT_NO_FATAL_FAILURE(BothDir(p, m));
    struct stat st;
    ASSERT_EQ(stat(H(p).c_str(), &st), 0);
    EXPECT_EQ(Perm(*root().GetStat(p)), st.st_mode & 07777) << "mkdir mode 0" << std::oct << m;
  }
}

TEST_F(NamespaceTest, RenameReplacingTheLastNameOfAnOpenFileKeepsItReadable) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/old", "old data"));
  ASSERT_NO_FATAL_FAILURE(BothFile("/new", "new data"));
  Result<OpenResult> o = root().Open("/old", O_RDONLY);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(root().Rename("/new", "/old").ok());
  Result<std::string> r = root().Read(o->id, 0, 100);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "old data");
  EXPECT_EQ(root().FStat(o->id)->attr.nlink, 0u);
  EXPECT_EQ(*root().ReadFile("/old"), "new data");
  EXPECT_TRUE(root().Close(o->id).ok());
}

TEST_F(NamespaceTest, ReopenKeepsEverything) {
  ASSERT_TRUE(root().Mkdir("/d").ok());
  ASSERT_TRUE(root().WriteFile("/d/f", "persist").ok());
  ASSERT_TRUE(root().Symlink("d/f", "/l").ok());
  Reopen();
  EXPECT_EQ(*root().ReadFile("/l"), "persist");
  EXPECT_EQ(root().ListNames("/").value(), (std::vector<std::string>{"d", "l"}));
}

}  // namespace
}  // namespace amino::schema::testing
