// open(2): flags, access modes, the errnos of each combination (against the kernel), and files
// that outlive their last name while open (orphans).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <iterator>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

class OpenTest : public FsTest {
 protected:
  // The errno of open on the host (closing the descriptor if it opened).
  int HostOpen(const std::string& p, int flags, mode_t mode = 0644, const Cred& c = Cred::Root()) {
    std::string hp = H(p);
    return HostErrAs(c, [&]() -> long {
      int fd = open(hp.c_str(), flags, mode);
      if (fd >= 0) close(fd);
      return fd;
    });
  }
  // The errno of open in the schema (closing the file if it opened).
  int SchemaOpen(const std::string& p, int flags, mode_t mode = 0644,
                 const Cred& c = Cred::Root()) {
    Client cl(fs_.get(), c);
    Result<OpenResult> o = cl.Open(p, flags, mode);
    if (o.ok()) {
      EXPECT_TRUE(root().Close(o->id).ok());
    }
    return Err(o);
  }
  void ExpectSameOpen(const std::string& p, int flags, mode_t mode = 0644,
                      const Cred& c = Cred::Root()) {
    EXPECT_EQ(ErrName(SchemaOpen(p, flags, mode, c)), ErrName(HostOpen(p, flags, mode, c)))
        << "open(\"" << p << "\", 0" << std::oct << flags << ") as uid " << std::dec << c.uid;
  }
};

