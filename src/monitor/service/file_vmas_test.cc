// The file mappings of a process found in a range: by the kernel's PROCMAP_QUERY and by the
// text of /proc/PID/maps, against mappings this test makes of its own files.
#include "monitor/service/file_vmas.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace amino::monitor::service {
namespace {

constexpr size_t kPage = 4096;

class FileVmasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/dev/shm/file_vmas_test.XXXXXX";
    fd_ = mkstemp(name);
    ASSERT_GE(fd_, 0);
    unlink(name);
    ASSERT_EQ(ftruncate(fd_, 16 * kPage), 0);
    struct stat st;
    ASSERT_EQ(fstat(fd_, &st), 0);
    dev_ = st.st_dev, ino_ = st.st_ino;
    // One reservation, then within it: pages 0-3 of the file shared, one anonymous page, and
    // pages 8-11 of the file shared again (two mappings at other offsets).
    void* r = mmap(nullptr, 12 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(r, MAP_FAILED);
    base_ = reinterpret_cast<uintptr_t>(r);
    ASSERT_NE(Map(0, 4, 0), MAP_FAILED);
    ASSERT_NE(
        mmap(At(4), kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
        MAP_FAILED);
    ASSERT_NE(Map(5, 4, 8), MAP_FAILED);
  }
  void TearDown() override {
    if (base_) munmap(At(0), 12 * kPage);
    if (fd_ >= 0) close(fd_);
  }

  void* At(size_t page) const { return reinterpret_cast<void*>(base_ + page * kPage); }
  void* Map(size_t page, size_t pages, size_t file_page) {
    return mmap(At(page), pages * kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_,
                static_cast<off_t>(file_page * kPage));
  }
  // The test file's mappings among `vmas`.
  std::vector<FileVma> Mine(const std::vector<FileVma>& vmas) const {
    std::vector<FileVma> out;
    for (const FileVma& v : vmas) {
      if (v.dev == dev_ && v.ino == ino_) out.push_back(v);
    }
    return out;
  }

  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  uintptr_t base_ = 0;
};

TEST_F(FileVmasTest, FindsEachFileMappingInTheRangeWithItsOffset) {
  for (bool text : {false, true}) {
    SCOPED_TRACE(text ? "from /proc/PID/maps" : "by PROCMAP_QUERY");
    auto all = text ? FileVmasFromText(getpid(), base_, 12 * kPage)
                    : FileVmasIn(getpid(), base_, 12 * kPage);
    ASSERT_TRUE(all.has_value());
    const std::vector<FileVma> mine = Mine(*all);
    ASSERT_EQ(mine.size(), 2u);
    EXPECT_EQ(mine[0].start, base_);
    EXPECT_EQ(mine[0].end, base_ + 4 * kPage);
    EXPECT_EQ(mine[0].offset, 0u);
    EXPECT_EQ(mine[1].start, base_ + 5 * kPage);
    EXPECT_EQ(mine[1].end, base_ + 9 * kPage);
    EXPECT_EQ(mine[1].offset, 8 * kPage);
    // Nothing else is in the range: the anonymous page and the reservation are no files.
    EXPECT_EQ(all->size(), 2u);
  }
}

TEST_F(FileVmasTest, ARangeFindsOnlyTheMappingsItOverlaps) {
  for (bool text : {false, true}) {
    SCOPED_TRACE(text ? "from /proc/PID/maps" : "by PROCMAP_QUERY");
    auto find = [&](size_t page, size_t pages) {
      return text ? FileVmasFromText(getpid(), base_ + page * kPage, pages * kPage)
                  : FileVmasIn(getpid(), base_ + page * kPage, pages * kPage);
    };
    auto second = find(6, 1);  // inside the second mapping
    ASSERT_TRUE(second.has_value());
    ASSERT_EQ(second->size(), 1u);
    EXPECT_EQ((*second)[0].start, base_ + 5 * kPage);
    EXPECT_EQ((*second)[0].offset, 8 * kPage);
    auto anonymous = find(4, 1);  // the anonymous page alone
    ASSERT_TRUE(anonymous.has_value());
    EXPECT_TRUE(anonymous->empty());
    auto tail = find(3, 3);  // the first's last page to the second's first
    ASSERT_TRUE(tail.has_value());
    EXPECT_EQ(Mine(*tail).size(), 2u);
    auto none = find(9, 3);  // the reservation after both
    ASSERT_TRUE(none.has_value());
    EXPECT_TRUE(none->empty());
  }
}

TEST(FileVmasProcess, AProcessThatIsGoneHasNoMappingsToRead) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_FALSE(FileVmasIn(child, 0, UINT64_MAX).has_value());
  EXPECT_FALSE(FileVmasFromText(child, 0, UINT64_MAX).has_value());
}

}  // namespace
}  // namespace amino::monitor::service
