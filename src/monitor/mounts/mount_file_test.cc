// The mounts file: what a line may say, and the place and words of every error.
#include "monitor/mounts/mount_file.h"

#include <gtest/gtest.h>

namespace amino::monitor::mounts {
namespace {

std::vector<MountEntry> Parse(std::string_view text) {
  ConfigResult<std::vector<MountEntry>> r = ParseMountsFile("mounts", text, "/home/u");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
  return r.ok() ? std::move(r).value() : std::vector<MountEntry>{};
}

std::string Error(std::string_view text, std::string_view home = "/home/u") {
  ConfigResult<std::vector<MountEntry>> r = ParseMountsFile("mounts", text, home);
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? "" : r.error();
}

TEST(MountFileTest, LinesCommentsAndOptions) {
  std::vector<MountEntry> e = Parse(
      "# Amino mounts\n"
      "\n"
      "   \t\n"
      "/srv/a   /var/db/a\n"
      "\t/srv/b /var/db/b  create,durability=sync   # the second\n"
      "/srv/c /var/db/c defaults,durability=async\r\n"
      "/srv/d /var/db/d create");  // no newline at the end
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].point, "/srv/a");
  EXPECT_EQ(e[0].db_dir, "/var/db/a");
  EXPECT_FALSE(e[0].create);
  EXPECT_FALSE(e[0].durability);
  EXPECT_EQ(e[0].line, 4);
  EXPECT_EQ(e[0].point_column, 1);
  EXPECT_EQ(e[0].db_column, 10);
  EXPECT_EQ(e[1].point, "/srv/b");
  EXPECT_TRUE(e[1].create);
  EXPECT_EQ(e[1].durability, Durability::kSync);
  EXPECT_EQ(e[1].line, 5);
  EXPECT_EQ(e[1].point_column, 2);
  EXPECT_EQ(e[2].durability, Durability::kAsync);
  EXPECT_FALSE(e[2].create);
  EXPECT_EQ(e[3].line, 7);
  EXPECT_TRUE(e[3].create);
  EXPECT_EQ(e[3].DbWhere(), "mounts:7:8: ");
}

TEST(MountFileTest, TildeEscapesAndNormalisation) {
  std::vector<MountEntry> e = Parse(
      "~/amino ~/.local/share/amino/db\n"
      "~ /db/home\n"
      "/srv/with\\040space/ /db//x/./y/../z\n"
      "/srv/\\176literal /db/hash\\043\\134\n"
      "/srv/a#b /db/q\n");
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].point, "/home/u/amino");
  EXPECT_EQ(e[0].db_dir, "/home/u/.local/share/amino/db");
  EXPECT_EQ(e[1].point, "/home/u");
  EXPECT_EQ(e[2].point, "/srv/with space");
  EXPECT_EQ(e[2].db_dir, "/db/x/z");
  EXPECT_EQ(e[3].point, "/srv/~literal");
  EXPECT_EQ(e[3].db_dir, "/db/hash#\\");
  EXPECT_EQ(e[4].point, "/srv/a#b");  // '#' starts a comment only at the start of a field
}

TEST(MountFileTest, EmptyFileHasNoMounts) {
  EXPECT_TRUE(Parse("").empty());
  EXPECT_TRUE(Parse("# nothing\n\n").empty());
}

TEST(MountFileTest, SyntaxErrorsGiveLineAndColumn) {
  EXPECT_EQ(Error("/a /b\n  /c\n"),
            "mounts:2:5: missing database directory after the mount point (expected 'MOUNTPOINT "
            "DBDIR [OPTIONS]')");
  EXPECT_EQ(Error("/a /b create extra\n"),
            "mounts:1:14: unexpected field 'extra' (expected 'MOUNTPOINT DBDIR [OPTIONS]'; write "
            "a space in a path as \\040)");
  EXPECT_EQ(Error("/a /b create,bogus\n"),
            "mounts:1:14: unknown option 'bogus' (known: create, durability=async, "
            "durability=sync, defaults)");
  EXPECT_EQ(Error("\n\n/a /b durability=fast\n"),
            "mounts:3:18: unknown durability 'fast' (async or sync)");
  EXPECT_EQ(Error("/a /b durability=sync,durability=sync\n"),
            "mounts:1:23: durability given twice");
  EXPECT_EQ(Error("/a /b create,,defaults\n"), "mounts:1:14: empty option");
  EXPECT_EQ(Error("/a /b create,\n"), "mounts:1:14: empty option");
  EXPECT_EQ(Error("/a /b\\09\n"),
            "mounts:1:6: bad escape in database directory (write a byte as \\ooo, three octal "
            "digits, not \\000)");
  EXPECT_EQ(Error("/a\\000 /b\n"),
            "mounts:1:3: bad escape in mount point (write a byte as \\ooo, three octal digits, "
            "not \\000)");
  EXPECT_EQ(Error("/a /b\\4\n"),
            "mounts:1:6: bad escape in database directory (write a byte as \\ooo, three octal "
            "digits, not \\000)");
  EXPECT_EQ(Error(std::string_view("/a /b\n/c\0 /d\n", 13)), "mounts:2:3: NUL byte in the file");
}

TEST(MountFileTest, PathErrorsGiveLineAndColumn) {
  EXPECT_EQ(Error("# x\n  amino /db\n"),
            "mounts:2:3: relative mount point 'amino': write an absolute path (or one starting "
            "with ~/)");
  EXPECT_EQ(Error("/a   db/x\n"),
            "mounts:1:6: relative database directory 'db/x': write an absolute path (or one "
            "starting with ~/)");
  EXPECT_EQ(Error("/a ~bob/db\n"),
            "mounts:1:4: '~user' is not supported: write the path of ~bob out");
  EXPECT_EQ(Error("~/amino /db\n", ""),
            "mounts:1:1: cannot expand '~': the home directory is unknown (HOME is not set)");
  EXPECT_EQ(Error("//./ /db\n"), "mounts:1:1: the root directory cannot be a mount point");
  EXPECT_EQ(Error("/x/.. /db\n"), "mounts:1:1: the root directory cannot be a mount point");
}

TEST(MountFileTest, ExpandTilde) {
  EXPECT_EQ(ExpandTilde("~", "/h").value(), "/h");
  EXPECT_EQ(ExpandTilde("~/a", "/h").value(), "/h/a");
  EXPECT_EQ(ExpandTilde("/a/~", "/h").value(), "/a/~");
  EXPECT_EQ(ExpandTilde("rel", "/h").value(), "rel");
  EXPECT_FALSE(ExpandTilde("~x", "/h").ok());
  EXPECT_FALSE(ExpandTilde("~/a", "").ok());
  EXPECT_FALSE(ExpandTilde("~/a", "relative").ok());
}

}  // namespace
}  // namespace amino::monitor::mounts