TEST_F(OpenTest, FlagCombinationsMatchTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "data"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("f", "/lf"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("d", "/ld"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("missing", "/dangling"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("loop", "/loop"));
  const int acc[] = {O_RDONLY, O_WRONLY, O_RDWR};
  const int extra[] = {0,           O_CREAT,    O_CREAT | O_EXCL,     O_TRUNC,
                       O_DIRECTORY, O_NOFOLLOW, O_CREAT | O_NOFOLLOW, O_DIRECTORY | O_NOFOLLOW,
                       O_APPEND};
  for (const char* p : {"/f", "/d", "/lf", "/ld", "/loop", "/dangling", "/none", "/f/", "/d/",
                        "/ld/", "/f/x", "/none/x", "/d/.", "/d/.."}) {
    for (int a : acc) {
      for (int e : extra) {
        // Creations are undone on both sides so each case starts from the same tree.
        ExpectSameOpen(p, a | e);
        for (const char* made : {"/none", "/missing"}) {
          if (root().LStat(made).ok()) {
            ASSERT_TRUE(root().Unlink(made).ok());
          }
          unlink(H(made).c_str());
        }
      }
    }
  }
}

TEST_F(OpenTest, CreateWithDirectoryFlagIsInvalid) {
  // Linux 6.4 and later refuse O_CREAT | O_DIRECTORY outright.
  ExpectSameOpen("/new", O_RDONLY | O_CREAT | O_DIRECTORY);
  ExpectSameOpen("/new", O_RDWR | O_CREAT | O_DIRECTORY);
}

TEST_F(OpenTest, CreateWithTrailingSlashIsEISDIR) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f"));
  ExpectSameOpen("/new/", O_WRONLY | O_CREAT);
  ExpectSameOpen("/f/", O_WRONLY | O_CREAT);
}

TEST_F(OpenTest, CreateThroughADanglingLinkCreatesTheTarget) {
  ASSERT_NO_FATAL_FAILURE(BothSymlink("target", "/l"));
  ExpectSameOpen("/l", O_WRONLY | O_CREAT | O_EXCL);
  ExpectSameOpen("/l", O_WRONLY | O_CREAT);
  EXPECT_EQ(FileType(*root().LStat("/target")), S_IFREG);
  EXPECT_EQ(FileType(*root().LStat("/l")), S_IFLNK);
}

// A link whose target ends in "/" gives the last component a trailing slash: O_CREAT through
// it is EISDIR whether the target exists as a file, is missing, or leads through more links.
TEST_F(OpenTest, CreateThroughALinkWithTrailingSlashIsEISDIR) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("f/", "/to-file"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("missing/", "/to-missing"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("c/c", "/b"));
  ASSERT_NO_FATAL_FAILURE(BothSymlink("b/", "/to-link"));
  for (const char* p : {"/to-file", "/to-missing", "/to-link"}) {
    ExpectSameOpen(p, O_WRONLY | O_CREAT);
    ExpectSameOpen(p, O_RDONLY);
  }
}

TEST_F(OpenTest, TruncateOnOpen) {
  ASSERT_TRUE(root().WriteFile("/f", "some data").ok());
  Result<OpenResult> o = root().Open("/f", O_WRONLY | O_TRUNC);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(root().FStat(o->id)->attr.size, 0u);
  ASSERT_TRUE(root().Close(o->id).ok());
  // Linux truncates even when the file is opened read-only.
  ASSERT_TRUE(root().WriteFile("/g", "more data").ok());
  ASSERT_NO_FATAL_FAILURE(BothFile("/g", "more data"));
  ExpectSameOpen("/g", O_RDONLY | O_TRUNC);
  struct stat st;
  ASSERT_EQ(stat(H("/g").c_str(), &st), 0);
  EXPECT_EQ(root().GetStat("/g")->attr.size, static_cast<uint64_t>(st.st_size));
}

TEST_F(OpenTest, AccessModesAreCheckedAgainstTheCaller) {
  for (mode_t m : {0000, 0400, 0200, 0600, 0004, 0002, 0040, 0020, 0644, 0666}) {
    std::string p = "/m" + std::to_string(m);
    ASSERT_NO_FATAL_FAILURE(BothFile(p, "", m));
    ASSERT_NO_FATAL_FAILURE(BothChown(p, 1001, 1000));
  }
  ASSERT_NO_FATAL_FAILURE(BothDir("/d", 0700));
  ASSERT_NO_FATAL_FAILURE(BothFile("/d/f", "", 0666));
  for (const Cred& c : {Cred::Root(), Cred::User(1001, 1001), Cred::User(1000, 1000),
                        Cred::User(2000, 2000), Cred::User(2000, 2000, {1000})}) {
    for (mode_t m : {0000, 0400, 0200, 0600, 0004, 0002, 0040, 0020, 0644, 0666}) {
      std::string p = "/m" + std::to_string(m);
      for (int a : {O_RDONLY, O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC}) ExpectSameOpen(p, a, 0, c);
    }
    ExpectSameOpen("/d/f", O_RDONLY, 0, c);
    ExpectSameOpen("/d/new", O_WRONLY | O_CREAT, 0644, c);
  }
}

TEST_F(OpenTest, UnlinkedOpenFileStaysReadableUntilClosed) {
  ASSERT_TRUE(root().WriteFile("/f", "still here").ok());
  Result<OpenResult> a = root().Open("/f", O_RDWR);
  Result<OpenResult> b = root().Open("/f", O_RDONLY);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(root().Unlink("/f").ok());
  EXPECT_ERRNO(root().GetStat("/f"), ENOENT);
  EXPECT_EQ(root().ListNames("/").value(), std::vector<std::string>{});
  EXPECT_EQ(*root().Read(a->id, 0, 100), "still here");
  Result<Stat> st = root().FStat(a->id);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->attr.nlink, 0u);
  EXPECT_EQ(st->attr.size, 10u);
  EXPECT_EQ(root().Names(a->id).value(), std::vector<std::string>{});
  ASSERT_TRUE(root().Write(a->id, 10, ", written").ok());
  ExpectConsistent();  // the orphan is accounted for while open
  // A new file with the old name is a different file.
  ASSERT_TRUE(root().WriteFile("/f", "new").ok());
  EXPECT_NE(root().GetStat("/f")->ino, a->id);
  ASSERT_TRUE(root().Close(a->id).ok());
  EXPECT_EQ(*root().Read(b->id, 0, 100), "still here, written");
  ASSERT_TRUE(root().Close(b->id).ok());
  EXPECT_FALSE(root().FStat(b->id).ok()) << "the orphan was freed on its last close";
  ExpectConsistent();
  EXPECT_EQ(*root().ReadFile("/f"), "new");
}

