// File data: read, write, append, truncate (grow and shrink), holes, SEEK_DATA / SEEK_HOLE,
// the file-size limit. Compared byte for byte with an in-memory model and with the kernel.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

class DataTest : public FsTest {
 protected:
  // Opens `p` on both sides with the same flags.
  void OpenBoth(const std::string& p, int flags, mode_t mode = 0644) {
    Result<OpenResult> o = root().Open(p, flags, mode);
    ASSERT_TRUE(o.ok()) << o.status().message();
    id_ = o->id;
    fd_ = open(H(p).c_str(), flags, mode);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    if (id_ != 0) {
      EXPECT_TRUE(root().Close(id_).ok());
    }
    FsTest::TearDown();
  }
  // Writes `bytes` at `at` on both sides.
  void WriteBoth(uint64_t at, const std::string& bytes) {
    ASSERT_TRUE(root().Write(id_, at, bytes).ok());
    ASSERT_EQ(pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(at)),
              static_cast<ssize_t>(bytes.size()));
  }
  std::string HostRead(uint64_t off, size_t len) {
    std::string buf(len, '\0');
    ssize_t n = pread(fd_, buf.data(), len, static_cast<off_t>(off));
    buf.resize(n < 0 ? 0 : static_cast<size_t>(n));
    return buf;
  }
  FileId id_ = 0;
  int fd_ = -1;
};

std::string Bytes(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST_F(DataTest, WriteThenReadBack) {
  OpenBoth("/f", O_RDWR | O_CREAT);
  Result<size_t> n = root().Write(id_, 0, "hello, world");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 12u);
  EXPECT_EQ(*root().Read(id_, 0, 100), "hello, world");
  EXPECT_EQ(*root().Read(id_, 7, 3), "wor");
  EXPECT_EQ(*root().Read(id_, 12, 10), "");
  EXPECT_EQ(*root().Read(id_, 1000, 10), "");
  EXPECT_EQ(root().FStat(id_)->attr.size, 12u);
  EXPECT_EQ(root().GetStat("/f")->attr.size, 12u);
}

TEST_F(DataTest, RandomWritesMatchAModelAndTheKernel) {
  OpenBoth("/f", O_RDWR | O_CREAT);
  std::string model;
  std::mt19937 rng(42);
  for (int i = 0; i < 150; ++i) {
    uint64_t off = rng() % 40000;
    size_t len = rng() % 9000;
    std::string data = Bytes(len, static_cast<uint32_t>(i));
    Result<size_t> n = root().Write(id_, off, data);
    ASSERT_TRUE(n.ok()) << n.status().message();
    ASSERT_EQ(*n, len);
    ASSERT_EQ(pwrite(fd_, data.data(), len, static_cast<off_t>(off)), static_cast<ssize_t>(len));
    if (len > 0) {
      if (model.size() < off + len) model.resize(off + len, '\0');
      model.replace(off, len, data);
    }
    uint64_t roff = rng() % 50000;
    size_t rlen = rng() % 12000;
    Result<std::string> got = root().Read(id_, roff, rlen);
    ASSERT_TRUE(got.ok());
    std::string want = roff < model.size() ? model.substr(roff, rlen) : "";
    ASSERT_EQ(*got, want) << "read " << rlen << " at " << roff << " after write " << i;
    ASSERT_EQ(*got, HostRead(roff, rlen));
  }
  EXPECT_EQ(root().FStat(id_)->attr.size, model.size());
  EXPECT_EQ(*root().ReadFile("/f"), model);
}

TEST_F(DataTest, HolesReadAsZerosAndStoreNoPages) {
  OpenBoth("/f", O_RDWR | O_CREAT);
  const uint64_t far = 10 << 20;
  ASSERT_TRUE(root().Write(id_, far, "x").ok());
  ASSERT_EQ(pwrite(fd_, "x", 1, far), 1);
  Result<Stat> st = root().FStat(id_);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->attr.size, far + 1);
  EXPECT_EQ(st->attr.blocks, kTransferUnit / 512);  // one stored page
  EXPECT_EQ(*root().Read(id_, 0, 5000), std::string(5000, '\0'));
  EXPECT_EQ(*root().Read(id_, far - 2, 10), std::string("\0\0x", 3));
}

