// Files and the program's memory in one transaction: a program writes files through the Amino
// schema and keeps an in-memory index of them (a linked list built with rvm_alloc in a
// recoverable region). Aborting the transaction must bring back both the files and the index;
// committing must keep both. The index is tried in a volatile region and in a persistent one kept
// in the file system's own Berkeley DB environment, committed in the same Berkeley DB transaction.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "amino/rvm.h"
#include "rvm_test_util.h"
#include "schema/filesystem.h"
#include "schema/fsck.h"
#include "schema/records.h"
#include "schema/store.h"

namespace amino::rvm::testing {
namespace {

using schema::Cred;
using schema::FileSystem;
using schema::Status;
using schema::Transaction;

uint64_t Hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

struct FileInfo {
  uint64_t size;
  uint64_t hash;
  bool operator==(const FileInfo&) const = default;
};
using Listing = std::map<std::string, FileInfo>;

// The program's index: name -> size and hash of the contents, a list in the region.
class FileIndex {
 public:
  explicit FileIndex(rvm_region* region) : region_(region) {}

  void Put(const std::string& name, const std::string& contents) {
    Entry* e = Find(name);
    if (!e) {
      e = static_cast<Entry*>(rvm_alloc(region_, sizeof(Entry)));
      ASSERT_NE(e, nullptr);
      std::strncpy(e->name, name.c_str(), sizeof e->name - 1);
      e->next = Root()->head;
      Root()->head = e;
      Root()->count++;
    }
    e->size = contents.size();
    e->hash = Hash(contents);
  }

  void Remove(const std::string& name) {
    for (Entry** p = &Root()->head; *p; p = &(*p)->next) {
      if (name == (*p)->name) {
        Entry* e = *p;
        *p = e->next;
        Root()->count--;
        ASSERT_EQ(rvm_free(region_, e), 0);
        return;
      }
    }
    FAIL() << name << " is not in the index";
  }

  Listing Entries() const {
    Listing out;
    auto* root = static_cast<Head*>(rvm_get_root(region_));
    size_t n = 0;
    for (Entry* e = root ? root->head : nullptr; e; e = e->next, ++n) {
      out[e->name] = FileInfo{e->size, e->hash};
    }
    EXPECT_EQ(n, root ? root->count : 0);
    return out;
  }

 private:
  struct Entry {
    Entry* next;
    uint64_t size;
    uint64_t hash;
    char name[40];
  };
  struct Head {
    Entry* head;
    uint64_t count;
  };
  Head* Root() {
    auto* root = static_cast<Head*>(rvm_get_root(region_));
    if (!root) {
      root = static_cast<Head*>(rvm_alloc(region_, sizeof(Head)));
      root->head = nullptr;
      root->count = 0;
      EXPECT_EQ(rvm_set_root(region_, root), 0);
    }
    return root;
  }
  Entry* Find(const std::string& name) {
    for (Entry* e = Root()->head; e; e = e->next) {
      if (name == e->name) return e;
    }
    return nullptr;
  }
  rvm_region* region_;
};

// The application's transactions as libamino runs them (include/amino/rvm.h, "LIBAMINO"): each
// begin, commit and abort moves the file-system transaction and the thread's RVM transaction
// together.
class AppTransactions {
 public:
  AppTransactions(FileSystem* fs, bool persistent_in_fs_env)
      : fs_(fs), persistent_(persistent_in_fs_env) {}
  ~AppTransactions() {
    while (!stack_.empty()) Abort();
  }

  Transaction& Begin() {
    auto t = fs_->Begin(stack_.empty() ? nullptr : stack_.back().get());
    EXPECT_TRUE(t.ok()) << t.status().message();
    stack_.push_back(std::make_unique<Transaction>(std::move(t).value()));
    EXPECT_EQ(rvm_begin(), 0);
    return *stack_.back();
  }
  Transaction& current() { return *stack_.back(); }

  void Commit() {
    Transaction& t = *stack_.back();
    if (stack_.size() == 1 && persistent_) {
      // Region pages go into the file system's transaction: one Berkeley DB commit for both.
      ASSERT_EQ(rvm_prepare_in(t.raw()), 0);
      Status st = t.Commit();
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_EQ(rvm_commit(), 0);
    } else {
      ASSERT_EQ(rvm_commit(), 0);
      Status st = t.Commit();
      ASSERT_TRUE(st.ok()) << st.message();
    }
    stack_.pop_back();
  }

  void Abort() {
    ASSERT_EQ(rvm_abort_to(static_cast<int>(stack_.size()) - 1), 0);
    Status st = stack_.back()->Abort();
    EXPECT_TRUE(st.ok()) << st.message();
    stack_.pop_back();
  }

