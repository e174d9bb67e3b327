#include "monitor/mounts/proc_link.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "monitor/mounts/lexical_path.h"

namespace amino::monitor::mounts {
namespace {

// A decimal number of up to 9 digits, or -1.
long Number(std::string_view s) {
  if (s.empty() || s.size() > 9) return -1;
  long n = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

// The link the normal absolute path `p` is exactly, or kNone.
ProcLinkPath Match(std::string_view p) {
  std::vector<std::string_view> c;
  for (ComponentCursor cursor(p); cursor.Next();) c.push_back(cursor.name());
  ProcLinkPath link;
  size_t at = 0;
  if (c.size() >= 3 && c[0] == "proc") {
    if (c[1] != "self" && c[1] != "thread-self") {
      const long pid = Number(c[1]);
      if (pid <= 0) return {};
      link.pid = static_cast<pid_t>(pid);
    }
    at = 2;
    if (c.size() >= 5 && c[2] == "task") {
      if (Number(c[3]) <= 0) return {};
      at = 4;
    }
    if (c.size() == at + 1 && (c[at] == "cwd" || c[at] == "root")) {
      link.kind = c[at] == "cwd" ? ProcLinkPath::Kind::kCwd : ProcLinkPath::Kind::kRoot;
      return link;
    }
    if (c.size() != at + 2 || c[at] != "fd") return {};
    ++at;
  } else {
    return {};
  }
  const long fd = Number(c[at]);
  if (fd < 0) return {};
  link.kind = ProcLinkPath::Kind::kFd;
  link.fd = static_cast<int>(fd);
  return link;
}

}  // namespace

ProcLinkPath ParseProcLink(std::string_view path) {
  if (path.empty() || path[0] != '/' ||
      (path.find("proc") == std::string_view::npos && path.find("/fd") == std::string_view::npos)) {
    return {};  // the common case, at a glance
  }
  PathStack stack;
  for (ComponentCursor cursor(path); cursor.Next();) {
    stack.Apply(cursor.name());
    // /dev/fd is a link to /proc/self/fd: ".." after it leads to /proc/self.
    if (stack.path() == "/dev/fd") stack = PathStack("/proc/self/fd");
    // At most /proc/PID/task/TID/fd/N: six components.
    if (!stack.path().starts_with("/proc/") ||
        std::count(stack.path().begin(), stack.path().end(), '/') > 6) {
      continue;
    }
    ProcLinkPath link = Match(stack.path());
    if (link.kind != ProcLinkPath::Kind::kNone) {
      link.rest = std::string(path.substr(cursor.end()));
      return link;
    }
  }
  return {};
}

}  // namespace amino::monitor::mounts
