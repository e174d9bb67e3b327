#include "monitor/service/placeholder_pool.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

namespace amino::monitor::service {
namespace {

int Flags(int fd) { return fcntl(fd, F_GETFL) & (O_ACCMODE | O_APPEND | O_NONBLOCK | O_SYNC); }

TEST(PlaceholderPoolTest, EachPlaceholderShowsItsOpenAndIsAFileOfItsOwn) {
  PlaceholderPool pool;
  std::set<ino_t> inos;
  const int shown[] = {O_RDONLY,         O_WRONLY, -1, O_WRONLY | O_APPEND, O_RDWR | O_NONBLOCK,
                       O_RDONLY | O_SYNC};
  const int expect[] = {
      O_RDONLY, O_WRONLY, O_RDWR, O_WRONLY | O_APPEND, O_RDWR | O_NONBLOCK, O_RDONLY | O_SYNC};
  for (int round = 0; round < 40; ++round) {
    for (size_t i = 0; i < std::size(shown); ++i) {
      PlaceholderPool::Placeholder p = pool.Take(shown[i]);
      ASSERT_GE(p.fd, 0);
      EXPECT_EQ(Flags(p.fd), expect[i]) << "shown 0" << std::oct << shown[i];
      EXPECT_TRUE(fcntl(p.fd, F_GETFD) & FD_CLOEXEC);
      EXPECT_TRUE(inos.insert(p.ino).second) << "inode " << p.ino << " handed out twice";
      close(p.fd);
    }
  }
  EXPECT_EQ(pool.taken_ready() + pool.made_on_the_spot(), 40 * std::size(shown));
}

TEST(PlaceholderPoolTest, WithTwoCpusTheThreadMakesThemAheadWithOneNoThreadRuns) {
  PlaceholderPool pool;
  close(pool.Take(O_RDONLY).fd);  // starts the thread, if any
  if (PlaceholderPool::Worthwhile()) {
    // Liveness, not speed: within seconds the (idle-priority) thread has some ready.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (pool.taken_ready() == 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      close(pool.Take(O_RDONLY).fd);
    }
    EXPECT_GT(pool.taken_ready(), 0u);
  } else {
    for (int i = 0; i < 50; ++i) close(pool.Take(O_WRONLY).fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (int i = 0; i < 50; ++i) close(pool.Take(O_WRONLY).fd);
    EXPECT_EQ(pool.taken_ready(), 0u);
    EXPECT_EQ(pool.made_on_the_spot(), 101u);
  }
}

}  // namespace
}  // namespace amino::monitor::service
