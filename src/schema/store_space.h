// Room for a database on the file system that holds it. A full file system must cost the calls
// that need room an ENOSPC, as on a kernel file system, and nothing else: reads go on, what
// frees space (unlink, rmdir, truncate) still works, no process dies. Three parts:
// - The reserve: `amino.reserve`, reserve_bytes() allocated in the database directory while
//   there is room. The first sign of a full file system gives it back, so that the log records
//   of reads' access times and of removals, and Berkeley DB's own pages, still find room.
// - Low-space mode: from then until there is room again, calls that add data (file data, new
//   files and names, extended attributes) fail with ENOSPC before they touch the database
//   (Room()). Room: the file system keeps Kept() free beside what a call logs, and what it
//   adds fits there or in the free pages removals left inside the database (counted while the
//   file system is full). The reserve is made again once there is room for it as well.
// - A guard against SIGBUS: Berkeley DB's shared regions are files mapped into the process,
//   sparse; a page first touched on a full file system would kill the process with SIGBUS. The
//   guard allocates that page (after giving back the reserve) and lets the access run again.
#pragma once

#include <db.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "schema/status.h"

namespace amino::schema {

// One per Store, used by one thread at a time as the Store is; only the guard (a signal
// handler, in any thread) reaches in, through the reserve's atomic descriptor.
class StoreSpace {
 public:
  // The reserve's size: a 16th of the file system, from 4 MiB up to two log files (store.cc,
  // 16 MiB each): a log file goes only once a checkpoint is past all of it, so removals, which
  // log what they remove, need the one written and the next.
  uint64_t reserve_bytes() const { return reserve_bytes_; }
  static constexpr const char* kReserveFile = "amino.reserve";

  // The guard mends this database's regions from now on (before the environment is opened:
  // recovery fills the cache too).
  explicit StoreSpace(std::string dir);
  ~StoreSpace();
  StoreSpace(const StoreSpace&) = delete;
  StoreSpace& operator=(const StoreSpace&) = delete;

  // Before the environment is opened: gives the reserve back when the file system has less
  // room than opening may need (its region files), so that a database on a full file system
  // still opens. True when something was given back.
  bool MakeRoomToOpen();
  // After the environment and its databases `dbs` are open: the room that the pages of its
  // region files and of the databases may still take is kept from now on, and the reserve is
  // made if there is room for it.
  // Fails with ENOSPC when the file system has no room for what the environment took at open.
  Status Attach(std::vector<DB*> dbs);

  // Ok, or ENOSPC while the file system is full (low-space mode, rechecked at most every 50 ms).
  // `bytes`: about how much the call adds.
  Status Room(uint64_t bytes);
  // Free bytes the calls that add data must leave to removals, reads and the cache.
  uint64_t Kept() const;
  // Bytes of free pages inside the databases, as last counted (the store counts them while the
  // file system is full): calls may fill them without room on the file system, as long as the
  // log still has its room there.
  void NoteFreeInside(uint64_t bytes) { free_inside_ = bytes; }
  uint64_t free_inside() const { return free_inside_; }
  // How the store gives back what it can (the log files recovery no longer needs; when
  // ReclaimDue(), a count of its free pages), tried before a call is refused room.
  void SetReclaimer(std::function<void()> reclaim) { reclaim_ = std::move(reclaim); }
  // At the start of every top-level transaction: if any store met a full file system since the
  // last look and this one's has no room left, the reserve goes back now, before the
  // transaction writes its first log record.
  void Notice();
  // Whether ENOSPC ends low-space mode's calls now.
  bool low() const { return low_; }
  // At most every kReclaimNs: whether the store should count its free pages and give back
  // what it can of them.
  bool ReclaimDue();

  // Called for every error Berkeley DB returns, in any store of the process: true when it says
  // a file system is full (ENOSPC, EDQUOT). Each store then looks at its own.
  static bool NoteError(int err);
  // Free bytes for unprivileged users on the file system of `dir` (0 when unknown).
  static uint64_t FreeBytes(const std::string& dir);

  // Allocates the blocks of [0, size) of `path` that are not yet (past its end if it is
  // shorter). False when the file system has no room for them.
  bool ClaimFile(const std::string& path, uint64_t size);
  // Blocks may have been given back (a compaction): the next claims look at each file whole.
  void ForgetClaims() { claimed_.clear(); }

 private:
  static constexpr uint64_t kRecheckNs = 50'000'000;

 public:
  struct Region {
    std::string path;
    uint64_t mapped;  // bytes of it mapped: how far it may grow
    bool grows;       // filled as the store is used (the cache, the log's buffer)
  };

 private:
  static constexpr uint64_t kAmplification = 4;
  static constexpr uint64_t kTightFactor = 16;
  static constexpr uint64_t kReclaimNs = 500'000'000;
  uint64_t next_reclaim_ns_ = 0;
  uint64_t next_notice_ns_ = 0;
  bool MakeReserve();  // true when the reserve is in place
  // Whether a call adding `bytes` fits on a file system with `free` bytes, `keep` left over.
  bool Fits(uint64_t free, uint64_t keep, uint64_t bytes) const;
  // Fits on the file system as it is now, after the store reclaimed what it could if not.
  bool FitsNow(uint64_t keep, uint64_t bytes);
  void Take(uint64_t bytes);  // a call was let add `bytes`: free pages inside are used first
  bool Claim();               // false when the file system is full
  void GiveBackReserve();

  std::string dir_;
  uint64_t reserve_bytes_ = 32 << 20;
  bool guarded_ = false;
  std::vector<Region> regions_;  // the environment's region files
  std::vector<DB*> dbs_;
  // How far each file was claimed, so that a claim allocates only what the file grew by:
  // fallocate over allocated blocks still costs time in proportion (per page on tmpfs). Known
  // while the file is the same inode and holds at least the blocks it held then; all of it is
  // claimed again every kFullClaimNs (a removal of blocks that a growth hid, by another session's
  // compaction, say) and after this store's own compaction.
  struct Claimed {
    dev_t dev = 0;
    ino_t ino = 0;
    uint64_t to = 0;
    blkcnt_t blocks = 0;
  };
  std::unordered_map<std::string, Claimed> claimed_;
  uint64_t next_full_claim_ns_ = 0;
  static constexpr uint64_t kFullClaimNs = 5'000'000'000;
  std::atomic<int> reserve_fd_{-1};  // the guard may give it back from a signal handler
  bool low_ = false;
  uint64_t budget_ = 0;  // bytes calls may add before the free space is looked at again
  uint64_t free_inside_ = 0;
  std::function<void()> reclaim_;  // NoteFreeInside's, less what calls were let add since
  uint64_t full_seen_ = 0;         // NoteError's count when this store last looked
  uint64_t next_check_ns_ = 0;
};

}  // namespace amino::schema
