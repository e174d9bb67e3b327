// The schema's __ham_func4 gives libdb's values for every length and alignment, and libdb's own
// calls bind to it (src/schema/db_checksum.h).
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "schema/db_checksum.h"
#include "schema/filesystem.h"
#include "temp_dir.h"

extern "C" uint32_t __ham_func4(void* dbp, const void* key, uint32_t len);

namespace amino::schema {
namespace {

using HashFn = uint32_t (*)(void*, const void*, uint32_t);

// libdb's own definition, looked up in the library itself rather than in the global scope.
HashFn LibdbHash() {
  void* lib = dlopen("libdb-5.3.so", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return nullptr;
  return reinterpret_cast<HashFn>(dlvsym(lib, "__ham_func4", "DB5_3"));
}

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

void ExpectAllAgree(HashFn libdb, const uint8_t* p, size_t n) {
  const uint32_t want = libdb(nullptr, p, static_cast<uint32_t>(n));
  EXPECT_EQ(DbChecksumHash(p, n), want) << n << " bytes";
  EXPECT_EQ(DbChecksumHashPortable(p, n), want) << n << " bytes";
  if (DbChecksumHasAvx2()) {
    EXPECT_EQ(DbChecksumHashAvx2(p, n), want) << n << " bytes";
  }
  EXPECT_EQ(__ham_func4(nullptr, p, static_cast<uint32_t>(n)), want) << n << " bytes";
}

TEST(ChecksumTest, LibdbIsLinkedAndDiffersFromOurs) {
  HashFn libdb = LibdbHash();
  ASSERT_NE(libdb, nullptr) << dlerror();
  EXPECT_NE(reinterpret_cast<void*>(libdb), reinterpret_cast<void*>(&__ham_func4));
}

TEST(ChecksumTest, EveryShortLengthAtEveryAlignment) {
  HashFn libdb = LibdbHash();
  ASSERT_NE(libdb, nullptr);
  const std::vector<uint8_t> bytes = RandomBytes(700, 1);
  for (size_t offset = 0; offset < 32; ++offset) {
    for (size_t n = 0; n + offset <= 660; ++n) ExpectAllAgree(libdb, bytes.data() + offset, n);
  }
}

TEST(ChecksumTest, RecordAndPageSizes) {
  HashFn libdb = LibdbHash();
  ASSERT_NE(libdb, nullptr);
  for (size_t n : {4095u, 4096u, 4097u, 8192u + 31, 65536u, 65536u + 13}) {
    const std::vector<uint8_t> random = RandomBytes(n, static_cast<uint32_t>(n));
    ExpectAllAgree(libdb, random.data(), n);
    // All bits set: every product at its largest before the wrap.
    const std::vector<uint8_t> ones(n, 0xff);
    ExpectAllAgree(libdb, ones.data(), n);
  }
}

// What the dynamic linker binds libdb's PLT call to: the first definition in the global scope.
TEST(ChecksumTest, LibdbCallsBindToOurs) {
  void* bound = dlsym(RTLD_DEFAULT, "__ham_func4");
  EXPECT_EQ(bound, reinterpret_cast<void*>(&__ham_func4));
}

// A file system written with our checksums on log records and pages passes the checks of
// Berkeley DB's own tools, which hash with the library's function: catastrophic recovery reads
// every log record, verify every page. Then it is read back.
TEST(ChecksumTest, DatabaseWrittenAndVerifiedByTheLibrary) {
  testing::TempDir dir("amino-checksum-");
  const std::string db = dir.path() + "/db";
  ASSERT_TRUE(FileSystem::Mkfs(db).ok());
  const std::vector<uint8_t> data = RandomBytes(200000, 7);
  Cred root{};
  {
    auto fs = FileSystem::Open(db);
    ASSERT_TRUE(fs.ok());
    ASSERT_TRUE((*fs)
                    ->Run([&](Transaction& t) -> Status {
                      AMINO_ASSIGN_OR_RETURN(OpenResult r,
                                             (*fs)->Open(t, root, "/f", O_CREAT | O_RDWR, 0644));
                      AMINO_ASSIGN_OR_RETURN(
                          size_t n, (*fs)->Write(t, root, r.id, 0, data.data(), data.size()));
                      EXPECT_EQ(n, data.size());
                      return (*fs)->Close(t, r.id);
                    })
                    .ok());
  }
  ASSERT_EQ(std::system(("db5.3_recover -c -h " + db).c_str()), 0);
  ASSERT_EQ(std::system(("db5.3_verify -q -h " + db + " data.db path.db names.db").c_str()), 0);
  auto fs = FileSystem::Open(db);
  ASSERT_TRUE(fs.ok()) << fs.status().message();
  std::vector<uint8_t> back(data.size());
  ASSERT_TRUE((*fs)
                  ->Run([&](Transaction& t) -> Status {
                    AMINO_ASSIGN_OR_RETURN(OpenResult r, (*fs)->Open(t, root, "/f", O_RDONLY));
                    AMINO_ASSIGN_OR_RETURN(size_t n,
                                           (*fs)->Read(t, r.id, 0, back.data(), back.size()));
                    EXPECT_EQ(n, data.size());
                    return (*fs)->Close(t, r.id);
                  })
                  .ok());
  EXPECT_EQ(back, data);
}

}  // namespace
}  // namespace amino::schema
