// Hard links: a file's metadata moves from its Path record (PLMD) to its Data record (DLMD) when
// it gains a second name and back when it is down to one. Observable through stat, nlink,
// Names(), and fsck's HARDLINKUSESDLMD; the metadata must survive both moves.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "fs_test.h"
#include "schema/store.h"

namespace amino::schema::testing {
namespace {

class HardLinkTest : public FsTest {
 protected:
  std::vector<std::string> NamesOf(FileId id) {
    Result<std::vector<std::string>> n = root().Names(id);
    EXPECT_TRUE(n.ok()) << n.status().message();
    std::vector<std::string> v = n.ok() ? *n : std::vector<std::string>{};
    std::sort(v.begin(), v.end());
    return v;
  }
  // Where the metadata of `path` is stored: in its Path record (true) or not.
  bool HasPlmd(const std::string& path) {
    Result<std::optional<std::string>> raw =
        fs_->store().Get(fs_->store().path(), nullptr, PathKey(path));
    EXPECT_TRUE(raw.ok() && raw->has_value()) << path;
    PathValue v;
    EXPECT_TRUE(raw.ok() && raw->has_value() && DecodePathValue(**raw, &v)) << path;
    return v.plmd.has_value();
  }
  bool HasDlmd(FileId id) {
    Result<std::optional<std::string>> raw =
        fs_->store().Get(fs_->store().inode(), nullptr, IdKey(id));
    EXPECT_TRUE(raw.ok() && raw->has_value()) << id;
    InodeValue v;
    EXPECT_TRUE(raw.ok() && raw->has_value() && DecodeInodeValue(**raw, &v)) << id;
    return v.dlmd.has_value();
  }
};

TEST_F(HardLinkTest, PromotionAndDemotionKeepMetadata) {
  ASSERT_TRUE(root().WriteFile("/f", "content", 0640).ok());
  ASSERT_TRUE(root().Chown("/f", 1000, 1001).ok());
  ASSERT_TRUE(root().SetXattr("/f", "user.k", "v").ok());
  timespec t[2] = {{111, 1}, {222, 2}};
  ASSERT_TRUE(root().Utimens("/f", t).ok());
  FileId id = root().GetStat("/f")->ino;
  EXPECT_TRUE(HasPlmd("/f"));
  EXPECT_FALSE(HasDlmd(id));
  EXPECT_EQ(NamesOf(id), std::vector<std::string>{"/f"});

  ASSERT_TRUE(root().Mkdir("/other").ok());
  ASSERT_TRUE(root().Link("/f", "/other/g").ok());  // promoted
  EXPECT_FALSE(HasPlmd("/f"));
  EXPECT_FALSE(HasPlmd("/other/g"));
  EXPECT_TRUE(HasDlmd(id));
  EXPECT_EQ(NamesOf(id), (std::vector<std::string>{"/f", "/other/g"}));
  for (const char* p : {"/f", "/other/g"}) {
    Result<Stat> st = root().GetStat(p);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->ino, id);
    EXPECT_EQ(st->attr.nlink, 2u);
    EXPECT_EQ(Perm(*st), 0640u);
    EXPECT_EQ(st->attr.uid, 1000u);
    EXPECT_EQ(st->attr.gid, 1001u);
    EXPECT_EQ(st->attr.size, 7u);
    EXPECT_EQ(st->attr.mtime.tv_sec, 222);
  }
  // A change through one name shows through the other.
  ASSERT_TRUE(root().Chmod("/other/g", 0600).ok());
  EXPECT_EQ(Perm(*root().GetStat("/f")), 0600u);
  ASSERT_TRUE(root().Link("/f", "/h").ok());
  EXPECT_EQ(root().GetStat("/h")->attr.nlink, 3u);
  ExpectConsistent();

  ASSERT_TRUE(root().Unlink("/f").ok());
  EXPECT_TRUE(HasDlmd(id));  // two names left
  EXPECT_EQ(root().GetStat("/h")->attr.nlink, 2u);
  ASSERT_TRUE(root().Unlink("/h").ok());  // demoted
  EXPECT_TRUE(HasPlmd("/other/g"));
  EXPECT_FALSE(HasDlmd(id));
  Result<Stat> st = root().GetStat("/other/g");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->attr.nlink, 1u);
  EXPECT_EQ(Perm(*st), 0600u);
  EXPECT_EQ(st->attr.uid, 1000u);
  EXPECT_EQ(st->attr.mtime.tv_sec, 222);
  EXPECT_EQ(*root().ReadFile("/other/g"), "content");
  EXPECT_EQ(*root().GetXattr("/other/g", "user.k"), "v");
  EXPECT_EQ(NamesOf(id), std::vector<std::string>{"/other/g"});
}

