// Atomicity: an aborted transaction leaves no trace of its calls; a nested child's abort keeps
// the parent's earlier work; a parent's abort undoes children that committed into it; a failing
// call inside Run leaves no partial effect.
#include <fcntl.h>
#include <stdio.h>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

class TransactionTest : public FsTest {
 protected:
  Transaction Begin(Transaction* parent = nullptr) {
    Result<Transaction> t = fs_->Begin(parent);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return t.ok() ? std::move(t).value() : Transaction();
  }
  const Cred kRoot = Cred::Root();
};

TEST_F(TransactionTest, AbortUndoesAWrite) {
  ASSERT_TRUE(root().WriteFile("/f", "before").ok());
  FileId id = root().GetStat("/f")->ino;
  {
    Transaction t = Begin();
    Result<OpenResult> o = fs_->Open(t, kRoot, "/f", O_RDWR);
    ASSERT_TRUE(o.ok());
    ASSERT_TRUE(fs_->Write(t, kRoot, id, 3, "AFTER and longer", 16).ok());
    ASSERT_TRUE(fs_->Close(t, id).ok());
    ASSERT_TRUE(t.Abort().ok());
  }
  EXPECT_EQ(*root().ReadFile("/f"), "before");
  EXPECT_EQ(root().GetStat("/f")->attr.size, 6u);
}

TEST_F(TransactionTest, AbortUndoesNamespaceChanges) {
  ASSERT_TRUE(root().WriteFile("/keep", "k").ok());
  ASSERT_TRUE(root().Mkdir("/d").ok());
  ASSERT_TRUE(root().WriteFile("/d/f", "f").ok());
  {
    Transaction t = Begin();
    ASSERT_TRUE(fs_->Rename(t, kRoot, "/d", "/moved").ok());
    ASSERT_TRUE(fs_->Unlink(t, kRoot, "/keep").ok());
    ASSERT_TRUE(fs_->Mkdir(t, kRoot, "/new", 0755).ok());
    ASSERT_TRUE(fs_->Link(t, kRoot, "/moved/f", "/hard").ok());
    ASSERT_TRUE(fs_->SetXattr(t, kRoot, "/moved/f", "user.a", "v", 0).ok());
    ASSERT_TRUE(fs_->Chmod(t, kRoot, "/moved", 0700).ok());
    // Inside the transaction the changes are visible.
    EXPECT_TRUE(fs_->GetStat(t, kRoot, "/moved/f").ok());
    EXPECT_FALSE(fs_->GetStat(t, kRoot, "/keep").ok());
    ASSERT_TRUE(t.Abort().ok());
  }
  EXPECT_EQ(*root().ReadFile("/keep"), "k");
  EXPECT_EQ(*root().ReadFile("/d/f"), "f");
  EXPECT_EQ(Perm(*root().GetStat("/d")), 0755u);
  EXPECT_ERRNO(root().GetStat("/moved"), ENOENT);
  EXPECT_ERRNO(root().GetStat("/new"), ENOENT);
  EXPECT_ERRNO(root().GetStat("/hard"), ENOENT);
  EXPECT_EQ(root().GetStat("/d/f")->attr.nlink, 1u);
  EXPECT_ERRNO(root().GetXattr("/d/f", "user.a"), ENODATA);
  EXPECT_EQ(root().ListNames("/").value(), (std::vector<std::string>{"d", "keep"}));
}

TEST_F(TransactionTest, DestroyingAnUncommittedTransactionAborts) {
  {
    Transaction t = Begin();
    ASSERT_TRUE(fs_->Mkdir(t, kRoot, "/gone", 0755).ok());
  }
  EXPECT_ERRNO(root().GetStat("/gone"), ENOENT);
}

TEST_F(TransactionTest, ChildAbortKeepsTheParentsEarlierWork) {
  {
    Transaction parent = Begin();
    ASSERT_TRUE(fs_->Mkdir(parent, kRoot, "/a", 0755).ok());
    {
      Transaction child = Begin(&parent);
      ASSERT_TRUE(fs_->Mkdir(child, kRoot, "/b", 0755).ok());
      ASSERT_TRUE(fs_->Rename(child, kRoot, "/a", "/a2").ok());
      ASSERT_TRUE(child.Abort().ok());
    }
    EXPECT_TRUE(fs_->GetStat(parent, kRoot, "/a").ok());
    EXPECT_FALSE(fs_->GetStat(parent, kRoot, "/b").ok());
    ASSERT_TRUE(fs_->Mkdir(parent, kRoot, "/c", 0755).ok());
    ASSERT_TRUE(parent.Commit().ok());
  }
  EXPECT_EQ(root().ListNames("/").value(), (std::vector<std::string>{"a", "c"}));
}

TEST_F(TransactionTest, ParentAbortUndoesACommittedChild) {
  ASSERT_TRUE(root().WriteFile("/f", "orig").ok());
  {
    Transaction parent = Begin();
    {
      Transaction child = Begin(&parent);
      ASSERT_TRUE(fs_->Truncate(child, kRoot, "/f", 0).ok());
      ASSERT_TRUE(fs_->Mkdir(child, kRoot, "/d", 0755).ok());
      ASSERT_TRUE(child.Commit().ok());
    }
    EXPECT_TRUE(fs_->GetStat(parent, kRoot, "/d").ok());
    ASSERT_TRUE(parent.Abort().ok());
  }
  EXPECT_ERRNO(root().GetStat("/d"), ENOENT);
  EXPECT_EQ(*root().ReadFile("/f"), "orig");
}

TEST_F(TransactionTest, RunAbortsWhenTheBodyFails) {
  Status st = fs_->Run([&](Transaction& t) -> Status {
    AMINO_RETURN_IF_ERROR(fs_->Mkdir(t, kRoot, "/partial", 0755).status());
    return fs_->Rmdir(t, kRoot, "/not-there");  // the call fails: nothing it began may remain
  });
  EXPECT_EQ(ErrName(Err(st)), "ENOENT");
  EXPECT_ERRNO(root().GetStat("/partial"), ENOENT);
}

TEST_F(TransactionTest, NestedRunCommitsIntoTheParentOnly) {
  Transaction parent = Begin();
  Status st = fs_->Run(&parent, {}, [&](Transaction& t) -> Status {
    return fs_->Mkdir(t, kRoot, "/inner", 0755).status();
  });
  ASSERT_TRUE(st.ok()) << st.message();
  st = fs_->Run(&parent, {}, [&](Transaction& t) -> Status {
    AMINO_RETURN_IF_ERROR(fs_->Mkdir(t, kRoot, "/failed", 0755).status());
    return Status::Errno(EIO);
  });
  EXPECT_EQ(ErrName(Err(st)), "EIO");
  EXPECT_TRUE(fs_->GetStat(parent, kRoot, "/inner").ok());
  EXPECT_FALSE(fs_->GetStat(parent, kRoot, "/failed").ok());
  ASSERT_TRUE(parent.Abort().ok());
  EXPECT_ERRNO(root().GetStat("/inner"), ENOENT);
}

TEST_F(TransactionTest, CommittedWorkSurvivesReopen) {
  {
    Transaction t = Begin();
    ASSERT_TRUE(fs_->Mkdir(t, kRoot, "/durable", 0755).ok());
    ASSERT_TRUE(t.Commit().ok());
  }
  Reopen();
  EXPECT_TRUE(root().GetStat("/durable").ok());
}

}  // namespace
}  // namespace amino::schema::testing
