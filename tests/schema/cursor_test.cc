// A Berkeley DB cursor over a real store: the record it is at, and seeks that reuse its
// buffers after records of other lengths (src/schema/store.h, Cursor).
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace amino::schema