TEST_F(HardLinkTest, RenameOfALinkedNameKeepsNamesCurrent) {
  ASSERT_TRUE(root().WriteFile("/f", "x").ok());
  ASSERT_TRUE(root().Mkdir("/d").ok());
  ASSERT_TRUE(root().Link("/f", "/d/g").ok());
  FileId id = root().GetStat("/f")->ino;
  ASSERT_TRUE(root().Rename("/d/g", "/g2").ok());
  EXPECT_EQ(NamesOf(id), (std::vector<std::string>{"/f", "/g2"}));
  // Renaming the directory that holds a name renames that name too.
  ASSERT_TRUE(root().Link("/f", "/d/in").ok());
  ASSERT_TRUE(root().Rename("/d", "/e").ok());
  EXPECT_EQ(NamesOf(id), (std::vector<std::string>{"/e/in", "/f", "/g2"}));
  // Replacing a name by rename drops it from Names.
  ASSERT_TRUE(root().WriteFile("/other", "o").ok());
  ASSERT_TRUE(root().Rename("/other", "/g2").ok());
  EXPECT_EQ(NamesOf(id), (std::vector<std::string>{"/e/in", "/f"}));
  EXPECT_EQ(root().GetStat("/f")->attr.nlink, 2u);
}

TEST_F(HardLinkTest, RenameOntoAHardLinkOfItselfDoesNothing) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/a", "same"));
  ASSERT_EQ(link(H("/a").c_str(), H("/b").c_str()), 0);
  ASSERT_TRUE(root().Link("/a", "/b").ok());
  // POSIX: if old and new are links to the same file, rename does nothing and succeeds.
  EXPECT_LINUX(root().Rename("/a", "/b"), rename(H("/a").c_str(), H("/b").c_str()));
  struct stat st;
  EXPECT_EQ(lstat(H("/a").c_str(), &st), 0);
  EXPECT_TRUE(root().GetStat("/a").ok());
  EXPECT_TRUE(root().GetStat("/b").ok());
  EXPECT_EQ(root().GetStat("/a")->attr.nlink, 2u);
  EXPECT_LINUX(root().Rename("/a", "/b", RENAME_NOREPLACE),
               syscall(SYS_renameat2, AT_FDCWD, H("/a").c_str(), AT_FDCWD, H("/b").c_str(),
                       RENAME_NOREPLACE));
  EXPECT_LINUX(root().Rename("/a", "/b", RENAME_EXCHANGE),
               syscall(SYS_renameat2, AT_FDCWD, H("/a").c_str(), AT_FDCWD, H("/b").c_str(),
                       RENAME_EXCHANGE));
  EXPECT_EQ(root().GetStat("/b")->attr.nlink, 2u);
}

TEST_F(HardLinkTest, UnlinkOfALinkedOpenFileAndOrphaning) {
  ASSERT_TRUE(root().WriteFile("/f", "data").ok());
  ASSERT_TRUE(root().Link("/f", "/g").ok());
  Result<OpenResult> o = root().Open("/f", O_RDONLY);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(root().Unlink("/f").ok());
  ASSERT_TRUE(root().Unlink("/g").ok());
  EXPECT_EQ(root().FStat(o->id)->attr.nlink, 0u);
  EXPECT_EQ(*root().Read(o->id, 0, 10), "data");
  ExpectConsistent();
  ASSERT_TRUE(root().Close(o->id).ok());
}

TEST_F(HardLinkTest, LinkLimitIsEMLINK) {
  ASSERT_TRUE(root().WriteFile("/f", "").ok());
  ASSERT_TRUE(root().Mkdir("/d").ok());
  // Many names in one transaction keep the test quick.
  Status st = root().Txn([&](Transaction& t) -> Status {
    for (uint32_t i = 1; i < kMaxLinks; ++i) {
      AMINO_RETURN_IF_ERROR(fs_->Link(t, Cred::Root(), "/f", "/d/" + std::to_string(i)));
    }
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(root().GetStat("/f")->attr.nlink, kMaxLinks);
  EXPECT_ERRNO(root().Link("/f", "/one-more"), EMLINK);
}

}  // namespace
}  // namespace amino::schema::testing
