// A Berkeley DB cursor over a real store: the record it is at, and seeks that reuse its
// buffers after records of other lengths (src/schema/store.h, Cursor).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schema/store.h"
#include "temp_dir.h"

namespace amino::schema {
namespace {

using testing::TempDir;

class CursorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Store::Options options;
    options.create = true;
    auto opened = Store::Open(dir_.path(), options);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    store_ = std::move(opened).value();
  }

  void Put(const std::string& key, const std::string& value) {
    ASSERT_TRUE(store_->Put(store_->xattr(), nullptr, key, value).ok());
  }

  TempDir dir_{"cursor_test."};
  std::unique_ptr<Store> store_;
};

// A seek copies its key into the buffer that the last record came back in. Berkeley DB sizes
// that buffer to the record it returns, smaller than a longer key sought before: a later seek
// with a key between the two lengths must not write past it (the sanitizer build sees that).
TEST_F(CursorTest, SeeksAfterRecordsOfOtherLengthsFindTheirKeys) {
  const std::string shorter(20, 'b'), middle(50, 'c'), longest(80, 'd');
  Put(shorter, "value of b");
  Put(middle, std::string(3000, 'v'));
  Put(longest, "value of d");
  Cursor c(store_->xattr(), nullptr);
  ASSERT_TRUE(c.status().ok());

  auto found = c.SeekRange(std::string(100, 'a'));  // a 100-byte key; lands on the 20-byte one
  ASSERT_TRUE(found.ok() && *found);
  EXPECT_EQ(c.key(), shorter);
  EXPECT_EQ(c.value(), "value of b");
  found = c.Next();  // a longer record: its buffer grows to just that
  ASSERT_TRUE(found.ok() && *found);
  EXPECT_EQ(c.key(), middle);
  EXPECT_EQ(c.value(), std::string(3000, 'v'));

  found = c.SeekRange(std::string(70, 'c'));  // longer than the buffer, shorter than the first
  ASSERT_TRUE(found.ok() && *found);
  EXPECT_EQ(c.key(), longest);
  EXPECT_EQ(c.value(), "value of d");

  found = c.SeekRange(c.key());  // the cursor's own key, seeking itself
  ASSERT_TRUE(found.ok() && *found);
  EXPECT_EQ(c.key(), longest);

  found = c.SeekRange(std::string(90, 'e'));  // past the last key
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(*found);
}

// A record replaced whole: found by one search that copies none of it, then replaced where the
// cursor is; an absent key is said to be absent and nothing is written.
TEST_F(CursorTest, ARecordFoundToReplaceIsReplacedWhereTheCursorIs) {
  Put("a", "first");
  Put("c", std::string(5000, 'x'));
  DB_TXN* txn = nullptr;
  ASSERT_EQ(store_->env()->txn_begin(store_->env(), nullptr, &txn, 0), 0);
  {
    Cursor c(store_->xattr(), txn);
    ASSERT_TRUE(c.status().ok());
    auto found = c.SeekToReplace("c");
    ASSERT_TRUE(found.ok() && *found);
    ASSERT_TRUE(c.ReplaceCurrent("short now").ok());
    found = c.SeekToReplace("b");  // between two keys: absent, not the next one
    ASSERT_TRUE(found.ok());
    EXPECT_FALSE(*found);
    found = c.SeekToReplace("a");
    ASSERT_TRUE(found.ok() && *found);
    ASSERT_TRUE(c.ReplaceCurrent(std::string(3000, 'y')).ok());
  }
  ASSERT_EQ(txn->commit(txn, 0), 0);
  auto a = store_->Get(store_->xattr(), nullptr, "a");
  auto b = store_->Get(store_->xattr(), nullptr, "b");
  auto c = store_->Get(store_->xattr(), nullptr, "c");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, std::string(3000, 'y'));
  EXPECT_FALSE(b->has_value());
  EXPECT_EQ(*c, "short now");
}

TEST_F(CursorTest, BothKeyAndValueSeekFindsTheDuplicate) {
  // The names database keeps duplicates: (key, value) pairs, sorted.
  ASSERT_TRUE(store_->Put(store_->names(), nullptr, "k", "one").ok());
  ASSERT_TRUE(store_->Put(store_->names(), nullptr, "k", "three").ok());
  ASSERT_TRUE(store_->Put(store_->names(), nullptr, "k", "two").ok());
  Cursor c(store_->names(), nullptr);
  ASSERT_TRUE(c.status().ok());
  auto found = c.SeekBoth("k", "three");
  ASSERT_TRUE(found.ok() && *found);
  EXPECT_EQ(c.value(), "three");
  found = c.NextDup();
  ASSERT_TRUE(found.ok() && *found);
  EXPECT_EQ(c.value(), "two");
  found = c.SeekBoth("k", "four");
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(*found);
}

// Bulk reads: records from the first key at or after the one sought, in key order, batch
// after batch, the same as a move per record would give; a walk that only deletes copies no
// values.
TEST_F(CursorTest, BatchesGiveTheRecordsInOrderFromTheKeySought) {
  std::vector<std::pair<std::string, std::string>> records;
  for (int i = 0; i < 3000; ++i) {
    char key[16];
    snprintf(key, sizeof key, "k%05d", i);
    records.emplace_back(key, std::string(40 + i % 200, static_cast<char>('a' + i % 26)));
    Put(records.back().first, records.back().second);
  }
  Cursor c(store_->xattr(), nullptr);
  ASSERT_TRUE(c.status().ok());
  auto more = c.SeekRangeBatch("k00100x");  // between two keys: from k00101 on
  ASSERT_TRUE(more.ok() && *more);
  size_t next = 101, batches = 0;
  while (*more) {
    ++batches;
    std::string_view key, value;
    while (c.NextInBatch(&key, &value)) {
      ASSERT_LT(next, records.size());
      EXPECT_EQ(key, records[next].first);
      EXPECT_EQ(value, records[next].second);
      ++next;
    }
    more = c.NextBatch();
    ASSERT_TRUE(more.ok());
  }
  EXPECT_EQ(next, records.size());
  EXPECT_GT(batches, 1u) << "the records fit one batch: the test shows no resumption";

  Cursor keys(store_->xattr(), nullptr);
  keys.KeysOnly();
  auto found = keys.SeekRange("k02999");
  ASSERT_TRUE(found.ok() && *found);
  EXPECT_EQ(keys.key(), "k02999");
  EXPECT_EQ(keys.value(), "");
  found = keys.SeekRange("k03000");
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(*found);
}

}  // namespace
}  // namespace amino::schema
