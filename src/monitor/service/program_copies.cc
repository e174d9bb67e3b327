#include "monitor/service/program_copies.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

namespace amino::monitor::service {

void RemoveProgramCopy(const std::string& path) {
  unlink(path.c_str());
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return;
  const std::string dir = path.substr(0, slash);
  if (dir.compare(dir.rfind('/') + 1, 6, "setid.") == 0) rmdir(dir.c_str());
}

mode_t SetIdCopyMode(const SetId& s, const schema::Cred& caller) {
  const mode_t mirrored = s.perm & 0555;
  mode_t cls = mirrored & 0007;
  if (caller.uid == s.uid) {
    cls = (mirrored >> 6) & 7;
  } else if (caller.gid == s.gid ||
             std::find(caller.groups.begin(), caller.groups.end(), s.gid) != caller.groups.end()) {
    cls = (mirrored >> 3) & 7;
  }
  return ((caller.uid == 0 || (cls & 1)) ? mirrored : 0555) | s.bits;
}

ProgramCopies& ProgramCopies::Get() {
  static ProgramCopies copies;
  return copies;
}
ProgramCopies::~ProgramCopies() {
  if (root_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(root_, ec);
}

int ProgramCopies::Write(pid_t tid, const std::string& name, std::string_view bytes,
                         const std::optional<SetId>& setid, const schema::Cred& caller,
                         bool readable, std::string* path) {
  if (root_.empty() && !MakeRoot()) return -EACCES;
  if (++writes_ % 64 == 0) {
    // Directories of threads gone: removing a directory still in use fails harmlessly.
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root_, ec)) {
      for (const auto& sub : std::filesystem::directory_iterator(e.path(), ec)) {
        if (sub.path().filename().string().starts_with("setid.")) rmdir(sub.path().c_str());
      }
      rmdir(e.path().c_str());
    }
  }
  std::string dir = root_ + "/" + std::to_string(tid);
  if (mkdir(dir.c_str(), 0711) != 0 && errno != EEXIST) return -errno;
  const bool keep_setid = setid && geteuid() == 0;
  if (keep_setid) {
    // Root's, mode 0700, unguessable: only the monitor opens the copy, and removes it with
    // the directory before the tracee is given a descriptor of it (see PassDescriptor).
    dir += "/setid.XXXXXX";
    if (!mkdtemp(dir.data())) return -errno;
  }
  *path = dir + "/" + name;
  unlink(path->c_str());  // a copy an exec left behind (a thread that exec'd and changed id)
  const int fd = open(path->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
  if (fd < 0) return -errno;
  int err = 0;
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  // Anyone may run a plain copy: the exec permission was checked on the stored file. The
  // owner changes first, since chown clears set-id bits.
  if (!err && keep_setid && fchown(fd, setid->uid, setid->gid) != 0) err = errno;
  const mode_t plain = readable ? 0555 : 0111;
  if (!err && fchmod(fd, keep_setid ? SetIdCopyMode(*setid, caller) : plain) != 0) err = errno;
  close(fd);
  if (err) RemoveProgramCopy(*path);
  return -err;
}

bool ProgramCopies::MakeRoot() {
  // The first that honours set-id bits, else the first that can run programs at all.
  for (const unsigned long refuse : {ST_NOEXEC | ST_RDONLY | ST_NOSUID, ST_NOEXEC | ST_RDONLY})
    if (MakeRootIn(refuse)) return true;
  std::fprintf(stderr, "amino run: no directory to copy programs to for exec\n");
  return false;
}
bool ProgramCopies::MakeRootIn(unsigned long refuse) {
  for (const char* base : {"/dev/shm", "/tmp", "/var/tmp"}) {
    struct statvfs vfs;
    if (statvfs(base, &vfs) != 0 || (vfs.f_flag & refuse)) continue;
    std::string dir = std::string(base) + "/amino-exec.XXXXXX";
    if (!mkdtemp(dir.data())) continue;
    chmod(dir.c_str(), 0711);  // searchable by the tracees' users, not listable
    root_ = dir;
    return true;
  }
  return false;
}

}  // namespace amino::monitor::service