TEST_F(OpenTest, OrphansLeftByADeadProcessAreRemovedOnOpen) {
  ASSERT_TRUE(root().WriteFile("/f", std::string(20000, 'x')).ok());
  Result<OpenResult> o = root().Open("/f", O_RDONLY);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(root().Unlink("/f").ok());
  ASSERT_TRUE(root().WriteFile("/kept", "k").ok());
  Result<OpenResult> k = root().Open("/kept", O_RDONLY);
  ASSERT_TRUE(k.ok());
  Reopen();  // the opener is gone without closing anything
  EXPECT_FALSE(root().FStat(o->id).ok());
  ExpectConsistent();
  EXPECT_EQ(*root().ReadFile("/kept"), "k");
}

TEST_F(OpenTest, ACleanCloseLetsTheNextOpenSkipRecovery) {
  ASSERT_TRUE(root().WriteFile("/f", "data").ok());
  Result<OpenResult> o = root().Open("/f", O_RDONLY);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(root().Close(o->id).ok());
  Reopen();
  EXPECT_FALSE(fs_->recovered_on_open());
  EXPECT_EQ(*root().ReadFile("/f"), "data");
  // While in use the file system is not marked clean: a crash now must be recovered from.
  struct stat st;
  EXPECT_NE(::stat((db_->path() + "/fs/amino.clean").c_str(), &st), 0);
}

