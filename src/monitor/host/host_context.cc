#include "monitor/host/host_context.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "monitor/tracee_memory.h"

namespace amino::monitor::host {

namespace {

// Capabilities the monitor thread keeps while it acts as a tracee: to switch back (setfsuid,
// setfsgid, setgroups) and to read the tracee's memory.
constexpr uint64_t kKeptCaps =
    (1ull << CAP_SETUID) | (1ull << CAP_SETGID) | (1ull << CAP_SYS_PTRACE);

// The monitor thread's capability sets as they were before any switch.
struct MonitorCaps {
  uint64_t effective = 0, permitted = 0, inheritable = 0;
};

const MonitorCaps& OwnCaps() {
  static const MonitorCaps caps = [] {
    MonitorCaps m;
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (syscall(SYS_capget, &header, data) == 0) {
      auto join = [](uint32_t lo, uint32_t hi) { return uint64_t{hi} << 32 | lo; };
      m.effective = join(data[0].effective, data[1].effective);
      m.permitted = join(data[0].permitted, data[1].permitted);
      m.inheritable = join(data[0].inheritable, data[1].inheritable);
    }
    return m;
  }();
  return caps;
}

// Sets this thread's effective capabilities (raw capset: it changes only the calling thread).
void SetEffectiveCaps(uint64_t effective) {
  const MonitorCaps& own = OwnCaps();
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2];
  for (int i = 0; i < 2; ++i) {
    const int shift = 32 * i;
    data[i].effective = static_cast<uint32_t>(effective >> shift);
    data[i].permitted = static_cast<uint32_t>(own.permitted >> shift);
    data[i].inheritable = static_cast<uint32_t>(own.inheritable >> shift);
  }
  syscall(SYS_capset, &header, data);
}

}  // namespace

bool SameCredentials(const Creds& a, const Creds& b) {
  return a.ruid == b.ruid && a.rgid == b.rgid && a.fsuid == b.fsuid && a.fsgid == b.fsgid &&
         a.cap_effective == b.cap_effective && a.cap_permitted == b.cap_permitted &&
         a.groups == b.groups;
}

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
    } else if (key == "CapEff:" || key == "CapPrm:") {
      std::string hex;
      fields >> hex;
      (key == "CapEff:" ? c.cap_effective : c.cap_permitted) = std::stoull(hex, nullptr, 16);
    } else if (key == "Umask:") {
      std::string octal;
      fields >> octal;
      c.umask = static_cast<mode_t>(std::stoul(octal, nullptr, 8));
    }
  }
  return &cache_.emplace(tid, std::move(c)).first->second;
}

AsTracee::AsTracee(const Creds& c, bool real) {
  if (geteuid() != 0) return;
  const uid_t uid = real ? c.ruid : c.fsuid;
  const gid_t gid = real ? c.rgid : c.fsgid;
  const uint64_t tracee_caps = real ? (c.ruid == 0 ? c.cap_permitted : 0) : c.cap_effective;
  const MonitorCaps& own = OwnCaps();
  const uint64_t caps = (tracee_caps | kKeptCaps) & own.permitted;
  const bool ids = uid != 0 || gid != 0;
  const bool fewer_caps = (own.effective & ~caps) != 0;
  if (!ids && !fewer_caps) return;
  // Raw system calls: they change only this thread, where glibc's wrappers would change all.
  if (ids) {
    syscall(SYS_setgroups, c.groups.size(), c.groups.data());
    syscall(SYS_setfsgid, gid);
    syscall(SYS_setfsuid, uid);
  }
  // After setfsuid, which drops the file-system capabilities for a non-zero fsuid: the tracee
  // may hold some of them all the same.
  SetEffectiveCaps(caps);
  ids_switched_ = ids;
  caps_switched_ = true;
}

AsTracee::~AsTracee() {
  if (caps_switched_) SetEffectiveCaps(OwnCaps().effective);
  if (!ids_switched_) return;
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

const std::vector<long>& CredentialCalls() {
  static const std::vector<long> calls = {SYS_setuid,    SYS_setgid,    SYS_setreuid, SYS_setregid,
                                          SYS_setresuid, SYS_setresgid, SYS_setfsuid, SYS_setfsgid,
                                          SYS_setgroups, SYS_capset,    SYS_umask};
  return calls;
}

bool ChangesCredentials(long nr) {
  const std::vector<long>& calls = CredentialCalls();
  return std::find(calls.begin(), calls.end(), nr) != calls.end();
}

bool HoldsAnyIn(const FdTable& fds, uint64_t lo, uint64_t hi) {
  for (const auto& [fd, file] : fds.files) {
    const uint64_t n = static_cast<uint64_t>(fd);
    if (n >= lo && n <= hi) return true;
  }
  return false;
}

std::shared_ptr<HostFile> ShadowOf(Thread& t, int fd) {
  auto& files = t.proc->fds->files;
  auto it = files.find(fd);
  if (it == files.end()) return nullptr;
  return std::dynamic_pointer_cast<HostFile>(it->second);
}

int ResolveDirFd(Thread& t, int dirfd, const std::string& path, ScopedFd& holder,
                 bool absolute_too) {
  if (!path.empty() && path[0] == '/' && !absolute_too) return AT_FDCWD;
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
  RewriteProcPath(t, out, via_shadow, table);
  return 0;
}

void RewriteProcPath(Thread& t, std::string* out, bool* via_shadow, ProcessTable* table) {
  if (via_shadow) *via_shadow = false;
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
    if (pid <= 0 || e >= out->size() || (*out)[e] != '/') return;
    Thread* other = pid == t.proc->tgid ? &t
                    : table             ? table->Find(static_cast<pid_t>(pid))
                                        : nullptr;
    if (!other || !other->proc) return;
    owner = other->proc.get();
    at = e + 1;
    if (out->compare(at, 5, "task/") == 0) {
      long tid = number(at + 5, &e);
      if (tid <= 0 || e >= out->size() || (*out)[e] != '/') return;
      at = e + 1;
    }
  } else {
    return;
  }
  if (kind.empty()) {
    for (const char* k : {"fd/", "fdinfo/"}) {
      if (out->compare(at, std::strlen(k), k) == 0) kind = k;
    }
    if (kind.empty()) return;
    at += kind.size();
  }
  size_t e;
  long fd = number(at, &e);
  if (fd < 0 || (e < out->size() && (*out)[e] != '/')) return;
  auto it = owner->fds->files.find(static_cast<int>(fd));
  if (it == owner->fds->files.end()) return;
  auto f = std::dynamic_pointer_cast<HostFile>(it->second);
  if (!f) return;
  *out = "/proc/self/" + kind + std::to_string(f->fd) + out->substr(e);
  if (via_shadow) *via_shadow = true;
}

bool IsKernelPath(const std::string& path) {
  for (const char* prefix : {"/proc", "/sys", "/dev"}) {
    size_t n = std::char_traits<char>::length(prefix);
    if (path.compare(0, n, prefix) == 0 && (path.size() == n || path[n] == '/')) return true;
  }
  return false;
}

std::string PathOfFd(int fd) {
  std::string p = ReadLink("/proc/self/fd/" + std::to_string(fd));
  if (p.ends_with(" (deleted)")) return {};
  return p;
}

std::string ReadLink(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  if (n <= 0 || n == static_cast<ssize_t>(sizeof buf)) return {};
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace amino::monitor::host
