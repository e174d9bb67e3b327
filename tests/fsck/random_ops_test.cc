// fsck as the oracle of the schema: random file-system calls (creates, sparse writes, truncates,
// hard links, renames of files and directories, symbolic links, extended attributes, unlinks of
// open files) must keep every invariant after every call, and after a reopen.
//
//   AMINO_FSCK_OPS   calls per seed (default 1500)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "schema/filesystem.h"
#include "schema/fsck.h"

namespace amino::schema {
namespace {

std::string Report(const std::vector<Violation>& vs) {
  std::string s;
  for (const Violation& v : vs) s += "  " + v.invariant + ": " + v.detail + "\n";
  return s;
}

class RandomOps {
 public:
  static constexpr int kKinds = 13;

  RandomOps(FileSystem& fs, uint64_t seed) : fs_(fs), rng_(seed) {}

  // Calls of each kind that succeeded, so a run where everything failed cannot pass.
  const std::vector<int>& succeeded() const { return succeeded_; }

  // Performs one random call; returns a description of it. Failures (ENOENT, EEXIST, ...) are
  // expected and leave nothing behind.
  std::string Step() {
    Cred root = Cred::Root();
    std::string p = RandomPath();
    std::string q = RandomPath();
    // Directory calls are drawn more often: most of them fail on a busy namespace.
    static const int kDraw[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 6, 7, 7, 3};
    kind_ = kDraw[rng_() % std::size(kDraw)];
    switch (kind_) {
      case 0:
      case 1: {
        uint64_t off = rng_() % 20000;
        std::string data(rng_() % 9000, static_cast<char>('a' + rng_() % 26));
        Do([&](Transaction& t) -> Status {
          AMINO_ASSIGN_OR_RETURN(OpenResult o, fs_.Open(t, root, p, O_CREAT | O_RDWR, 0644));
          AMINO_RETURN_IF_ERROR(fs_.Write(t, root, o.id, off, data.data(), data.size()).status());
          return fs_.Close(t, o.id);
        });
        return "write " + p + " @" + std::to_string(off) + " +" + std::to_string(data.size());
      }
      case 2: {
        int64_t len = static_cast<int64_t>(rng_() % 20000);
        Do([&](Transaction& t) { return fs_.Truncate(t, root, p, len); });
        return "truncate " + p + " " + std::to_string(len);
      }
      case 3:
        Do([&](Transaction& t) { return fs_.Link(t, root, p, q); });
        return "link " + p + " " + q;
      case 4:
        Do([&](Transaction& t) { return fs_.Unlink(t, root, p); });
        return "unlink " + p;
      case 5: {
        unsigned flags = rng_() % 4 == 0 ? RENAME_EXCHANGE : 0;
        Do([&](Transaction& t) { return fs_.Rename(t, root, p, q, flags); });
        return std::string(flags ? "exchange " : "rename ") + p + " " + q;
      }
      case 6:
        Do([&](Transaction& t) { return fs_.Mkdir(t, root, p, 0755).status(); });
        return "mkdir " + p;
      case 7:
        Do([&](Transaction& t) { return fs_.Rmdir(t, root, p); });
        return "rmdir " + p;
      case 8:
        Do([&](Transaction& t) { return fs_.Symlink(t, root, q.substr(1), p); });
        return "symlink " + q.substr(1) + " " + p;
      case 9:
        Do([&](Transaction& t) {
          return fs_.SetXattr(t, root, p, "user.a" + std::to_string(rng_() % 3), "value", 0, false);
        });
        return "setxattr " + p;
      case 10: {
        // Open and keep open: an unlink then makes an orphan.
        Do([&](Transaction& t) -> Status {
          AMINO_ASSIGN_OR_RETURN(OpenResult o, fs_.Open(t, root, p, O_CREAT | O_RDWR, 0644));
          open_.push_back(o.id);
          return Status::Ok();
        });
        return "open " + p;
      }
      case 11: {
        if (open_.empty()) return "nothing to close";
        size_t i = rng_() % open_.size();
        FileId id = open_[i];
        open_.erase(open_.begin() + static_cast<long>(i));
        Do([&](Transaction& t) { return fs_.Close(t, id); });
        return "close id " + std::to_string(id);
      }
      default: {
        if (open_.empty()) return "nothing to write";
        FileId id = open_[rng_() % open_.size()];
        uint64_t off = rng_() % 30000;
        std::string data(rng_() % 5000, 'o');
        Do([&](Transaction& t) -> Status {
          AMINO_RETURN_IF_ERROR(fs_.Write(t, root, id, off, data.data(), data.size()).status());
          return fs_.FTruncate(t, root, id, static_cast<int64_t>(rng_() % 25000));
        });
        return "write+ftruncate open id " + std::to_string(id);
      }
    }
  }

