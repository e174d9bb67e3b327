// Persistent regions: stores of their own and inside a caller's Berkeley DB environment, reopening
// in the last committed state, errors, sparse regions, and commits inside a caller's transaction
// (rvm_prepare_in).
#include <db.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "amino/rvm.h"
#include "rvm_test_util.h"

namespace amino::rvm::testing {
namespace {

class PersistentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    OpenStore();
  }
  void TearDown() override {
    rvm_abort_to(0);
    CloseStore();
  }
  void OpenStore() { ASSERT_EQ(rvm_store_open((dir_.path() + "/store").c_str(), 0, &store_), 0); }
  void CloseStore() {
    if (region_) {
      EXPECT_EQ(rvm_unmap(region_), 0);
    }
    region_ = nullptr;
    if (store_) {
      EXPECT_EQ(rvm_store_close(store_), 0);
    }
    store_ = nullptr;
  }
  // Closes everything and opens the store and the region again, as a new process would.
  void Reopen(const char* name = "r") {
    CloseStore();
    OpenStore();
    ASSERT_EQ(rvm_open(store_, name, 0, 0, &region_), 0);
  }
  char* bytes() { return static_cast<char*>(rvm_base(region_)); }

  TempDir dir_;
  rvm_store* store_ = nullptr;
  rvm_region* region_ = nullptr;
};

TEST_F(PersistentTest, CommittedContentsSurviveReopening) {
  ASSERT_EQ(rvm_open(store_, "r", 8 * PageBytes(), RVM_CREATE, &region_), 0);
  EXPECT_EQ(rvm_is_persistent(region_), 1);
  EXPECT_EQ(rvm_size(region_), 8 * PageBytes());
  for (size_t i = 0; i < rvm_size(region_); ++i) ASSERT_EQ(bytes()[i], 0);
  EXPECT_EQ(WritableBytes(region_), 0u);
  ASSERT_EQ(rvm_begin(), 0);
  std::strcpy(bytes() + 100, "first");
  std::strcpy(bytes() + 5 * PageBytes(), "far page");
  ASSERT_EQ(rvm_commit(), 0);
  ASSERT_EQ(rvm_begin(), 0);
  std::strcpy(bytes() + 100, "aborted");
  std::strcpy(bytes() + 3 * PageBytes(), "aborted too");
  ASSERT_EQ(rvm_abort(), 0);

  void* base = rvm_base(region_);
  Reopen();
  EXPECT_EQ(rvm_base(region_), base) << "same address when the range is free";
  EXPECT_EQ(rvm_size(region_), 8 * PageBytes());
  EXPECT_STREQ(bytes() + 100, "first");
  EXPECT_STREQ(bytes() + 5 * PageBytes(), "far page");
  EXPECT_EQ(bytes()[3 * PageBytes()], 0);
  EXPECT_EQ(WritableBytes(region_), 0u);
}

TEST_F(PersistentTest, NestedCommitsReachTheStoreOnlyWithTheTopLevel) {
  ASSERT_EQ(rvm_open(store_, "r", 4 * PageBytes(), RVM_CREATE, &region_), 0);
  ASSERT_EQ(rvm_begin(), 0);
  bytes()[0] = 'a';
  ASSERT_EQ(rvm_begin(), 0);
  bytes()[1] = 'b';
  ASSERT_EQ(rvm_commit(), 0);
  ASSERT_EQ(rvm_begin(), 0);
  bytes()[2] = 'c';
  ASSERT_EQ(rvm_abort(), 0);
  ASSERT_EQ(rvm_commit(), 0);
  // A top-level transaction left open is not stored. Unmapping it is refused, so let it go by
  // aborting after the reopen check of what was committed.
  ASSERT_EQ(rvm_begin(), 0);
  bytes()[3] = 'd';
  ASSERT_EQ(rvm_abort(), 0);
  Reopen();
  EXPECT_EQ(std::string(bytes(), 4), std::string("ab\0\0", 4));
}

