// Files without a name (open with O_TMPFILE) and LinkFile, which names an open file: the
// orphan lives in the Orphan db until linkat gives it a name or its last close frees it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_test.h"
#include "schema/store.h"

namespace amino::schema::testing {
namespace {

class TmpFileTest : public FsTest {
 protected:
  bool Stored(FileId id) {
    auto raw = fs_->store().Get(fs_->store().inode(), nullptr, IdKey(id));
    EXPECT_TRUE(raw.ok());
    return raw.ok() && raw->has_value();
  }
  bool InOrphanDb(FileId id) {
    auto raw = fs_->store().Get(fs_->store().orphan(), nullptr, IdKey(id));
    EXPECT_TRUE(raw.ok());
    return raw.ok() && raw->has_value();
  }
};

TEST_F(TmpFileTest, UnnamedUntilLinkedThenAnOrdinaryFile) {
  BothDir("/d");
  Result<OpenResult> o = root().Open("/d", O_TMPFILE | O_RDWR, 0640);
  ASSERT_TRUE(o.ok()) << o.status().message();
  const FileId id = o->id;
  EXPECT_TRUE(InOrphanDb(id));
  Result<Stat> st = root().FStat(id);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->attr.nlink, 0u);
  EXPECT_EQ(st->attr.mode, S_IFREG | 0640);
  EXPECT_TRUE(root().Names(id)->empty());
  EXPECT_TRUE(root().ListNames("/d")->empty());
  ASSERT_EQ(*root().Write(id, 0, "anonymous at first\n"), 19u);

  ASSERT_TRUE(root().LinkFile(id, "/d/named", true).ok());
  EXPECT_FALSE(InOrphanDb(id));
  EXPECT_EQ(*root().Names(id), std::vector<std::string>{"/d/named"});
  EXPECT_EQ(root().FStat(id)->attr.nlink, 1u);
  EXPECT_EQ(*root().ReadFile("/d/named"), "anonymous at first\n");
  // Named once, it links as any file: a second name needs no O_TMPFILE.
  ASSERT_TRUE(root().LinkFile(id, "/d/again", false).ok());
  EXPECT_EQ(root().GetStat("/d/named")->attr.nlink, 2u);
  ASSERT_TRUE(root().Close(id).ok());
  EXPECT_EQ(*root().ReadFile("/d/again"), "anonymous at first\n");
}

TEST_F(TmpFileTest, OpenErrorsAreTheKernels) {
  BothDir("/d");
  BothFile("/f", "x");
  auto host = [&](const std::string& p, int flags) {
    int fd = open(H(p).c_str(), flags, 0600);
    if (fd >= 0) close(fd);
    return fd;
  };
  EXPECT_LINUX(root().Open("/d", O_TMPFILE | O_RDONLY, 0600), host("/d", O_TMPFILE | O_RDONLY));
  EXPECT_LINUX(root().Open("/f", O_TMPFILE | O_RDWR, 0600), host("/f", O_TMPFILE | O_RDWR));
  EXPECT_LINUX(root().Open("/missing", O_TMPFILE | O_RDWR, 0600),
               host("/missing", O_TMPFILE | O_RDWR));
  // No write permission on the directory.
  ASSERT_TRUE(root().Chmod("/d", 0555).ok());
  EXPECT_ERRNO(user(1000, 1000).Open("/d", O_TMPFILE | O_WRONLY, 0600), EACCES);
  EXPECT_TRUE(root().ListNames("/d")->empty());
}

TEST_F(TmpFileTest, ExclusiveOrRemovedFilesGetNoNameAndAreFreedAtClose) {
  BothDir("/d");
  Result<OpenResult> o = root().Open("/d", O_TMPFILE | O_EXCL | O_WRONLY, 0600);
  ASSERT_TRUE(o.ok());
  EXPECT_ERRNO(root().LinkFile(o->id, "/d/x", false), ENOENT);
  EXPECT_TRUE(root().ListNames("/d")->empty());
  ASSERT_TRUE(root().Close(o->id).ok());
  EXPECT_FALSE(Stored(o->id));

  // A file whose last name was removed while open is not given one back (as Linux).
  ASSERT_TRUE(root().WriteFile("/d/u", "gone").ok());
  Result<OpenResult> u = root().Open("/d/u", O_RDWR);
  ASSERT_TRUE(u.ok());
  ASSERT_TRUE(root().Unlink("/d/u").ok());
  EXPECT_ERRNO(root().LinkFile(u->id, "/d/back", false), ENOENT);
  ASSERT_TRUE(root().Close(u->id).ok());
  EXPECT_FALSE(Stored(u->id));
}

TEST_F(TmpFileTest, LinkErrorsComeFromTheNewName) {
  BothDir("/d");
  BothFile("/d/taken", "t");
  Result<OpenResult> o = root().Open("/d", O_TMPFILE | O_RDWR, 0600);
  ASSERT_TRUE(o.ok());
  EXPECT_ERRNO(root().LinkFile(o->id, "/d/taken", true), EEXIST);
  EXPECT_ERRNO(root().LinkFile(o->id, "/nodir/x", true), ENOENT);
  ASSERT_TRUE(root().Chmod("/d", 0555).ok());
  ASSERT_TRUE(root().FChown(o->id, 1000, 1000).ok());
  EXPECT_ERRNO(user(1000, 1000).LinkFile(o->id, "/d/x", true), EACCES);
  ASSERT_TRUE(root().Close(o->id).ok());
  EXPECT_FALSE(Stored(o->id));
}

TEST_F(TmpFileTest, SetGroupIdDirectoryGivesItsGroup) {
  ASSERT_TRUE(root().Mkdir("/g", 02777).ok());
  ASSERT_TRUE(root().Chown("/g", 0, 4242).ok());
  ASSERT_TRUE(root().Chmod("/g", 02777).ok());
  Result<OpenResult> o = user(1000, 1000).Open("/g", O_TMPFILE | O_RDWR, 0644);
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(root().FStat(o->id)->attr.gid, 4242u);
  EXPECT_EQ(root().FStat(o->id)->attr.uid, 1000u);
  ASSERT_TRUE(root().Close(o->id).ok());
}

TEST_F(TmpFileTest, AnUnnamedFileOpenAtACrashIsFreedOnReopen) {
  BothDir("/d");
  Result<OpenResult> o = root().Open("/d", O_TMPFILE | O_RDWR, 0600);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(root().Write(o->id, 0, std::string(100000, 'x')).ok());
  Reopen();  // the process that held it is gone
  EXPECT_FALSE(Stored(o->id));
  EXPECT_FALSE(InOrphanDb(o->id));
  EXPECT_TRUE(root().ListNames("/d")->empty());
}

}  // namespace
}  // namespace amino::schema::testing
