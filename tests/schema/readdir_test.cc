// readdir as a resumable cursor: batches resume after the last name returned, also when entries
// were added or removed between calls (each name present throughout is returned exactly once).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

class ReadDirTest : public FsTest {
 protected:
  FileId OpenDir(const std::string& p) {
    Result<OpenResult> o = root().Open(p, O_RDONLY | O_DIRECTORY);
    EXPECT_TRUE(o.ok()) << o.status().message();
    return o.ok() ? o->id : 0;
  }
};

TEST_F(ReadDirTest, ListsEveryEntryWithTypeAndIno) {
  ASSERT_TRUE(root().Mkdir("/d").ok());
  ASSERT_TRUE(root().WriteFile("/d/file", "").ok());
  ASSERT_TRUE(root().Mkdir("/d/sub").ok());
  ASSERT_TRUE(root().Symlink("file", "/d/link").ok());
  ASSERT_TRUE(root().Mknod("/d/fifo", S_IFIFO | 0644).ok());
  ASSERT_TRUE(root().WriteFile("/d/sub/deeper", "").ok());  // not an entry of /d
  ASSERT_TRUE(root().WriteFile("/d-sibling", "").ok());     // sorts next to /d's entries
  ASSERT_TRUE(root().WriteFile("/d0", "").ok());
  Result<std::vector<DirEntry>> l = root().List("/d", 1);
  ASSERT_TRUE(l.ok());
  std::map<std::string, DirEntry> by_name;
  for (const DirEntry& e : *l) by_name[e.name] = e;
  ASSERT_EQ(by_name.size(), l->size()) << "a name was returned twice";
  ASSERT_EQ(by_name.size(), 4u);
  EXPECT_EQ(by_name["file"].type, DT_REG);
  EXPECT_EQ(by_name["sub"].type, DT_DIR);
  EXPECT_EQ(by_name["link"].type, DT_LNK);
  EXPECT_EQ(by_name["fifo"].type, DT_FIFO);
  for (const auto& [name, e] : by_name) {
    EXPECT_EQ(e.ino, root().LStat("/d/" + name)->ino) << name;
  }
  EXPECT_EQ(root().ListNames("/d/sub").value(), std::vector<std::string>{"deeper"});
  EXPECT_EQ(root().ListNames("/d/sub/").value(), std::vector<std::string>{"deeper"});
}

// A directory whose records are many pages of the database, beside directories whose names
// sort right after it: its listing is read in several bulk batches, whole and without theirs.
TEST_F(ReadDirTest, ALargeDirectoryListsWholeAcrossBatches) {
  ASSERT_TRUE(root().Mkdir("/big").ok());
  ASSERT_TRUE(root().Mkdir("/big0").ok());
  ASSERT_TRUE(root().WriteFile("/big0/other", "").ok());
  ASSERT_TRUE(root().WriteFile("/big-file", "").ok());
  std::set<std::string> made;
  for (int i = 0; i < 800; ++i) {
    std::string name = std::to_string(i) + std::string(200, 'n');  // ~200 KiB of keys
    ASSERT_TRUE(root().WriteFile("/big/" + name, "").ok());
    made.insert(name);
  }
  for (size_t batch : {64, 1000}) {
    std::vector<std::string> listed = root().ListNames("/big", batch).value();
    EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), made) << "batch " << batch;
    EXPECT_EQ(listed.size(), made.size()) << "batch " << batch;
    EXPECT_TRUE(std::is_sorted(listed.begin(), listed.end()));
  }
}

// A directory whose path is near PATH_MAX: each entry's record is larger than a page of the
// Path database, more than a first bulk batch holds, and the batches grow to take it.
TEST_F(ReadDirTest, EntriesLargerThanAPageAreListed) {
  std::string dir;
  for (int level = 0; level < 15; ++level) {
    dir += "/" + std::string(250, static_cast<char>('a' + level));
    ASSERT_TRUE(root().Mkdir(dir).ok()) << dir.size();
  }
  std::set<std::string> made;
  for (int i = 0; i < 12; ++i) {
    std::string name = std::to_string(i) + std::string(250, 'x');
    ASSERT_TRUE(root().WriteFile(dir + "/" + name, "").ok());
    made.insert(name);
  }
  ASSERT_GT(dir.size() + 250, 4000u);  // with the record's value, more than 4 KiB
  for (size_t batch : {1, 5, 100}) {
    std::vector<std::string> listed = root().ListNames(dir, batch).value();
    EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), made) << "batch " << batch;
    EXPECT_EQ(listed.size(), made.size()) << "batch " << batch;
  }
}

