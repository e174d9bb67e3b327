// fsck against a healthy file system and against databases broken by hand, one invariant at a
// time. Each corruption is written with raw Store primitives so that it breaks exactly the rule
// under test (the rest stays consistent), and each test asserts the exact set of rules reported
// and that the report names the damaged record: a checker that never fails proves nothing.
#include "schema/fsck.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "schema/acl.h"
#include "schema/filesystem.h"
#include "schema/records.h"
#include "schema/store.h"

namespace amino::schema {
namespace {

using Invariants = std::set<std::string>;

constexpr FileId kUnusedId = 999999;

std::string Describe(const std::vector<Violation>& vs) {
  std::string s;
  for (const Violation& v : vs) s += "  " + v.invariant + ": " + v.detail + "\n";
  return s.empty() ? "  (none)\n" : s;
}

class FsckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "amino-fsck-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Status st = FileSystem::Mkfs(dir_);
    ASSERT_TRUE(st.ok()) << st.message();
    auto fs = FileSystem::Open(dir_);
    ASSERT_TRUE(fs.ok()) << fs.status().message();
    fs_ = std::move(fs).value();
    BuildTree();
  }

  void TearDown() override {
    fs_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A small tree with every kind of record: directories, a two-page file, hard links, a sparse
  // file, a symbolic link, an extended attribute, a FIFO, an empty file, POSIX ACLs (a default one
  // on /dir and the access ACL /dir/acl inherits from it) and an open orphan.
  void BuildTree() {
    Cred root = Cred::Root();
    Status st = fs_->Run([&](Transaction& t) -> Status {
      AMINO_RETURN_IF_ERROR(fs_->Mkdir(t, root, "/dir", 0755).status());
      AMINO_RETURN_IF_ERROR(fs_->Mkdir(t, root, "/dir/sub", 0755).status());
      AMINO_RETURN_IF_ERROR(WriteFile(t, "/dir/file", 0, std::string(5000, 'f')));
      AMINO_RETURN_IF_ERROR(WriteFile(t, "/a", 0, "hard-linked"));
      AMINO_RETURN_IF_ERROR(fs_->Link(t, root, "/a", "/dir/hard"));
      AMINO_RETURN_IF_ERROR(WriteFile(t, "/sparse", 3 * 4096 + 10, "tail"));
      AMINO_RETURN_IF_ERROR(fs_->Symlink(t, root, "dir/file", "/sym"));
      AMINO_RETURN_IF_ERROR(WriteFile(t, "/x", 0, "x"));
      AMINO_RETURN_IF_ERROR(fs_->SetXattr(t, root, "/x", "user.k", "v", 0));
      AMINO_RETURN_IF_ERROR(fs_->Mknod(t, root, "/fifo", S_IFIFO | 0644).status());
      AMINO_RETURN_IF_ERROR(WriteFile(t, "/empty", 0, ""));
      const Acl acl = {{kAclUserObj, 7, 0},
                       {kAclUser, 6, 1000},
                       {kAclGroupObj, 5, 0},
                       {kAclMask, 7, 0},
                       {kAclOther, 5, 0}};
      AMINO_RETURN_IF_ERROR(fs_->SetXattr(t, root, "/dir", kAclDefaultName, EncodeAcl(acl), 0));
      AMINO_RETURN_IF_ERROR(WriteFile(t, "/dir/acl", 0, ""));
      // So does a removed directory that is still open.
      AMINO_RETURN_IF_ERROR(fs_->Mkdir(t, root, "/gonedir", 0755).status());
      AMINO_ASSIGN_OR_RETURN(OpenResult d, fs_->Open(t, root, "/gonedir", O_RDONLY | O_DIRECTORY));
      AMINO_RETURN_IF_ERROR(fs_->Rmdir(t, root, "/gonedir"));
      orphan_dir_ = d.id;
      // An unlinked file that is still open lives in the Orphan db.
      AMINO_ASSIGN_OR_RETURN(OpenResult o, fs_->Open(t, root, "/gone", O_CREAT | O_RDWR, 0644));
      AMINO_RETURN_IF_ERROR(fs_->Write(t, root, o.id, 0, "orphan data", 11).status());
      AMINO_RETURN_IF_ERROR(fs_->Unlink(t, root, "/gone"));
      orphan_ = o.id;
      return Status::Ok();
    });
    ASSERT_TRUE(st.ok()) << st.message();
  }

  Status WriteFile(Transaction& t, const std::string& path, uint64_t off, const std::string& s) {
    Cred root = Cred::Root();
    AMINO_ASSIGN_OR_RETURN(OpenResult o, fs_->Open(t, root, path, O_CREAT | O_WRONLY, 0644));
    if (!s.empty())
      AMINO_RETURN_IF_ERROR(fs_->Write(t, root, o.id, off, s.data(), s.size()).status());
    return fs_->Close(t, o.id);
  }

  Store& store() { return fs_->store(); }

  // Runs `body` in a raw top-level transaction and commits it.
  void Raw(const std::function<Status(DB_TXN*)>& body) {
    DB_TXN* txn = nullptr;
    ASSERT_EQ(store().env()->txn_begin(store().env(), nullptr, &txn, 0), 0);
    Status st = body(txn);
    if (!st.ok()) {
      txn->abort(txn);
      FAIL() << st.message();
    }
    ASSERT_EQ(txn->commit(txn, 0), 0);
  }
  void Put(DB* db, const std::string& key, const std::string& value) {
    Raw([&](DB_TXN* t) { return store().Put(db, t, key, value); });
  }
  void Del(DB* db, const std::string& key) {
    Raw([&](DB_TXN* t) { return store().Del(db, t, key); });
  }
  std::string Get(DB* db, const std::string& key) {
    std::string out;
    Raw([&](DB_TXN* t) -> Status {
      auto got = store().Get(db, t, key);
      if (!got.ok()) return got.status();
      if (!got->has_value()) return Status::Storage(ENOENT, "no such record");
      out = **got;
      return Status::Ok();
    });
    return out;
  }

  PathValue GetPath(const std::string& path) {
    PathValue v;
    EXPECT_TRUE(DecodePathValue(Get(store().path(), PathKey(path)), &v)) << path;
    return v;
  }
  void PutPath(const std::string& path, const PathValue& v) {
    Put(store().path(), PathKey(path), EncodePathValue(v));
  }
  InodeValue GetInode(FileId id) {
    InodeValue v;
    EXPECT_TRUE(DecodeInodeValue(Get(store().inode(), IdKey(id)), &v)) << id;
    return v;
  }
  void PutInode(FileId id, const InodeValue& v) {
    Put(store().inode(), IdKey(id), EncodeInodeValue(v));
  }
  // Adjusts st_blocks by `pages` pages wherever the file's metadata lives, so that a test that
  // adds or removes a page breaks only the rule it is about.
  void AdjustBlocks(FileId id, int64_t pages) {
    const int64_t delta = pages * (kTransferUnit / 512);
    InodeValue in = GetInode(id);
    if (in.dlmd) {
      in.dlmd->blocks += delta;
      PutInode(id, in);
    } else if (in.link_count == 0) {
      Attr a;
      ASSERT_TRUE(DecodeAttr(Get(store().orphan(), IdKey(id)), &a));
      a.blocks += delta;
      Put(store().orphan(), IdKey(id), EncodeAttr(a));
    } else {
      std::string path = Get(store().names(), IdKey(id));  // its only name
      PathValue v = GetPath(path);
      v.plmd->blocks += delta;
      PutPath(path, v);
    }
  }
  // Stores a page and counts it in st_blocks.
  void AddPage(FileId id, uint64_t page, const std::string& data) {
    Put(store().data(), PageKey(id, page), data);
    AdjustBlocks(id, 1);
  }
  void PutName(FileId id, const std::string& path) { Put(store().names(), IdKey(id), path); }
  FileId IdOf(const std::string& path) { return GetPath(path).id; }

  std::vector<Violation> Check() {
    auto r = Fsck(store());
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r.value() : std::vector<Violation>{};
  }

  // Asserts that fsck reports exactly the rules in `want`, and that some report of the first
  // rule mentions `record` (the damaged path or id).
  void ExpectViolations(const Invariants& want, const std::string& record) {
    std::vector<Violation> vs = Check();
    Invariants got;
    bool named = false;
    for (const Violation& v : vs) {
      got.insert(v.invariant);
      if (v.invariant == *want.begin() && v.detail.find(record) != std::string::npos) named = true;
    }
    EXPECT_EQ(got, want) << Describe(vs);
    EXPECT_TRUE(named) << "no " << *want.begin() << " report names " << record << "\n"
                       << Describe(vs);
  }

  std::string dir_;
  std::unique_ptr<FileSystem> fs_;
  FileId orphan_ = 0;
  FileId orphan_dir_ = 0;
};

std::string IdText(FileId id) { return "id " + std::to_string(id); }

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

// --- PAGESMATCHSIZE ---------------------------------------------------------------------------

TEST_F(FsckTest, PagesMatchSizePagePastEndOfFile) {
  FileId id = IdOf("/dir/file");  // 5000 bytes: pages 0 and 1
  AddPage(id, 2, std::string(10, 'z'));
  ExpectViolations({"PAGESMATCHSIZE"}, "page 2");
}

TEST_F(FsckTest, PagesMatchSizePageOfAnEmptyFile) {
  AddPage(IdOf("/empty"), 0, "data");
  ExpectViolations({"PAGESMATCHSIZE"}, "/empty");
}

TEST_F(FsckTest, PagesMatchSizeSizeShrunkWithoutDroppingPages) {
  PathValue v = GetPath("/dir/file");
  v.plmd->size = 4096;  // page 1 now lies past the end
  PutPath("/dir/file", v);
  ExpectViolations({"PAGESMATCHSIZE"}, "page 1");
}

TEST_F(FsckTest, PagesMatchSizePageLongerThanTransferUnit) {
  Put(store().data(), PageKey(IdOf("/dir/file"), 0), std::string(4097, 'f'));
  ExpectViolations({"PAGESMATCHSIZE"}, "4097");
}

TEST_F(FsckTest, PagesMatchSizeDirectoryWithAPage) {
  AddPage(IdOf("/dir"), 0, "data");
  ExpectViolations({"PAGESMATCHSIZE"}, "/dir");
}

TEST_F(FsckTest, NoOrphanedFilesRemovedDirectoryNeitherNamedNorOpen) {
  InodeValue in = GetInode(orphan_dir_);
  ASSERT_EQ(in.link_count, 0u);
  in.open_count = 0;
  PutInode(orphan_dir_, in);
  ExpectViolations({"NOORPHANEDFILES"}, IdText(orphan_dir_));
}

TEST_F(FsckTest, PagesMatchSizeOrphanPagePastEnd) {
  AddPage(orphan_, 1, "x");
  ExpectViolations({"PAGESMATCHSIZE"}, IdText(orphan_));
}

// --- LASTPAGEMATCHESSIZE ----------------------------------------------------------------------

TEST_F(FsckTest, LastPageMatchesSizeLastPageTooLong) {
  FileId id = IdOf("/dir/file");  // 5000 bytes: page 1 holds 904
  Put(store().data(), PageKey(id, 1), std::string(1000, 'f'));
  ExpectViolations({"LASTPAGEMATCHESSIZE"}, "/dir/file");
}

TEST_F(FsckTest, LastPageMatchesSizeSizeShrunkInsideLastPage) {
  PathValue v = GetPath("/dir/file");
  v.plmd->size = 4100;
  PutPath("/dir/file", v);
  ExpectViolations({"LASTPAGEMATCHESSIZE"}, "page 1");
}

TEST_F(FsckTest, LastPageMatchesSizeHardLinkedFile) {
  // The size of a hard-linked file lives in its DLMD.
  FileId id = IdOf("/a");
  Put(store().data(), PageKey(id, 0), "hard-linked plus more");
  ExpectViolations({"LASTPAGEMATCHESSIZE"}, IdText(id));
}

// --- BLOCKS -----------------------------------------------------------------------------------

TEST_F(FsckTest, BlocksDisagreeWithStoredPages) {
  PathValue v = GetPath("/dir/file");
  ASSERT_EQ(v.plmd->blocks, 16u);  // two pages
  v.plmd->blocks = 8;
  PutPath("/dir/file", v);
  ExpectViolations({"BLOCKS"}, "/dir/file");
}

TEST_F(FsckTest, BlocksOfAPageRemovedFromTheMiddle) {
  // A hole punched by deleting a page without updating st_blocks.
  Del(store().data(), PageKey(IdOf("/dir/file"), 0));
  ExpectViolations({"BLOCKS"}, "/dir/file");
}

// --- Structural rules -------------------------------------------------------------------------

TEST_F(FsckTest, ParentMissing) {
  PathValue v = GetPath("/empty");
  FileId id = v.id;
  Del(store().path(), PathKey("/empty"));
  Raw([&](DB_TXN* t) { return store().DelDup(store().names(), t, IdKey(id), "/empty"); });
  PutPath("/nowhere/empty", v);
  PutName(id, "/nowhere/empty");
  ExpectViolations({"PARENT"}, "/nowhere/empty");
}

TEST_F(FsckTest, ParentIsNotADirectory) {
  PathValue v = GetPath("/empty");
  FileId id = v.id;
  Del(store().path(), PathKey("/empty"));
  Raw([&](DB_TXN* t) { return store().DelDup(store().names(), t, IdKey(id), "/empty"); });
  PutPath("/dir/file/empty", v);
  PutName(id, "/dir/file/empty");
  ExpectViolations({"PARENT"}, "/dir/file/empty");
}

TEST_F(FsckTest, TypeOfPathEntryDisagreesWithMetadata) {
  PathValue v = GetPath("/empty");
  v.mode = S_IFIFO | 0644;
  PutPath("/empty", v);
  ExpectViolations({"TYPE"}, "/empty");
}

TEST_F(FsckTest, SymlinkWithoutTarget) {
  FileId id = IdOf("/sym");
  Del(store().data(), PageKey(id, 0));
  AdjustBlocks(id, -1);
  ExpectViolations({"SYMLINK"}, "/sym");
}

TEST_F(FsckTest, SuperblockMissing) {
  Del(store().data(), IdKey(0));
  ExpectViolations({"SUPERBLOCK"}, "missing");
}

TEST_F(FsckTest, SuperblockDamaged) {
  Put(store().data(), IdKey(0), "not a superblock");
  ExpectViolations({"SUPERBLOCK"}, "superblock");
}

TEST_F(FsckTest, RecordInodeValueDoesNotDecode) {
  FileId id = IdOf("/empty");
  Put(store().inode(), IdKey(id), "garbage");
  ExpectViolations({"RECORD"}, IdText(id));
}

TEST_F(FsckTest, RecordDataKeyOfUnknownShape) {
  Put(store().data(), "short", "x");
  ExpectViolations({"RECORD"}, "5 bytes");
}

TEST_F(FsckTest, RecordPathKeyWithWrongDepth) {
  std::string key = PathKey("/dir/x");
  key[1] = 7;
  Put(store().path(), key, EncodePathValue(GetPath("/empty")));
  ExpectViolations({"RECORD"}, "/dir/x");
}

}  // namespace
}  // namespace amino::schema
