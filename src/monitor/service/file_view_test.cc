// The monitor's view of a mapping file: reads see the file's current bytes, a view grows with
// the file, and a file cut short under a read ends the read, not the process.
#include "monitor/service/file_view.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace amino::monitor::service {
namespace {

constexpr size_t kPage = 4096;

int TempFile() {
  char name[] = "/dev/shm/file_view_test.XXXXXX";
  const int fd = mkstemp(name);
  if (fd >= 0) unlink(name);
  return fd;
}

std::string ReadView(const FileView& v, uint64_t at, size_t n, bool* ok) {
  std::string out(n, '\0');
  *ok = v.Read(at, [&out, n](const char* bytes) { std::memcpy(out.data(), bytes, n); });
  return out;
}

TEST(FileViewTest, ReadsTheFilesBytesAsTheyAreNow) {
  const int fd = TempFile();
  ASSERT_GE(fd, 0);
  const std::string first(3 * kPage, 'a');
  ASSERT_EQ(pwrite(fd, first.data(), first.size(), 0), static_cast<ssize_t>(first.size()));
  FileView v;
  ASSERT_TRUE(v.Cover(fd, first.size()));
  bool ok = false;
  EXPECT_EQ(ReadView(v, kPage, 10, &ok), std::string(10, 'a'));
  EXPECT_TRUE(ok);
  // A write after the view was made is seen through it: one page cache.
  ASSERT_EQ(pwrite(fd, "xyz", 3, kPage + 2), 3);
  EXPECT_EQ(ReadView(v, kPage, 6, &ok), "aaxyza");
  EXPECT_TRUE(ok);
  close(fd);
}

TEST(FileViewTest, AViewGrowsWithTheFile) {
  const int fd = TempFile();
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, kPage), 0);
  FileView v;
  ASSERT_TRUE(v.Cover(fd, kPage));
  const uint64_t far = 5ull << 20;  // past the first view's whole MiB
  ASSERT_EQ(pwrite(fd, "end", 3, far), 3);
  ASSERT_TRUE(v.Cover(fd, far + 3));
  bool ok = false;
  EXPECT_EQ(ReadView(v, far, 3, &ok), "end");
  EXPECT_TRUE(ok);
  close(fd);
}

TEST(FileViewTest, AFileCutShortUnderAReadEndsTheRead) {
  const int fd = TempFile();
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8 * kPage), 0);
  FileView v;
  ASSERT_TRUE(v.Cover(fd, 8 * kPage));
  ASSERT_EQ(ftruncate(fd, 2 * kPage), 0);  // as a process holding a descriptor of it might
  bool ok = true;
  size_t reached = 0;
  ok = v.Read(0, [&reached](const char* bytes) {
    for (size_t page = 0; page < 8; ++page) {
      volatile char c = bytes[page * kPage];
      (void)c;
      reached = page + 1;
    }
  });
  EXPECT_FALSE(ok);
  EXPECT_EQ(reached, 2u);  // the two pages left were read, the third faulted
  // And again: the guard holds for every read, not only the first.
  EXPECT_FALSE(v.Read(4 * kPage, [](const char* bytes) {
    volatile char c = *bytes;
    (void)c;
  }));
  EXPECT_TRUE(v.Read(kPage, [](const char* bytes) {
    volatile char c = *bytes;
    (void)c;
  }));
  close(fd);
}

TEST(FileViewTest, AFaultOutsideAGuardedReadStillEndsTheProcess) {
  // The guard only catches its own reads: any other SIGBUS does what it did before.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = TempFile();
    FileView v;
    if (fd < 0 || ftruncate(fd, 2 * kPage) != 0 || !v.Cover(fd, 2 * kPage)) _exit(2);
    (void)v.Read(0, [](const char* bytes) {
      volatile char c = *bytes;
      (void)c;
    });  // installs it
    char* p = static_cast<char*>(mmap(nullptr, 2 * kPage, PROT_READ, MAP_SHARED, fd, 0));
    if (p == MAP_FAILED || ftruncate(fd, 0) != 0) _exit(2);
    volatile char c = p[kPage];
    (void)c;
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  // The default action; in the sanitizer build, AddressSanitizer's handler, which was there
  // first, reports the fault and aborts.
  EXPECT_TRUE(WTERMSIG(status) == SIGBUS || WTERMSIG(status) == SIGABRT) << WTERMSIG(status);
}

}  // namespace
}  // namespace amino::monitor::service
