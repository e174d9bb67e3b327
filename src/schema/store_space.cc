#include "schema/store_space.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <vector>

namespace amino::schema {

namespace {

std::atomic<uint64_t> g_full_seen{0};  // ENOSPC and EDQUOT from Berkeley DB, SIGBUS mended

// A database directory whose region files the guard mends. Written under g_guard_mu before
// `used` is set, read by the handler, which takes no lock: it may interrupt anything.
struct GuardedDir {
  std::atomic<bool> used{false};
  char prefix[PATH_MAX + 8] = {};  // "REALDIR/__db."
  size_t prefix_len = 0;
  std::atomic<int>* reserve_fd = nullptr;  // the store's reserve, given back first
  char message[PATH_MAX + 200] = {};       // what to say when the page cannot be had
  size_t message_len = 0;
};
constexpr int kMaxDirs = 32;
GuardedDir g_dirs[kMaxDirs];
std::mutex g_guard_mu;
struct sigaction g_previous;
std::atomic<uintptr_t> g_last_mended{0};
std::atomic_flag g_in_handler = ATOMIC_FLAG_INIT;
char g_maps[64 << 10];  // the handler's buffer for /proc/self/maps

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Async-signal-safe from here to OnSigbus: system calls, the tables, no allocation.
uint64_t ParseHex(const char*& p, const char* end) {
  uint64_t v = 0;
  for (; p < end; ++p) {
    const char c = *p;
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) break;
    v = v * 16 + static_cast<uint64_t>(d);
  }
  return v;
}

// One line of /proc/self/maps: whether it maps `addr`; if so its file offset at `addr` and its
// path (NUL-terminated in place).
bool LineMaps(char* line, char* end, uintptr_t addr, uint64_t* off, const char** path) {
  const char* p = line;
  const uint64_t start = ParseHex(p, end);
  if (p >= end || *p != '-') return false;
  ++p;
  const uint64_t stop = ParseHex(p, end);
  if (addr < start || addr >= stop) return false;
  for (int field = 0; field < 2 && p < end; ++field) {  // past the permissions, to the offset
    while (p < end && *p != ' ') ++p;
    while (p < end && *p == ' ') ++p;
  }
  *off = ParseHex(p, end) + (addr - start);
  char* slash = line;
  while (slash < end && *slash != '/') ++slash;
  if (slash == end) return false;
  *end = '\0';
  *path = slash;
  return true;
}

// The file and offset mapped at `addr` (false when none is), read from /proc/self/maps.
bool FindMapping(uintptr_t addr, uint64_t* off, const char** path) {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t have = 0;
  bool found = false;
  for (;;) {
    const ssize_t n = read(fd, g_maps + have, sizeof g_maps - 1 - have);
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    char* line = g_maps;
    char* nl;
    while (
        (nl = static_cast<char*>(memchr(line, '\n', static_cast<size_t>(g_maps + have - line))))) {
      if (LineMaps(line, nl, addr, off, path)) {
        found = true;
        break;
      }
      line = nl + 1;
    }
    if (found) break;
    have = static_cast<size_t>(g_maps + have - line);  // a partial line carries over
    memmove(g_maps, line, have);
    if (have == sizeof g_maps - 1) have = 0;  // a line longer than the buffer: skip it
  }
  close(fd);
  return found;
}

void OnSigbus(int sig, siginfo_t* info, void* context) {
  const uintptr_t page = reinterpret_cast<uintptr_t>(info->si_addr) & ~uintptr_t{4095};
  while (g_in_handler.test_and_set(std::memory_order_acquire)) sched_yield();
  uint64_t off = 0;
  const char* path = nullptr;
  bool mended = false;
  if (FindMapping(page, &off, &path)) {
    for (GuardedDir& d : g_dirs) {
      if (!d.used.load(std::memory_order_acquire) || strncmp(path, d.prefix, d.prefix_len) != 0) {
        continue;
      }
      // The same page again right after it was allocated: allocation is not what it lacks
      // (the file is shorter than the mapping, say).
      const int fd = g_last_mended.load() == page ? -1 : open(path, O_RDWR | O_CLOEXEC);
      if (fd >= 0) {
        const off_t at = static_cast<off_t>(off);
        const off_t chunk = at & ~off_t{(1 << 20) - 1};
        auto allocate = [&] {
          return fallocate(fd, FALLOC_FL_KEEP_SIZE, chunk, 1 << 20) == 0 ||
                 fallocate(fd, FALLOC_FL_KEEP_SIZE, at, 4096) == 0;
        };
        mended = allocate();
        if (!mended) {
          // The disk is full: the reserve goes back, and makes the room.
          const int reserve = d.reserve_fd->exchange(-1);
          if (reserve >= 0) {
            (void)ftruncate(reserve, 0);
            close(reserve);
          }
          g_full_seen.fetch_add(1, std::memory_order_relaxed);
          mended = allocate();
        }
        close(fd);
      }
      if (mended) {
        g_last_mended.store(page);
      } else {
        (void)!write(STDERR_FILENO, d.message, d.message_len);
      }
      break;
    }
  }
  g_in_handler.clear(std::memory_order_release);
  if (mended) return;  // the access runs again, and finds its page
  // Not a region page, or one that cannot be had: what would have happened without the guard.
  sigaction(SIGBUS, &g_previous, nullptr);
  if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (!(g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_handler != SIG_DFL &&
             g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  }
  // SIG_DFL: returning faults again, and the default action ends the process.
}

void InstallGuardOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
    // A fault's SIGBUS cannot wait: blocked, it ends the process without the handler.
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &bus, nullptr);
  });
}

