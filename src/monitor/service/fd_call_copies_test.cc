// Copies between descriptors where one is served (fd_call.h: copy_file_range, sendfile,
// splice), against a real database, with the test's own process as the "tracee" (its memory
// holds the offsets the calls read and write back, its pipes are the host sides). What each
// copy moves, where the offsets end, that a file mapped shared sees the bytes copied into it,
// and the errors the kernel gives first.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "monitor/service/fd_call.h"
#include "monitor/service/scratch_mount_test.h"
#include "monitor/shadow_fds_test_support.h"
#include "schema/filesystem.h"

namespace amino::monitor::service::fd_calls {
namespace {

class FdCopiesTest : public ScratchMountTest {
 protected:
  // A served description of a new file `path` holding `bytes`, at descriptor number `fd` of
  // the caller (a number the kernel never sees: the tests' served descriptors are the table's).
  ServedFile& Served(int fd, const std::string& path, const std::string& bytes, int flags) {
    auto f = std::make_shared<ServedFile>();
    schema::Status st = mfs_.fs->Run([&](schema::Transaction& t) -> schema::Status {
      auto opened = mfs_.fs->Open(t, schema::Cred::Root(), path, O_CREAT | O_RDWR, 0644);
      if (!opened.ok()) return opened.status();
      f->id = opened->id;
      auto put = mfs_.fs->Write(t, schema::Cred::Root(), f->id, 0, bytes.data(), bytes.size());
      if (!put.ok()) return put.status();
      return mfs_.fs->Close(t, f->id);
    });
    EXPECT_TRUE(st.ok()) << st.message();
    f->mfs = &mfs_;
    f->flags = flags;
    f->type = S_IFREG;
    served_[fd] = f;
    return *f;
  }

  std::string Stored(const ServedFile& f) {
    std::string out;
    schema::Status st = mfs_.fs->Run([&](schema::Transaction& t) -> schema::Status {
      auto stat = mfs_.fs->FStat(t, f.id);
      if (!stat.ok()) return stat.status();
      out.assign(stat->attr.size, '\0');
      auto got = mfs_.fs->Read(t, f.id, 0, out.data(), out.size());
      return got.status();
    });
    EXPECT_TRUE(st.ok()) << st.message();
    return out;
  }

  // The call `nr` with `args`, served on descriptor `fd` as MountHandler::ServeFd would: its
  // result (-errno on failure).
  long Serve(ServedFile& f, long nr, std::vector<uint64_t> args) {
    SyscallRegs call;
    call.regs.orig_rax = static_cast<unsigned long long>(nr);
    for (size_t i = 0; i < args.size(); ++i) call.set_arg(static_cast<int>(i), args[i]);
    FdCall c{t_,
             f,
             [](ServedFile& file, const FileBody& body, const Done& done) {
               CallOutcome o = RunCall(*file.mfs, {}, body);
               if (o.kind != CallOutcome::Kind::kDone) return Decision::Emulate(-EIO);
               return Decision::Emulate(o.status.ok() ? done() : -o.status.error());
             },
             [this](int fd) {
               auto it = served_.find(fd);
               return it == served_.end() ? nullptr : it->second;
             },
             schema::Cred::Root(),
             maps_};
    Decision d = nr == SYS_copy_file_range ? CopyFileRange(c, call)
                 : nr == SYS_sendfile      ? Sendfile(c, call)
                                           : Splice(c, call);
    EXPECT_EQ(d.kind, Decision::Kind::kEmulate);
    return d.result;
  }

