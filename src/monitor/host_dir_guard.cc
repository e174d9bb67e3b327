#include "monitor/host_dir_guard.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "schema/cred.h"

namespace amino::monitor {
namespace {

constexpr mode_t kWriteBits = S_IWUSR | S_IWGRP | S_IWOTH;

// Byte 0 of the lock file: the runs using the database (shared each, whole for the last).
// Byte 1: the record's own lock, held while it is read or changed.
bool Lock(int fd, off_t byte, short type, bool wait) {
  struct flock fl {};
  fl.l_whence = SEEK_SET;
  fl.l_start = byte;
  fl.l_len = 1;
  fl.l_type = type;
  while (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) != 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

struct Kept {
  mode_t mode;
  std::string dir;
};

std::vector<Kept> ReadKept(const std::string& path) {
  std::vector<Kept> kept;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    unsigned mode = 0;
    std::string dir;
    if (fields >> std::oct >> mode && fields.get() == ' ' && std::getline(fields, dir) &&
        !dir.empty() && dir[0] == '/') {
      kept.push_back({static_cast<mode_t>(mode & 07777), dir});
    }
  }
  return kept;
}

bool WriteKept(const std::string& path, const std::vector<Kept>& kept) {
  if (kept.empty()) return unlink(path.c_str()) == 0 || errno == ENOENT;
  const std::string temp = path + ".new";
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FILE* out = fd >= 0 ? fdopen(fd, "w") : nullptr;
  if (!out) {
    if (fd >= 0) close(fd);
    return false;
  }
  for (const Kept& k : kept)
    std::fprintf(out, "%o %s\n", static_cast<unsigned>(k.mode), k.dir.c_str());
  const bool written = std::fflush(out) == 0 && fsync(fileno(out)) == 0;
  std::fclose(out);
  return written && rename(temp.c_str(), path.c_str()) == 0;
}

// The guards alive in this process (ReleaseHostDirGuards).
std::vector<HostDirGuard*>& LiveGuards() {
  static std::vector<HostDirGuard*> live;
  return live;
}

}  // namespace

void ReleaseHostDirGuards() {
  for (HostDirGuard* g : LiveGuards()) g->Release();
}

bool MayCoverMountPoints() { return schema::Cred::Current().has(schema::kCapSysAdmin); }

HostDirGuard::HostDirGuard(std::string host_dir, std::string db_dir)
    : host_dir_(std::move(host_dir)), db_dir_(std::move(db_dir)) {
  lock_fd_ = open((db_dir_ + "/amino.guard.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) return;
  if (!Lock(lock_fd_, 1, F_WRLCK, true) || !Lock(lock_fd_, 0, F_RDLCK, true)) {
    close(lock_fd_);
    lock_fd_ = -1;
    return;
  }
  LiveGuards().push_back(this);
  const std::string record = db_dir_ + "/amino.guard";
  std::vector<Kept> kept = ReadKept(record);
  struct stat st;
  bool known = false;
  for (const Kept& k : kept) known |= k.dir == host_dir_;
  if (known) {
    guarded_ = true;  // by a run still going, or one that died
  } else if (stat(host_dir_.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
             (st.st_mode & kWriteBits) != 0) {
    // Kept first: a run that dies between the two leaves a record of a mode unchanged, which
    // the last run gives back harmlessly.
    kept.push_back({static_cast<mode_t>(st.st_mode & 07777), host_dir_});
    guarded_ =
        WriteKept(record, kept) && chmod(host_dir_.c_str(), st.st_mode & 07777 & ~kWriteBits) == 0;
  }
  Lock(lock_fd_, 1, F_UNLCK, false);
}

HostDirGuard::~HostDirGuard() {
  Release();
  std::erase(LiveGuards(), this);
}

void HostDirGuard::Release() {
  if (lock_fd_ < 0) return;
  Lock(lock_fd_, 1, F_WRLCK, true);
  // Let go first: of runs ending together, the one that looks last then finds no other.
  Lock(lock_fd_, 0, F_UNLCK, false);
  if (Lock(lock_fd_, 0, F_WRLCK, false)) {
    const std::string record = db_dir_ + "/amino.guard";
    for (const Kept& k : ReadKept(record)) {
      struct stat st;
      if (stat(k.dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
          (st.st_mode & 07777) == (k.mode & ~kWriteBits)) {
        chmod(k.dir.c_str(), k.mode);
      }
    }
    WriteKept(record, {});
    Lock(lock_fd_, 0, F_UNLCK, false);
  }
  Lock(lock_fd_, 1, F_UNLCK, false);
  close(lock_fd_);
  lock_fd_ = -1;
}

}  // namespace amino::monitor
