#include "monitor/service/served_file.h"

#include <fcntl.h>

#include <cstdio>
#include <utility>

#include "monitor/service/deferral_policy.h"
#include "monitor/service/file_locks.h"
#include "monitor/service/user_txn.h"

namespace amino::monitor::service {

ServedFile::~ServedFile() {
  // flock and OFD locks belong to the open file description, which ends here.
  ReleaseDescriptionLocks(this);
  if (!counted || !mfs) return;
  // The last descriptor is gone: the schema frees an unlinked file's data now. Opened in a
  // transaction still open, it is closed inside it (an abort undoes both). Otherwise on its
  // own; when a transaction holds the file's record, once that one ends.
  std::shared_ptr<UserTxn> txn = opened_in.lock();
  if (txn && !txn->txn) txn.reset();
  CallOutcome o = RunCallAlone(
      *mfs, [&](schema::Transaction& t) { return mfs->fs->Close(t, id); },
      txn ? txn->txn.get() : nullptr);
  if (o.kind == CallOutcome::Kind::kConflict) {
    // Retried later; a close inside a transaction goes with it (it may still abort).
    (txn ? txn->deferred_closes : mfs->deferred_closes).push_back(id);
  } else if (o.kind == CallOutcome::Kind::kDone && !o.status.ok()) {
    std::fprintf(stderr, "amino: %s: closing file %llu: %s\n", mfs->mount->point.c_str(),
                 static_cast<unsigned long long>(id), o.status.message().c_str());
  }
}

void NoteDataAccess(ServedFile& f, bool due) {
  if (!f.mfs || (f.flags & O_NOATIME) || f.atime_current_at == f.mfs->change_generation) return;
  // Mostly relatime finds nothing due: asked first of the read cache alone, as a deferred call
  // (the access that led here is the call being served; its number is back after). Found due
  // already, it needs a transaction that can write.
  const long call_nr = std::exchange(f.mfs->call_nr, due ? -1 : DeferralPolicy::kAccessTime);
  CallOutcome o = RunCallAlone(*f.mfs, [&](schema::Transaction& t) -> schema::Status {
    auto wrote = f.mfs->fs->TouchAtime(t, f.id);
    return wrote.ok() ? schema::Status::Ok() : wrote.status();
  });
  f.mfs->call_nr = call_nr;
  // Current now (a conflict or a failure leaves it for the next access).
  if (o.kind == CallOutcome::Kind::kDone && o.status.ok()) {
    f.atime_current_at = f.mfs->change_generation;
  }
}

}  // namespace amino::monitor::service
