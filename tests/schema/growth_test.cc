// A tree of 200,000 files made one per transaction in the monitor's cache: the older page versions
// the multiversion databases keep need mutexes beyond the one per buffer Berkeley DB counts. They
// ran out at ~157,000 files ("unable to allocate memory for mutex"), and every later call
// failed.
#include <fcntl.h>

#include <string>

#include "fs_test.h"
#include "temp_dir.h"

namespace amino::schema::testing {
namespace {

TEST(GrowthTest, ATreeOfManyFilesNeverRunsOutOfMutexes) {
  TempDir db("amino-schema-growth-");
  const std::string dir = db.path() + "/fs";
  ASSERT_TRUE(FileSystem::Mkfs(dir).ok());
  OpenOptions options;
  options.cache_bytes = 128 << 20;  // the monitor's
  auto fs = FileSystem::Open(dir, options);
  ASSERT_TRUE(fs.ok()) << fs.status().message();
  const Cred root = Cred::Root();
  constexpr int kFiles = 200000;
  for (int i = 0; i < kFiles; ++i) {
    const std::string d = "/d" + std::to_string(i / 1000);
    Status st = (*fs)->Run([&](Transaction& t) -> Status {
      if (i % 1000 == 0) AMINO_RETURN_IF_ERROR((*fs)->Mkdir(t, root, d, 0755).status());
      AMINO_ASSIGN_OR_RETURN(OpenResult o, (*fs)->Open(t, root, d + "/f" + std::to_string(i),
                                                       O_CREAT | O_EXCL | O_WRONLY, 0644));
      return (*fs)->Close(t, o.id);
    });
    ASSERT_TRUE(st.ok()) << "file " << i << ": " << st.message();
  }
  auto st = Client(fs->get()).GetStat("/d199/f199999");
  ASSERT_TRUE(st.ok()) << st.status().message();
  Result<std::vector<Violation>> v = Fsck((*fs)->store());
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_TRUE(v->empty());
}

}  // namespace
}  // namespace amino::schema::testing
