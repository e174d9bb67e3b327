// Lexical path operations, and their agreement with the kernel on a tree without symbolic links.
#include "monitor/mounts/lexical_path.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <random>
#include <vector>

#include "monitor/mounts/test_support.h"

namespace amino::monitor::mounts {
namespace {

std::vector<std::pair<std::string, size_t>> Components(std::string_view p) {
  std::vector<std::pair<std::string, size_t>> out;
  ComponentCursor c(p);
  while (c.Next()) out.emplace_back(std::string(c.name()), c.begin());
  return out;
}

TEST(ComponentCursorTest, SkipsEmptyComponentsAndGivesOffsets) {
  using V = std::vector<std::pair<std::string, size_t>>;
  EXPECT_EQ(Components(""), V{});
  EXPECT_EQ(Components("///"), V{});
  EXPECT_EQ(Components("a"), (V{{"a", 0}}));
  EXPECT_EQ(Components("//a//bc/./../"), (V{{"a", 2}, {"bc", 5}, {".", 8}, {"..", 10}}));
}

TEST(ComponentCursorTest, AtLastIgnoresTrailingSlashes) {
  ComponentCursor c("a/b//");
  ASSERT_TRUE(c.Next());
  EXPECT_FALSE(c.AtLast());
  ASSERT_TRUE(c.Next());
  EXPECT_TRUE(c.AtLast());
  EXPECT_FALSE(c.Next());
}

TEST(PathStackTest, PushPopAndDotDotAtRoot) {
  PathStack s;
  EXPECT_EQ(s.path(), "/");
  s.Apply("..");
  EXPECT_EQ(s.path(), "/");
  s.Apply("a");
  s.Apply(".");
  s.Apply("b");
  EXPECT_EQ(s.path(), "/a/b");
  s.Apply("..");
  EXPECT_EQ(s.path(), "/a");
  s.Apply("..");
  s.Apply("..");
  EXPECT_EQ(s.path(), "/");
  EXPECT_TRUE(s.at_root());
}

TEST(LexicalPathTest, IsNormalAbsolute) {
  for (const char* p : {"/", "/a", "/a/b", "/a/.b", "/a/..b", "/..a"}) {
    EXPECT_TRUE(IsNormalAbsolute(p)) << p;
  }
  for (const char* p :
       {"", "a", "a/b", "//", "/a/", "//a", "/a//b", "/./a", "/a/.", "/a/..", "/../a"}) {
    EXPECT_FALSE(IsNormalAbsolute(p)) << p;
  }
}

TEST(LexicalPathTest, Normalize) {
  EXPECT_EQ(NormalizeAbsolute("/"), "/");
  EXPECT_EQ(NormalizeAbsolute("//"), "/");
  EXPECT_EQ(NormalizeAbsolute("/.."), "/");
  EXPECT_EQ(NormalizeAbsolute("/../../a"), "/a");
  EXPECT_EQ(NormalizeAbsolute("//a//b/"), "/a/b");
  EXPECT_EQ(NormalizeAbsolute("/a/./b/../c/."), "/a/c");
  EXPECT_EQ(NormalizeAbsolute("/a/b/../../.."), "/");
  EXPECT_EQ(NormalizeAbsolute("/.a/..b/..."), "/.a/..b/...");
}

TEST(LexicalPathTest, WithinComparesWholeComponents) {
  EXPECT_TRUE(IsWithin("/home/a/amino", "/home/a/amino"));
  EXPECT_TRUE(IsWithin("/home/a/amino/x", "/home/a/amino"));
  EXPECT_FALSE(IsWithin("/home/a/amino2", "/home/a/amino"));
  EXPECT_FALSE(IsWithin("/home/a/amin", "/home/a/amino"));
  EXPECT_FALSE(IsWithin("/home/a", "/home/a/amino"));
  EXPECT_TRUE(IsWithin("/anything", "/"));
  EXPECT_TRUE(IsWithin("/", "/"));
  EXPECT_EQ(RemainderBelow("/home/a/amino", "/home/a/amino"), "/");
  EXPECT_EQ(RemainderBelow("/home/a/amino/x/y", "/home/a/amino"), "/x/y");
  EXPECT_EQ(RemainderBelow("/x", "/"), "/x");
}

TEST(LexicalPathTest, JoinNormal) {
  EXPECT_EQ(JoinNormal("/a/b", "c/../d//"), "/a/b/d");
  EXPECT_EQ(JoinNormal("/a/b", "../../../.."), "/");
  EXPECT_EQ(JoinNormal("/", ""), "/");
}

// On a tree of real directories with no symbolic link, the kernel's resolution of a path that
// exists is its lexical normal form: the property the resolver's host walk rests on.
TEST(LexicalPathKernelTest, NormalFormIsWhereTheKernelArrives) {
  testing::ScratchDir scratch;
  // Every path over {a, b} up to depth 4 is a directory.
  std::vector<std::string> level = {""};
  for (int depth = 0; depth < 4; ++depth) {
    std::vector<std::string> next;
    for (const std::string& p : level) {
      for (const char* n : {"a", "b"}) {
        std::string q = p + "/" + n;
        testing::MakeDir(scratch.path() + q);
        next.push_back(q);
      }
    }
    level = next;
  }
  std::mt19937 rng(20240601);
  const char* pool[] = {"a", "b", ".", "..", "", "a", "b"};
  int compared = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string rel;
    int n = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < n; ++k) rel += std::string(pool[rng() % 7]) + (rng() % 4 ? "/" : "//");
    std::string full = scratch.path() + "/" + rel;
    char* real = realpath(full.c_str(), nullptr);
    if (!real) continue;  // a component the tree does not have, or above it
    EXPECT_EQ(NormalizeAbsolute(full), real) << full;
    free(real);
    ++compared;
  }
  EXPECT_GT(compared, 1000);  // most random paths stay inside the tree
}

}  // namespace
}  // namespace amino::monitor::mounts
