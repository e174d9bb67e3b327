// fsck against a healthy file system and against databases broken by hand, one invariant at a
// time. Each corruption is written with raw Store primitives so that it breaks exactly the rule
// under test (the rest stays consistent), and each test asserts the exact set of rules reported
// and that the report names the damaged record: a checker that never fails proves nothing.
#include "schema/fsck.h"

#include <gtest/gtest.h>

#include "fsck_fixture.h"

namespace amino::schema {
namespace {

using namespace fsck_testing;

// --- Healthy file systems ---------------------------------------------------------------------

TEST_F(FsckTest, HealthyFileSystemIsClean) {
  std::vector<Violation> vs = Check();
  EXPECT_TRUE(vs.empty()) << Describe(vs);
}

TEST_F(FsckTest, FreshFileSystemIsClean) {
  std::string other = dir_ + "/fresh";
  ASSERT_TRUE(FileSystem::Mkfs(other).ok());
  auto fs = FileSystem::Open(other);
  ASSERT_TRUE(fs.ok()) << fs.status().message();
  auto r = Fsck((*fs)->store());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->empty()) << Describe(*r);
}

TEST_F(FsckTest, CleanAfterRenamesUnlinksAndTruncates) {
  Cred root = Cred::Root();
  Status st = fs_->Run([&](Transaction& t) -> Status {
    AMINO_RETURN_IF_ERROR(fs_->Rename(t, root, "/dir", "/moved"));
    AMINO_RETURN_IF_ERROR(fs_->Unlink(t, root, "/a"));  // back to one name: DLMD -> PLMD
    AMINO_RETURN_IF_ERROR(fs_->Truncate(t, root, "/moved/file", 4100));
    AMINO_RETURN_IF_ERROR(fs_->Truncate(t, root, "/sparse", 2));
    AMINO_RETURN_IF_ERROR(fs_->Rmdir(t, root, "/moved/sub"));
    return fs_->Close(t, orphan_);  // the last close frees the orphan
  });
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<Violation> vs = Check();
  EXPECT_TRUE(vs.empty()) << Describe(vs);
}

TEST_F(FsckTest, CleanAfterExchangingADirectoryAndAFileAcrossDirectories) {
  // Both parents' link counts change: "/" gains a subdirectory, "/dir" loses one.
  Status st = fs_->Run([&](Transaction& t) {
    return fs_->Rename(t, Cred::Root(), "/x", "/dir/sub", RENAME_EXCHANGE);
  });
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<Violation> vs = Check();
  EXPECT_TRUE(vs.empty()) << Describe(vs);
}

TEST_F(FsckTest, CleanAfterReopen) {
  fs_.reset();  // the orphan stays open in no process: reopening removes it
  auto fs = FileSystem::Open(dir_);
  ASSERT_TRUE(fs.ok()) << fs.status().message();
  fs_ = std::move(fs).value();
  std::vector<Violation> vs = Check();
  EXPECT_TRUE(vs.empty()) << Describe(vs);
}

TEST_F(FsckTest, ReportsEveryViolationNotOnlyTheFirst) {
  AddPage(IdOf("/dir/file"), 7, "past the end");
  Del(store().data(), IdKey(0));
  std::vector<Violation> vs = Check();
  Invariants got;
  for (const Violation& v : vs) got.insert(v.invariant);
  EXPECT_EQ(got, (Invariants{"PAGESMATCHSIZE", "SUPERBLOCK"})) << Describe(vs);
}

// --- UNIQID -----------------------------------------------------------------------------------

TEST_F(FsckTest, UniqIdDirectoryUnderTwoNames) {
  // Even with consistent counts around it, a directory id may appear only once.
  FileId sub = IdOf("/dir/sub");
  PathValue v = GetPath("/dir/sub");
  InodeValue in = GetInode(sub);
  Attr a = *v.plmd;
  in.link_count = 2;
  in.dlmd = a;
  PutInode(sub, in);
  v.plmd.reset();
  PutPath("/dir/sub", v);
  PutPath("/second", v);
  PutName(sub, "/second");
  PathValue rootv = GetPath("/");
  rootv.plmd->nlink++;  // "/second" is one more subdirectory of "/"
  PutPath("/", rootv);
  ExpectViolations({"UNIQID"}, "/second");
}

TEST_F(FsckTest, UniqIdFileUnderSecondNameWithoutBeingAHardLink) {
  FileId id = IdOf("/dir/file");
  PutPath("/copy", GetPath("/dir/file"));
  PutName(id, "/copy");
  ExpectViolations({"UNIQID"}, "/copy");
}

TEST_F(FsckTest, UniqIdBothInOrphanAndInPath) {
  FileId id = IdOf("/dir/file");
  Put(store().orphan(), IdKey(id), EncodeAttr(*GetPath("/dir/file").plmd));
  ExpectViolations({"UNIQID"}, IdText(id));
}

TEST_F(FsckTest, UniqIdZeroUsedByAFile) {
  PathValue v = GetPath("/empty");
  v.id = 0;
  PutPath("/zero", v);
  ExpectViolations({"UNIQID"}, "/zero");
}

// --- REFCOUNT ---------------------------------------------------------------------------------

TEST_F(FsckTest, RefCountLinkCountDisagreesWithNames) {
  FileId id = IdOf("/a");
  InodeValue in = GetInode(id);
  ASSERT_EQ(in.link_count, 2u);
  in.link_count = 3;
  in.dlmd->nlink = 3;  // stat agrees with the wrong count: only the names disagree
  PutInode(id, in);
  ExpectViolations({"REFCOUNT"}, IdText(id));
}

TEST_F(FsckTest, RefCountMissingNamesEntry) {
  FileId id = IdOf("/a");
  Raw([&](DB_TXN* t) { return store().DelDup(store().names(), t, IdKey(id), "/dir/hard"); });
  ExpectViolations({"REFCOUNT"}, "/dir/hard");
}

TEST_F(FsckTest, RefCountStaleNamesEntry) {
  FileId id = IdOf("/dir/file");
  PutName(id, "/dir/no-such-name");
  ExpectViolations({"REFCOUNT"}, "/dir/no-such-name");
}

TEST_F(FsckTest, RefCountNamesEntryOfAnotherFile) {
  PutName(IdOf("/dir/file"), "/x");
  ExpectViolations({"REFCOUNT"}, "/x");
}

TEST_F(FsckTest, RefCountFileStatNlinkWrong) {
  PathValue v = GetPath("/dir/file");
  v.plmd->nlink = 5;
  PutPath("/dir/file", v);
  ExpectViolations({"REFCOUNT"}, "/dir/file");
}

TEST_F(FsckTest, RefCountDirectoryStatNlinkWrong) {
  PathValue v = GetPath("/dir");
  ASSERT_EQ(v.plmd->nlink, 3u);  // 2 + "/dir/sub"
  v.plmd->nlink = 2;
  PutPath("/dir", v);
  ExpectViolations({"REFCOUNT"}, "/dir");
}

// --- NOORPHANEDFILES --------------------------------------------------------------------------

TEST_F(FsckTest, NoOrphanedFilesInodeValueMissing) {
  FileId id = IdOf("/empty");
  Del(store().inode(), IdKey(id));
  ExpectViolations({"NOORPHANEDFILES"}, "/empty");
}

TEST_F(FsckTest, NoOrphanedFilesNeitherNamedNorOpen) {
  InodeValue in = GetInode(orphan_);
  ASSERT_EQ(in.link_count, 0u);
  ASSERT_EQ(in.open_count, 1u);
  in.open_count = 0;
  PutInode(orphan_, in);
  ExpectViolations({"NOORPHANEDFILES"}, IdText(orphan_));
}

TEST_F(FsckTest, NoOrphanedFilesUnlinkedFileMissingFromOrphanDb) {
  Del(store().orphan(), IdKey(orphan_));
  ExpectViolations({"NOORPHANEDFILES"}, IdText(orphan_));
}

TEST_F(FsckTest, NoOrphanedFilesOrphanEntryForAFileWithLinks) {
  // The orphan's record says it still has a name, but nothing names it.
  InodeValue in = GetInode(orphan_);
  in.link_count = 1;
  PutInode(orphan_, in);
  // link_count 1 without a Path entry is also a refcount error.
  ExpectViolations({"NOORPHANEDFILES", "REFCOUNT"}, IdText(orphan_));
}

TEST_F(FsckTest, NoOrphanedFilesNamelessFile) {
  // A file whose only name vanished (Path and Names entries gone) but whose InodeValue stayed.
  FileId id = IdOf("/empty");
  Del(store().path(), PathKey("/empty"));
  Raw([&](DB_TXN* t) { return store().DelDup(store().names(), t, IdKey(id), "/empty"); });
  std::vector<Violation> vs = Check();
  Invariants got;
  for (const Violation& v : vs) got.insert(v.invariant);
  // link_count 1 with no Path entry is also a refcount error; what matters is that the lost
  // file is reported as orphaned.
  EXPECT_EQ(got, (Invariants{"NOORPHANEDFILES", "REFCOUNT"})) << Describe(vs);
}

// --- NOORPHANEDBLOCKS -------------------------------------------------------------------------

TEST_F(FsckTest, NoOrphanedBlocksPageWithoutInode) {
  Put(store().data(), PageKey(kUnusedId, 0), std::string(100, 'p'));
  ExpectViolations({"NOORPHANEDBLOCKS"}, IdText(kUnusedId));
}

TEST_F(FsckTest, NoOrphanedBlocksPagesLeftByADeletedFile) {
  // The file's records are gone but its pages remain.
  FileId id = IdOf("/dir/file");
  Del(store().inode(), IdKey(id));
  Del(store().path(), PathKey("/dir/file"));
  Del(store().names(), IdKey(id));
  ExpectViolations({"NOORPHANEDBLOCKS"}, IdText(id));
}

TEST_F(FsckTest, NoOrphanedBlocksXattrWithoutInode) {
  Put(store().xattr(), XattrKey(kUnusedId, "user.lost"), "v");
  ExpectViolations({"NOORPHANEDBLOCKS"}, "user.lost");
}

// --- ACL --------------------------------------------------------------------------------------

TEST_F(FsckTest, AclFlagWithoutItsRecord) {
  FileId id = IdOf("/dir/acl");
  ASSERT_TRUE(GetPath("/dir/acl").plmd->flags & kHasAccessAcl);
  Del(store().xattr(), XattrKey(id, kAclAccessName));
  ExpectViolations({"ACL"}, IdText(id));
}

TEST_F(FsckTest, AclRecordWithoutItsFlag) {
  PathValue v = GetPath("/dir");
  ASSERT_EQ(v.plmd->flags, kHasDefaultAcl);
  v.plmd->flags = 0;
  PutPath("/dir", v);
  ExpectViolations({"ACL"}, "/dir");
}

TEST_F(FsckTest, AclRecordThatIsNoAcl) {
  FileId id = IdOf("/dir/acl");
  Put(store().xattr(), XattrKey(id, kAclAccessName), "not an ACL");
  ExpectViolations({"ACL"}, IdText(id));
}

TEST_F(FsckTest, AclDefaultOnAFile) {
  FileId id = IdOf("/empty");
  PathValue v = GetPath("/empty");
  v.plmd->flags = kHasDefaultAcl;
  PutPath("/empty", v);
  Put(store().xattr(), XattrKey(id, kAclDefaultName),
      Get(store().xattr(), XattrKey(IdOf("/dir"), kAclDefaultName)));
  ExpectViolations({"ACL"}, IdText(id));
}

// --- HARDLINKUSESDLMD -------------------------------------------------------------------------

TEST_F(FsckTest, HardLinkUsesDlmdPlmdKeptOnHardLink) {
  FileId id = IdOf("/a");
  PathValue v = GetPath("/dir/hard");
  ASSERT_FALSE(v.plmd.has_value());
  v.plmd = GetInode(id).dlmd;
  PutPath("/dir/hard", v);
  ExpectViolations({"HARDLINKUSESDLMD"}, IdText(id));
}

TEST_F(FsckTest, HardLinkUsesDlmdDlmdOnSingleName) {
  FileId id = IdOf("/dir/file");
  InodeValue in = GetInode(id);
  in.dlmd = GetPath("/dir/file").plmd;
  PutInode(id, in);
  ExpectViolations({"HARDLINKUSESDLMD"}, IdText(id));
}

TEST_F(FsckTest, HardLinkUsesDlmdHardLinkWithoutDlmd) {
  // Metadata moved back into both Path entries while the file still has two names.
  FileId id = IdOf("/a");
  InodeValue in = GetInode(id);
  Attr a = *in.dlmd;
  in.dlmd.reset();
  PutInode(id, in);
  for (const char* p : {"/a", "/dir/hard"}) {
    PathValue v = GetPath(p);
    v.plmd = a;
    PutPath(p, v);
  }
  ExpectViolations({"HARDLINKUSESDLMD"}, IdText(id));
}

}  // namespace
}  // namespace amino::schema