  Thread t_ = Self();
  SharedMappings maps_;
  std::map<int, std::shared_ptr<ServedFile>> served_;
};

constexpr int kIn = 1000, kOut = 1001;

TEST_F(FdCopiesTest, CopyFileRangeMovesBytesAndTheOffsetsItWasGiven) {
  ServedFile& in = Served(kIn, "/in", "hello world", O_RDONLY);
  ServedFile& out = Served(kOut, "/out", "", O_RDWR);
  // From the descriptions' offsets, which advance.
  EXPECT_EQ(Serve(in, SYS_copy_file_range, {kIn, 0, kOut, 0, 5, 0}), 5);
  EXPECT_EQ(Stored(out), "hello");
  EXPECT_EQ(in.offset, 5u);
  EXPECT_EQ(out.offset, 5u);
  // From offsets in the caller's memory, which advance instead of the descriptions'.
  int64_t in_off = 6, out_off = 5;
  EXPECT_EQ(Serve(in, SYS_copy_file_range, {kIn, Address(&in_off), kOut, Address(&out_off), 99, 0}),
            5);
  EXPECT_EQ(Stored(out), "helloworld");
  EXPECT_EQ(in_off, 11);
  EXPECT_EQ(out_off, 10);
  EXPECT_EQ(in.offset, 5u);
  EXPECT_EQ(out.offset, 5u);
  // At the input's end: nothing more.
  EXPECT_EQ(Serve(in, SYS_copy_file_range, {kIn, Address(&in_off), kOut, 0, 5, 0}), 0);
}

TEST_F(FdCopiesTest, BytesCopiedIntoAFileMappedSharedReachItsMappingFile) {
  ServedFile& in = Served(kIn, "/in", "fresh bytes", O_RDONLY);
  ServedFile& out = Served(kOut, "/out", std::string(64, '.'), O_RDWR);
  const SharedMappings::Mapping* mapping = nullptr;
  ASSERT_EQ(maps_.Get(mfs_, out.id, &mapping).kind, CallOutcome::Kind::kDone);
  int64_t out_off = 8;
  ASSERT_EQ(Serve(in, SYS_copy_file_range, {kIn, 0, kOut, Address(&out_off), 11, 0}), 11);
  std::string seen(64, '\0');
  ASSERT_EQ(pread(mapping->fd, seen.data(), seen.size(), 0), 64);
  EXPECT_EQ(seen, std::string(8, '.') + "fresh bytes" + std::string(45, '.'));
  EXPECT_EQ(Stored(out), seen);
}

TEST_F(FdCopiesTest, CopyFileRangeRefusesAsTheKernelDoes) {
  ServedFile& in = Served(kIn, "/in", "0123456789", O_RDONLY);
  Served(kOut, "/out", "", O_RDONLY);
  Served(kOut + 1, "/appended", "", O_WRONLY | O_APPEND);
  ServedFile& both = Served(kOut + 2, "/both", "0123456789", O_RDWR);
  int host[2];
  ASSERT_EQ(pipe(host), 0);
  EXPECT_EQ(Serve(in, SYS_copy_file_range, {kIn, 0, kOut + 2, 0, 1, 1}), -EINVAL);  // flags
  EXPECT_EQ(Serve(in, SYS_copy_file_range, {kIn, 0, kOut, 0, 1, 0}), -EBADF);       // read-only out
  EXPECT_EQ(Serve(in, SYS_copy_file_range, {kIn, 0, kOut + 1, 0, 1, 0}), -EBADF);   // O_APPEND
  // Not a regular file on the other side (a host pipe).
  EXPECT_EQ(Serve(in, SYS_copy_file_range, {kIn, 0, static_cast<uint64_t>(host[1]), 0, 1, 0}),
            -EINVAL);
  // Overlapping ranges of one file.
  int64_t from = 0, to = 4;
  EXPECT_EQ(
      Serve(both, SYS_copy_file_range, {kOut + 2, Address(&from), kOut + 2, Address(&to), 6, 0}),
      -EINVAL);
  EXPECT_EQ(Stored(both), "0123456789");
  close(host[0]);
  close(host[1]);
}

TEST_F(FdCopiesTest, SendfileAndSpliceMoveBytesBetweenAServedFileAndAPipe) {
  ServedFile& in = Served(kIn, "/in", "hello world", O_RDONLY);
  ServedFile& out = Served(kOut, "/out", "", O_RDWR);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  // sendfile(pipe, served): from the description's offset, which advances.
  EXPECT_EQ(Serve(in, SYS_sendfile, {static_cast<uint64_t>(p[1]), kIn, 0, 5}), 5);
  EXPECT_EQ(in.offset, 5u);
  char got[16] = {};
  ASSERT_EQ(read(p[0], got, sizeof got), 5);
  EXPECT_EQ(std::string(got, 5), "hello");
  // splice(pipe -> served) at an offset in the caller's memory; the description stays.
  ASSERT_EQ(write(p[1], "abc", 3), 3);
  int64_t at = 2;
  EXPECT_EQ(Serve(out, SYS_splice, {static_cast<uint64_t>(p[0]), 0, kOut, Address(&at), 3, 0}), 3);
  EXPECT_EQ(Stored(out), std::string("\0\0abc", 5));
  EXPECT_EQ(at, 5);
  EXPECT_EQ(out.offset, 0u);
  close(p[0]);
  close(p[1]);
}

TEST_F(FdCopiesTest, SendfileWithinAFileWritesWhatTheKernelWrites) {
  // A copy to just past where it reads, behind it, and far past it, each compared with the
  // kernel's sendfile on a scratch file of the same bytes.
  std::string text;
  for (int i = 0; text.size() < 6000; ++i) text += "line " + std::to_string(i) + "\n";
  const std::string bytes = std::string(7, '\0') + text;
  char tmpl[] = "/tmp/amino-sendfile-XXXXXX";
  const int kernel = mkstemp(tmpl);
  ASSERT_GE(kernel, 0);
  unlink(tmpl);
  int n = 0;
  for (auto [in_at, out_at, count] : {std::tuple{0L, 7L, 12345L}, std::tuple{100L, 3L, 5000L},
                                      std::tuple{0L, 5000L, 9000L}, std::tuple{10L, 11L, 1L}}) {
    ServedFile& f = Served(kIn + n, "/self" + std::to_string(n), bytes, O_RDWR);
    ASSERT_EQ(ftruncate(kernel, 0), 0);
    ASSERT_EQ(pwrite(kernel, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    ASSERT_EQ(lseek(kernel, out_at, SEEK_SET), out_at);
    off_t kernel_in = in_at;
    const long expected = sendfile(kernel, kernel, &kernel_in, static_cast<size_t>(count));
    std::string want(static_cast<size_t>(lseek(kernel, 0, SEEK_END)), '\0');
    ASSERT_EQ(pread(kernel, want.data(), want.size(), 0), static_cast<ssize_t>(want.size()));

    f.offset = static_cast<uint64_t>(out_at);
    int64_t at = in_at;
    const uint64_t fd = static_cast<uint64_t>(kIn + n);
    EXPECT_EQ(Serve(f, SYS_sendfile, {fd, fd, Address(&at), static_cast<uint64_t>(count)}),
              expected)
        << "from " << in_at << " to " << out_at;
    EXPECT_EQ(at, kernel_in);
    EXPECT_TRUE(Stored(f) == want) << "from " << in_at << " to " << out_at;
    ++n;
  }
  close(kernel);
}

}  // namespace
}  // namespace amino::monitor::service::fd_calls