TEST_F(PersistentTest, HeapAndRootSurviveReopening) {
  struct Node {
    Node* next;
    int value;
  };
  ASSERT_EQ(rvm_open(store_, "list", 64 * PageBytes(), RVM_CREATE, &region_), 0);
  ASSERT_EQ(rvm_begin(), 0);
  Node* head = nullptr;
  for (int i = 0; i < 100; ++i) {
    auto* n = static_cast<Node*>(rvm_alloc(region_, sizeof(Node)));
    ASSERT_NE(n, nullptr);
    n->next = head;
    n->value = i;
    head = n;
  }
  ASSERT_EQ(rvm_set_root(region_, head), 0);
  ASSERT_EQ(rvm_commit(), 0);
  void* base = rvm_base(region_);
  Reopen("list");
  ASSERT_EQ(rvm_base(region_), base) << "raw pointers inside need the same address";
  int expect = 99;
  for (auto* n = static_cast<Node*>(rvm_get_root(region_)); n; n = n->next) {
    ASSERT_EQ(n->value, expect--);
  }
  EXPECT_EQ(expect, -1);
  // The heap goes on where it stopped.
  ASSERT_EQ(rvm_begin(), 0);
  ASSERT_EQ(rvm_free(region_, rvm_get_root(region_)), 0);
  ASSERT_EQ(rvm_commit(), 0);
}

TEST_F(PersistentTest, OpenChecksItsArguments) {
  rvm_region* r = nullptr;
  EXPECT_EQ(rvm_open(store_, "missing", 0, 0, &r), ENOENT);
  EXPECT_EQ(rvm_open(store_, "missing", PageBytes(), 0, &r), ENOENT);
  EXPECT_EQ(rvm_open(store_, "r", 0, RVM_CREATE, &r), EINVAL) << "a new region needs a size";
  EXPECT_EQ(rvm_open(store_, "", PageBytes(), RVM_CREATE, &r), EINVAL);
  EXPECT_EQ(rvm_open(store_, "r", PageBytes(), 0x100, &r), EINVAL);
  ASSERT_EQ(rvm_open(store_, "r", 2 * PageBytes(), RVM_CREATE, &region_), 0);
  EXPECT_EQ(rvm_open(store_, "r", 0, 0, &r), EBUSY) << "mapped already";
  EXPECT_EQ(rvm_store_close(store_), EBUSY);
  EXPECT_EQ(rvm_remove(store_, "r"), EBUSY);
  ASSERT_EQ(rvm_unmap(region_), 0);
  region_ = nullptr;
  EXPECT_EQ(rvm_open(store_, "r", 3 * PageBytes(), 0, &r), EINVAL) << "size differs";
  ASSERT_EQ(rvm_open(store_, "r", 2 * PageBytes(), RVM_CREATE, &region_), 0) << "same size: ok";
  ASSERT_EQ(rvm_unmap(region_), 0);
  region_ = nullptr;
  EXPECT_EQ(rvm_remove(store_, "r"), 0);
  EXPECT_EQ(rvm_remove(store_, "r"), ENOENT);
  EXPECT_EQ(rvm_open(store_, "r", 0, 0, &r), ENOENT);
}

TEST_F(PersistentTest, StoreFlags) {
  rvm_store* s = nullptr;
  std::string path = dir_.path() + "/flags";
  EXPECT_EQ(rvm_store_open(path.c_str(), 0x80, &s), EINVAL);
  EXPECT_EQ(rvm_store_open(nullptr, 0, &s), EINVAL);
  EXPECT_EQ(rvm_store_attach(nullptr, 0, &s), EINVAL);
  EXPECT_EQ(rvm_store_close(nullptr), EINVAL);
  // Flushed commits: the same contents come back.
  for (unsigned flags : {RVM_STORE_SYNC, RVM_STORE_NOSYNC}) {
    ASSERT_EQ(rvm_store_open(path.c_str(), flags, &s), 0);
    rvm_region* r = nullptr;
    ASSERT_EQ(rvm_open(s, "r", PageBytes(), RVM_CREATE, &r), 0);
    ASSERT_EQ(rvm_begin(), 0);
    static_cast<char*>(rvm_base(r))[0] = static_cast<char>(flags);
    ASSERT_EQ(rvm_commit(), 0);
    ASSERT_EQ(rvm_unmap(r), 0);
    ASSERT_EQ(rvm_store_close(s), 0);
    ASSERT_EQ(rvm_store_open(path.c_str(), 0, &s), 0);
    ASSERT_EQ(rvm_open(s, "r", 0, 0, &r), 0);
    EXPECT_EQ(static_cast<char*>(rvm_base(r))[0], static_cast<char>(flags));
    ASSERT_EQ(rvm_unmap(r), 0);
    ASSERT_EQ(rvm_store_close(s), 0);
  }
}

