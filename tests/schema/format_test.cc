// Layouts (records.h, Superblock::format): a file system made in format 1 (file records beside
// the pages in data.db) keeps working and stays format 1; a new one keeps its file records in
// inode.db. The same life of files runs on both and fsck finds each consistent.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "client.h"
#include "schema/fsck.h"
#include "schema/records.h"
#include "schema/store.h"
#include "temp_dir.h"

namespace amino::schema::testing {
namespace {

class FormatTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    db_ = std::make_unique<TempDir>("amino-format-db-");
    MkfsOptions o;
    o.format = GetParam();
    Status st = FileSystem::Mkfs(dir(), o);
    ASSERT_TRUE(st.ok()) << st.message();
    Reopen();
  }
  void TearDown() override {
    if (!fs_) return;
    Result<std::vector<Violation>> v = Fsck(fs_->store());
    ASSERT_TRUE(v.ok()) << v.status().message();
    for (const Violation& x : *v) ADD_FAILURE() << "fsck: " << x.invariant << ": " << x.detail;
  }
  std::string dir() const { return db_->path() + "/fs"; }
  void Reopen() {
    fs_.reset();
    auto fs = FileSystem::Open(dir());
    ASSERT_TRUE(fs.ok()) << fs.status().message();
    fs_ = std::move(fs).value();
  }
  Client root() { return Client(fs_.get()); }

  std::unique_ptr<TempDir> db_;
  std::unique_ptr<FileSystem> fs_;
};

TEST_P(FormatTest, TheLayoutIsKeptAcrossOpens) {
  const bool inode_file = access((dir() + "/inode.db").c_str(), F_OK) == 0;
  EXPECT_EQ(inode_file, GetParam() >= 2);
  EXPECT_EQ(fs_->store().format(), GetParam());
  ASSERT_TRUE(root().WriteFile("/f", "data").ok());
  Reopen();
  EXPECT_EQ(fs_->store().format(), GetParam());
  EXPECT_EQ(*root().ReadFile("/f"), "data");
}

TEST_P(FormatTest, FilesLiveAndDieAsOnAnyLayout) {
  Client c = root();
  ASSERT_TRUE(c.Mkdir("/d").ok());
  ASSERT_TRUE(c.WriteFile("/d/a", std::string(10000, 'a')).ok());
  // A second name moves the stat record into the file record, the removal of one moves it back.
  ASSERT_TRUE(c.Link("/d/a", "/d/b").ok());
  ASSERT_TRUE(c.Chmod("/d/b", 0600).ok());
  EXPECT_EQ(c.GetStat("/d/a")->attr.nlink, 2u);
  ASSERT_TRUE(c.Unlink("/d/a").ok());
  Result<Stat> b = c.GetStat("/d/b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->attr.nlink, 1u);
  EXPECT_EQ(b->attr.mode & 07777, 0600u);
  // Open when its last name goes: an orphan until the close frees it.
  Result<OpenResult> o = c.Open("/d/b", O_RDWR);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(c.Unlink("/d/b").ok());
  EXPECT_EQ(*c.Read(o->id, 9990, 100), std::string(10, 'a'));
  ASSERT_TRUE(c.Close(o->id).ok());
  // A nameless file given a name.
  Result<OpenResult> t = c.Open("/d", O_TMPFILE | O_RDWR, 0644);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(c.Write(t->id, 0, "tmp").ok());
  ASSERT_TRUE(c.LinkFile(t->id, "/d/t", true).ok());
  ASSERT_TRUE(c.Close(t->id).ok());
  ASSERT_TRUE(c.Rename("/d/t", "/t").ok());
  Reopen();
  EXPECT_EQ(*root().ReadFile("/t"), "tmp");
  Result<std::vector<DirEntry>> left = root().List("/d");
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

INSTANTIATE_TEST_SUITE_P(Layouts, FormatTest, ::testing::Values(1u, 2u),
                         [](const ::testing::TestParamInfo<uint32_t>& i) {
                           return "Format" + std::to_string(i.param);
                         });

TEST(FormatRefusalTest, AnUnknownLayoutIsNotMade) {
  TempDir db("amino-format-db-");
  MkfsOptions o;
  o.format = kFormat + 1;
  EXPECT_EQ(FileSystem::Mkfs(db.path() + "/fs", o).error(), EINVAL);
}

TEST(FormatRefusalTest, ALayoutFromANewerAminoIsRefusedByName) {
  TempDir db("amino-format-db-");
  const std::string dir = db.path() + "/fs";
  ASSERT_TRUE(FileSystem::Mkfs(dir).ok());
  {
    auto fs = FileSystem::Open(dir);
    ASSERT_TRUE(fs.ok());
    Superblock sb;
    sb.format = kFormat + 1;
    Store& s = (*fs)->store();
    ASSERT_TRUE((*fs)
                    ->Run([&](Transaction& t) {
                      return s.Put(s.data(), t.raw(), IdKey(kSuperblockId), EncodeSuperblock(sb));
                    })
                    .ok());
  }
  auto again = FileSystem::Open(dir);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().error(), EPROTONOSUPPORT);
  EXPECT_NE(
      again.status().message().find("made by a newer Amino (layout " + std::to_string(kFormat + 1)),
      std::string::npos)
      << again.status().message();
}

}  // namespace
}  // namespace amino::schema::testing