TEST_F(OpenTest, AMarkerFromAnotherBootOrOtherFilesIsNotTrusted) {
  ASSERT_TRUE(root().WriteFile("/f", "data").ok());
  const std::string marker = db_->path() + "/fs/amino.clean";
  for (const std::string& from : {std::string("boot "), std::string("data.db ")}) {
    fs_.reset();  // closed cleanly: the marker names this boot and these files
    std::string text;
    {
      std::ifstream in(marker);
      ASSERT_TRUE(in.good());
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << text;
    text[at + from.size()] = text[at + from.size()] == '1' ? '2' : '1';  // another boot, inode
    std::ofstream(marker, std::ios::trunc) << text;
    Reopen();
    EXPECT_TRUE(fs_->recovered_on_open()) << "trusted a marker with another " << from;
    EXPECT_EQ(*root().ReadFile("/f"), "data");
  }
}

TEST_F(OpenTest, OpensLeftCountedAtCloseMakeTheNextOpenRecover) {
  ASSERT_TRUE(root().WriteFile("/f", "data").ok());
  ASSERT_TRUE(root().Open("/f", O_RDONLY).ok());
  Reopen();
  EXPECT_TRUE(fs_->recovered_on_open());
}

TEST_F(OpenTest, AUserThatDiedKeepsTheLastOneFromMarkingItClean) {
  ASSERT_TRUE(root().WriteFile("/f", std::string(9000, 'x')).ok());
  Result<Stat> f = root().GetStat("/f");
  ASSERT_TRUE(f.ok());
  const std::string dir = db_->path() + "/fs";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A second user that opens and unlinks a file, then dies without closing anything.
    Result<std::unique_ptr<FileSystem>> other = FileSystem::Open(dir);
    if (!other.ok()) _exit(2);
    Client c(other->get());
    Result<OpenResult> o = c.Open("/f", O_RDONLY);
    _exit(o.ok() && c.Unlink("/f").ok() ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  Reopen();  // this process closes last, cleanly, but the other did not
  EXPECT_TRUE(fs_->recovered_on_open());
  EXPECT_FALSE(root().FStat(f->ino).ok());  // its unlinked file was freed
  ExpectConsistent();
  Reopen();
  EXPECT_FALSE(fs_->recovered_on_open());
}

TEST_F(OpenTest, AFileOpenInAnotherProcessOutlivesItsLastNameUntilThatOneCloses) {
  ASSERT_TRUE(root().WriteFile("/f", "kept until closed").ok());
  Result<Stat> f = root().GetStat("/f");
  ASSERT_TRUE(f.ok());
  const std::string dir = db_->path() + "/fs";
  int to_child[2], to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Opens /f, says so, and after the parent removed it reads it and closes.
    Result<std::unique_ptr<FileSystem>> other = FileSystem::Open(dir);
    if (!other.ok()) _exit(2);
    Client c(other->get());
    Result<OpenResult> o = c.Open("/f", O_RDONLY);
    char go = 0;
    if (!o.ok() || write(to_parent[1], "o", 1) != 1 || read(to_child[0], &go, 1) != 1) _exit(3);
    Result<std::string> data = c.Read(o->id, 0, 100);
    if (!data.ok() || *data != "kept until closed") _exit(4);
    if (!c.Close(o->id).ok()) _exit(5);
    other->reset();
    _exit(0);
  }
  char opened = 0;
  ASSERT_EQ(read(to_parent[0], &opened, 1), 1);
  ASSERT_TRUE(root().Unlink("/f").ok());
  EXPECT_TRUE(root().FStat(f->ino).ok()) << "freed while another process had it open";
  ASSERT_EQ(write(to_child[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(root().FStat(f->ino).ok()) << "not freed at its last close";
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
  ExpectConsistent();
}

// Opens as the monitor serves them inside application transactions: each a child transaction
// of the application's, committed into it.
class AppTxnOpenTest : public OpenTest {
 protected:
  void SetUp() override {
    OpenTest::SetUp();
    // Two files made together: their records share the pages of the metadata databases.
    ASSERT_TRUE(root().WriteFile("/a", "a").ok());
    ASSERT_TRUE(root().WriteFile("/b", "b").ok());
    nowait_.nowait = true;
  }
  Transaction App() {
    Result<Transaction> t = fs_->Begin(nullptr, nowait_);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return std::move(t).value();
  }
  Status Call(Transaction& app, const std::function<Status(Transaction&)>& body) {
    AMINO_ASSIGN_OR_RETURN(Transaction call, fs_->Begin(&app, nowait_));
    if (Status st = body(call); !st.ok()) {
      (void)call.Abort();
      return st;
    }
    return call.Commit();
  }
  Status OpenIn(Transaction& app, const char* path, int flags, FileId* id = nullptr) {
    return Call(app, [&](Transaction& t) -> Status {
      AMINO_ASSIGN_OR_RETURN(OpenResult o, fs_->Open(t, Cred::Root(), path, flags));
      if (id) *id = o.id;
      return Status::Ok();
    });
  }
  TxnOptions nowait_;
};

TEST_F(AppTxnOpenTest, TransactionsTakeTurnsAtAFileNotAtItsNeighbours) {
  Transaction first = App();
  Transaction second = App();
  ASSERT_TRUE(OpenIn(first, "/a", O_RDONLY).ok());
  Status other_file = OpenIn(second, "/b", O_RDONLY);
  EXPECT_TRUE(other_file.ok()) << "an open of /a held off an open of /b: " << other_file.message();
  Status same_file = OpenIn(second, "/a", O_RDONLY);
  EXPECT_TRUE(same_file.is_conflict()) << same_file.message();
  // A plain call (no application transaction) is not held off.
  Result<Stat> st = root().GetStat("/a");
  EXPECT_TRUE(st.ok()) << st.status().message();
  ASSERT_TRUE(first.Abort().ok());  // its turn ends with it
  EXPECT_TRUE(OpenIn(second, "/a", O_RDONLY).ok());
  ASSERT_TRUE(second.Abort().ok());
}

TEST_F(AppTxnOpenTest, AWriterIsNeverHeldOffByALaterOpenerOfANeighbour) {
  // Both open to write, then the first writes: had both only read the page the two records
  // share, each write would wait for the other's read lock (a deadlock, a transaction lost).
  Transaction first = App();
  Transaction second = App();
  FileId a = 0;
  ASSERT_TRUE(OpenIn(first, "/a", O_WRONLY | O_APPEND, &a).ok());
  const Status later = OpenIn(second, "/b", O_WRONLY | O_APPEND);
  EXPECT_TRUE(later.ok() || later.is_conflict()) << later.message();
  Status wrote = Call(
      first, [&](Transaction& t) { return fs_->Append(t, Cred::Root(), a, "more", 4).status(); });
  EXPECT_TRUE(wrote.ok()) << wrote.message();
  ASSERT_TRUE(first.Commit().ok());
  ASSERT_TRUE(second.Abort().ok());
  Result<Stat> st = root().GetStat("/a");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->attr.size, 5u);
}

TEST_F(OpenTest, RemovedDirectoryStillOpenListsNothing) {
  ASSERT_TRUE(root().Mkdir("/d").ok());
  Result<OpenResult> o = root().Open("/d", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(root().Rmdir("/d").ok());
  ASSERT_TRUE(root().Mkdir("/d").ok());
  ASSERT_TRUE(root().WriteFile("/d/new", "").ok());
  Result<std::vector<DirEntry>> l = root().ReadDir(o->id, "", 10);
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_TRUE(l->empty()) << "entries of the new /d listed through the removed one";
  ASSERT_TRUE(root().Close(o->id).ok());
}

TEST_F(OpenTest, AHeldDirectoryOutlivesItsRemovalUntilReleased) {
  // A working directory holds its directory as an open does: removed, it stays until left.
  Result<Stat> d = root().Mkdir("/cwd", 0750);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(root().Reopen(d->ino).ok());
  ASSERT_TRUE(root().Rmdir("/cwd").ok());
  Result<Stat> held = root().FStat(d->ino);
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_TRUE(S_ISDIR(held->attr.mode));
  EXPECT_EQ(held->attr.nlink, 0u);
  ExpectConsistent();
  ASSERT_TRUE(root().Close(d->ino).ok());
  EXPECT_EQ(root().FStat(d->ino).status().error(), ESTALE);
  // Gone now: it can be held no more.
  EXPECT_EQ(root().Reopen(d->ino).error(), ESTALE);
  ExpectConsistent();
}

// Calls on an open file find it by id, wherever its names have gone since it was opened: the
// name it was opened by may now be another file's, or shared with a hard link, or gone.
TEST_F(OpenTest, AnOpenFileIsFoundByIdAfterItsNamesChange) {
  Result<OpenResult> o = root().Open("/a", O_CREAT | O_RDWR, 0644);
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->path, "/a");
  const FileId id = o->id;
  ASSERT_TRUE(root().Write(id, 0, "first").ok());

  // Its first name now names another file.
  ASSERT_TRUE(root().Rename("/a", "/b").ok());
  ASSERT_TRUE(root().WriteFile("/a", "xyz", 0600).ok());
  Result<Stat> st = root().FStat(id);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->attr.size, 5u);
  EXPECT_EQ(st->attr.mode & 07777, 0644u);
  ASSERT_TRUE(root().Write(id, 5, "+").ok());
  EXPECT_EQ(*root().ReadFile("/b"), "first+");
  EXPECT_EQ(*root().ReadFile("/a"), "xyz");

  // A second name: its metadata leaves the Path record.
  ASSERT_TRUE(root().Link("/b", "/c").ok());
  st = root().FStat(id);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->attr.nlink, 2u);
  EXPECT_EQ(st->attr.size, 6u);

  // No name left while open.
  ASSERT_TRUE(root().Unlink("/b").ok());
  ASSERT_TRUE(root().Unlink("/c").ok());
  st = root().FStat(id);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->attr.nlink, 0u);
  EXPECT_EQ(*root().Read(id, 0, 16), "first+");
  EXPECT_TRUE(root().Close(id).ok());
}

// A hard link opened by its second name: the open says that name.
TEST_F(OpenTest, TheOpenSaysTheNameItWasOpenedBy) {
  ASSERT_TRUE(root().WriteFile("/f", "data", 0644).ok());
  ASSERT_TRUE(root().Mkdir("/d").ok());
  ASSERT_TRUE(root().Link("/f", "/d/g").ok());
  ASSERT_TRUE(root().Symlink("d/g", "/l").ok());
  for (const char* p : {"/f", "/d/g", "/l"}) {
    Result<OpenResult> o = root().Open(p, O_RDONLY);
    ASSERT_TRUE(o.ok()) << p << ": " << o.status().message();
    EXPECT_EQ(o->path, std::string(p) == "/f" ? "/f" : "/d/g") << p;
    EXPECT_TRUE(root().Close(o->id).ok());
  }
}

}  // namespace
}  // namespace amino::schema::testing
