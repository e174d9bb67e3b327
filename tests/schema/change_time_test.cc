// The times changes stamp (src/schema/change_clock.h): a change after a look at a file always
// shows, and a later change never carries an earlier time than one before it.
#include <fcntl.h>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

bool After(const timespec& a, const timespec& b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

class ChangeTimeTest : public FsTest {};

// make's question: is the source newer than what was built from it? A program that looked at
// a file's times sees any later change in them, however soon it comes (many within one tick of
// the coarse clock here).
TEST_F(ChangeTimeTest, AChangeAfterALookAlwaysShows) {
  ASSERT_TRUE(root().Mkdir("/d").ok());
  ASSERT_TRUE(root().WriteFile("/d/f", "x").ok());
  Result<OpenResult> o = root().Open("/d/f", O_RDWR);
  ASSERT_TRUE(o.ok());
  for (int i = 0; i < 200; ++i) {
    Result<Stat> file = root().GetStat("/d/f");
    Result<Stat> dir = root().GetStat("/d");
    ASSERT_TRUE(file.ok() && dir.ok());
    switch (i % 4) {
      case 0:  // a write inside the file: mtime and ctime
        ASSERT_TRUE(root().Write(o->id, 0, "y").ok());
        break;
      case 1:  // the same mode again: ctime
        ASSERT_TRUE(root().Chmod("/d/f", 0644).ok());
        break;
      case 2:  // the same owner again: ctime
        ASSERT_TRUE(root().Chown("/d/f", 0, 0).ok());
        break;
      case 3:  // a truncate to the same size: mtime and ctime
        ASSERT_TRUE(root().FTruncate(o->id, 1).ok());
        break;
    }
    Result<Stat> now = root().FStat(o->id);
    ASSERT_TRUE(now.ok());
    EXPECT_TRUE(After(now->attr.ctime, file->attr.ctime)) << "change " << i;
    if (i % 4 == 0 || i % 4 == 3) {
      EXPECT_TRUE(After(now->attr.mtime, file->attr.mtime)) << "change " << i;
    }
    // An entry made in a directory after a look at it.
    const std::string name = "/d/e" + std::to_string(i);
    ASSERT_TRUE(root().WriteFile(name, "").ok());
    Result<Stat> d = root().GetStat("/d");
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(After(d->attr.mtime, dir->attr.mtime)) << name;
    ASSERT_TRUE(root().Unlink(name).ok());
  }
  ASSERT_TRUE(root().Close(o->id).ok());
}

// A file changed after another is never older than it: a fine-grained time given to a file
// that was looked at is a floor for the coarse times of the changes after it.
TEST_F(ChangeTimeTest, TimesNeverGoBackwardsAcrossFiles) {
  ASSERT_TRUE(root().WriteFile("/seen", "").ok());
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(root().GetStat("/seen").ok());
    ASSERT_TRUE(root().Chmod("/seen", i % 2 ? 0600 : 0644).ok());  // a fine-grained ctime
    const std::string name = "/later" + std::to_string(i);
    ASSERT_TRUE(root().WriteFile(name, "").ok());  // nobody looked at it: coarse
    Result<Stat> seen = root().GetStat("/seen");
    Result<Stat> later = root().GetStat(name);
    ASSERT_TRUE(seen.ok() && later.ok());
    EXPECT_FALSE(After(seen->attr.ctime, later->attr.ctime)) << name;
    EXPECT_FALSE(After(seen->attr.ctime, later->attr.mtime)) << name;
  }
}

}  // namespace
}  // namespace amino::schema::testing
