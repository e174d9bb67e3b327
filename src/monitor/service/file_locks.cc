#include "monitor/service/file_locks.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <string>
#include <tuple>

namespace amino::monitor::service {

namespace {

class LockTable {
 public:
  LockTable() = default;
  LockTable(const LockTable&) = delete;
  LockTable& operator=(const LockTable&) = delete;
  ~LockTable() {
    for (auto& [key, holders] : posix_) {
      for (auto& [pid, fd] : holders) close(fd);
    }
    for (auto& [desc, lock] : by_desc_) close(lock.fd);
  }

  LockOutcome Fcntl(const std::shared_ptr<ServedFile>& desc, pid_t tgid, int cmd, struct flock* fl);
  LockOutcome Flock(const std::shared_ptr<ServedFile>& desc, int op);
  void ReleaseProcess(pid_t tgid, const ServedFile* file);
  void ReleaseDescription(const ServedFile* desc);
  void Sweep();
  // Grows with every change that may have let go of a lock (a set, which may unlock or
  // downgrade; a description of the lock file closed).
  uint64_t releases() const { return releases_; }

 private:
  using FileKey = std::tuple<const MountFs*, schema::FileId>;
  struct DescLock {
    std::weak_ptr<ServedFile> desc;
    int fd = -1;
  };
  static int OpenLockFile(const MountFs& m, schema::FileId id);
  int ProcessFd(const FileKey& key, pid_t tgid, bool create);
  int DescriptionFd(const std::shared_ptr<ServedFile>& desc);
  LockOutcome GetPosix(const FileKey& key, pid_t tgid, int fd, struct flock* fl);

  std::map<FileKey, std::map<pid_t, int>> posix_;
  std::map<const ServedFile*, DescLock> by_desc_;
  uint64_t releases_ = 0;
};

int LockTable::OpenLockFile(const MountFs& m, schema::FileId id) {
  const std::string dir = m.fs->dir() + "/locks";
  const std::string path = dir + "/" + std::to_string(id);
  // Every user of the database locks here: the files are as widely writable as the umask of
  // the monitor that created them allows.
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0 && errno == ENOENT) {
    if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) return -errno;
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  }
  return fd < 0 ? -errno : fd;
}

int LockTable::ProcessFd(const FileKey& key, pid_t tgid, bool create) {
  auto& holders = posix_[key];
  auto it = holders.find(tgid);
  if (it != holders.end()) return it->second;
  if (!create) {
    if (holders.empty()) posix_.erase(key);
    return -1;
  }
  int fd = OpenLockFile(*std::get<0>(key), std::get<1>(key));
  if (fd < 0) {
    if (holders.empty()) posix_.erase(key);
    return fd;
  }
  holders[tgid] = fd;
  return fd;
}

int LockTable::DescriptionFd(const std::shared_ptr<ServedFile>& desc) {
  auto it = by_desc_.find(desc.get());
  if (it != by_desc_.end()) {
    if (it->second.desc.lock() == desc) return it->second.fd;
    close(it->second.fd);  // a description gone whose address was reused
    ++releases_;
    by_desc_.erase(it);
  }
  int fd = OpenLockFile(*desc->mfs, desc->id);
  if (fd < 0) return fd;
  by_desc_[desc.get()] = DescLock{desc, fd};
  return fd;
}

LockOutcome LockTable::GetPosix(const FileKey& key, pid_t tgid, int fd, struct flock* fl) {
  struct flock hl = *fl;
  hl.l_pid = 0;
  if (fcntl(fd, F_OFD_GETLK, &hl) != 0) return {-errno, false};
  if (hl.l_type == F_UNLCK) {
    fl->l_type = F_UNLCK;
    return {0, false};
  }
  // An OFD lock reports no owner (-1). When the holder is one of the traced processes' record
  // locks, report that process: the one whose description does not see the conflict itself.
  if (hl.l_pid == -1) {
    for (auto& [pid, other] : posix_[key]) {
      if (pid == tgid) continue;
      struct flock probe = hl;
      probe.l_type = F_WRLCK;
      probe.l_pid = 0;
      if (fcntl(other, F_OFD_GETLK, &probe) == 0 && probe.l_type == F_UNLCK) {
        hl.l_pid = pid;
        break;
      }
    }
  }
  *fl = hl;
  return {0, false};
}

