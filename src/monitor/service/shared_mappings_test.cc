// Shared mappings of stored files (shared_mappings.h) against a real database: the mapping file
// starts as the stored bytes, stores made through a mapping reach the schema at a write-back
// (only the range asked for, only pages that changed), the monitor's own changes reach the
// mapping, and a refresh drops stores never written back.
#include "monitor/service/shared_mappings.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "monitor/service/scratch_mount_test.h"
#include "schema/filesystem.h"

namespace amino::monitor::service {
namespace {

constexpr size_t kPage = 4096;

// Distinct bytes per page and offset, so that a page moved or lost shows.
std::string Pattern(size_t len, char salt) {
  std::string s(len, '\0');
  for (size_t i = 0; i < len; ++i) s[i] = static_cast<char>(salt + i / kPage * 7 + i % 251);
  return s;
}

class SharedMappingsTest : public ScratchMountTest {
 protected:
  schema::FileId Store(const std::string& path, const std::string& bytes) {
    schema::FileId id = 0;
    schema::Status st = mfs_.fs->Run([&](schema::Transaction& t) -> schema::Status {
      auto opened = mfs_.fs->Open(t, schema::Cred::Root(), path, O_CREAT | O_RDWR, 0644);
      if (!opened.ok()) return opened.status();
      id = opened->id;
      auto put = mfs_.fs->Write(t, schema::Cred::Root(), id, 0, bytes.data(), bytes.size());
      if (!put.ok()) return put.status();
      return mfs_.fs->Close(t, id);  // the description a tracee would hold is not the test's
    });
    EXPECT_TRUE(st.ok()) << st.message();
    return id;
  }