// The region files (`__db.NNN`) of `dir` mapped in this process.
std::vector<StoreSpace::Region> RegionFiles(const std::string& dir) {
  std::vector<StoreSpace::Region> out;
  char real[PATH_MAX];
  if (!realpath(dir.c_str(), real)) return out;
  const std::string prefix = std::string(real) + "/__db.";
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.compare(0, prefix.size(), prefix) != 0 || path.find('/', prefix.size()) != path.npos) {
      continue;
    }
    const size_t dash = line.find('-'), space = line.find(' ');
    const size_t offset_at = line.find(' ', space + 1) + 1;
    if (dash == std::string::npos || space == std::string::npos) continue;
    const uint64_t start = std::stoull(line.substr(0, dash), nullptr, 16);
    const uint64_t end = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
    const uint64_t mapped = std::stoull(line.substr(offset_at), nullptr, 16) + (end - start);
    auto known = std::find_if(out.begin(), out.end(),
                              [&](const StoreSpace::Region& r) { return r.path == path; });
    if (known != out.end()) {
      known->mapped = std::max(known->mapped, mapped);
    } else {
      // __db.001 is the environment's own region, which grows only for the locks of a very
      // large transaction; the others (the log's buffer, the cache) fill as the store is used.
      out.push_back({path, mapped, path.compare(prefix.size(), std::string::npos, "001") != 0});
    }
  }
  return out;
}

uint64_t FreeBytesOf(const std::string& dir) {
  struct statvfs st;
  if (statvfs(dir.c_str(), &st) != 0) return 0;
  // Root may write into the blocks a file system keeps for it; others may not.
  const fsblkcnt_t blocks = geteuid() == 0 ? st.f_bfree : st.f_bavail;
  return static_cast<uint64_t>(blocks) * st.f_frsize;
}

}  // namespace

StoreSpace::StoreSpace(std::string dir) : dir_(std::move(dir)) {
  struct statvfs st;
  if (statvfs(dir_.c_str(), &st) == 0) {
    const uint64_t size = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
    reserve_bytes_ = std::clamp<uint64_t>(size / 16, 4 << 20, 32 << 20);
  }
  InstallGuardOnce();
  char real[PATH_MAX];
  if (!realpath(dir_.c_str(), real)) return;
  std::lock_guard lock(g_guard_mu);
  for (GuardedDir& d : g_dirs) {
    if (d.used.load()) continue;
    const int n = std::snprintf(d.prefix, sizeof d.prefix, "%s/__db.", real);
    if (n < 0 || static_cast<size_t>(n) >= sizeof d.prefix) return;
    d.prefix_len = static_cast<size_t>(n);
    d.reserve_fd = &reserve_fd_;
    const int m = std::snprintf(
        d.message, sizeof d.message,
        "amino: %s: the file system is full, and the database's shared memory cannot grow: "
        "the process stops here; the database recovers when next opened\n",
        dir_.c_str());
    d.message_len = m < 0 ? 0 : std::min(static_cast<size_t>(m), sizeof d.message - 1);
    d.used.store(true, std::memory_order_release);
    guarded_ = true;
    return;
  }
}

StoreSpace::~StoreSpace() {
  if (guarded_) {
    std::lock_guard lock(g_guard_mu);
    for (GuardedDir& d : g_dirs) {
      if (d.used.load() && d.reserve_fd == &reserve_fd_) d.used.store(false);
    }
  }
  // The handler may be giving the reserve back in another thread this very moment.
  while (g_in_handler.test_and_set(std::memory_order_acquire)) sched_yield();
  g_in_handler.clear(std::memory_order_release);
  const int fd = reserve_fd_.exchange(-1);
  if (fd >= 0) close(fd);
}

uint64_t StoreSpace::FreeBytes(const std::string& dir) { return FreeBytesOf(dir); }