  void CloseAll() {
    for (FileId id : open_) Do([&](Transaction& t) { return fs_.Close(t, id); });
    open_.clear();
  }

 private:
  // A small namespace so that calls collide: three directories deep at most.
  std::string RandomPath() {
    static const char* kNames[] = {"a", "b", "c", "d", "e"};
    std::string p;
    uint64_t r = rng_() % 8;
    int depth = r < 4 ? 1 : r < 7 ? 2 : 3;
    for (int i = 0; i < depth; ++i) p += std::string("/") + kNames[rng_() % 5];
    return p;
  }

  void Do(const std::function<Status(Transaction&)>& body) {
    Status st = fs_.Run(body);
    ASSERT_TRUE(st.ok() || st.kind() == Status::Kind::kErrno) << st.message();
    if (st.ok()) succeeded_[kind_]++;
  }

  FileSystem& fs_;
  std::mt19937_64 rng_;
  std::vector<FileId> open_;
  int kind_ = 0;
  std::vector<int> succeeded_ = std::vector<int>(kKinds);
};

class FsckRandomOpsTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(FsckRandomOpsTest, EveryCallKeepsTheInvariants) {
  const char* env = getenv("AMINO_FSCK_OPS");
  const int ops = env && *env ? atoi(env) : 1500;
  std::string dir = (std::filesystem::temp_directory_path() / "amino-fsck-ops-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  // Removed when the test passes; kept for inspection when it fails.
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
    }
  } cleanup{dir};
  ASSERT_TRUE(FileSystem::Mkfs(dir).ok());
  {
    auto fs = FileSystem::Open(dir);
    ASSERT_TRUE(fs.ok()) << fs.status().message();
    RandomOps random(**fs, GetParam());
    std::vector<std::string> history;
    for (int i = 0; i < ops; ++i) {
      history.push_back(random.Step());
      auto vs = Fsck((*fs)->store());
      ASSERT_TRUE(vs.ok()) << vs.status().message();
      if (!vs->empty()) {
        std::string tail;
        for (size_t j = history.size() > 10 ? history.size() - 10 : 0; j < history.size(); ++j) {
          tail += "  " + history[j] + "\n";
        }
        FAIL() << "seed " << GetParam() << ", after call " << i << " (file system kept in " << dir
               << "):\n"
               << tail << "violations:\n"
               << Report(*vs);
      }
    }
    std::string counts;
    for (int k = 0; k < RandomOps::kKinds; ++k)
      counts += " " + std::to_string(random.succeeded()[k]);
    std::cout << "calls that succeeded, by kind:" << counts << "\n";
    for (int k = 0; k < RandomOps::kKinds; ++k) {
      EXPECT_GT(random.succeeded()[k], 0) << "no call of kind " << k << " ever succeeded";
    }
    // Leave some files open: reopening must clear their open counts and free orphans.
  }
  auto fs = FileSystem::Open(dir);
  ASSERT_TRUE(fs.ok()) << fs.status().message();
  auto vs = Fsck((*fs)->store());
  ASSERT_TRUE(vs.ok()) << vs.status().message();
  EXPECT_TRUE(vs->empty()) << "after reopen:\n" << Report(*vs);
}

INSTANTIATE_TEST_SUITE_P(Seeds, FsckRandomOpsTest, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace amino::schema