TEST_F(ReadDirTest, EmptyDirectoryAndBatchSizes) {
  ASSERT_TRUE(root().Mkdir("/e").ok());
  EXPECT_EQ(root().ListNames("/e").value(), std::vector<std::string>{});
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(root().WriteFile("/f" + std::to_string(i), "").ok());
  std::vector<std::string> all = root().ListNames("/", 1000).value();
  EXPECT_EQ(all.size(), 51u);
  for (size_t batch : {1, 2, 7, 50, 51, 52}) {
    EXPECT_EQ(root().ListNames("/", batch).value(), all) << "batch " << batch;
  }
  FileId d = OpenDir("/");
  Result<std::vector<DirEntry>> part = root().ReadDir(d, "", 5);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->size(), 5u);
  part = root().ReadDir(d, all.back(), 5);
  ASSERT_TRUE(part.ok());
  EXPECT_TRUE(part->empty());
  // Fewer than asked is the end, which callers take without asking again.
  part = root().ReadDir(d, all[all.size() - 3], 5);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->size(), 2u);
  EXPECT_TRUE(root().Close(d).ok());
}

TEST_F(ReadDirTest, ResumesAfterANameThatWasRemoved) {
  for (const char* n : {"a", "b", "c", "d", "e"})
    ASSERT_TRUE(root().WriteFile(std::string("/") + n, "").ok());
  FileId d = OpenDir("/");
  Result<std::vector<DirEntry>> first = root().ReadDir(d, "", 2);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 2u);
  std::string after = first->back().name;
  // The cursor's name disappears; the next batch must continue with the names after it.
  ASSERT_TRUE(root().Unlink("/" + after).ok());
  std::set<std::string> seen;
  for (const DirEntry& e : *first) seen.insert(e.name);
  for (;;) {
    Result<std::vector<DirEntry>> part = root().ReadDir(d, after, 2);
    ASSERT_TRUE(part.ok());
    if (part->empty()) break;
    for (const DirEntry& e : *part) EXPECT_TRUE(seen.insert(e.name).second) << e.name << " twice";
    after = part->back().name;
  }
  EXPECT_EQ(seen, (std::set<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_TRUE(root().Close(d).ok());
}

// Random additions and removals between batches: every name present from the start to the end
// is returned exactly once, no name is returned twice, and nothing that never existed appears.
TEST_F(ReadDirTest, ConcurrentChangesNeverDuplicateOrLoseStableNames) {
  std::mt19937 rng(3);
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(root().Mkdir("/d").ok());
    std::set<std::string> present;
    for (int i = 0; i < 30; ++i) {
      std::string n = "n" + std::to_string(rng() % 100);
      if (present.insert(n).second) {
        ASSERT_TRUE(root().WriteFile("/d/" + n, "").ok());
      }
    }
    std::set<std::string> stable = present, ever = present, seen;
    FileId d = OpenDir("/d");
    std::string after;
    for (;;) {
      Result<std::vector<DirEntry>> part = root().ReadDir(d, after, 1 + rng() % 4);
      ASSERT_TRUE(part.ok());
      if (part->empty()) break;
      for (const DirEntry& e : *part) {
        EXPECT_TRUE(seen.insert(e.name).second) << e.name << " returned twice";
        EXPECT_TRUE(ever.count(e.name)) << e.name << " never existed";
      }
      after = part->back().name;
      for (int k = 0; k < 2; ++k) {
        std::string n = "n" + std::to_string(rng() % 100);
        if (present.count(n)) {
          ASSERT_TRUE(root().Unlink("/d/" + n).ok());
          present.erase(n);
          stable.erase(n);
        } else {
          ASSERT_TRUE(root().WriteFile("/d/" + n, "").ok());
          present.insert(n);
          ever.insert(n);
        }
      }
    }
    for (const std::string& n : stable) EXPECT_TRUE(seen.count(n)) << n << " was skipped";
    EXPECT_TRUE(root().Close(d).ok());
    for (const std::string& n : present) ASSERT_TRUE(root().Unlink("/d/" + n).ok());
    ASSERT_TRUE(root().Rmdir("/d").ok());
  }
}

TEST_F(ReadDirTest, OpenDirectoryErrorsMatchTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  EXPECT_LINUX(root().Open("/f", O_RDONLY | O_DIRECTORY),
               open(H("/f").c_str(), O_RDONLY | O_DIRECTORY));
  EXPECT_LINUX(root().Open("/none", O_RDONLY | O_DIRECTORY),
               open(H("/none").c_str(), O_RDONLY | O_DIRECTORY));
  EXPECT_LINUX(root().Open("/d", O_WRONLY), open(H("/d").c_str(), O_WRONLY));
  EXPECT_LINUX(root().Open("/d", O_RDWR), open(H("/d").c_str(), O_RDWR));
  // A directory that cannot be read cannot be listed (by anyone but root).
  ASSERT_TRUE(root().Chmod("/d", 0311).ok());
  ASSERT_EQ(chmod(H("/d").c_str(), 0311), 0);
  std::string d = H("/d");
  EXPECT_EQ(ErrName(Err(user(1000, 1000).Open("/d", O_RDONLY | O_DIRECTORY))),
            ErrName(HostErrAs(Cred::User(1000, 1000),
                              [&] { return open(d.c_str(), O_RDONLY | O_DIRECTORY); })));
}

}  // namespace
}  // namespace amino::schema::testing