// A commit is in the operating system's hands when rvm_commit returns: a process killed right
// after it loses nothing (the default durability).
TEST_F(PersistentTest, CommitSurvivesTheProcessBeingKilled) {
  std::string path = dir_.path() + "/killed";
  int status = RunInChild([&] {
    rvm_store* s = nullptr;
    rvm_region* r = nullptr;
    if (rvm_store_open(path.c_str(), 0, &s) != 0) return 1;
    if (rvm_open(s, "r", PageBytes(), RVM_CREATE, &r) != 0) return 2;
    rvm_begin();
    std::strcpy(static_cast<char*>(rvm_base(r)), "committed");
    if (rvm_commit() != 0) return 3;
    rvm_begin();
    std::strcpy(static_cast<char*>(rvm_base(r)), "uncommitted");
    raise(SIGKILL);
    return 4;
  });
  ASSERT_EQ(status, 128 + SIGKILL);
  rvm_store* s = nullptr;
  rvm_region* r = nullptr;
  ASSERT_EQ(rvm_store_open(path.c_str(), 0, &s), 0);
  ASSERT_EQ(rvm_open(s, "r", 0, 0, &r), 0);
  EXPECT_STREQ(static_cast<char*>(rvm_base(r)), "committed");
  ASSERT_EQ(rvm_unmap(r), 0);
  ASSERT_EQ(rvm_store_close(s), 0);
}

TEST_F(PersistentTest, AnotherProcessCannotOpenAMappedRegion) {
  ASSERT_EQ(rvm_open(store_, "r", PageBytes(), RVM_CREATE, &region_), 0);
  std::string path = dir_.path() + "/store";
  EXPECT_EQ(RunInChild([&] {
              rvm_store* s = nullptr;
              if (rvm_store_open(path.c_str(), 0, &s) != 0) return 1;
              rvm_region* r = nullptr;
              int err = rvm_open(s, "r", 0, 0, &r);
              rvm_store_close(s);
              return err == EBUSY ? 0 : 2;
            }),
            0);
}

TEST_F(PersistentTest, RemovedRegionsAndOthersAreIndependent) {
  rvm_region* other = nullptr;
  ASSERT_EQ(rvm_open(store_, "a", PageBytes(), RVM_CREATE, &region_), 0);
  ASSERT_EQ(rvm_open(store_, "ab", PageBytes(), RVM_CREATE, &other), 0);
  ASSERT_EQ(rvm_begin(), 0);
  bytes()[0] = 'a';
  static_cast<char*>(rvm_base(other))[0] = 'b';
  ASSERT_EQ(rvm_commit(), 0);
  ASSERT_EQ(rvm_unmap(region_), 0);
  region_ = nullptr;
  ASSERT_EQ(rvm_remove(store_, "a"), 0);
  ASSERT_EQ(rvm_unmap(other), 0);
  Reopen("ab");
  EXPECT_EQ(bytes()[0], 'b');
  rvm_region* r = nullptr;
  EXPECT_EQ(rvm_open(store_, "a", 0, 0, &r), ENOENT);
}

// 16 GiB with three pages written: opening, committing and reopening stay cheap, and the store
// holds only what was written.
TEST_F(PersistentTest, SparseRegionOfManyGiB) {
  const size_t size = size_t{16} << 30;
  ASSERT_EQ(rvm_open(store_, "big", size, RVM_CREATE, &region_), 0);
  ASSERT_EQ(rvm_begin(), 0);
  bytes()[0] = 1;
  bytes()[size / 2] = 2;
  bytes()[size - 1] = 3;
  ASSERT_EQ(rvm_commit(), 0);
  const size_t before = ResidentBytes();
  Reopen("big");
  EXPECT_EQ(bytes()[0], 1);
  EXPECT_EQ(bytes()[size / 2], 2);
  EXPECT_EQ(bytes()[size - 1], 3);
  EXPECT_LT(ResidentBytes(), before + (size_t{64} << 20));
  struct stat st;
  ASSERT_EQ(stat((dir_.path() + "/store/rvm.db").c_str(), &st), 0);
  EXPECT_LT(st.st_size, 4 << 20);
}

