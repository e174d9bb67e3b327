// An open file description of a stored file (served_file.h) against a real database: its access
// mode as the kernel reads it, its end (the last description of an unlinked file frees it, or
// waits for the transaction holding the file), and access times by relatime.
#include "monitor/service/served_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "monitor/service/scratch_mount_test.h"
#include "schema/filesystem.h"

namespace amino::monitor::service {
namespace {

class ServedFileTest : public ScratchMountTest {
 protected:
  // A description of a new file `path` as an open through the monitor makes it (counted).
  std::unique_ptr<ServedFile> Open(const std::string& path, int flags) {
    auto f = std::make_unique<ServedFile>();
    schema::Status st = mfs_.fs->Run([&](schema::Transaction& t) -> schema::Status {
      auto opened = mfs_.fs->Open(t, schema::Cred::Root(), path, flags | O_CREAT, 0644);
      if (!opened.ok()) return opened.status();
      f->id = opened->id;
      return mfs_.fs->Write(t, schema::Cred::Root(), f->id, 0, "data", 4).status();
    });
    EXPECT_TRUE(st.ok()) << st.message();
    f->mfs = &mfs_;
    f->flags = flags;
    f->type = S_IFREG;
    f->counted = true;
    return f;
  }

  schema::Result<schema::Stat> StatOf(schema::FileId id) {
    schema::Result<schema::Stat> out = schema::Status::Errno(EIO);
    (void)mfs_.fs->Run([&](schema::Transaction& t) -> schema::Status {
      out = mfs_.fs->FStat(t, id);
      return schema::Status::Ok();
    });
    return out;
  }

  // The access time of `path` set to `sec` seconds, its other times left alone.
  schema::Status SetAtime(const std::string& path, time_t sec) {
    return mfs_.fs->Run([&](schema::Transaction& t) {
      timespec times[2] = {{sec, 0}, {UTIME_OMIT, UTIME_OMIT}};
      return mfs_.fs->Utimens(t, schema::Cred::Root(), path, times, true);
    });
  }

  schema::Status Unlink(const std::string& path) {
    return mfs_.fs->Run(
        [&](schema::Transaction& t) { return mfs_.fs->Unlink(t, schema::Cred::Root(), path); });
  }
};

TEST(ServedFileModeTest, AccessModesAsTheKernelReadsThem) {
  ServedFile f;
  f.flags = O_RDONLY;
  EXPECT_TRUE(f.readable());
  EXPECT_FALSE(f.writable());
  f.flags = O_WRONLY | O_APPEND;
  EXPECT_FALSE(f.readable());
  EXPECT_TRUE(f.writable());
  f.flags = O_RDWR;
  EXPECT_TRUE(f.readable());
  EXPECT_TRUE(f.writable());
  f.flags = O_PATH | O_RDWR;  // O_PATH ignores the access mode
  EXPECT_FALSE(f.readable());
  EXPECT_FALSE(f.writable());
  f.flags = O_ACCMODE;  // mode 3: neither
  EXPECT_FALSE(f.readable());
  EXPECT_FALSE(f.writable());
  f.type = S_IFDIR;
  EXPECT_TRUE(f.is_dir());
}

TEST_F(ServedFileTest, TheLastDescriptionOfAnUnlinkedFileFreesIt) {
  std::unique_ptr<ServedFile> f = Open("/f", O_RDWR);
  const schema::FileId id = f->id;
  ASSERT_TRUE(Unlink("/f").ok());
  ASSERT_TRUE(StatOf(id).ok());  // open: it lives on without a name
  f.reset();
  EXPECT_EQ(StatOf(id).status().error(), ESTALE);
  EXPECT_TRUE(mfs_.deferred_closes.empty());
}

TEST_F(ServedFileTest, AFileWithANameOutlivesItsDescriptions) {
  std::unique_ptr<ServedFile> f = Open("/kept", O_RDWR);
  const schema::FileId id = f->id;
  f.reset();
  auto st = StatOf(id);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->attr.size, 4u);
}

TEST_F(ServedFileTest, ACloseThatMeetsAHeldLockWaitsForItsTransaction) {
  std::unique_ptr<ServedFile> f = Open("/f", O_RDWR);
  const schema::FileId id = f->id;
  ASSERT_TRUE(Unlink("/f").ok());
  // Another transaction holds the file's record (it wrote to the file).
  auto holder = mfs_.fs->Begin(nullptr, {});
  ASSERT_TRUE(holder.ok());
  ASSERT_TRUE(mfs_.fs->Write(*holder, schema::Cred::Root(), id, 0, "held", 4).ok());
  f.reset();  // never blocks the monitor
  ASSERT_EQ(mfs_.deferred_closes.size(), 1u);
  EXPECT_EQ(mfs_.deferred_closes[0], id);
  ASSERT_TRUE(holder->Commit().ok());
  EXPECT_TRUE(StatOf(id).ok());  // not freed until the deferred close runs
}

TEST_F(ServedFileTest, AnAccessTouchesTheAccessTimeByRelatimeOnce) {
  std::unique_ptr<ServedFile> f = Open("/f", O_RDONLY);
  // Written just now: atime is not after mtime, so an access updates it.
  auto before = StatOf(f->id);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(SetAtime("/f", 1).ok());
  NoteDataAccess(*f);
  auto after = StatOf(f->id);
  ASSERT_TRUE(after.ok());
  EXPECT_GT(after->attr.atime.tv_sec, 1);
  EXPECT_EQ(f->atime_current_at, mfs_.change_generation);

  // Current at this generation: the next access asks nothing of the database.
  const uint64_t calls = mfs_.calls_run;
  NoteDataAccess(*f);
  EXPECT_EQ(mfs_.calls_run, calls);

  // The access time just written is no later than the change time utimensat gave (both from
  // the same clock tick): due again until the clock moves on, as in Linux.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ++mfs_.change_generation;
  NoteDataAccess(*f);

  // Something changed since, but relatime finds nothing due: the read cache answers, with no
  // Berkeley DB transaction (once a refused try, when something was not cached, has been
  // backed off), and the access time stays.
  after = StatOf(f->id);
  ASSERT_TRUE(after.ok());
  const uint64_t deferred = mfs_.deferred_calls;
  for (int i = 0; i < 4 && mfs_.deferred_calls == deferred; ++i) {
    ++mfs_.change_generation;
    NoteDataAccess(*f);
    EXPECT_EQ(f->atime_current_at, mfs_.change_generation);
  }
  ASSERT_EQ(mfs_.deferred_calls, deferred + 1);
  auto still = StatOf(f->id);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->attr.atime.tv_sec, after->attr.atime.tv_sec);
  EXPECT_EQ(still->attr.atime.tv_nsec, after->attr.atime.tv_nsec);

  // Due again: written, in a transaction of its own after the deferred try is refused.
  ASSERT_TRUE(SetAtime("/f", 1).ok());
  ++mfs_.change_generation;
  NoteDataAccess(*f);
  auto touched = StatOf(f->id);
  ASSERT_TRUE(touched.ok());
  EXPECT_GT(touched->attr.atime.tv_sec, 1);
}

TEST_F(ServedFileTest, ONoatimeLeavesTheAccessTimeAlone) {
  std::unique_ptr<ServedFile> f = Open("/f", O_RDONLY | O_NOATIME);
  ASSERT_TRUE(SetAtime("/f", 1).ok());
  NoteDataAccess(*f);
  auto after = StatOf(f->id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->attr.atime.tv_sec, 1);
}

}  // namespace
}  // namespace amino::monitor::service
