// The store's read cache (src/schema/read_cache.h): calls that may read from it see what
// another process committed, never what an unfinished or aborted transaction wrote, and a call
// that relied on a cached record fails with a conflict when another process changed the file
// system while it ran.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_test.h"
#include "schema/open_holds.h"
#include "schema/store.h"

namespace amino::schema::testing {
namespace {

class ReadCacheTest : public FsTest {
 protected:
  // A transaction as the monitor begins one for a call of its own.
  Transaction Cached() {
    TxnOptions o;
    o.nowait = true;
    o.cached = true;
    Result<Transaction> t = fs_->Begin(nullptr, o);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return std::move(t).value();
  }
  // The size of `path` in a cached transaction of its own, committed.
  uint64_t CachedSize(const std::string& path) {
    Transaction t = Cached();
    Result<Stat> st = fs_->GetStat(t, Cred::Root(), path);
    EXPECT_TRUE(st.ok()) << st.status().message();
    EXPECT_TRUE(t.Commit().ok());
    return st.ok() ? st->attr.size : ~uint64_t{0};
  }
  // Runs `body` on the file system in another process, which opens it itself.
  void InAnotherProcess(const std::function<bool(FileSystem&)>& body) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      Result<std::unique_ptr<FileSystem>> other = FileSystem::Open(db_->path() + "/fs");
      if (!other.ok()) _exit(2);
      const bool ok = body(**other);
      other->reset();
      _exit(ok ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  // Another process removes `path` in a transaction that it keeps open until FinishRemoval:
  // the removal has asked whether anyone holds the file, and changed its records, uncommitted.
  void StartRemoval(const std::string& path) {
    ASSERT_EQ(pipe(to_child_), 0);
    ASSERT_EQ(pipe(to_parent_), 0);
    remover_ = fork();
    ASSERT_GE(remover_, 0);
    if (remover_ == 0) {
      Result<std::unique_ptr<FileSystem>> other = FileSystem::Open(db_->path() + "/fs");
      if (!other.ok()) _exit(2);
      Result<Transaction> t = (*other)->Begin(nullptr, {});
      char go = 0;
      if (!t.ok() || !(*other)->Unlink(*t, Cred::Root(), path).ok() ||
          write(to_parent_[1], "u", 1) != 1 || read(to_child_[0], &go, 1) != 1 ||
          !t->Commit().ok()) {
        _exit(3);
      }
      other->reset();
      _exit(0);
    }
    char removed = 0;
    ASSERT_EQ(read(to_parent_[0], &removed, 1), 1);
  }
  void FinishRemoval() {
    ASSERT_EQ(write(to_child_[1], "c", 1), 1);
    int status = 0;
    ASSERT_EQ(waitpid(remover_, &status, 0), remover_);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    for (int fd : {to_child_[0], to_child_[1], to_parent_[0], to_parent_[1]}) close(fd);
  }
  static bool Truncate(FileSystem& fs, const std::string& path, int64_t size) {
    return fs.Run([&](Transaction& t) { return fs.Truncate(t, Cred::Root(), path, size); }).ok();
  }
  uint64_t hits() { return fs_->store().read_cache()->hits(); }
  // A transaction as the monitor tries first for a call of its own (TxnOptions::deferred).
  Transaction Deferred() {
    TxnOptions o;
    o.nowait = true;
    o.cached = true;
    o.deferred = true;
    Result<Transaction> t = fs_->Begin(nullptr, o);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return std::move(t).value();
  }
  // Berkeley DB transactions begun in this environment so far.
  uint64_t TxnsBegun() {
    DB_ENV* env = fs_->store().env();
    DB_TXN_STAT* st = nullptr;
    EXPECT_EQ(env->txn_stat(env, &st, 0), 0);
    const uint64_t n = st ? st->st_nbegins : 0;
    free(st);
    return n;
  }

 private:
  int to_child_[2] = {-1, -1}, to_parent_[2] = {-1, -1};
  pid_t remover_ = -1;
};

TEST_F(ReadCacheTest, ASecondLookupComesFromTheCache) {
  ASSERT_TRUE(root().Mkdir("/d").ok());
  ASSERT_TRUE(root().WriteFile("/d/f", "abc").ok());
  EXPECT_EQ(CachedSize("/d/f"), 3u);
  const uint64_t before = hits();
  EXPECT_EQ(CachedSize("/d/f"), 3u);
  EXPECT_GT(hits(), before) << "the walk's records were looked up again";
}

TEST_F(ReadCacheTest, WhatAnotherProcessCommitsIsSeen) {
  ASSERT_TRUE(root().WriteFile("/f", "abc").ok());
  EXPECT_EQ(CachedSize("/f"), 3u);
  EXPECT_EQ(CachedSize("/f"), 3u);
  InAnotherProcess([](FileSystem& fs) { return Truncate(fs, "/f", 100); });
  EXPECT_EQ(CachedSize("/f"), 100u) << "a stale record served from the cache";
  // A name another process made is found, though its absence was cached.
  {
    Transaction t = Cached();
    EXPECT_EQ(fs_->GetStat(t, Cred::Root(), "/new").status().error(), ENOENT);
  }
  InAnotherProcess([](FileSystem& fs) {
    return fs.Run([&](Transaction& t) { return fs.Mkdir(t, Cred::Root(), "/new", 0755).status(); })
        .ok();
  });
  Transaction t = Cached();
  EXPECT_TRUE(fs_->GetStat(t, Cred::Root(), "/new").ok());
}

TEST_F(ReadCacheTest, ACallThatReliedOnTheCacheFailsWhenAnotherProcessCommitsMeanwhile) {
  ASSERT_TRUE(root().WriteFile("/f", "abc").ok());
  ASSERT_TRUE(root().WriteFile("/g", "").ok());
  EXPECT_EQ(CachedSize("/f"), 3u);
  Transaction t = Cached();
  Result<Stat> st = fs_->GetStat(t, Cred::Root(), "/f");  // from the cache
  ASSERT_TRUE(st.ok());
  InAnotherProcess([](FileSystem& fs) { return Truncate(fs, "/f", 7); });
  // What it read is no longer so: neither a failure nor a commit may stand on it.
  EXPECT_TRUE(t.CheckCachedReads().is_conflict());
  // A write standing on it: refused as soon as it reads what the other process committed, or
  // at its commit.
  Status wrote = fs_->Truncate(t, Cred::Root(), "/g", static_cast<int64_t>(st->attr.size));
  Status ended = wrote.ok() ? t.Commit() : wrote;
  EXPECT_TRUE(ended.is_conflict()) << ended.message();
  EXPECT_EQ(CachedSize("/g"), 0u) << "the conflicting call's write was committed";
  EXPECT_EQ(CachedSize("/f"), 7u);
}

TEST_F(ReadCacheTest, OwnWritesAreSeenAndAbortedOnesForgotten) {
  ASSERT_TRUE(root().WriteFile("/f", "abc").ok());
  EXPECT_EQ(CachedSize("/f"), 3u);
  {
    Transaction t = Cached();
    ASSERT_TRUE(fs_->Truncate(t, Cred::Root(), "/f", 50).ok());
    Result<Stat> st = fs_->GetStat(t, Cred::Root(), "/f");  // its own write, uncommitted
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->attr.size, 50u);
    ASSERT_TRUE(t.Abort().ok());
  }
  EXPECT_EQ(CachedSize("/f"), 3u) << "an aborted write served from the cache";
  {
    Transaction t = Cached();
    ASSERT_TRUE(fs_->Truncate(t, Cred::Root(), "/f", 9).ok());
    ASSERT_TRUE(t.Commit().ok());
  }
  EXPECT_EQ(CachedSize("/f"), 9u);
}

TEST_F(ReadCacheTest, AnUnfinishedTransactionsWriteIsNeverServed) {
  // An application transaction of this very process writes; a call of its own must wait for it
  // (here: a conflict, as it asks not to wait), not read the value from before.
  ASSERT_TRUE(root().WriteFile("/f", "abc").ok());
  EXPECT_EQ(CachedSize("/f"), 3u);
  Result<Transaction> app = fs_->Begin(nullptr, {});
  ASSERT_TRUE(app.ok());
  ASSERT_TRUE(fs_->Truncate(*app, Cred::Root(), "/f", 20).ok());
  {
    Transaction t = Cached();
    Result<Stat> st = fs_->GetStat(t, Cred::Root(), "/f");
    EXPECT_TRUE(st.status().is_conflict()) << (st.ok() ? "read the value from before" : "");
  }
  ASSERT_TRUE(app->Commit().ok());
  EXPECT_EQ(CachedSize("/f"), 20u);
}

TEST_F(ReadCacheTest, AClosingCallWaitsForAnotherProcessRemovingTheFile) {
  // Open files are holds (open_holds.h): the last close and a removal take turns on the file's
  // record, so exactly one of them frees it. The closer's record, cached, must not let it skip
  // its turn: here another process has asked whether the file is held (yes: by us) and is about
  // to make it an orphan; our close must wait for that, and then free the orphan.
  ASSERT_TRUE(root().WriteFile("/f", "abc").ok());
  Result<OpenResult> o = root().Open("/f", O_RDONLY);
  ASSERT_TRUE(o.ok());
  {
    Transaction t = Cached();  // the file's records are now cached
    ASSERT_TRUE(fs_->FStat(t, o->id).ok());
    ASSERT_TRUE(t.Commit().ok());
  }
  ASSERT_NO_FATAL_FAILURE(StartRemoval("/f"));
  {
    Transaction t = Cached();
    Status closed = fs_->Close(t, o->id);
    EXPECT_TRUE(closed.is_conflict()) << "closed past the removal: " << closed.message();
    (void)t.Abort();
  }
  ASSERT_NO_FATAL_FAILURE(FinishRemoval());
  ASSERT_TRUE(root().Close(o->id).ok());
  EXPECT_FALSE(root().FStat(o->id).ok()) << "the orphan outlived its last close";
}

TEST_F(ReadCacheTest, AnOpeningCallWaitsForAnotherProcessRemovingTheFile) {
  // The other side of the same turn: the path of an open comes from the cache (no lock on the
  // name), while another process, having found the file held by nobody, is freeing it. The open
  // must wait for that (and then find the name gone), not hold a file being freed.
  ASSERT_TRUE(root().WriteFile("/f", "abc").ok());
  EXPECT_EQ(CachedSize("/f"), 3u);
  ASSERT_NO_FATAL_FAILURE(StartRemoval("/f"));  // being freed, not yet committed
  {
    Transaction t = Cached();
    Result<OpenResult> opened = fs_->Open(t, Cred::Root(), "/f", O_RDONLY);
    EXPECT_TRUE(opened.status().is_conflict())
        << (opened.ok() ? "opened a file another process is freeing" : opened.status().message());
    (void)t.Abort();
  }
  ASSERT_NO_FATAL_FAILURE(FinishRemoval());
  Transaction t = Cached();
  EXPECT_EQ(fs_->Open(t, Cred::Root(), "/f", O_RDONLY).status().error(), ENOENT);
}

TEST_F(ReadCacheTest, ACallWhoseRecordsAreAllCachedNeedsNoBerkeleyDbTransaction) {
  ASSERT_TRUE(root().Mkdir("/d").ok());
  ASSERT_TRUE(root().WriteFile("/d/f", "abc").ok());
  EXPECT_EQ(CachedSize("/d/f"), 3u);
  {
    Transaction t = Cached();  // "/d/g" known absent from now on
    EXPECT_EQ(fs_->GetStat(t, Cred::Root(), "/d/g").status().error(), ENOENT);
  }
  const uint64_t begun = TxnsBegun();
  for (int i = 0; i < 3; ++i) {
    Transaction t = Deferred();
    EXPECT_TRUE(t.deferred());
    Result<Stat> st = fs_->GetStat(t, Cred::Root(), "/d/f");
    ASSERT_TRUE(st.ok()) << st.status().message();
    EXPECT_EQ(st->attr.size, 3u);
    // A name known absent is an answer too.
    EXPECT_EQ(fs_->GetStat(t, Cred::Root(), "/d/g").status().error(), ENOENT);
    ASSERT_TRUE(t.CheckCachedReads().ok());
    ASSERT_TRUE(t.Commit().ok());
    EXPECT_FALSE(fs_->DeferralRefused());
  }
  EXPECT_EQ(TxnsBegun(), begun);
}

// A listing reads each entry's record: kept, a stat of each entry after it (ls -l, du, git
// status) needs no Berkeley DB transaction; what another process commits later is still seen.
TEST_F(ReadCacheTest, AListingKeepsItsEntriesForTheCallsAfterIt) {
  ASSERT_TRUE(root().Mkdir("/d").ok());
  ASSERT_TRUE(root().WriteFile("/d/a", "abc").ok());
  ASSERT_TRUE(root().WriteFile("/d/b", "abcdef").ok());
  FileId dir = 0;
  {
    Transaction t = Cached();
    Result<OpenResult> o = fs_->Open(t, Cred::Root(), "/d", O_RDONLY | O_DIRECTORY);
    ASSERT_TRUE(o.ok()) << o.status().message();
    dir = o->id;
    Result<std::vector<DirEntry>> l = fs_->ReadDir(t, dir, "", 100);
    ASSERT_TRUE(l.ok()) << l.status().message();
    EXPECT_EQ(l->size(), 2u);
    ASSERT_TRUE(t.Commit().ok());
  }
  const uint64_t begun = TxnsBegun();
  {
    Transaction t = Deferred();
    Result<Stat> a = fs_->GetStat(t, Cred::Root(), "/d/a");
    Result<Stat> b = fs_->GetStat(t, Cred::Root(), "/d/b");
    ASSERT_TRUE(a.ok() && b.ok()) << "an entry listed was not kept";
    EXPECT_EQ(a->attr.size, 3u);
    EXPECT_EQ(b->attr.size, 6u);
    ASSERT_TRUE(t.Commit().ok());
  }
  EXPECT_EQ(TxnsBegun(), begun);
  InAnotherProcess([](FileSystem& fs) { return Truncate(fs, "/d/b", 9); });
  EXPECT_EQ(CachedSize("/d/b"), 9u) << "a listed record outlived another process's commit";
  ASSERT_TRUE(root().Close(dir).ok());
}

TEST_F(ReadCacheTest, ADeferredCallReadsWhatIsNotCachedWithoutATransactionOfItsOwn) {
  ASSERT_TRUE(root().Mkdir("/d").ok());
  const std::string big(3 * 4096 + 10, 'x');
  ASSERT_TRUE(root().WriteFile("/d/f", "abc").ok());
  ASSERT_TRUE(root().WriteFile("/d/g", big).ok());
  Reopen();  // nothing cached
  const uint64_t begun = TxnsBegun();
  for (int round = 0; round < 2; ++round) {
    Transaction t = Deferred();
    ASSERT_TRUE(t.deferred());
    Result<Stat> f = fs_->GetStat(t, Cred::Root(), "/d/f");
    ASSERT_TRUE(f.ok()) << f.status().message();
    Result<Stat> g = fs_->GetStat(t, Cred::Root(), "/d/g");
    ASSERT_TRUE(g.ok()) << g.status().message();
    char small[8] = {};
    Result<size_t> n = fs_->Read(t, f->ino, 0, small, sizeof small);
    ASSERT_TRUE(n.ok()) << n.status().message();
    EXPECT_EQ(std::string(small, *n), "abc");
    std::string across(big.size(), '\0');  // several pages: a cursor
    n = fs_->Read(t, g->ino, 0, across.data(), across.size());
    ASSERT_TRUE(n.ok()) << n.status().message();
    EXPECT_EQ(across, big);
    Result<std::vector<DirEntry>> listed =
        fs_->ReadDir(t, fs_->GetStat(t, Cred::Root(), "/d")->ino, "", 10);
    ASSERT_TRUE(listed.ok()) << listed.status().message();
    EXPECT_EQ(listed->size(), 2u);
    EXPECT_FALSE(fs_->DeferralRefused());
    ASSERT_TRUE(t.Commit().ok());
  }
  // One transaction for all of that, the store's reader, kept for the next calls.
  EXPECT_EQ(TxnsBegun() - begun, 1u);
}

TEST_F(ReadCacheTest, ADeferredReadFailsWhenAnotherProcessCommitsMeanwhile) {
  ASSERT_TRUE(root().WriteFile("/f", "abc").ok());
  Transaction t = Deferred();
  Result<Stat> st = fs_->GetStat(t, Cred::Root(), "/f");
  ASSERT_TRUE(st.ok());
  char buf[8] = {};
  Result<size_t> n = fs_->Read(t, st->ino, 0, buf, sizeof buf);
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(std::string(buf, *n), "abc");
  InAnotherProcess([](FileSystem& fs) { return Client(&fs).WriteFile("/f", "xyz").ok(); });
  Status committed = t.Commit();
  EXPECT_TRUE(committed.is_conflict()) << "a stale read stood: " << committed.message();
}

TEST_F(ReadCacheTest, ADeferredReadDoesNotWaitForAnotherTransactionsLock) {
  // Another process is removing the file, uncommitted: its records are locked. The deferred
  // read must not wait for that (the monitor would stop with it), only fail, to run again.
  ASSERT_TRUE(root().WriteFile("/f", "abc").ok());
  Reopen();  // nothing cached
  ASSERT_NO_FATAL_FAILURE(StartRemoval("/f"));
  {
    Transaction t = Deferred();
    Result<Stat> st = fs_->GetStat(t, Cred::Root(), "/f");
    EXPECT_TRUE(st.status().is_conflict())
        << (st.ok() ? "read a record another transaction holds" : st.status().message());
    EXPECT_FALSE(fs_->DeferralRefused());
    (void)t.Abort();
  }
  ASSERT_NO_FATAL_FAILURE(FinishRemoval());
  Transaction t = Deferred();
  EXPECT_EQ(fs_->GetStat(t, Cred::Root(), "/f").status().error(), ENOENT);
  ASSERT_TRUE(t.Commit().ok());
}

TEST_F(ReadCacheTest, ADeferredCallIsRefusedWhatChangesTheFileSystem) {
  ASSERT_TRUE(root().WriteFile("/f", "abc").ok());
  ASSERT_TRUE(root().WriteFile("/g", "abcdef").ok());
  EXPECT_EQ(CachedSize("/f"), 3u);
  {
    // A write: nothing of it remains.
    Transaction t = Deferred();
    EXPECT_TRUE(fs_->Truncate(t, Cred::Root(), "/f", 50).is_conflict());
    EXPECT_TRUE(fs_->DeferralRefused());
    EXPECT_TRUE(t.Commit().ok());
  }
  EXPECT_EQ(CachedSize("/f"), 3u);
  {
    // An open (a hold and the record's lock): the hold taken on the way is given back.
    Transaction t = Deferred();
    EXPECT_TRUE(fs_->Open(t, Cred::Root(), "/f", O_RDONLY).status().is_conflict());
    EXPECT_TRUE(fs_->DeferralRefused());
    (void)t.Abort();
  }
  EXPECT_EQ(fs_->store().holds().files(), 0u);
  {
    // A child transaction: it would need a locker.
    Transaction t = Deferred();
    EXPECT_TRUE(fs_->Begin(&t, {}).status().is_conflict());
    EXPECT_TRUE(fs_->DeferralRefused());
    (void)t.Abort();
  }
  // Run again in a real transaction, each of them works.
  Transaction t = Cached();
  EXPECT_FALSE(t.deferred());
  EXPECT_TRUE(fs_->GetStat(t, Cred::Root(), "/g").ok());
  EXPECT_TRUE(fs_->Truncate(t, Cred::Root(), "/f", 50).ok());
  ASSERT_TRUE(t.Commit().ok());
  EXPECT_EQ(CachedSize("/f"), 50u);
}

TEST_F(ReadCacheTest, ADeferredCallFailsWhenAnotherProcessCommitsMeanwhile) {
  ASSERT_TRUE(root().WriteFile("/f", "abc").ok());
  EXPECT_EQ(CachedSize("/f"), 3u);
  Transaction t = Deferred();
  Result<Stat> st = fs_->GetStat(t, Cred::Root(), "/f");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->attr.size, 3u);
  InAnotherProcess([](FileSystem& fs) { return Truncate(fs, "/f", 7); });
  EXPECT_TRUE(t.CheckCachedReads().is_conflict());
  Status committed = t.Commit();
  EXPECT_TRUE(committed.is_conflict()) << "a stale answer stood: " << committed.message();
  EXPECT_FALSE(fs_->DeferralRefused()) << "stale, not refused: the call runs again all the same";
  EXPECT_EQ(CachedSize("/f"), 7u);
}

TEST_F(ReadCacheTest, ADeferredCallBesideAnotherCachedOneIsAnOrdinaryTransaction) {
  ASSERT_TRUE(root().WriteFile("/f", "abc").ok());
  Transaction first = Cached();
  Transaction second = Deferred();
  EXPECT_FALSE(second.deferred());
  Result<Stat> st = fs_->GetStat(second, Cred::Root(), "/f");
  ASSERT_TRUE(st.ok()) << st.status().message();
  ASSERT_TRUE(second.Commit().ok());
  ASSERT_TRUE(first.Commit().ok());
  // Once that one ended, the next is deferred again.
  Transaction third = Deferred();
  EXPECT_TRUE(third.deferred());
  ASSERT_TRUE(third.Commit().ok());
}

}  // namespace
}  // namespace amino::schema::testing