TEST_F(DataTest, SeekDataAndSeekHoleMatchTheKernel) {
  OpenBoth("/f", O_RDWR | O_CREAT);
  // Data in pages 0, 3-4 and 9; holes elsewhere; size ends inside a hole.
  struct Piece {
    uint64_t off;
    size_t len;
  };
  for (Piece p : {Piece{100, 10}, Piece{3 * 4096 + 5, 6000}, Piece{9 * 4096, 4096}}) {
    std::string d = Bytes(p.len, 1);
    ASSERT_TRUE(root().Write(id_, p.off, d).ok());
    ASSERT_EQ(pwrite(fd_, d.data(), d.size(), static_cast<off_t>(p.off)),
              static_cast<ssize_t>(d.size()));
  }
  ASSERT_TRUE(root().FTruncate(id_, 14 * 4096 + 17).ok());
  ASSERT_EQ(ftruncate(fd_, 14 * 4096 + 17), 0);
  fsync(fd_);
  for (uint64_t off = 0; off <= 15 * 4096; off += 1024) {
    off_t d = lseek(fd_, static_cast<off_t>(off), SEEK_DATA);
    int derr = d < 0 ? errno : 0;
    Result<uint64_t> sd = root().SeekData(id_, off);
    EXPECT_EQ(ErrName(Err(sd)), ErrName(derr)) << "SEEK_DATA " << off;
    if (sd.ok() && d >= 0) {
      EXPECT_EQ(*sd, static_cast<uint64_t>(d)) << "SEEK_DATA " << off;
    }
    off_t h = lseek(fd_, static_cast<off_t>(off), SEEK_HOLE);
    int herr = h < 0 ? errno : 0;
    Result<uint64_t> sh = root().SeekHole(id_, off);
    EXPECT_EQ(ErrName(Err(sh)), ErrName(herr)) << "SEEK_HOLE " << off;
    if (sh.ok() && h >= 0) {
      EXPECT_EQ(*sh, static_cast<uint64_t>(h)) << "SEEK_HOLE " << off;
    }
  }
}

TEST_F(DataTest, ShrinkThenGrowReadsZerosPastTheCut) {
  OpenBoth("/f", O_RDWR | O_CREAT);
  std::string x(3 * 4096, 'x');
  ASSERT_TRUE(root().Write(id_, 0, x).ok());
  ASSERT_TRUE(root().FTruncate(id_, 100).ok());
  EXPECT_EQ(root().FStat(id_)->attr.size, 100u);
  EXPECT_EQ(root().FStat(id_)->attr.blocks, kTransferUnit / 512);
  ASSERT_TRUE(root().FTruncate(id_, 3 * 4096).ok());
  std::string want = std::string(100, 'x') + std::string(3 * 4096 - 100, '\0');
  EXPECT_EQ(*root().Read(id_, 0, 3 * 4096), want);
  // The same through truncate(2) on the path.
  ASSERT_TRUE(root().Truncate("/f", 50).ok());
  ASSERT_TRUE(root().Truncate("/f", 200).ok());
  EXPECT_EQ(*root().ReadFile("/f"), std::string(50, 'x') + std::string(150, '\0'));
  // A page-aligned cut leaves no partial page behind.
  ASSERT_TRUE(root().Write(id_, 0, x).ok());
  ASSERT_TRUE(root().FTruncate(id_, 4096).ok());
  EXPECT_EQ(root().FStat(id_)->attr.blocks, kTransferUnit / 512);
  ASSERT_TRUE(root().FTruncate(id_, 0).ok());
  EXPECT_EQ(root().FStat(id_)->attr.blocks, 0u);
  EXPECT_EQ(*root().Read(id_, 0, 10), "");
}

// Whole pages are stored without reading what they replace (only whether it was there): over
// a page, into a hole inside the file and past its end, each counted once in st_blocks (fsck
// checks the count against the stored pages when the fixture ends).
TEST_F(DataTest, WholePagesOverPagesAndHolesCountTheirBlocksOnce) {
  OpenBoth("/f", O_RDWR | O_CREAT);
  const size_t page = kTransferUnit;
  ASSERT_NO_FATAL_FAILURE(WriteBoth(0, std::string(3 * page, 'a')));     // pages 0-2, new
  ASSERT_NO_FATAL_FAILURE(WriteBoth(5 * page, std::string(page, 'b')));  // past the end: 3-4 holes
  EXPECT_EQ(root().FStat(id_)->attr.blocks, 4 * page / 512);
  ASSERT_NO_FATAL_FAILURE(WriteBoth(page, std::string(page, 'c')));  // over a stored page
  EXPECT_EQ(root().FStat(id_)->attr.blocks, 4 * page / 512);
  ASSERT_NO_FATAL_FAILURE(WriteBoth(3 * page, std::string(page, 'd')));  // into a hole inside
  EXPECT_EQ(root().FStat(id_)->attr.blocks, 5 * page / 512);
  // A write of pages and parts of pages: the parts keep the rest of their pages.
  ASSERT_NO_FATAL_FAILURE(WriteBoth(page / 2, std::string(2 * page, 'e')));
  EXPECT_EQ(root().FStat(id_)->attr.blocks, 5 * page / 512);
  EXPECT_EQ(root().FStat(id_)->attr.size, 6 * page);
  EXPECT_EQ(*root().Read(id_, 0, 6 * page), HostRead(0, 6 * page));
}

