// fsck against databases broken by hand, continued: the rules on a file's data (PAGESMATCHSIZE,
// LASTPAGEMATCHESSIZE, its block count) and the structural ones (parents, types, links, the
// superblock). As in fsck_test.cc, each test asserts the exact set of rules reported.
#include <gtest/gtest.h>

#include "fsck_fixture.h"
#include "schema/fsck.h"

namespace amino::schema {
namespace {

using namespace fsck_testing;

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
