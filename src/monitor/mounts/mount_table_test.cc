// The mount table: component-prefix matching, both spellings of a mount point, remainders.
#include "monitor/mounts/mount_table.h"

#include <gtest/gtest.h>

namespace amino::monitor::mounts {
namespace {

Mount M(std::string point, std::string db, std::string host_point = "") {
  Mount m;
  m.point = std::move(point);
  m.host_point = host_point.empty() ? m.point : std::move(host_point);
  m.db_dir = std::move(db);
  m.origin = "test";
  return m;
}

MountTable Table() {
  std::vector<Mount> v;
  v.push_back(M("/home/a/amino", "/db/a"));
  v.push_back(M("/srv/x", "/db/x", "/real/srv/x"));
  return MountTable(std::move(v));
}

TEST(MountTableTest, FindMatchesWholeComponentsOnly) {
  MountTable t = Table();
  const Mount* a = &t.mounts()[0];
  std::optional<MountMatch> m = t.Find("/home/a/amino");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mount, a);
  EXPECT_EQ(m->rel, "/");
  m = t.Find("/home/a/amino/b/c");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mount, a);
  EXPECT_EQ(m->rel, "/b/c");
  EXPECT_FALSE(t.Find("/home/a/amino2"));
  EXPECT_FALSE(t.Find("/home/a/amino2/x"));
  EXPECT_FALSE(t.Find("/home/a/amin"));
  EXPECT_FALSE(t.Find("/home/a"));
  EXPECT_FALSE(t.Find("/"));
}

TEST(MountTableTest, BothSpellingsOfAMountPointMatch) {
  MountTable t = Table();
  const Mount* x = &t.mounts()[1];
  std::optional<MountMatch> m = t.Find("/real/srv/x/y");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mount, x);
  EXPECT_EQ(m->rel, "/y");
  m = t.Find("/srv/x/y");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mount, x);
  EXPECT_EQ(t.AtPoint("/srv/x"), x);
  EXPECT_EQ(t.AtPoint("/real/srv/x"), x);
  EXPECT_EQ(t.AtPoint("/real/srv/x/y"), nullptr);
  EXPECT_EQ(t.AtPoint("/real/srv"), nullptr);
  EXPECT_EQ(t.AtPoint("/home/a/amino"), &t.mounts()[0]);
  EXPECT_EQ(t.AtPoint("/home/a/amine"), nullptr);  // same length, other bytes
  EXPECT_EQ(x->HostPathOf("/"), "/real/srv/x");
  EXPECT_EQ(x->HostPathOf("/d/e"), "/real/srv/x/d/e");
}

TEST(MountTableTest, MovingTheTableKeepsMountAddresses) {
  MountTable t = Table();
  const Mount* a = &t.mounts()[0];
  MountTable moved = std::move(t);
  EXPECT_EQ(&moved.mounts()[0], a);
  std::optional<MountMatch> m = moved.Find("/home/a/amino/f");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mount, a);
  EXPECT_EQ(moved.AtPoint("/srv/x"), &moved.mounts()[1]);
}

TEST(MountTableTest, EmptyTableFindsNothing) {
  MountTable t;
  EXPECT_TRUE(t.empty());
  EXPECT_FALSE(t.Find("/"));
  EXPECT_FALSE(t.Find("/a"));
  EXPECT_EQ(t.AtPoint("/a"), nullptr);
}

TEST(MountTableTest, DurabilityNames) {
  EXPECT_STREQ(DurabilityName(Durability::kAsync), "async");
  EXPECT_STREQ(DurabilityName(Durability::kSync), "sync");
}

}  // namespace
}  // namespace amino::monitor::mounts
