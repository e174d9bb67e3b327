#include "monitor/host/host_context.h"

#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "monitor/tracee_memory.h"

namespace amino::monitor::host {

HostFile::~HostFile() {
  if (fd >= 0) close(fd);
}

const Creds* CredCache::Get(pid_t tid) {
  auto it = cache_.find(tid);
  if (it != cache_.end()) return &it->second;
  std::ifstream in("/proc/" + std::to_string(tid) + "/status");
  if (!in) return nullptr;
  Creds c;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "Uid:" || key == "Gid:") {
      unsigned long real, eff, saved, fs;
      fields >> real >> eff >> saved >> fs;
      (key == "Uid:" ? c.fsuid : c.fsgid) = static_cast<uid_t>(fs);
      (key == "Uid:" ? c.ruid : c.rgid) = static_cast<uid_t>(real);
      (void)eff;
      (void)saved;
    } else if (key == "Groups:") {
      unsigned long g;
      while (fields >> g) c.groups.push_back(static_cast<gid_t>(g));
    } else if (key == "CapEff:") {
      std::string hex;
      fields >> hex;
      c.cap_effective = std::stoull(hex, nullptr, 16);
    } else if (key == "Umask:") {
      std::string octal;
      fields >> octal;
      c.umask = static_cast<mode_t>(std::stoul(octal, nullptr, 8));
    }
  }
  return &cache_.emplace(tid, std::move(c)).first->second;
}

AsTracee::AsTracee(const Creds& c, bool real) {
  const uid_t uid = real ? c.ruid : c.fsuid;
  const gid_t gid = real ? c.rgid : c.fsgid;
  if (geteuid() != 0 || (uid == 0 && gid == 0)) return;
  // Raw system calls: they change only this thread, where glibc's wrappers would change all.
  syscall(SYS_setgroups, c.groups.size(), c.groups.data());
  syscall(SYS_setfsgid, gid);
  syscall(SYS_setfsuid, uid);
  switched_ = true;
}

AsTracee::~AsTracee() {
  if (!switched_) return;
  syscall(SYS_setfsuid, 0);
  syscall(SYS_setfsgid, 0);
  syscall(SYS_setgroups, 0, nullptr);
}

ScopedFd::~ScopedFd() {
  if (fd_ >= 0) close(fd_);
}

void ScopedFd::reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

std::shared_ptr<HostFile> ShadowOf(Thread& t, int fd) {
  auto& files = t.proc->fds->files;
  auto it = files.find(fd);
  if (it == files.end()) return nullptr;
  return std::dynamic_pointer_cast<HostFile>(it->second);
}

int ResolveDirFd(Thread& t, int dirfd, const std::string& path, ScopedFd& holder) {
  if (!path.empty() && path[0] == '/') return AT_FDCWD;
  if (dirfd == AT_FDCWD) {
    std::string cwd = "/proc/" + std::to_string(t.tid) + "/cwd";
    int fd = open(cwd.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -errno;
    holder.reset(fd);
    return fd;
  }
  if (auto shadow = ShadowOf(t, dirfd)) return shadow->fd;
  if (dirfd < 0) return -EBADF;
  std::string p = "/proc/" + std::to_string(t.tid) + "/fd/" + std::to_string(dirfd);
  int fd = open(p.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? -EBADF : -errno;
  holder.reset(fd);
  return fd;
}

int ReadPath(Thread& t, uint64_t addr, std::string* out, bool* via_shadow, ProcessTable* table) {
  if (via_shadow) *via_shadow = false;
  int err = ReadString(*t.proc, addr, 4096, out);
  if (err) return err;
  auto rewrite = [&](const std::string& from, const std::string& to) {
    if (out->compare(0, from.size(), from) == 0 &&
        (out->size() == from.size() || (*out)[from.size()] == '/')) {
      *out = to + out->substr(from.size());
    }
  };
  rewrite("/proc/self", "/proc/" + std::to_string(t.proc->tgid));
  rewrite("/proc/thread-self",
          "/proc/" + std::to_string(t.proc->tgid) + "/task/" + std::to_string(t.tid));
  // /proc/PID/fd/N, /proc/PID/task/TID/fd/N, /proc/PID/fdinfo/N and /dev/fd/N of a shadow
  // name the host file (its information) instead of the placeholder.
  auto number = [&](size_t at, size_t* end) -> long {
    size_t e = at;
    while (e < out->size() && isdigit(static_cast<unsigned char>((*out)[e]))) ++e;
    if (e == at || e - at > 9) return -1;
    *end = e;
    return std::stol(out->substr(at, e - at));
  };
  Process* owner = nullptr;
  size_t at = 0;
  std::string kind;
  if (out->compare(0, 8, "/dev/fd/") == 0) {
    owner = t.proc.get();
    at = 8;
    kind = "fd/";
  } else if (out->compare(0, 6, "/proc/") == 0) {
    size_t e;
    long pid = number(6, &e);
    if (pid <= 0 || e >= out->size() || (*out)[e] != '/') return 0;
    Thread* other = pid == t.proc->tgid ? &t
                    : table             ? table->Find(static_cast<pid_t>(pid))
                                        : nullptr;
    if (!other || !other->proc) return 0;
    owner = other->proc.get();
    at = e + 1;
    if (out->compare(at, 5, "task/") == 0) {
      long tid = number(at + 5, &e);
      if (tid <= 0 || e >= out->size() || (*out)[e] != '/') return 0;
      at = e + 1;
    }
  } else {
    return 0;
  }
  if (kind.empty()) {
    for (const char* k : {"fd/", "fdinfo/"}) {
      if (out->compare(at, std::strlen(k), k) == 0) kind = k;
    }
    if (kind.empty()) return 0;
    at += kind.size();
  }
  size_t e;
  long fd = number(at, &e);
  if (fd < 0 || (e < out->size() && (*out)[e] != '/')) return 0;
  auto it = owner->fds->files.find(static_cast<int>(fd));
  if (it == owner->fds->files.end()) return 0;
  auto f = std::dynamic_pointer_cast<HostFile>(it->second);
  if (!f) return 0;
  *out = "/proc/self/" + kind + std::to_string(f->fd) + out->substr(e);
  if (via_shadow) *via_shadow = true;
  return 0;
}

bool IsKernelPath(const std::string& path) {
  for (const char* prefix : {"/proc", "/sys", "/dev"}) {
    size_t n = std::char_traits<char>::length(prefix);
    if (path.compare(0, n, prefix) == 0 && (path.size() == n || path[n] == '/')) return true;
  }
  return false;
}

}  // namespace amino::monitor::host
