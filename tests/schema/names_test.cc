// Names and paths: length limits, arbitrary bytes, moving whole subtrees, symbolic-link loops,
// and links that lead out of the file system (escapes the monitor continues on the host).
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

using NamesTest = FsTest;

TEST_F(NamesTest, NameLengthLimit) {
  std::string ok(kNameMax, 'n');
  std::string too_long(kNameMax + 1, 'n');
  EXPECT_LINUX(root().Mkdir("/" + ok), mkdir(H("/" + ok).c_str(), 0755));
  EXPECT_LINUX(root().Mkdir("/" + too_long), mkdir(H("/" + too_long).c_str(), 0755));
  EXPECT_LINUX(root().WriteFile("/" + ok + "/" + ok, "x"),
               creat(H("/" + ok + "/" + ok).c_str(), 0644));
  EXPECT_LINUX(root().Open("/" + too_long, O_CREAT | O_WRONLY, 0644),
               open(H("/" + too_long).c_str(), O_CREAT | O_WRONLY, 0644));
  struct stat st;
  EXPECT_LINUX(root().GetStat("/" + too_long), stat(H("/" + too_long).c_str(), &st));
  EXPECT_LINUX(root().GetStat("/" + too_long + "/x"), stat(H("/" + too_long + "/x").c_str(), &st));
  EXPECT_LINUX(root().Symlink("t", "/" + too_long), symlink("t", H("/" + too_long).c_str()));
  EXPECT_LINUX(root().Rename("/" + ok, "/" + too_long),
               rename(H("/" + ok).c_str(), H("/" + too_long).c_str()));
  EXPECT_EQ(root().ListNames("/").value(), std::vector<std::string>{ok});
}

TEST_F(NamesTest, ALongNameIsRefusedOnlyWhereTheKernelLooksItUp) {
  const std::string too_long(kNameMax + 1, 'n');
  BothDir("/d");
  // rename walks to both directories before it looks either last name up.
  EXPECT_LINUX(root().Rename("/" + too_long, "/missing/x"),
               rename(H("/" + too_long).c_str(), H("/missing/x").c_str()));
  EXPECT_LINUX(root().Rename("/" + too_long, "/d/x"),
               rename(H("/" + too_long).c_str(), H("/d/x").c_str()));
  EXPECT_LINUX(root().Rename("/" + too_long, "/d/.."),
               rename(H("/" + too_long).c_str(), H("/d/..").c_str()));
  // A directory the caller may not search refuses before the name is measured.
  BothDir("/closed", 0700);
  const Cred nobody = Cred::User(65534, 65534, {});
  for (const std::string& p :
       {"/closed/" + too_long, std::string("/closed/x"), "/" + too_long + "/x"}) {
    const std::string hp = H(p);
    struct stat st;
    EXPECT_EQ(ErrName(Err(root().As(nobody).GetStat(p))),
              ErrName(HostErrAs(nobody, [&] { return stat(hp.c_str(), &st); })))
        << p.substr(0, 12);
  }
}

TEST_F(NamesTest, PathsHaveNoTotalLengthLimit) {
  // PATH_MAX bounds a system call's argument (the monitor checks it), not the path a walk from a
  // deep working directory reaches: a tree may be deeper than 4096 bytes, as on ext4.
  const std::string comp(200, 'c');
  std::string p;
  while (p.size() < 6000) {
    p += "/" + comp;
    ASSERT_TRUE(root().Mkdir(p, 0755).ok()) << p.size();
  }
  const std::string file = p + "/deep.txt";
  ASSERT_TRUE(root().WriteFile(file, "deep").ok());
  EXPECT_EQ(*root().ReadFile(file), "deep");
  EXPECT_TRUE(S_ISREG(root().GetStat(file)->attr.mode));
  EXPECT_ERRNO(root().GetStat(p + "/missing"), ENOENT);
  // A name over NAME_MAX is still refused where the walk reaches it.
  EXPECT_ERRNO(root().GetStat(p + "/" + std::string(kNameMax + 1, 'n')), ENAMETOOLONG);
  // Redundant slashes are only slashes.
  EXPECT_TRUE(root().GetStat(std::string(kPathMax, '/')).ok());
  ASSERT_TRUE(root().Unlink(file).ok());
  EXPECT_ERRNO(root().GetStat(file), ENOENT);
}

