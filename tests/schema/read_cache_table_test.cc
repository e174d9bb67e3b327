// The read cache's table itself (src/schema/read_cache.h): what is inserted is found until it
// is forgotten, replaced or the table is emptied, per database, and filling it (entries, bytes,
// removals) empties it rather than losing a lookup's answer.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "schema/read_cache.h"
#include "temp_dir.h"

namespace amino::schema::testing {
namespace {

class ReadCacheTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<ReadCache>> c = ReadCache::Open(dir_.path());
    ASSERT_TRUE(c.ok()) << c.status().message();
    cache_ = std::move(c).value();
  }
  // The cached value of `key`: "<miss>", "<absent>" or the value.
  std::string Lookup(int db, const std::string& key) {
    std::optional<ReadCache::Hit> hit = cache_->Find(db, key);
    if (!hit) return "<miss>";
    return hit->value ? *hit->value : "<absent>";
  }

  TempDir dir_{"amino-read-cache-"};
  std::unique_ptr<ReadCache> cache_;
};

TEST_F(ReadCacheTableTest, KeepsValuesAbsencesAndReaders) {
  cache_->Insert(0, "/a", std::string_view("one"), 7);
  cache_->Insert(0, "/b", std::nullopt, 8);
  cache_->Insert(0, "/empty", std::string_view(""), 9);
  EXPECT_EQ(Lookup(0, "/a"), "one");
  EXPECT_EQ(Lookup(0, "/b"), "<absent>");
  EXPECT_EQ(Lookup(0, "/empty"), "");
  EXPECT_EQ(Lookup(0, "/c"), "<miss>");
  EXPECT_EQ(cache_->Find(0, "/a")->reader, 7u);
  EXPECT_EQ(cache_->Find(0, "/b")->reader, 8u);
  EXPECT_EQ(cache_->hits(), 5u);
  EXPECT_EQ(cache_->misses(), 1u);
}

TEST_F(ReadCacheTableTest, DatabasesAreApartAndReplacingKeepsTheLatest) {
  cache_->Insert(0, "k", std::string_view("path"), 1);
  cache_->Insert(5, "k", std::string_view("inode"), 1);
  cache_->Insert(0, "k", std::string_view("a longer value than before"), 2);
  EXPECT_EQ(Lookup(0, "k"), "a longer value than before");
  EXPECT_EQ(Lookup(5, "k"), "inode");
  EXPECT_EQ(Lookup(1, "k"), "<miss>");
  // Numbers the store does not give are never kept.
  cache_->Insert(8, "k", std::string_view("x"), 1);
  cache_->Insert(-1, "k", std::string_view("x"), 1);
  EXPECT_EQ(Lookup(8, "k"), "<miss>");
  EXPECT_EQ(Lookup(-1, "k"), "<miss>");
}

TEST_F(ReadCacheTableTest, ForgottenKeysMissAndComeBack) {
  for (int i = 0; i < 100; ++i)
    cache_->Insert(0, "/f" + std::to_string(i), std::string_view("v"), 1);
  for (int i = 0; i < 100; i += 2) cache_->Forget(0, "/f" + std::to_string(i));
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(Lookup(0, "/f" + std::to_string(i)), i % 2 ? "v" : "<miss>") << i;
  }
  cache_->Insert(0, "/f4", std::string_view("again"), 2);
  EXPECT_EQ(Lookup(0, "/f4"), "again");
  cache_->Forget(0, "/never-there");
  EXPECT_EQ(Lookup(0, "/f5"), "v");
}

TEST_F(ReadCacheTableTest, ValuesTooLargeAreNotKeptButLongKeysAre) {
  const std::string big(513, 'x');
  cache_->Insert(0, "/big", std::string_view(big), 1);
  EXPECT_EQ(Lookup(0, "/big"), "<miss>");
  const std::string deep = "/" + std::string(4095, 'd');
  cache_->Insert(0, deep, std::string_view(std::string(512, 'y')), 1);
  EXPECT_EQ(Lookup(0, deep), std::string(512, 'y'));
}

TEST_F(ReadCacheTableTest, FillingItEmptiesItAndTheNewestEntriesAreFound) {
  // Far more entries than it holds: each lookup is the latest value or a miss, never another
  // key's, and the last ones inserted are all there.
  const int n = 300000;
  for (int i = 0; i < n; ++i) {
    cache_->Insert(0, "/many/" + std::to_string(i), std::string_view(std::to_string(i * 3)), 1);
  }
  for (int i = 0; i < n; i += 997) {
    const std::string got = Lookup(0, "/many/" + std::to_string(i));
    EXPECT_TRUE(got == "<miss>" || got == std::to_string(i * 3)) << i << ": " << got;
  }
  for (int i = n - 1000; i < n; ++i)
    EXPECT_EQ(Lookup(0, "/many/" + std::to_string(i)), std::to_string(i * 3));
}

TEST_F(ReadCacheTableTest, LongKeysFillingItsBytesEmptyIt) {
  // 4 KiB keys fill the bytes long before the entries run out.
  const int n = 5000;
  auto key = [](int i) { return "/" + std::string(4000, 'k') + std::to_string(i); };
  for (int i = 0; i < n; ++i) cache_->Insert(0, key(i), std::string_view(std::to_string(i)), 1);
  for (int i = n - 100; i < n; ++i) EXPECT_EQ(Lookup(0, key(i)), std::to_string(i));
  EXPECT_EQ(Lookup(0, key(0)), "<miss>");
}

TEST_F(ReadCacheTableTest, RemovalsAndInsertsWithoutEndKeepLookupsRight) {
  // Forgotten entries take slots until the table is emptied: a write-heavy run forgets a key
  // at every write.
  for (int round = 0; round < 200000; ++round) {
    const std::string key = "/churn/" + std::to_string(round % 50);
    cache_->Insert(0, key, std::string_view(std::to_string(round)), 1);
    ASSERT_EQ(Lookup(0, key), std::to_string(round)) << round;
    cache_->Forget(0, key);
    ASSERT_EQ(Lookup(0, key), "<miss>") << round;
  }
}

TEST_F(ReadCacheTableTest, AnotherProcessesCommitEmptiesIt) {
  Result<std::unique_ptr<ReadCache>> other = ReadCache::Open(dir_.path());
  ASSERT_TRUE(other.ok()) << other.status().message();
  cache_->Insert(0, "/a", std::string_view("one"), 1);
  cache_->Advance();  // this process's own commit: what it holds stays true
  cache_->Refresh();
  EXPECT_EQ(Lookup(0, "/a"), "one");
  (*other)->Advance();
  cache_->Refresh();
  EXPECT_EQ(Lookup(0, "/a"), "<miss>");
  cache_->Insert(0, "/a", std::string_view("two"), 2);
  EXPECT_EQ(Lookup(0, "/a"), "two");
  cache_->Clear();
  EXPECT_EQ(Lookup(0, "/a"), "<miss>");
}

}  // namespace
}  // namespace amino::schema::testing
