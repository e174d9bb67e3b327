// The fixture of the fsck tests (fsck_test.cc, fsck_pages_test.cc): a file system with one file
// of each kind, the raw Store primitives that break one invariant at a time, and the check of
// exactly which rules a report names.
#pragma once

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
#include "schema/fsck.h"
#include "schema/records.h"
#include "schema/store.h"

namespace amino::schema::fsck_testing {

using Invariants = std::set<std::string>;

inline constexpr FileId kUnusedId = 999999;

inline std::string Describe(const std::vector<Violation>& vs) {
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

inline std::string IdText(FileId id) { return "id " + std::to_string(id); }

}  // namespace amino::schema::fsck_testing