TEST_F(NamesTest, FiveThousandBytePathOfMissingDirectoriesChangesNothing) {
  ASSERT_TRUE(root().WriteFile("/keep", "kept").ok());
  std::string p;
  while (p.size() < 5000) p += "/" + std::string(99, 'd');
  p.resize(5000);
  EXPECT_ERRNO(root().GetStat(p), ENOENT);
  EXPECT_ERRNO(root().Mkdir(p, 0755), ENOENT);
  EXPECT_ERRNO(root().Open(p, O_CREAT | O_WRONLY, 0644), ENOENT);
  EXPECT_ERRNO(root().Unlink(p), ENOENT);
  EXPECT_ERRNO(root().Rename("/keep", p), ENOENT);
  // Nothing was created or lost.
  EXPECT_EQ(root().ListNames("/").value(), std::vector<std::string>{"keep"});
  EXPECT_EQ(*root().ReadFile("/keep"), "kept");
}

TEST_F(NamesTest, EveryByteButSlashAndNulRoundTrips) {
  std::set<std::string> made;
  std::string all;
  for (int b = 1; b < 256; ++b) {
    if (b == '/') continue;
    all.push_back(static_cast<char>(b));
    std::string name = "x" + std::string(1, static_cast<char>(b)) + "y";
    ASSERT_TRUE(root().WriteFile("/" + name, name).ok()) << "byte " << b;
    made.insert(name);
  }
  ASSERT_EQ(all.size(), 254u);
  ASSERT_TRUE(root().Mkdir("/" + all).ok());
  ASSERT_TRUE(root().WriteFile("/" + all + "/" + all, "all").ok());
  made.insert(all);
  for (int b = 1; b < 256; ++b) {
    if (b == '/' || b == '.') continue;
    std::string single(1, static_cast<char>(b));
    ASSERT_TRUE(root().Symlink(single, "/" + single).ok()) << "byte " << b;
    made.insert(single);
  }
  Result<std::vector<std::string>> names = root().ListNames("/", 7);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(std::set<std::string>(names->begin(), names->end()), made);
  EXPECT_EQ(names->size(), made.size());
  for (const std::string& n : made) {
    Result<Stat> st = root().LStat("/" + n);
    ASSERT_TRUE(st.ok()) << n;
    if (n.size() == 3) {
      EXPECT_EQ(*root().ReadFile("/" + n), n);
    } else if (n.size() == 1) {
      EXPECT_EQ(*root().Readlink("/" + n), n);
    }
  }
  EXPECT_EQ(*root().ReadFile("/" + all + "/" + all), "all");
  EXPECT_EQ(root().ListNames("/" + all).value(), std::vector<std::string>{all});
  Reopen();
  EXPECT_EQ(root().ListNames("/", 1000)->size(), made.size());
}

TEST_F(NamesTest, RenamingADirectoryMovesItsWholeSubtree) {
  // A chain 30 deep with a file, a symlink and a hard-linked file at every level, next to a
  // sibling whose name shares the prefix (it must not move).
  std::string dir = "/top";
  ASSERT_TRUE(root().Mkdir(dir).ok());
  ASSERT_TRUE(root().Mkdir("/top-sibling").ok());
  ASSERT_TRUE(root().WriteFile("/top-sibling/stay", "s").ok());
  ASSERT_TRUE(root().WriteFile("/outside", "o").ok());
  std::vector<std::string> rel;
  std::string r;
  for (int i = 0; i < 30; ++i) {
    r += "/l" + std::to_string(i);
    ASSERT_TRUE(root().Mkdir(dir + r).ok());
    ASSERT_TRUE(root().WriteFile(dir + r + "/file", std::to_string(i)).ok());
    ASSERT_TRUE(root().Symlink("file", dir + r + "/link").ok());
    rel.push_back(r);
  }
  ASSERT_TRUE(root().Link("/outside", dir + r + "/hard").ok());
  FileId deep = root().GetStat(dir + r + "/file")->ino;
  FileId outside = root().GetStat("/outside")->ino;

  ASSERT_TRUE(root().Mkdir("/new").ok());
  ASSERT_TRUE(root().Rename("/top", "/new/place").ok());
  for (size_t i = 0; i < rel.size(); ++i) {
    EXPECT_EQ(*root().ReadFile("/new/place" + rel[i] + "/link"), std::to_string(i));
    EXPECT_ERRNO(root().GetStat("/top" + rel[i]), ENOENT);
  }
  EXPECT_EQ(root().GetStat("/new/place" + r + "/file")->ino, deep);
  EXPECT_EQ(root().GetStat("/new/place/l0")->attr.nlink, 3u);
  EXPECT_EQ(*root().ReadFile("/top-sibling/stay"), "s");
  std::vector<std::string> names = root().Names(outside).value();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"/new/place" + r + "/hard", "/outside"}));
  EXPECT_EQ(root().ListNames("/").value(),
            (std::vector<std::string>{"new", "outside", "top-sibling"}));
  ExpectConsistent();
}

