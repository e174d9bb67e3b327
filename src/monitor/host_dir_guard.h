// Defence in depth where the mount cover (mount_cover.h) cannot be made: without CAP_SYS_ADMIN
// the host directory under a mount point is made read-only for the run instead, by taking its
// write bits away, so that a way around the monitor still unknown (a core dump written while
// the cwd is in a mount, for one) fails with EACCES instead of writing there. Only a directory
// of the monitor's own user is changed: its programs are that user too, and keep no capability
// that writes regardless (a run with CAP_SYS_ADMIN gets the cover instead).
//
// The directory's mode is given back by the last run that uses the database: each run holds the
// first byte of DBDIR/amino.guard.lock shared, and one that can take it whole at its end is the
// last. The mode is kept in DBDIR/amino.guard meanwhile, so a run that died leaves it there and
// the next last run gives it back. A mode changed by hand since is left as it is.
#pragma once

#include <string>

namespace amino::monitor {

// Whether this process may make the mount cover (CAP_SYS_ADMIN in its effective set).
bool MayCoverMountPoints();

// Gives back what every live guard holds, as their destructors would: for a monitor about to
// end itself by a signal (the command's own death, Tracer::Run), whose destructors do not run.
void ReleaseHostDirGuards();

class HostDirGuard {
 public:
  // Guards `host_dir` for this run, keeping its mode in `db_dir`. Where it cannot (not a
  // directory, another owner, no write bits, the database directory not writable) nothing is
  // changed and guarded() says false.
  HostDirGuard(std::string host_dir, std::string db_dir);
  ~HostDirGuard();  // the last run of the database gives every kept mode back (Release)
  HostDirGuard(const HostDirGuard&) = delete;
  HostDirGuard& operator=(const HostDirGuard&) = delete;

  // The directory is read-only now, by this run or one before it.
  bool guarded() const { return guarded_; }

 private:
  friend void ReleaseHostDirGuards();
  void Release();

  const std::string host_dir_;
  const std::string db_dir_;
  int lock_fd_ = -1;
  bool guarded_ = false;
};

}  // namespace amino::monitor