  std::string Stored(schema::FileId id) {
    std::string out;
    schema::Status st = mfs_.fs->Run([&](schema::Transaction& t) -> schema::Status {
      auto stat = mfs_.fs->FStat(t, id);
      if (!stat.ok()) return stat.status();
      out.assign(stat->attr.size, '\0');
      auto got = mfs_.fs->Read(t, id, 0, out.data(), out.size());
      if (!got.ok()) return got.status();
      out.resize(*got);
      return schema::Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st.message();
    return out;
  }

  // The file's modification time as the schema holds it.
  timespec Mtime(schema::FileId id) {
    timespec m{};
    schema::Status st = mfs_.fs->Run([&](schema::Transaction& t) -> schema::Status {
      auto stat = mfs_.fs->FStat(t, id);
      if (stat.ok()) m = stat->attr.mtime;
      return stat.status();
    });
    EXPECT_TRUE(st.ok()) << st.message();
    return m;
  }

  static std::string Contents(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return "fstat failed";
    std::string out(static_cast<size_t>(st.st_size), '\0');
    if (pread(fd, out.data(), out.size(), 0) != st.st_size) return "pread failed";
    return out;
  }

  // The mapping file of `id`, mapped shared as a tracee would map it.
  char* Map(SharedMappings& maps, schema::FileId id, size_t len, int* fd) {
    const SharedMappings::Mapping* mapping = nullptr;
    CallOutcome o = maps.Get(mfs_, id, &mapping);
    EXPECT_EQ(o.kind, CallOutcome::Kind::kDone);
    EXPECT_TRUE(o.status.ok()) << o.status.message();
    if (!mapping) return nullptr;
    *fd = mapping->fd;
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, mapping->fd, 0);
    EXPECT_NE(p, MAP_FAILED);
    return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }
};

TEST_F(SharedMappingsTest, TheMappingFileStartsAsTheStoredBytes) {
  const std::string bytes = Pattern(3 * kPage + 100, 'a');
  const schema::FileId id = Store("/f", bytes);
  SharedMappings maps;
  EXPECT_TRUE(maps.empty());
  const SharedMappings::Mapping* mapping = nullptr;
  ASSERT_EQ(maps.Get(mfs_, id, &mapping).kind, CallOutcome::Kind::kDone);
  ASSERT_NE(mapping, nullptr);
  EXPECT_EQ(Contents(mapping->fd), bytes);
  EXPECT_FALSE(maps.empty());
  EXPECT_EQ(maps.Find(mfs_, id), mapping);

  // Asked again: the same file, not filled again over stores made meanwhile.
  ASSERT_EQ(pwrite(mapping->fd, "Z", 1, 5), 1);
  const SharedMappings::Mapping* again = nullptr;
  ASSERT_EQ(maps.Get(mfs_, id, &again).kind, CallOutcome::Kind::kDone);
  EXPECT_EQ(again, mapping);
  EXPECT_EQ(Contents(again->fd)[5], 'Z');

  // Only owner-readable, in a directory nobody can list.
  struct stat st;
  ASSERT_EQ(fstat(mapping->fd, &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  const std::string dir = mapping->path.substr(0, mapping->path.rfind('/'));
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
}

TEST_F(SharedMappingsTest, StoresReachTheSchemaAtWriteBackOnly) {
  const std::string bytes = Pattern(4 * kPage, 'b');
  const schema::FileId id = Store("/f", bytes);
  SharedMappings maps;
  int fd = -1;
  char* p = Map(maps, id, bytes.size(), &fd);
  ASSERT_NE(p, nullptr);
  std::memcpy(p + kPage + 10, "stored", 6);
  std::memcpy(p + 3 * kPage, "last page", 9);
  EXPECT_EQ(Stored(id), bytes);  // not before a write-back

  CallOutcome o = maps.WriteBack(mfs_, id);
  ASSERT_EQ(o.kind, CallOutcome::Kind::kDone);
  ASSERT_TRUE(o.status.ok()) << o.status.message();
  std::string want = bytes;
  want.replace(kPage + 10, 6, "stored");
  want.replace(3 * kPage, 9, "last page");
  EXPECT_EQ(Stored(id), want);
  munmap(p, bytes.size());
}

TEST_F(SharedMappingsTest, ARangedWriteBackLeavesTheRestForLater) {
  const std::string bytes = Pattern(6 * kPage, 'c');
  const schema::FileId id = Store("/f", bytes);
  SharedMappings maps;
  int fd = -1;
  char* p = Map(maps, id, bytes.size(), &fd);
  ASSERT_NE(p, nullptr);
  p[0] = 'X';
  p[5 * kPage + 1] = 'Y';

  // msync of the first page: a partial page asked for is written back whole, the rest waits.
  ASSERT_TRUE(maps.WriteBack(mfs_, id, 0, 10).status.ok());
  std::string stored = Stored(id);
  EXPECT_EQ(stored[0], 'X');
  EXPECT_EQ(stored[5 * kPage + 1], bytes[5 * kPage + 1]);

  ASSERT_TRUE(maps.WriteBack(mfs_, id).status.ok());
  stored = Stored(id);
  EXPECT_EQ(stored[0], 'X');
  EXPECT_EQ(stored[5 * kPage + 1], 'Y');
  munmap(p, bytes.size());
}

TEST_F(SharedMappingsTest, AWriteBackWithNothingStoredChangesNothing) {
  const schema::FileId id = Store("/f", Pattern(2 * kPage, 'd'));
  SharedMappings maps;
  const SharedMappings::Mapping* mapping = nullptr;
  ASSERT_EQ(maps.Get(mfs_, id, &mapping).kind, CallOutcome::Kind::kDone);
  const timespec before = Mtime(id);
  ASSERT_TRUE(maps.WriteBack(mfs_, id).status.ok());
  const timespec after = Mtime(id);
  EXPECT_EQ(after.tv_sec, before.tv_sec);
  EXPECT_EQ(after.tv_nsec, before.tv_nsec);
}

// A mapped file the monitor writes far beyond its end (a terabyte out): the write-back looks
// at the pages written, remembers nothing of the pages between, and finds every page in step,
// the last page of the old size too, so it rewrites nothing and the file's times stay.
TEST_F(SharedMappingsTest, AWriteFarOutIsComparedAloneAndRewritesNothing) {
  const schema::FileId id = Store("/f", Pattern(kPage + 17, 'g'));
  SharedMappings maps;
  const SharedMappings::Mapping* mapping = nullptr;
  ASSERT_EQ(maps.Get(mfs_, id, &mapping).kind, CallOutcome::Kind::kDone);
  ASSERT_TRUE(maps.WriteBack(mfs_, id).status.ok());  // every page known in step
  const uint64_t far = uint64_t{1} << 40;
  const std::string tail = Pattern(3000, 'h');
  ASSERT_TRUE(mfs_.fs
                  ->Run([&](schema::Transaction& t) {
                    return mfs_.fs
                        ->Write(t, schema::Cred::Root(), id, far, tail.data(), tail.size())
                        .status();
                  })
                  .ok());
  maps.Wrote(mfs_, id, far, tail.data(), tail.size());
  maps.Resized(mfs_, id, far + tail.size());
  const timespec before = Mtime(id);
  rusage start{}, end{};
  getrusage(RUSAGE_SELF, &start);
  ASSERT_TRUE(maps.WriteBack(mfs_, id).status.ok());
  getrusage(RUSAGE_SELF, &end);
  const timespec after = Mtime(id);
  EXPECT_EQ(after.tv_sec, before.tv_sec);
  EXPECT_EQ(after.tv_nsec, before.tv_nsec);
  // A note per page up to the write would be 2 GiB (2^28 pages).
  EXPECT_LT(end.ru_maxrss - start.ru_maxrss, 64 * 1024) << "KiB more at its peak";
}

TEST_F(SharedMappingsTest, TheMonitorsChangesReachTheMapping) {
  const std::string bytes = Pattern(4 * kPage, 'e');
  const schema::FileId id = Store("/f", bytes);
  SharedMappings maps;
  int fd = -1;
  char* p = Map(maps, id, 8 * kPage, &fd);
  ASSERT_NE(p, nullptr);

  maps.Wrote(mfs_, id, kPage + 3, "written", 7);
  EXPECT_EQ(std::string(p + kPage + 3, 7), "written");

  maps.Resized(mfs_, id, 6 * kPage);  // extended with zeros
  std::string now = Contents(fd);
  ASSERT_EQ(now.size(), 6 * kPage);
  EXPECT_EQ(now.substr(4 * kPage), std::string(2 * kPage, '\0'));
  maps.Resized(mfs_, id, kPage + 5);  // cut
  EXPECT_EQ(Contents(fd).size(), kPage + 5);

  // A file not mapped is no one's business.
  maps.Wrote(mfs_, id + 100, 0, "x", 1);
  maps.Resized(mfs_, id + 100, 0);
  EXPECT_EQ(maps.Find(mfs_, id + 100), nullptr);
  munmap(p, 8 * kPage);
}

TEST_F(SharedMappingsTest, CollapseAndInsertMoveTheBytesAfterTheRange) {
  const std::string bytes = Pattern(5 * kPage, 'f');
  const schema::FileId id = Store("/f", bytes);
  SharedMappings maps;
  const SharedMappings::Mapping* mapping = nullptr;
  ASSERT_EQ(maps.Get(mfs_, id, &mapping).kind, CallOutcome::Kind::kDone);

  maps.Collapsed(mfs_, id, kPage, 2 * kPage);
  std::string want = bytes.substr(0, kPage) + bytes.substr(3 * kPage);
  EXPECT_EQ(Contents(mapping->fd), want);

  maps.Inserted(mfs_, id, kPage, kPage);
  want = want.substr(0, kPage) + std::string(kPage, '\0') + want.substr(kPage);
  EXPECT_EQ(Contents(mapping->fd), want);
}

TEST_F(SharedMappingsTest, ARefreshDropsStoresNeverWrittenBack) {
  const std::string bytes = Pattern(2 * kPage, 'g');
  const schema::FileId id = Store("/f", bytes);
  SharedMappings maps;
  int fd = -1;
  char* p = Map(maps, id, bytes.size(), &fd);
  ASSERT_NE(p, nullptr);
  std::memcpy(p + 100, "aborted", 7);
  maps.Refresh(mfs_, id);
  EXPECT_EQ(std::string(p, bytes.size()), bytes);  // the mapping sees the schema again
  ASSERT_TRUE(maps.WriteBack(mfs_, id).status.ok());
  EXPECT_EQ(Stored(id), bytes);
  munmap(p, bytes.size());
}

TEST_F(SharedMappingsTest, AStoreAfterAWriteBackIsWrittenBackToo) {
  // The pages' marks skip what is in step; a page changed again must not be skipped, nor one
  // changed back to bytes seen before.
  const std::string bytes = Pattern(2 * kPage, 'h');
  const schema::FileId id = Store("/f", bytes);
  SharedMappings maps;
  int fd = -1;
  char* p = Map(maps, id, bytes.size(), &fd);
  ASSERT_NE(p, nullptr);
  const char original = p[7];
  p[7] = 'A';
  ASSERT_TRUE(maps.WriteBack(mfs_, id).status.ok());
  EXPECT_EQ(Stored(id)[7], 'A');
  p[7] = 'B';
  ASSERT_TRUE(maps.WriteBack(mfs_, id).status.ok());
  EXPECT_EQ(Stored(id)[7], 'B');
  // The monitor writes the page (in step with the schema only by that write), then a store
  // brings back the bytes the page had at the last write-back.
  maps.Wrote(mfs_, id, 7, "C", 1);
  ASSERT_TRUE(mfs_.fs
                  ->Run([&](schema::Transaction& t) -> schema::Status {
                    return mfs_.fs->Write(t, schema::Cred::Root(), id, 7, "C", 1).status();
                  })
                  .ok());
  p[7] = 'B';
  ASSERT_TRUE(maps.WriteBack(mfs_, id).status.ok());
  EXPECT_EQ(Stored(id)[7], 'B');
  p[7] = original;
  ASSERT_TRUE(maps.WriteBack(mfs_, id).status.ok());
  EXPECT_EQ(Stored(id), bytes);
  munmap(p, bytes.size());
}

TEST_F(SharedMappingsTest, AFileFreedMeanwhileIsForgotten) {
  // Removed and its last description closed while still mapped: stores go nowhere, as with
  // the kernel's mapping of a freed inode.
  const schema::FileId id = Store("/f", Pattern(kPage, 'i'));
  SharedMappings maps;
  int fd = -1;
  char* p = Map(maps, id, kPage, &fd);
  ASSERT_NE(p, nullptr);
  const std::string path = maps.Find(mfs_, id)->path;
  ASSERT_TRUE(mfs_.fs
                  ->Run([&](schema::Transaction& t) {
                    return mfs_.fs->Unlink(t, schema::Cred::Root(), "/f");
                  })
                  .ok());
  p[0] = 'x';
  CallOutcome o = maps.WriteBack(mfs_, id);
  EXPECT_EQ(o.kind, CallOutcome::Kind::kDone);
  EXPECT_TRUE(o.status.ok()) << o.status.message();
  EXPECT_EQ(maps.Find(mfs_, id), nullptr);
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  munmap(p, kPage);
}

}  // namespace
}  // namespace amino::monitor::service