TEST_F(NamesTest, MovingADirectoryUnderItselfIsEINVAL) {
  ASSERT_NO_FATAL_FAILURE(BothDir("/a"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/a/b"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/a/b/c"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/ab"));
  EXPECT_LINUX(root().Rename("/a", "/a/x"), rename(H("/a").c_str(), H("/a/x").c_str()));
  EXPECT_LINUX(root().Rename("/a", "/a/b/c/d"), rename(H("/a").c_str(), H("/a/b/c/d").c_str()));
  EXPECT_LINUX(root().Rename("/a", "/a/b"), rename(H("/a").c_str(), H("/a/b").c_str()));
  EXPECT_LINUX(root().Rename("/a/b", "/a"), rename(H("/a/b").c_str(), H("/a").c_str()));
  // A name that merely starts with the same bytes is not inside.
  EXPECT_LINUX(root().Rename("/a", "/ab/a"), rename(H("/a").c_str(), H("/ab/a").c_str()));
  EXPECT_TRUE(root().GetStat("/ab/a/b/c").ok());
}

TEST_F(NamesTest, SymlinkLoopsAreELOOP) {
  ASSERT_NO_FATAL_FAILURE(BothSymlink("b", "/a"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("a", "/b"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("self/x", "/self"));
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "end"));
  struct stat st;
  EXPECT_LINUX(root().GetStat("/a"), stat(H("/a").c_str(), &st));
  EXPECT_LINUX(root().GetStat("/self"), stat(H("/self").c_str(), &st));
  EXPECT_LINUX(root().Open("/a", O_CREAT | O_WRONLY, 0644),
               open(H("/a").c_str(), O_CREAT | O_WRONLY, 0644));
  EXPECT_LINUX(root().Mkdir("/a/x", 0755), mkdir(H("/a/x").c_str(), 0755));
  EXPECT_TRUE(root().LStat("/a").ok());
  // Chains: 40 links are followed, the 41st is a loop.
  std::string prev = "f";
  for (int i = 1; i <= 41; ++i) {
    std::string name = "c" + std::to_string(i);
    ASSERT_NO_FATAL_FAILURE(BothSymlink(prev, "/" + name));
    prev = name;
  }
  EXPECT_LINUX(root().GetStat("/c40"), stat(H("/c40").c_str(), &st));
  EXPECT_LINUX(root().GetStat("/c41"), stat(H("/c41").c_str(), &st));
  EXPECT_EQ(*root().ReadFile("/c40"), "end");
}

TEST_F(NamesTest, LinksOutOfTheFileSystemEscape) {
  ASSERT_TRUE(root().Mkdir("/d").ok());
  ASSERT_TRUE(root().Symlink("/etc", "/d/abs").ok());
  ASSERT_TRUE(root().Symlink("../../up", "/d/rel").ok());
  Result<Stat> st = root().GetStat("/d/abs/passwd");
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.status().is_escape());
  EXPECT_EQ(st.status().error(), EXDEV);  // what a call reports unless the walk goes on
  EXPECT_EQ(st.status().escaped_path(), "/etc/passwd");
  Status s = root().Open("/d/abs", O_RDONLY).status();
  EXPECT_TRUE(s.is_escape());
  EXPECT_EQ(s.error(), EXDEV);
  EXPECT_EQ(s.escaped_path(), "/etc");
  // ".." above the root through a link: relative to the directory the mount is on.
  st = root().GetStat("/d/rel/x");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().error(), EXDEV);
  EXPECT_EQ(st.status().escaped_path(), "../up/x");
  // Not following the final link does not escape.
  EXPECT_TRUE(root().LStat("/d/abs").ok());
  // A plain EXDEV is no escape: it has no way on.
  EXPECT_FALSE(Status::Errno(EXDEV).is_escape());
  EXPECT_EQ(Status::Errno(EXDEV).escaped_path(), "");
  EXPECT_EQ(*root().Readlink("/d/abs"), "/etc");
}

}  // namespace
}  // namespace amino::schema::testing
