#include "ptrace-ext/features_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <utility>
#include <vector>

namespace amino::ptrace_ext {

namespace {

std::string ReadSmall(const char* path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The value of `name:` in /proc/self/status, or "".
std::string StatusField(const std::string& status, const std::string& name) {
  const size_t at = status.find("\n" + name + ":");
  if (at == std::string::npos) return "";
  const size_t from = status.find_first_not_of(" \t", at + name.size() + 2);
  const size_t to = status.find('\n', from);
  return from == std::string::npos ? "" : status.substr(from, to - from);
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The boolean fields, by name: the stored text names each, so a binary that knows more fields
// finds a kept answer without them incomplete and probes again.
std::vector<std::pair<const char*, bool KernelFeatures::*>> Fields() {
  return {{"seccomp_filter", &KernelFeatures::seccomp_filter},
          {"seccomp_trace", &KernelFeatures::seccomp_trace},
          {"seccomp_skip", &KernelFeatures::seccomp_skip},
          {"seccomp_stop_after_entry", &KernelFeatures::seccomp_stop_after_entry},
          {"user_notif", &KernelFeatures::user_notif},
          {"notif_sync_wakeup", &KernelFeatures::notif_sync_wakeup},
          {"notif_wait_killable", &KernelFeatures::notif_wait_killable},
          {"get_syscall_info", &KernelFeatures::get_syscall_info},
          {"process_vm", &KernelFeatures::process_vm},
          {"proc_mem", &KernelFeatures::proc_mem},
          {"ptrace_select", &KernelFeatures::ptrace_select},
          {"ptrace_checkemu", &KernelFeatures::ptrace_checkemu},
          {"ptrace_sysskip", &KernelFeatures::ptrace_sysskip}};
}

constexpr const char* kHeader = "amino kernel features 1\n";

// The directory kept answers go in: the caller's own and no one else's to write, else "".
std::string PrivateDir(const std::string& dir) {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "";
  // /dev/shm is everyone's (sticky): the file itself is then checked instead.
  const bool shared = (st.st_mode & S_ISVTX) && st.st_uid == 0;
  if (!shared && (st.st_uid != geteuid() || (st.st_mode & 022))) return "";
  return dir;
}

}  // namespace

std::string ProbeSituation() {
  std::string s;
  s += "boot " + Trim(ReadSmall("/proc/sys/kernel/random/boot_id")) + "\n";
  s += "uid " + std::to_string(geteuid()) + "\n";
  const std::string status = ReadSmall("/proc/self/status");
  s += "seccomp " + StatusField(status, "Seccomp") + " " + StatusField(status, "Seccomp_filters") +
       "\n";
  s += "no_new_privs " + StatusField(status, "NoNewPrivs") + "\n";
  s += "traced " + std::string(StatusField(status, "TracerPid") == "0" ? "no" : "yes") + "\n";
  s += "ptrace_scope " + Trim(ReadSmall("/proc/sys/kernel/yama/ptrace_scope")) + "\n";
  struct stat exe;
  if (stat("/proc/self/exe", &exe) == 0) {
    s += "binary " + std::to_string(exe.st_dev) + " " + std::to_string(exe.st_ino) + " " +
         std::to_string(exe.st_size) + " " + std::to_string(exe.st_mtim.tv_sec) + "." +
         std::to_string(exe.st_mtim.tv_nsec) + "\n";
  }
  return s;
}

std::string EncodeFeatures(const KernelFeatures& f) {
  std::string out = "kernel " + f.kernel + "\n";
  for (const auto& [name, field] : Fields()) {
    out += std::string(name) + " " + (f.*field ? "1" : "0") + "\n";
  }
  return out;
}

bool DecodeFeatures(const std::string& text, KernelFeatures* f) {
  KernelFeatures got;
  size_t seen = 0;
  bool kernel = false;
  std::istringstream in(text);
  std::string line;
  const auto fields = Fields();
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) return false;
    const std::string name = line.substr(0, sp), value = line.substr(sp + 1);
    if (name == "kernel") {
      got.kernel = value;
      kernel = true;
      continue;
    }
    bool known = false;
    for (const auto& [n, field] : fields) {
      if (name != n) continue;
      if (value != "0" && value != "1") return false;
      got.*field = value == "1";
      known = true;
      ++seen;
    }
    if (!known) return false;
  }
  if (!kernel || seen != fields.size()) return false;
  *f = got;
  return true;
}

KernelFeatures ProbeKernelKept(const std::string& where) {
  std::string dir = where;
  if (dir.empty()) {
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    dir = xdg && *xdg ? xdg : "/dev/shm";
  }
  dir = PrivateDir(dir);
  if (dir.empty()) return ProbeKernel();
  const std::string situation = ProbeSituation();
  char name[96];
  std::snprintf(name, sizeof name, "/amino-features-%u-%016zx", static_cast<unsigned>(geteuid()),
                std::hash<std::string>{}(situation));
  const std::string path = dir + name;

  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    struct stat st;
    std::string text;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        !(st.st_mode & 022) && st.st_size < 4096) {
      text.resize(static_cast<size_t>(st.st_size));
      if (pread(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) text.clear();
    }
    close(fd);
    const std::string head = kHeader + situation;
    KernelFeatures kept;
    if (text.compare(0, head.size(), head) == 0 &&
        DecodeFeatures(text.substr(head.size()), &kept)) {
      return kept;
    }
  }
  KernelFeatures f = ProbeKernel();
  // Written whole under another name, then renamed: a reader sees all of it or none.
  std::string tmp = path + ".XXXXXX";
  fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return f;
  const std::string text = kHeader + situation + EncodeFeatures(f);
  const bool written = fchmod(fd, 0600) == 0 &&
                       write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!written || rename(tmp.c_str(), path.c_str()) != 0) unlink(tmp.c_str());
  return f;
}

}  // namespace amino::ptrace_ext