TEST_F(DataTest, PartsOfPagesKeepTheRestAndCountNewPagesOnce) {
  // A part of a stored page is changed in place (partial put): what the page held around it
  // stays, a shorter page grows with zeros up to the part, and a part of a hole is a new page.
  OpenBoth("/f", O_RDWR | O_CREAT);
  const size_t page = kTransferUnit;
  auto same = [&] {
    Result<Stat> st = root().FStat(id_);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(*root().Read(id_, 0, st->attr.size + 10), HostRead(0, st->attr.size + 10));
  };
  ASSERT_NO_FATAL_FAILURE(WriteBoth(0, std::string(100, 'a')));  // page 0: 100 bytes
  ASSERT_NO_FATAL_FAILURE(WriteBoth(40, std::string(10, 'b')));  // inside it
  ASSERT_NO_FATAL_FAILURE(same());
  ASSERT_NO_FATAL_FAILURE(WriteBoth(300, std::string(20, 'c')));  // past its end, same page
  ASSERT_NO_FATAL_FAILURE(same());
  EXPECT_EQ(root().FStat(id_)->attr.blocks, page / 512);
  ASSERT_NO_FATAL_FAILURE(WriteBoth(3 * page + 7, std::string(5, 'd')));  // pages 1-2 holes
  EXPECT_EQ(root().FStat(id_)->attr.blocks, 2 * page / 512);
  ASSERT_NO_FATAL_FAILURE(WriteBoth(page + page - 3, std::string(9, 'e')));  // end of 1, start of 2
  EXPECT_EQ(root().FStat(id_)->attr.blocks, 4 * page / 512);
  ASSERT_NO_FATAL_FAILURE(same());
  ASSERT_NO_FATAL_FAILURE(
      WriteBoth(page + 1, std::string(3, 'f')));  // inside a page made of a part
  ASSERT_NO_FATAL_FAILURE(WriteBoth(3 * page + 2, std::string(page, 'g')));  // the last page, grown
  EXPECT_EQ(root().FStat(id_)->attr.blocks, 5 * page / 512);
  EXPECT_EQ(root().FStat(id_)->attr.size, 4 * page + 2);
  ASSERT_NO_FATAL_FAILURE(same());
}

TEST_F(DataTest, ShrinkingOrRemovingAFileLeavesItsNeighboursPages) {
  // Files made one after the other have neighbouring ids, so their pages are neighbours in
  // the Data database; the last one's are the database's last records.
  const size_t n = 10 * 4096;
  std::vector<FileId> ids;
  std::vector<std::string> data;
  for (const char* p : {"/a", "/b", "/c"}) {
    Result<OpenResult> o = root().Open(p, O_RDWR | O_CREAT, 0644);
    ASSERT_TRUE(o.ok()) << o.status().message();
    ids.push_back(o->id);
    data.push_back(Bytes(n, static_cast<uint32_t>(ids.size())));
    ASSERT_TRUE(root().Write(o->id, 0, data.back()).ok());
  }
  auto whole = [&](size_t i) { return *root().Read(ids[i], 0, 2 * n); };
  ASSERT_TRUE(root().FTruncate(ids[1], 4 * 4096 + 100).ok());
  EXPECT_EQ(root().FStat(ids[1])->attr.blocks, 5u * 8);
  ASSERT_TRUE(root().FTruncate(ids[1], n).ok());
  EXPECT_EQ(whole(1), data[1].substr(0, 4 * 4096 + 100) + std::string(n - 4 * 4096 - 100, '\0'));
  EXPECT_EQ(whole(0), data[0]);
  EXPECT_EQ(whole(2), data[2]);
  ASSERT_TRUE(root().FTruncate(ids[2], 4096).ok());
  EXPECT_EQ(whole(2), data[2].substr(0, 4096));
  for (FileId id : ids) ASSERT_TRUE(root().Close(id).ok());
  ASSERT_TRUE(root().Unlink("/c").ok());
  ASSERT_TRUE(root().Unlink("/a").ok());
  Result<OpenResult> b = root().Open("/b", O_RDONLY);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*root().Read(b->id, 0, 2 * n),
            data[1].substr(0, 4 * 4096 + 100) + std::string(n - 4 * 4096 - 100, '\0'));
  EXPECT_TRUE(root().Close(b->id).ok());
  ExpectConsistent();
}