LockOutcome LockTable::Fcntl(const std::shared_ptr<ServedFile>& desc, pid_t tgid, int cmd,
                             struct flock* fl) {
  Sweep();
  const bool ofd = cmd == F_OFD_GETLK || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
  const bool get = cmd == F_GETLK || cmd == F_OFD_GETLK;
  const bool wait = cmd == F_SETLKW || cmd == F_OFD_SETLKW;
  if (ofd) {
    // The kernel's own checks (l_pid must be 0, the lock type) apply on the lock file.
    int fd = DescriptionFd(desc);
    if (fd < 0) return {fd, false};
    struct flock hl = *fl;
    if (fcntl(fd, get ? F_OFD_GETLK : F_OFD_SETLK, &hl) != 0) {
      const int err = errno;
      if (wait && (err == EAGAIN || err == EACCES)) return {0, true};
      return {-err, false};
    }
    if (get) *fl = hl;
    if (!get) ++releases_;
    return {0, false};
  }
  const FileKey key{desc->mfs, desc->id};
  if (get) {
    if (fl->l_type != F_RDLCK && fl->l_type != F_WRLCK) return {-EINVAL, false};
    int fd = ProcessFd(key, tgid, true);
    if (fd < 0) return {fd, false};
    return GetPosix(key, tgid, fd, fl);
  }
  // Unlocking what was never locked needs no description.
  int fd = ProcessFd(key, tgid, fl->l_type != F_UNLCK);
  if (fd == -1 && fl->l_type == F_UNLCK) return {0, false};
  if (fd < 0) return {fd, false};
  struct flock hl = *fl;
  hl.l_pid = 0;
  if (fcntl(fd, F_OFD_SETLK, &hl) == 0) {
    ++releases_;
    return {0, false};
  }
  const int err = errno;
  if (wait && (err == EAGAIN || err == EACCES)) return {0, true};
  return {-err, false};
}

LockOutcome LockTable::Flock(const std::shared_ptr<ServedFile>& desc, int op) {
  Sweep();
  const int what = op & ~LOCK_NB;
  if (what != LOCK_SH && what != LOCK_EX && what != LOCK_UN) return {-EINVAL, false};
  if (what == LOCK_UN && !by_desc_.count(desc.get())) return {0, false};
  int fd = DescriptionFd(desc);
  if (fd < 0) return {fd, false};
  if (flock(fd, what | LOCK_NB) == 0) {
    ++releases_;
    return {0, false};
  }
  const int err = errno;
  if (err == EWOULDBLOCK && !(op & LOCK_NB)) return {0, true};
  return {-err, false};
}

void LockTable::ReleaseProcess(pid_t tgid, const ServedFile* file) {
  for (auto it = posix_.begin(); it != posix_.end();) {
    const bool match =
        !file || (std::get<0>(it->first) == file->mfs && std::get<1>(it->first) == file->id);
    if (match) {
      auto h = it->second.find(tgid);
      if (h != it->second.end()) {
        close(h->second);
        ++releases_;
        it->second.erase(h);
      }
    }
    it = it->second.empty() ? posix_.erase(it) : std::next(it);
  }
  Sweep();
}

void LockTable::ReleaseDescription(const ServedFile* desc) {
  auto it = by_desc_.find(desc);
  if (it == by_desc_.end()) return;
  close(it->second.fd);
  ++releases_;
  by_desc_.erase(it);
}

void LockTable::Sweep() {
  for (auto it = by_desc_.begin(); it != by_desc_.end();) {
    if (it->second.desc.expired()) {
      close(it->second.fd);
      ++releases_;
      it = by_desc_.erase(it);
    } else {
      ++it;
    }
  }
}

LockTable& Table() {
  static LockTable table;
  return table;
}

}  // namespace

LockOutcome FcntlLock(const std::shared_ptr<ServedFile>& desc, pid_t tgid, int cmd,
                      struct flock* fl) {
  return Table().Fcntl(desc, tgid, cmd, fl);
}

LockOutcome FlockLock(const std::shared_ptr<ServedFile>& desc, int op) {
  return Table().Flock(desc, op);
}

void ReleaseProcessLocks(pid_t tgid, const ServedFile* file) { Table().ReleaseProcess(tgid, file); }

void ReleaseDescriptionLocks(const ServedFile* desc) { Table().ReleaseDescription(desc); }

uint64_t FileLockReleases() { return Table().releases(); }

}  // namespace amino::monitor::service