 private:
  FileSystem* fs_;
  bool persistent_;
  std::vector<std::unique_ptr<Transaction>> stack_;
};

void WriteFile(FileSystem& fs, Transaction& t, const std::string& name, const std::string& data) {
  auto o = fs.Open(t, Cred::Root(), "/" + name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  ASSERT_TRUE(o.ok()) << o.status().message();
  auto n = fs.Write(t, Cred::Root(), o->id, 0, data.data(), data.size());
  ASSERT_TRUE(n.ok()) << n.status().message();
  ASSERT_TRUE(fs.Close(t, o->id).ok());
}

// The root directory's regular files, as the index should describe them.
Listing Files(FileSystem& fs, Transaction& t) {
  Listing out;
  auto entries = fs.ReadDir(t, schema::kRootId, "", 1000);
  EXPECT_TRUE(entries.ok()) << entries.status().message();
  if (!entries.ok()) return out;
  for (const schema::DirEntry& e : *entries) {
    auto o = fs.Open(t, Cred::Root(), "/" + e.name, O_RDONLY);
    EXPECT_TRUE(o.ok());
    if (!o.ok()) continue;
    std::string data(o->stat.attr.size, '\0');
    auto n = fs.Read(t, o->id, 0, data.data(), data.size());
    EXPECT_TRUE(n.ok() && *n == data.size());
    EXPECT_TRUE(fs.Close(t, o->id).ok());
    out[e.name] = FileInfo{data.size(), Hash(data)};
  }
  return out;
}

class CombinedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(FileSystem::Mkfs(dir_.path() + "/fs").ok());
    OpenFs();
  }
  void OpenFs() {
    auto fs = FileSystem::Open(dir_.path() + "/fs");
    ASSERT_TRUE(fs.ok()) << fs.status().message();
    fs_ = std::move(fs).value();
  }
  Listing CommittedFiles() {
    auto t = fs_->Begin();
    EXPECT_TRUE(t.ok());
    Listing files = Files(*fs_, *t);
    EXPECT_TRUE(t->Commit().ok());
    return files;
  }

  // The scenario both tests run: a committed first version, then a transaction that creates,
  // rewrites and deletes files (partly in a nested transaction) and aborts.
  void CommitThenAbort(rvm_region* region, bool persistent) {
    FileIndex index(region);
    {
      AppTransactions app(fs_.get(), persistent);
      Transaction& t = app.Begin();
      for (const char* name : {"a", "b", "c"}) {
        std::string data = std::string("version 1 of ") + name;
        WriteFile(*fs_, t, name, data);
        index.Put(name, data);
      }
      app.Commit();
    }
    const Listing committed = CommittedFiles();
    ASSERT_EQ(committed.size(), 3u);
    ASSERT_EQ(index.Entries(), committed);
    const std::vector<char> region_before(static_cast<char*>(rvm_base(region)),
                                          static_cast<char*>(rvm_base(region)) + rvm_size(region));

    void* allocated_in_aborted = nullptr;
    {
      AppTransactions app(fs_.get(), persistent);
      Transaction& t = app.Begin();
      allocated_in_aborted = rvm_alloc(region, 24);
      WriteFile(*fs_, t, "d", "a new file");
      index.Put("d", "a new file");
      WriteFile(*fs_, t, "a", "version 2 of a, longer than the first");
      index.Put("a", "version 2 of a, longer than the first");
      ASSERT_TRUE(fs_->Unlink(t, Cred::Root(), "/b").ok());
      index.Remove("b");
      Transaction& inner = app.Begin();
      WriteFile(*fs_, inner, "e", std::string(10000, 'e'));
      index.Put("e", std::string(10000, 'e'));
      app.Commit();
      EXPECT_EQ(index.Entries(), Files(*fs_, app.current())) << "agree inside the transaction";
      EXPECT_EQ(index.Entries().size(), 4u);
      app.Abort();  // one call: files and index both go back
    }
    EXPECT_EQ(CommittedFiles(), committed);
    EXPECT_EQ(index.Entries(), committed);
    EXPECT_EQ(std::memcmp(rvm_base(region), region_before.data(), region_before.size()), 0)
        << "the region is byte for byte as before, allocator included";
    ASSERT_EQ(rvm_begin(), 0);
    EXPECT_EQ(rvm_alloc(region, 24), allocated_in_aborted) << "the allocator is rewound too";
    ASSERT_EQ(rvm_abort(), 0);
  }

  void ExpectFsckClean() {
    auto v = schema::Fsck(fs_->store());
    ASSERT_TRUE(v.ok()) << v.status().message();
    for (const auto& x : *v) ADD_FAILURE() << "fsck: " << x.invariant << ": " << x.detail;
  }

  TempDir dir_;
  std::unique_ptr<FileSystem> fs_;
};

TEST_F(CombinedTest, FilesAndVolatileIndexRewindTogether) {
  Region region(64 * PageBytes());
  CommitThenAbort(region.get(), false);
  ExpectFsckClean();
}

TEST_F(CombinedTest, FilesAndPersistentIndexCommitInOneTransaction) {
  rvm_store* store = nullptr;
  rvm_region* region = nullptr;
  ASSERT_EQ(rvm_store_attach(fs_->store().env(), 0, &store), 0);
  ASSERT_EQ(rvm_open(store, "index", 64 * PageBytes(), RVM_CREATE, &region), 0);
  CommitThenAbort(region, true);
  Listing committed = CommittedFiles();
  void* base = rvm_base(region);

  // Close everything and open it again: the index in the store agrees with the files.
  ASSERT_EQ(rvm_unmap(region), 0);
  ASSERT_EQ(rvm_store_close(store), 0);
  fs_.reset();
  OpenFs();
  ASSERT_EQ(rvm_store_attach(fs_->store().env(), 0, &store), 0);
  ASSERT_EQ(rvm_open(store, "index", 0, 0, &region), 0);
  ASSERT_EQ(rvm_base(region), base) << "the index holds pointers: it needs its address back";
  FileIndex index(region);
  EXPECT_EQ(CommittedFiles(), committed);
  EXPECT_EQ(index.Entries(), committed);
  ExpectFsckClean();
  ASSERT_EQ(rvm_unmap(region), 0);
  ASSERT_EQ(rvm_store_close(store), 0);
}

}  // namespace
}  // namespace amino::rvm::testing
