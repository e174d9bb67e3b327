// The working directory's bookkeeping, and the rules of a removed directory and of getcwd
// checked against the kernel's own cwd in a scratch directory (differential).
#include "monitor/working_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include "monitor/process_table.h"

namespace amino::monitor {
namespace {

// A scratch directory; the test's cwd is put back when it ends.
class ScratchCwd : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/amino-cwd-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    home_ = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(home_, 0);
  }
  void TearDown() override {
    ASSERT_EQ(fchdir(home_), 0);
    close(home_);
    ASSERT_EQ(system(("rm -rf " + root_).c_str()), 0);
  }
  std::string root_;
  int home_ = -1;
};

// What fstatat(base, path) reached: the inode, or -errno.
long long Reached(int base, const std::string& path) {
  struct stat st;
  if (fstatat(base, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return -errno;
  return static_cast<long long>(st.st_ino);
}

TEST_F(ScratchCwd, AWalkFromARemovedDirectoryReachesWhatTheKernelReaches) {
  // root/a/b removed while it is the cwd and open as a descriptor; its last path is "/a/b".
  for (const char* d : {"/a", "/a/b", "/a/b/c", "/a/s"})
    ASSERT_EQ(mkdir((root_ + d).c_str(), 0755), 0);
  ASSERT_EQ(close(open((root_ + "/a/y").c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  ASSERT_EQ(chdir((root_ + "/a/b").c_str()), 0);
  const int dirfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dirfd, 0);
  const long long itself = Reached(dirfd, ".");
  ASSERT_EQ(rmdir("c"), 0);
  ASSERT_EQ(rmdir((root_ + "/a/b").c_str()), 0);

  const std::vector<std::string> paths = {
      ".",      "./",      "./.",  ".//.", "",     "..",     "../",    "./..",     "..//y",
      "../y",   "../b",    "x",    "c",    "...",  ".../..", ".././a", "../..",    "../../a",
      "./../s", "../s/..", "x/..", ".a",   "./x/", "..y",    "../.",   "../s/../y"};
  for (const std::string& path : paths) {
    const WalkFromRemoved walk = WalkFromRemovedDir("/a/b", path);
    long long expected = -ENOENT;
    if (walk.kind == WalkFromRemoved::Kind::kItself) expected = itself;
    if (walk.kind == WalkFromRemoved::Kind::kFromUp) {
      const int up = open((root_ + walk.dir).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      ASSERT_GE(up, 0) << walk.dir;
      expected = Reached(up, walk.rest);
      close(up);
    }
    EXPECT_EQ(Reached(AT_FDCWD, path), expected) << "from the removed cwd: \"" << path << "\"";
    EXPECT_EQ(Reached(dirfd, path), expected) << "from the removed descriptor: \"" << path << "\"";
  }
  close(dirfd);
}

TEST(WalkFromRemovedTest, WithoutALastPathNothingAboveIsKnown) {
  EXPECT_EQ(WalkFromRemovedDir("", "..").kind, WalkFromRemoved::Kind::kNowhere);
  EXPECT_EQ(WalkFromRemovedDir("", ".").kind, WalkFromRemoved::Kind::kItself);
  const WalkFromRemoved top = WalkFromRemovedDir("/d", "../e");
  EXPECT_EQ(top.kind, WalkFromRemoved::Kind::kFromUp);
  EXPECT_EQ(top.dir, "/");
  EXPECT_EQ(top.rest, "e");
}

// getcwd(2) itself: the length with its NUL, or -errno.
long KernelGetcwd(size_t size) {
  std::vector<char> buf(size + 1);
  const long r = syscall(SYS_getcwd, size ? buf.data() : nullptr, size);
  return r < 0 ? -errno : r;
}

TEST_F(ScratchCwd, GetcwdAnswersAsTheKernelForEveryBufferSize) {
  ASSERT_EQ(chdir(root_.c_str()), 0);
  char real[PATH_MAX];
  ASSERT_NE(realpath(root_.c_str(), real), nullptr);
  const std::string path = real;
  for (size_t size : {size_t{0}, size_t{1}, path.size() - 1, path.size(), path.size() + 1,
                      path.size() + 2, size_t{PATH_MAX}}) {
    EXPECT_EQ(GetcwdLength(path, size), KernelGetcwd(size)) << "size " << size;
  }
}

TEST_F(ScratchCwd, GetcwdOfARemovedOrTooLongCwdFailsAsTheKernel) {
  ASSERT_EQ(mkdir((root_ + "/gone").c_str(), 0755), 0);
  ASSERT_EQ(chdir((root_ + "/gone").c_str()), 0);
  ASSERT_EQ(rmdir((root_ + "/gone").c_str()), 0);
  EXPECT_EQ(GetcwdLength("", 0), KernelGetcwd(0));
  EXPECT_EQ(GetcwdLength("", PATH_MAX), KernelGetcwd(PATH_MAX));
  EXPECT_EQ(KernelGetcwd(PATH_MAX), -ENOENT);

  // A cwd deeper than PATH_MAX, reached one relative step at a time.
  ASSERT_EQ(chdir(root_.c_str()), 0);
  const std::string name(200, 'd');
  std::string path = root_;
  while (path.size() <= PATH_MAX) {
    ASSERT_EQ(mkdir(name.c_str(), 0755), 0);
    ASSERT_EQ(chdir(name.c_str()), 0);
    path += "/" + name;
  }
  for (size_t size : {size_t{100}, size_t{PATH_MAX}, path.size() + 1}) {
    EXPECT_EQ(GetcwdLength(path, size), KernelGetcwd(size)) << "size " << size;
  }
  EXPECT_EQ(KernelGetcwd(PATH_MAX), -ENAMETOOLONG);
}

// Directory `id` of mount `mount` at `path`, named at directory generation `generation`.
VirtualDir Dir(int mount, uint64_t id, const std::string& path, uint64_t generation,
               std::shared_ptr<OpenFile> hold = nullptr) {
  VirtualDir d;
  d.mount = mount;
  d.id = id;
  d.path = path;
  d.generation = generation;
  d.last = path;
  d.hold = std::move(hold);
  return d;
}

TEST(WorkingDirTest, TheKernelsCwdIsReadAgainOnlyAfterAChdirOrARename) {
  WorkingDir cwd;
  int reads = 0;
  auto read = [&] { return "/w" + std::to_string(++reads); };
  EXPECT_EQ(cwd.HostPath(0, read), "/w1");
  EXPECT_EQ(cwd.HostPath(0, read), "/w1");
  EXPECT_EQ(cwd.HostPath(1, read), "/w2");  // a host directory was renamed
  cwd.EnterHost();
  EXPECT_EQ(cwd.HostPath(1, read), "/w3");
  cwd.Enter(Dir(0, 5, "/d", 1));
  EXPECT_EQ(cwd.HostPath(1, read), "/w4");  // the kernel went to the mount point
  EXPECT_EQ(reads, 4);
}

TEST(WorkingDirTest, AVirtualCwdIsNamedAgainOnlyWhenDirectoriesChanged) {
  WorkingDir cwd;
  EXPECT_FALSE(cwd.is_virtual());
  cwd.Enter(Dir(2, 9, "/a", 7));
  ASSERT_TRUE(cwd.is_virtual());
  EXPECT_EQ(cwd.mount(), 2);
  EXPECT_EQ(cwd.id(), 9u);
  std::vector<uint64_t> asked;
  std::optional<std::string> now = "/b";
  auto path_of = [&](uint64_t id) {
    asked.push_back(id);
    return now;
  };
  EXPECT_EQ(cwd.Path(7, path_of), "/a");  // nothing moved since the chdir
  EXPECT_TRUE(asked.empty());
  EXPECT_EQ(cwd.Path(8, path_of), "/b");  // renamed
  EXPECT_EQ(cwd.last_path(), "/b");
  now = "";
  EXPECT_EQ(cwd.Path(9, path_of), "");  // removed: its last path stays
  EXPECT_EQ(cwd.last_path(), "/b");
  EXPECT_EQ(cwd.Path(9, path_of), "");
  EXPECT_EQ(asked, (std::vector<uint64_t>{9, 9}));
  cwd.EnterHost();
  EXPECT_FALSE(cwd.is_virtual());
}

TEST(WorkingDirTest, ANameThatCouldNotBeReadIsAskedForAgain) {
  // Another transaction held the directory's names: no answer, and none kept as its path.
  WorkingDir cwd;
  cwd.Enter(Dir(0, 9, "/a", 1));
  int asked = 0;
  std::optional<std::string> now;
  auto path_of = [&](uint64_t) {
    ++asked;
    return now;
  };
  EXPECT_EQ(cwd.Path(2, path_of), "");
  EXPECT_EQ(cwd.last_path(), "/a");
  now = "/b";
  EXPECT_EQ(cwd.Path(2, path_of), "/b");  // read again, not taken for removed
  EXPECT_EQ(cwd.Path(2, path_of), "/b");
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(cwd.last_path(), "/b");
  cwd.EnterHost();
  EXPECT_FALSE(cwd.is_virtual());
}

TEST(WorkingDirTest, TheDirectoryIsHeldUntilEveryProcessWithItAsCwdLeft) {
  // A fork without CLONE_FS copies the context: both processes then have the cwd.
  auto hold = std::make_shared<OpenFile>();
  std::weak_ptr<OpenFile> held = hold;
  FsContext parent;
  parent.cwd.Enter(Dir(0, 3, "/d", 1, hold));
  hold.reset();
  FsContext child(parent);
  parent.cwd.EnterHost();
  EXPECT_FALSE(held.expired()) << "released while the child's cwd is on it";
  child.cwd.Enter(Dir(0, 4, "/e", 1));
  EXPECT_TRUE(held.expired()) << "kept after the last cwd on it left";
}

}  // namespace
}  // namespace amino::monitor