TEST_F(DataTest, TruncateErrorsMatchTheKernel) {
  ASSERT_NO_FATAL_FAILURE(BothFile("/f", "abc"));
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  EXPECT_LINUX(root().Truncate("/f", -1), truncate(H("/f").c_str(), -1));
  EXPECT_LINUX(root().Truncate("/d", 0), truncate(H("/d").c_str(), 0));
  EXPECT_LINUX(root().Truncate("/none", 0), truncate(H("/none").c_str(), 0));
  EXPECT_LINUX(root().Truncate("/f/", 0), truncate(H("/f/").c_str(), 0));
  // The size limit is ext4's with 4 KiB blocks (records.h), whatever /tmp is here.
  EXPECT_ERRNO(root().Truncate("/f", static_cast<int64_t>(kMaxFileSize) + 1), EFBIG);
  EXPECT_ERRNO(root().Truncate("/f", static_cast<int64_t>(kMaxFileSize)), 0);
  EXPECT_EQ(root().GetStat("/f")->attr.size, kMaxFileSize);
  ASSERT_EQ(truncate(H("/f").c_str(), 3), 0);
  EXPECT_LINUX(root().Truncate("/f", 0), truncate(H("/f").c_str(), 0));
}

// As ext4 (the limit is its own): a write that crosses the limit is cut short, one that starts
// at it fails with EFBIG.
TEST_F(DataTest, WritesStopAtTheMaximumFileSize) {
  OpenBoth("/f", O_RDWR | O_CREAT);
  Result<size_t> n = root().Write(id_, kMaxFileSize - 2, "12345");
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, 2u);
  EXPECT_ERRNO(root().Write(id_, kMaxFileSize, "x"), EFBIG);
  EXPECT_EQ(*root().Read(id_, kMaxFileSize - 3, 10), std::string("\0"
                                                                 "12",
                                                                 3));
}

TEST_F(DataTest, AppendWritesAtTheEnd) {
  OpenBoth("/f", O_RDWR | O_CREAT | O_APPEND);
  Result<uint64_t> at = root().Append(id_, "one");
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(*at, 0u);
  at = root().Append(id_, "two");
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(*at, 3u);
  ASSERT_TRUE(root().FTruncate(id_, 5000).ok());
  at = root().Append(id_, "3");
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(*at, 5000u);
  EXPECT_EQ(root().FStat(id_)->attr.size, 5001u);
  EXPECT_EQ(*root().Read(id_, 0, 6), "onetwo");
}

TEST_F(DataTest, DataIsSharedByAllNamesAndOpens) {
  ASSERT_TRUE(root().WriteFile("/f", "first").ok());
  ASSERT_TRUE(root().Link("/f", "/g").ok());
  Result<OpenResult> a = root().Open("/f", O_RDWR);
  Result<OpenResult> b = root().Open("/g", O_RDONLY);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->id, b->id);
  ASSERT_TRUE(root().Write(a->id, 0, "FIRST!").ok());
  EXPECT_EQ(*root().Read(b->id, 0, 100), "FIRST!");
  EXPECT_EQ(*root().ReadFile("/g"), "FIRST!");
  EXPECT_EQ(root().GetStat("/g")->attr.size, 6u);
  EXPECT_TRUE(root().Close(a->id).ok());
  EXPECT_TRUE(root().Close(b->id).ok());
}

TEST_F(DataTest, WriteUpdatesMtimeAndCtime) {
  ASSERT_TRUE(root().WriteFile("/f", "x").ok());
  timespec old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_TRUE(root().Utimens("/f", old).ok());
  Result<OpenResult> o = root().Open("/f", O_WRONLY);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(root().Write(o->id, 1, "y").ok());
  Result<Stat> st = root().FStat(o->id);
  ASSERT_TRUE(st.ok());
  EXPECT_GT(st->attr.mtime.tv_sec, 1000);
  EXPECT_EQ(st->attr.atime.tv_sec, 1000);  // noatime: reads and writes leave atime alone
  ASSERT_TRUE(root().Read(o->id, 0, 2).ok());
  EXPECT_EQ(root().FStat(o->id)->attr.atime.tv_sec, 1000);
  EXPECT_TRUE(root().Close(o->id).ok());
}

TEST_F(DataTest, ReadingADirectoryIsEISDIR) {
  ASSERT_NO_FATAL_FAILURE(BothDir("/d"));
  OpenBoth("/d", O_RDONLY | O_DIRECTORY);
  char c;
  EXPECT_LINUX(root().Read(id_, 0, 1), pread(fd_, &c, 1, 0));
}

}  // namespace
}  // namespace amino::schema::testing