bool StoreSpace::NoteError(int err) {
  if (err != ENOSPC && err != EDQUOT) return false;
  g_full_seen.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool StoreSpace::MakeRoomToOpen() {
  // Opening makes the region files and may replay the log into the cache (recovery).
  if (FreeBytesOf(dir_) >= 2 * reserve_bytes_) return false;
  const std::string path = dir_ + "/" + kReserveFile;
  struct stat st;
  low_ = true;
  if (stat(path.c_str(), &st) != 0 || st.st_blocks == 0) return false;
  return truncate(path.c_str(), 0) == 0;
}

Status StoreSpace::Attach(std::vector<DB*> dbs) {
  dbs_ = std::move(dbs);
  regions_ = RegionFiles(dir_);
  if (!Claim()) {
    return Status::Storage(ENOSPC, dir_ + ": the file system holding the database is full (" +
                                       std::to_string(FreeBytesOf(dir_) >> 10) +
                                       " KiB free): free some space on it");
  }
  if (!low_ && (!MakeReserve() || FreeBytesOf(dir_) < Kept())) low_ = true;
  return Status::Ok();
}

namespace {

// The log file being written: the one with the highest number.
std::string NewestLogFile(const std::string& dir) {
  std::string newest;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, "log.", 4) == 0 && e->d_name > newest) newest = e->d_name;
    }
    closedir(d);
  }
  return newest.empty() ? newest : dir + "/" + newest;
}

}  // namespace

bool StoreSpace::ClaimFile(const std::string& path, uint64_t size) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return true;  // gone (a log file removed meanwhile)
  if (static_cast<uint64_t>(st.st_blocks) * 512 + 4096 >= size) return true;
  Claimed& c = claimed_[path];
  if (c.dev != st.st_dev || c.ino != st.st_ino || st.st_blocks < c.blocks) c = {};
  if (c.to >= size) return true;
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return true;
  const off_t from = static_cast<off_t>(c.to);
  const bool done = fallocate(fd, FALLOC_FL_KEEP_SIZE, from, static_cast<off_t>(size) - from) == 0;
  const bool ok = done || (errno != ENOSPC && errno != EDQUOT);
  if (done && fstat(fd, &st) == 0) c = {st.st_dev, st.st_ino, size, st.st_blocks};
  close(fd);
  return ok;
}

bool StoreSpace::Claim() {
  if (const uint64_t now = NowNs(); now >= next_full_claim_ns_) {
    next_full_claim_ns_ = now + kFullClaimNs;
    claimed_.clear();
  }
  // Berkeley DB takes the blocks of these files without a system call that could fail: a page
  // of a region file is touched (a SIGBUS when it finds no room), a page of a database leaves
  // the cache long after the call that made it, the log is written at a commit. They are
  // allocated here, while the calls that need them can still be told ENOSPC.
  //
  // The cache grows into its region as pages are read, up to its mapped size. Once the file
  // system is tight for that (less free than kTightFactor times what it may still take), the
  // whole of it is claimed, as far as there is room: else the cache would take the room kept
  // for removals. (Claimed from the start, it would hold the cache's full size on every disk.)
  uint64_t growable = 0;
  for (const Region& r : regions_) {
    struct stat st;
    if (stat(r.path.c_str(), &st) != 0) continue;
    const uint64_t allocated = static_cast<uint64_t>(st.st_blocks) * 512;
    if (!ClaimFile(r.path, static_cast<uint64_t>(st.st_size))) return false;
    if (r.grows && r.mapped > allocated) growable += r.mapped - allocated;
  }
  if (growable > 0 && growable * kTightFactor > FreeBytesOf(dir_)) {
    for (const Region& r : regions_) {
      if (r.grows) (void)ClaimFile(r.path, r.mapped);
    }
  }
  for (DB* db : dbs_) {
    if (!db) continue;
    db_pgno_t last = 0;
    u_int32_t page = 0;
    const char* file = nullptr;
    DB_MPOOLFILE* mpf = db->get_mpf(db);
    if (mpf->get_last_pgno(mpf, &last) != 0 || db->get_pagesize(db, &page) != 0 ||
        db->get_dbname(db, &file, nullptr) != 0 || !file) {
      continue;
    }
    if (!ClaimFile(dir_ + "/" + file, (static_cast<uint64_t>(last) + 1) * page)) return false;
  }
  const std::string log = NewestLogFile(dir_);
  struct stat st;
  return log.empty() || stat(log.c_str(), &st) != 0 ||
         ClaimFile(log, static_cast<uint64_t>(st.st_size));
}

uint64_t StoreSpace::Kept() const {
  // Room for removals beside the reserve: what they remove is logged, and the log turns over a
  // file at a time.
  return 2 * reserve_bytes_;
}