TEST_F(PersistentTest, PrepareNeedsATopLevelTransactionInTheSameEnvironment) {
  ASSERT_EQ(rvm_open(store_, "r", PageBytes(), RVM_CREATE, &region_), 0);
  // A transaction of another environment cannot be the parent.
  DB_ENV* env = nullptr;
  ASSERT_EQ(db_env_create(&env, 0), 0);
  std::string other = dir_.path() + "/other";
  mkdir(other.c_str(), 0755);
  ASSERT_EQ(
      env->open(env, other.c_str(),
                DB_CREATE | DB_INIT_TXN | DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL | DB_THREAD,
                0644),
      0);
  DB_TXN* t = nullptr;
  ASSERT_EQ(env->txn_begin(env, nullptr, &t, 0), 0);
  EXPECT_EQ(rvm_prepare_in(t), EINVAL) << "no transaction";
  ASSERT_EQ(rvm_begin(), 0);
  bytes()[0] = 1;
  EXPECT_EQ(rvm_prepare_in(t), EXDEV);
  ASSERT_EQ(rvm_begin(), 0);
  EXPECT_EQ(rvm_prepare_in(t), EINVAL) << "nested";
  ASSERT_EQ(rvm_commit(), 0);
  ASSERT_EQ(rvm_commit(), 0);
  t->abort(t);
  env->close(env, 0);
  Reopen();
  EXPECT_EQ(bytes()[0], 1);
}

// A store inside the caller's environment, next to the caller's own database: region pages and
// the caller's records commit or abort together in the caller's transaction.
class AttachedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override {
    rvm_abort_to(0);
    Close();
  }
  void Open() {
    ASSERT_EQ(db_env_create(&env_, 0), 0);
    ASSERT_EQ(env_->open(env_, dir_.path().c_str(),
                         DB_CREATE | DB_INIT_TXN | DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL |
                             DB_THREAD | DB_RECOVER,
                         0644),
              0);
    ASSERT_EQ(db_create(&db_, env_, 0), 0);
    ASSERT_EQ(db_->open(db_, nullptr, "data.db", nullptr, DB_BTREE,
                        DB_CREATE | DB_THREAD | DB_AUTO_COMMIT, 0644),
              0);
    ASSERT_EQ(rvm_store_attach(env_, 0, &store_), 0);
    ASSERT_EQ(rvm_open(store_, "index", 4 * PageBytes(), RVM_CREATE, &region_), 0);
  }
  void Close() {
    if (region_) {
      EXPECT_EQ(rvm_unmap(region_), 0);
    }
    if (store_) {
      EXPECT_EQ(rvm_store_close(store_), 0);
    }
    if (db_) db_->close(db_, 0);
    if (env_) env_->close(env_, 0);
    region_ = nullptr;
    store_ = nullptr;
    db_ = nullptr;
    env_ = nullptr;
  }
  void Put(DB_TXN* t, const std::string& key, const std::string& value) {
    DBT k{}, v{};
    k.data = const_cast<char*>(key.data());
    k.size = static_cast<u_int32_t>(key.size());
    v.data = const_cast<char*>(value.data());
    v.size = static_cast<u_int32_t>(value.size());
    ASSERT_EQ(db_->put(db_, t, &k, &v, 0), 0);
  }
  bool Has(const std::string& key) {
    DBT k{}, v{};
    k.data = const_cast<char*>(key.data());
    k.size = static_cast<u_int32_t>(key.size());
    v.flags = DB_DBT_MALLOC;
    int ret = db_->get(db_, nullptr, &k, &v, 0);
    free(v.data);
    return ret == 0;
  }
  // Number of records of the store's database (one per stored page, plus one per region).
  int StoreRecords() {
    DB* db = nullptr;
    EXPECT_EQ(db_create(&db, env_, 0), 0);
    EXPECT_EQ(db->open(db, nullptr, "rvm.db", nullptr, DB_BTREE, DB_THREAD | DB_AUTO_COMMIT, 0), 0);
    DBC* c = nullptr;
    EXPECT_EQ(db->cursor(db, nullptr, &c, 0), 0);
    DBT k{}, v{};
    int n = 0;
    while (c->get(c, &k, &v, DB_NEXT) == 0) ++n;
    c->close(c);
    db->close(db, 0);
    return n;
  }
  char* bytes() { return static_cast<char*>(rvm_base(region_)); }
  void Reopen() {
    Close();
    Open();
  }

  TempDir dir_;
  DB_ENV* env_ = nullptr;
  DB* db_ = nullptr;
  rvm_store* store_ = nullptr;
  rvm_region* region_ = nullptr;
};

