#include "schema/store_files.h"

#include <db.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace amino::schema::store_files {

namespace {

// DBDIR/amino.clean says that the last user closed the file system cleanly: after its final
// checkpoint (which reached the disk), with no transaction or open file left, so that the
// environment's regions are consistent. The next sole opener in the same boot then has nothing
// to recover and no dead user to clean up after, and joins those regions instead of rebuilding
// them (which zero-fills the log's tail and touches every page of the cache region).
constexpr const char* kCleanMarker = "/amino.clean";

// Each user has a file DBDIR/amino.user.PID.RANDOM from its open until its clean close: one
// left behind names a user that died (or closed with files still counted open), so the file
// system cannot be marked clean until a sole opener has recovered and cleaned up after it.
constexpr const char* kUserPrefix = "amino.user.";

}  // namespace

// One OFD lock on the first byte of DBDIR/amino.lock tells whether other processes use the
// file system: each user holds it shared; an opener that can take it exclusively is alone and
// may run recovery and clean up after dead users before converting to shared (atomically).
Result<int> LockUsers(const std::string& dir, bool* sole) {
  std::string path = dir + "/amino.lock";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, kFileMode);
  if (fd < 0) return Status::Storage(errno, path + ": " + std::strerror(errno));
  struct flock fl {};
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 1;
  fl.l_type = F_WRLCK;
  if (fcntl(fd, F_OFD_SETLK, &fl) == 0) {
    *sole = true;
    return fd;
  }
  if (errno != EAGAIN && errno != EACCES) {
    int err = errno;
    close(fd);
    return Status::Storage(err, path + ": lock: " + std::strerror(err));
  }
  *sole = false;
  fl.l_type = F_RDLCK;
  while (fcntl(fd, F_OFD_SETLKW, &fl) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    close(fd);
    return Status::Storage(err, path + ": lock: " + std::strerror(err));
  }
  // The users we waited for may all have left meanwhile (the last one holds the lock
  // exclusively while it closes): then this opener is alone after all.
  fl.l_type = F_WRLCK;
  if (fcntl(fd, F_OFD_SETLK, &fl) == 0) *sole = true;
  return fd;
}

// The marker names the boot it was written in and the very files it vouches for: device, inode,
// size and modification time of each database. After a restart of the machine the regions
// (shared memory in files the kernel may have written back only in part) are not trusted; a
// copy, a snapshot mounted elsewhere, a restored backup or a damaged (truncated) file no longer
// matches. Each is then recovered as before.
std::string DatabaseIdentities(const std::string& dir) {
  std::string out = "boot ";
  int boot = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (boot < 0) return "";
  char id[64];
  const ssize_t n = read(boot, id, sizeof id);
  close(boot);
  if (n <= 1) return "";
  out.append(id, static_cast<size_t>(n));
  std::vector<const char*> files(std::begin(kDatabaseFiles), std::end(kDatabaseFiles));
  if (access((dir + "/" + kInodeDatabase).c_str(), F_OK) == 0) files.push_back(kInodeDatabase);
  for (const char* f : files) {
    struct stat st;
    if (stat((dir + "/" + f).c_str(), &st) != 0) return "";
    char line[200];
    std::snprintf(line, sizeof line, "%s %llu %llu %lld %lld.%09ld\n", f,
                  static_cast<unsigned long long>(st.st_dev),
                  static_cast<unsigned long long>(st.st_ino), static_cast<long long>(st.st_size),
                  static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec);
    out += line;
  }
  return out;
}

// Removes the marker for good before the file system is used: if it came back after a crash
// of the machine, the next opener would skip a recovery it needs. True when there was one and
// it still describes the database files.
bool TakeCleanMarker(const std::string& dir) {
  const std::string path = dir + kCleanMarker;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[2048];
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (unlink(path.c_str()) != 0) return false;
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  bool durable = dfd >= 0 && fsync(dfd) == 0;
  if (dfd >= 0) close(dfd);
  const std::string expected = DatabaseIdentities(dir);
  return durable && n > 0 && !expected.empty() &&
         std::string_view(buf, static_cast<size_t>(n)) == expected;
}

std::vector<std::string> UserFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, kUserPrefix, std::strlen(kUserPrefix)) == 0) {
        out.push_back(dir + "/" + e->d_name);
      }
    }
    closedir(d);
  }
  return out;
}

Result<std::string> CreateUserFile(const std::string& dir) {
  std::random_device random;
  for (int attempt = 0;; ++attempt) {
    char name[64];
    std::snprintf(name, sizeof name, "/%s%d.%08x", kUserPrefix, static_cast<int>(getpid()),
                  static_cast<unsigned>(random()));
    std::string path = dir + name;
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, kFileMode);
    if (fd >= 0) {
      close(fd);
      return path;
    }
    if (errno != EEXIST || attempt == 8) {
      return Status::Storage(errno, path + ": " + std::strerror(errno));
    }
  }
}

// Called with the environment closed. Upgrading this process's shared lock to an exclusive
// one succeeds only when no other process uses the file system; openers wait meanwhile.
void MarkCleanIfLast(const std::string& dir, int users_lock_fd) {
  struct flock fl {};
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 1;
  fl.l_type = F_WRLCK;
  if (fcntl(users_lock_fd, F_OFD_SETLK, &fl) != 0) return;
  if (!UserFiles(dir).empty()) return;
  const std::string identities = DatabaseIdentities(dir);
  if (identities.empty()) return;
  int fd = open((dir + kCleanMarker).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, kFileMode);
  if (fd < 0) return;
  const bool written =
      write(fd, identities.data(), identities.size()) == static_cast<ssize_t>(identities.size());
  close(fd);
  if (!written) unlink((dir + kCleanMarker).c_str());
}

// The environment's region files (__db.001 ..., __db.register), for the sole user only.
void RemoveRegionFiles(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.starts_with("__db.")) unlink((dir + "/" + name).c_str());
  }
  closedir(d);
}

// Files Berkeley DB creates with its own modes (__db.register is 0660 less the umask), and those
// of a database made before files were private, lose every bit beyond 0600 when this process
// owns them.
void MakeFilesPrivate(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    struct stat st;
    if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777 & ~kFileMode) == 0) {
      continue;
    }
    (void)fchmodat(dirfd(d), e->d_name, st.st_mode & kFileMode, 0);
  }
  closedir(d);
}

// A database this process may not use: says whose it is and what to do, instead of a bare
// "Permission denied" or "not an Amino file system".
Status PermissionDenied(const std::string& dir, const std::string& what, int err) {
  std::string msg = what + ": " + std::strerror(err);
  struct stat st;
  if (stat(dir.c_str(), &st) == 0 && st.st_uid != geteuid()) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    msg += " (the database in " + dir + " belongs to uid " + std::to_string(st.st_uid) + ", mode " +
           mode +
           ": a database is private to its owner; use it as that user, or run 'amino run' as "
           "root, whose monitor serves every user with the stored permissions)";
  } else {
    msg += " (the database's files must be readable and writable by whoever opens it)";
  }
  return Status::Storage(err, msg);
}

RegionSizes RegionSizesIn(const std::string& dir) {
  RegionSizes out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, "__db.", 5) != 0 ||
        !std::isdigit(static_cast<unsigned char>(e->d_name[5])))
      continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    ++out.files;
    out.bytes += static_cast<uint64_t>(st.st_size);
    out.allocated += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  closedir(d);
  return out;
}

}  // namespace amino::schema::store_files