bool StoreSpace::MakeReserve() {
  if (reserve_fd_.load() >= 0) return true;
  const std::string path = dir_ + "/" + kReserveFile;
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  // Real blocks, not a size: fallocate, or zeros where the file system has no fallocate.
  struct stat st;
  const bool made =
      fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_blocks) * 512 >= reserve_bytes_;
  if (!made && fallocate(fd, 0, 0, static_cast<off_t>(reserve_bytes_)) != 0 &&
      (errno != EOPNOTSUPP || posix_fallocate(fd, 0, static_cast<off_t>(reserve_bytes_)) != 0)) {
    (void)ftruncate(fd, 0);
    close(fd);
    return false;
  }
  reserve_fd_.store(fd);
  return true;
}

void StoreSpace::GiveBackReserve() {
  const int fd = reserve_fd_.exchange(-1);
  if (fd < 0) return;
  (void)ftruncate(fd, 0);
  close(fd);
}

bool StoreSpace::ReclaimDue() {
  const uint64_t now = NowNs();
  if (now < next_reclaim_ns_) return false;
  next_reclaim_ns_ = now + kReclaimNs;
  next_check_ns_ = 0;  // and the free space is looked at again after it
  return true;
}

void StoreSpace::Notice() {
  const uint64_t seen = g_full_seen.load(std::memory_order_relaxed);
  if (seen == full_seen_) {
    // Every so often, whatever the calls: what Berkeley DB took meanwhile is claimed (reads
    // fill the cache too), and, low on space with the reserve still held, whether what was
    // kept is gone meanwhile (to another process, say).
    const uint64_t now = NowNs();
    if (now < next_notice_ns_) return;
    next_notice_ns_ = now + kRecheckNs;
    if (!Claim()) low_ = true;
    if (!low_ || reserve_fd_.load() < 0) return;
  }
  // Some store met a full file system: this one's too, if it has no room left.
  full_seen_ = seen;
  if (FreeBytesOf(dir_) < reserve_bytes_) {
    GiveBackReserve();
    low_ = true;
    next_check_ns_ = NowNs() + kRecheckNs;
  }
}

bool StoreSpace::Fits(uint64_t free, uint64_t keep, uint64_t bytes) const {
  // What a call adds goes to the log on the file system, which must have that room; its pages
  // may also go into free pages inside the databases.
  return free >= keep + bytes && free + free_inside_ >= keep + kAmplification * bytes;
}

bool StoreSpace::FitsNow(uint64_t keep, uint64_t bytes) {
  if (Fits(FreeBytesOf(dir_), keep, bytes)) return true;
  if (!reclaim_) return false;
  // Log files wait for a checkpoint to go (one is taken after every 64 MiB of log), and free
  // pages inside were last counted before the latest removals: room the call may have.
  reclaim_();
  return Fits(FreeBytesOf(dir_), keep, bytes);
}

void StoreSpace::Take(uint64_t bytes) { free_inside_ -= std::min(free_inside_, bytes); }

Status StoreSpace::Room(uint64_t bytes) {
  Notice();
  if (!low_) {
    if (bytes < budget_) {
      budget_ -= bytes;
      Take(bytes);
      return Status::Ok();
    }
    // Every MiB or so of what calls add, the file system is looked at again, and what Berkeley
    // DB took meanwhile is claimed. A call's bytes reach the file system several times over
    // (the log with the pages' former contents, the pages, the cache's growth).
    if (Claim() && FitsNow(Kept(), bytes)) {
      // The reserve comes back once there is room for it too; till then what is kept is the
      // removals' room (free pages inside the database may be all that removals gave back).
      if (reserve_fd_.load() < 0 &&
          FreeBytesOf(dir_) >= Kept() + reserve_bytes_ + kAmplification * bytes) {
        (void)MakeReserve();
      }
      const uint64_t free = FreeBytesOf(dir_);
      budget_ = std::min<uint64_t>(
          {(free + free_inside_ - Kept()) / kAmplification, free - Kept(), 1 << 20});
      if (bytes < budget_) budget_ -= bytes;
      Take(bytes);
      return Status::Ok();
    }
    low_ = true;  // the reserve stays: what is left is for removals and reads
    next_check_ns_ = NowNs() + kRecheckNs;
    return Status::Errno(ENOSPC);
  }
  const uint64_t now = NowNs();
  if (now < next_check_ns_) return Status::Errno(ENOSPC);
  next_check_ns_ = now + kRecheckNs;
  if (Claim() && FitsNow(Kept(), bytes)) {
    low_ = false;
    budget_ = 0;
    return Room(bytes);
  }
  return Status::Errno(ENOSPC);
}

}  // namespace amino::schema