TEST_F(AttachedStoreTest, OneCommitForRegionAndCallerData) {
  ASSERT_EQ(rvm_begin(), 0);
  std::strcpy(bytes(), "index entry");
  DB_TXN* t = nullptr;
  ASSERT_EQ(env_->txn_begin(env_, nullptr, &t, 0), 0);
  Put(t, "file", "contents");
  ASSERT_EQ(rvm_prepare_in(t), 0);
  ASSERT_EQ(t->commit(t, 0), 0);
  ASSERT_EQ(rvm_commit(), 0);
  Reopen();
  EXPECT_STREQ(bytes(), "index entry");
  EXPECT_TRUE(Has("file"));
}

TEST_F(AttachedStoreTest, CallerAbortAfterPrepareUndoesBoth) {
  ASSERT_EQ(rvm_begin(), 0);
  std::strcpy(bytes(), "old");
  ASSERT_EQ(rvm_commit(), 0);
  ASSERT_EQ(rvm_begin(), 0);
  std::strcpy(bytes(), "new");
  DB_TXN* t = nullptr;
  ASSERT_EQ(env_->txn_begin(env_, nullptr, &t, 0), 0);
  Put(t, "file", "contents");
  ASSERT_EQ(rvm_prepare_in(t), 0);
  ASSERT_EQ(t->abort(t), 0);
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_STREQ(bytes(), "old");
  Reopen();
  EXPECT_STREQ(bytes(), "old");
  EXPECT_FALSE(Has("file"));
}

TEST_F(AttachedStoreTest, WritesAfterPrepareAreCommittedToo) {
  ASSERT_EQ(rvm_begin(), 0);
  bytes()[0] = 'a';
  DB_TXN* t = nullptr;
  ASSERT_EQ(env_->txn_begin(env_, nullptr, &t, 0), 0);
  ASSERT_EQ(rvm_prepare_in(t), 0);
  EXPECT_EQ(WritableBytes(region_), 0u) << "prepare protects the pages again";
  bytes()[0] = 'b';
  bytes()[2 * PageBytes()] = 'c';
  ASSERT_EQ(t->commit(t, 0), 0);
  ASSERT_EQ(rvm_commit(), 0);
  Reopen();
  EXPECT_EQ(bytes()[0], 'b');
  EXPECT_EQ(bytes()[2 * PageBytes()], 'c');
}

TEST_F(AttachedStoreTest, OnlyNonZeroPagesAreStored) {
  EXPECT_EQ(StoreRecords(), 1) << "the region's meta record";
  ASSERT_EQ(rvm_begin(), 0);
  bytes()[0] = 1;
  bytes()[PageBytes()] = 1;
  ASSERT_EQ(rvm_commit(), 0);
  EXPECT_EQ(StoreRecords(), 3);
  ASSERT_EQ(rvm_begin(), 0);
  bytes()[0] = 0;                    // all zero again: the record goes
  bytes()[2 * PageBytes() + 1] = 0;  // written, but unchanged: nothing to store
  ASSERT_EQ(rvm_commit(), 0);
  EXPECT_EQ(StoreRecords(), 2);
  Reopen();
  EXPECT_EQ(bytes()[0], 0);
  EXPECT_EQ(bytes()[PageBytes()], 1);
}

}  // namespace
}  // namespace amino::rvm::testing
