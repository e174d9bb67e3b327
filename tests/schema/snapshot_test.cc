// Snapshot transactions (TxnOptions::snapshot): a call that met another transaction's lock
// reads the metadata as last committed instead of waiting, and is refused (a conflict, so the
// monitor parks it as before) whatever would change something, read the Data database, or
// hold or free a file another transaction is deciding on (open_holds.h).
#include <fcntl.h>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

class SnapshotTest : public FsTest {
 protected:
  // A transaction as the monitor begins one for a call of its own: no waiting for locks.
  Transaction Locking() { return BeginWith(false); }
  // The same reading a snapshot, as the monitor retries a call that met a lock.
  Transaction Snapshot() { return BeginWith(true); }

  void SetUp() override {
    FsTest::SetUp();
    ASSERT_TRUE(fs_->Run([&](Transaction& t) {
                     AMINO_RETURN_IF_ERROR(fs_->Mkdir(t, Cred::Root(), "/d", 0755).status());
                     AMINO_ASSIGN_OR_RETURN(OpenResult f, fs_->Open(t, Cred::Root(), "/d/f",
                                                                    O_CREAT | O_WRONLY, 0644));
                     AMINO_RETURN_IF_ERROR(fs_->Write(t, Cred::Root(), f.id, 0, "abc", 3).status());
                     f_ = f.id;
                     return fs_->Close(t, f.id);
                   })
                    .ok());
  }

  // The names listed in /d by `t`.
  std::vector<std::string> List(Transaction& t) {
    std::vector<std::string> names;
    Result<Stat> d = fs_->GetStat(t, Cred::Root(), "/d");
    EXPECT_TRUE(d.ok()) << d.status().message();
    if (!d.ok()) return names;
    Result<std::vector<DirEntry>> entries = fs_->ReadDir(t, d->ino, "", 100);
    EXPECT_TRUE(entries.ok()) << entries.status().message();
    if (entries.ok()) {
      for (const DirEntry& e : *entries) names.push_back(e.name);
    }
    return names;
  }

  FileId f_ = 0;

 private:
  Transaction BeginWith(bool snapshot) {
    TxnOptions o;
    o.nowait = true;
    o.snapshot = snapshot;
    Result<Transaction> t = fs_->Begin(nullptr, o);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return std::move(t).value();
  }
};

TEST_F(SnapshotTest, ReadsMetadataAsLastCommittedPastAWritersLocks) {
  Transaction w = Locking();
  Result<OpenResult> f = fs_->Open(w, Cred::Root(), "/d/f", O_WRONLY);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_TRUE(fs_->Write(w, Cred::Root(), f->id, 0, "longer text", 11).ok());
  ASSERT_TRUE(fs_->Close(w, f->id).ok());
  ASSERT_TRUE(fs_->Mkdir(w, Cred::Root(), "/d/g", 0755).ok());

  {
    Transaction l = Locking();
    Result<Stat> st = fs_->GetStat(l, Cred::Root(), "/d/f");
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(st.status().is_conflict()) << st.status().message();
  }
  {
    Transaction s = Snapshot();
    Result<Stat> st = fs_->GetStat(s, Cred::Root(), "/d/f");
    ASSERT_TRUE(st.ok()) << st.status().message();
    EXPECT_EQ(st->attr.size, 3u);
    EXPECT_EQ(List(s), std::vector<std::string>{"f"});
    Result<Stat> by_id = fs_->FStat(s, f_);
    ASSERT_TRUE(by_id.ok()) << by_id.status().message();
    EXPECT_EQ(by_id->attr.size, 3u);
    EXPECT_TRUE(s.Commit().ok());
  }
  ASSERT_TRUE(w.Commit().ok());
  Transaction s = Snapshot();
  Result<Stat> st = fs_->GetStat(s, Cred::Root(), "/d/f");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->attr.size, 11u);
  EXPECT_EQ(List(s), (std::vector<std::string>{"f", "g"}));
  EXPECT_TRUE(s.Commit().ok());
}

