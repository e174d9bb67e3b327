#include "monitor/service/served_file.h"

#include <cstdio>

#include "monitor/service/file_locks.h"

namespace amino::monitor::service {

ServedFile::~ServedFile() {
  // flock and OFD locks belong to the open file description, which ends here.
  ReleaseDescriptionLocks(this);
  if (!counted || !mfs) return;
  // The last descriptor is gone: the schema frees an unlinked file's data now. Close waits for
  // locks (it must happen), which only another session's short per-call transaction can hold.
  schema::Status st = mfs->fs->Run(nullptr, {mfs->durability, false},
                                   [&](schema::Transaction& t) { return mfs->fs->Close(t, id); });
  if (!st.ok()) {
    std::fprintf(stderr, "amino: %s: closing file %llu: %s\n", mfs->mount->point.c_str(),
                 static_cast<unsigned long long>(id), st.message().c_str());
  }
}

}  // namespace amino::monitor::service