TEST_F(SnapshotTest, RefusesChangesAndFileDataAsConflicts) {
  {
    Transaction s = Snapshot();
    Status st = fs_->Mkdir(s, Cred::Root(), "/d/h", 0755).status();
    EXPECT_TRUE(st.is_conflict()) << st.message();
    EXPECT_TRUE(fs_->SnapshotRefusedChange());
  }
  {
    Transaction s = Snapshot();
    EXPECT_FALSE(fs_->SnapshotRefusedChange());  // each snapshot starts unrefused
    char buf[8];
    Result<size_t> n = fs_->Read(s, f_, 0, buf, sizeof buf);
    ASSERT_FALSE(n.ok());
    EXPECT_TRUE(n.status().is_conflict()) << n.status().message();
    EXPECT_TRUE(fs_->SnapshotRefusedChange());
  }
  Transaction l = Locking();
  Result<Stat> st = fs_->GetStat(l, Cred::Root(), "/d/h");
  EXPECT_EQ(st.status().error(), ENOENT);  // the refused mkdir left nothing
}

TEST_F(SnapshotTest, OpenOfAFileAnotherTransactionRemovesWaits) {
  Transaction w = Locking();
  ASSERT_TRUE(fs_->Unlink(w, Cred::Root(), "/d/f").ok());
  {
    // The snapshot still has the name, but the remover decided to free the file.
    Transaction s = Snapshot();
    Result<OpenResult> o = fs_->Open(s, Cred::Root(), "/d/f", O_RDONLY);
    ASSERT_FALSE(o.ok());
    EXPECT_TRUE(o.status().is_conflict()) << o.status().message();
  }
  ASSERT_TRUE(w.Commit().ok());
  Transaction s = Snapshot();
  Result<OpenResult> o = fs_->Open(s, Cred::Root(), "/d/f", O_RDONLY);
  EXPECT_EQ(o.status().error(), ENOENT);
}

TEST_F(SnapshotTest, ARemovalWaitsWhileASnapshotOpensTheFile) {
  Transaction s = Snapshot();
  Result<OpenResult> o = fs_->Open(s, Cred::Root(), "/d/f", O_RDONLY);
  ASSERT_TRUE(o.ok()) << o.status().message();
  {
    Transaction w = Locking();
    Status st = fs_->Unlink(w, Cred::Root(), "/d/f");
    EXPECT_TRUE(st.is_conflict()) << st.message();
  }
  ASSERT_TRUE(s.Commit().ok());
  // Now the removal sees the file open: an orphan, freed by the last close.
  ASSERT_TRUE(fs_->Run([&](Transaction& t) { return fs_->Unlink(t, Cred::Root(), "/d/f"); }).ok());
  {
    Transaction c = Snapshot();
    Status st = fs_->Close(c, o->id);  // nameless: the close may have to free it
    EXPECT_TRUE(st.is_conflict()) << st.message();
  }
  ASSERT_TRUE(fs_->Run([&](Transaction& t) { return fs_->Close(t, o->id); }).ok());
  Transaction l = Locking();
  EXPECT_EQ(fs_->FStat(l, o->id).status().error(), ESTALE);  // freed
}

TEST_F(SnapshotTest, CloseOfANamedFileReleasesItsHold) {
  Transaction s = Snapshot();
  Result<OpenResult> o = fs_->Open(s, Cred::Root(), "/d/f", O_RDONLY);
  ASSERT_TRUE(o.ok()) << o.status().message();
  ASSERT_TRUE(s.Commit().ok());
  Transaction c = Snapshot();
  ASSERT_TRUE(fs_->Close(c, o->id).ok());
  ASSERT_TRUE(c.Commit().ok());
  // Not held any more: its removal frees it at once.
  ASSERT_TRUE(fs_->Run([&](Transaction& t) { return fs_->Unlink(t, Cred::Root(), "/d/f"); }).ok());
  Transaction l = Locking();
  EXPECT_EQ(fs_->FStat(l, o->id).status().error(), ESTALE);
}

}  // namespace
}  // namespace amino::schema::testing
