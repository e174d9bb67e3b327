// Host symbolic links into mounts (see host_links.h).
#include "monitor/mounts/host_links.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "monitor/mounts/lexical_path.h"

namespace amino::monitor::mounts {

namespace {

// Directories recorded under one mount point: enough for the cwds made ready there; a tree
// beyond that is hidden data PrepareMounts has warned of.
constexpr size_t kMaxDirsPerMount = 1000;
// Looking is not using: an automount point at the end of a path is not mounted for a look.
constexpr int kNoAutomount = AT_NO_AUTOMOUNT;

bool EndsWithSlash(std::string_view s) { return !s.empty() && s.back() == '/'; }

std::string Join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (out.empty() || out.back() != '/') out.push_back('/');
  out.append(name);
  return out;
}

// The last component of `abs` as written (with a trailing slash kept), and what precedes it:
// "/a/b/" gives "/a" and "b/"; "/a" gives "/" and "a"; "/" gives "/" and "".
std::pair<std::string, std::string> SplitLast(std::string_view abs) {
  size_t end = abs.size();
  while (end > 1 && abs[end - 1] == '/') --end;
  size_t slash = abs.rfind('/', end - 1);
  std::string last(abs.substr(slash + 1));
  size_t dir_end = slash;
  while (dir_end > 0 && abs[dir_end - 1] == '/') --dir_end;
  return {dir_end == 0 ? std::string("/") : std::string(abs.substr(0, dir_end)), last};
}

// The first name of relative path `rest` that is not ".".
std::string_view FirstName(std::string_view rest) {
  while (!rest.empty()) {
    const size_t end = std::min(rest.find('/'), rest.size());
    const std::string_view name = rest.substr(0, end);
    if (!name.empty() && name != ".") return name;
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
  return {};
}

}  // namespace

// Host paths as a process sees them: from the monitor's root, or from a chroot'd process's root
// (`root_fd`), where the kernel keeps ".." and absolute link targets below it (RESOLVE_IN_ROOT).
class HostLinks::View {
 public:
  View() = default;
  explicit View(std::string_view root) {
    if (root.empty() || root == "/") return;
    root_fd_ = open(std::string(root).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    failed_ = root_fd_ < 0;
  }
  ~View() {
    if (root_fd_ >= 0) close(root_fd_);
  }
  View(const View&) = delete;
  View& operator=(const View&) = delete;

  bool failed() const { return failed_; }

  // fstatat(path) with `follow` of a last link; 0, or -1 with errno set.
  int Stat(const std::string& path, bool follow, struct stat* st) const {
    if (root_fd_ < 0) {
      return fstatat(AT_FDCWD, path.c_str(), st, kNoAutomount | (follow ? 0 : AT_SYMLINK_NOFOLLOW));
    }
    const int fd = OpenInRoot(path, follow);
    if (fd < 0) return -1;
    const int r = fstat(fd, st);
    close(fd);
    return r;
  }

  ssize_t ReadLink(const std::string& path, char* buf, size_t size) const {
    if (root_fd_ < 0) return readlink(path.c_str(), buf, size);
    const int fd = OpenInRoot(path, false);
    if (fd < 0) return -1;
    const ssize_t n = readlinkat(fd, "", buf, size);
    close(fd);
    return n;
  }

 private:
  int OpenInRoot(const std::string& path, bool follow) const {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW);
    // /proc's magic links would be the monitor's own: left to the kernel's walk.
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    return static_cast<int>(syscall(SYS_openat2, root_fd_, path.c_str(), &how, sizeof how));
  }

  int root_fd_ = -1;
  bool failed_ = false;
};

HostLinks::HostLinks(const MountTable& table, const PathResolver& resolver) : resolver_(resolver) {
  for (const Mount& m : table.mounts()) Record(m);
}

void HostLinks::Record(const Mount& m) {
  const std::string& top = m.host_point.empty() ? m.point : m.host_point;
  std::vector<std::pair<std::string, std::string>> to_visit{{top, "/"}};  // host path, rel
  size_t recorded = 0;
  while (!to_visit.empty() && recorded < kMaxDirsPerMount) {
    auto [dir, rel] = std::move(to_visit.back());
    to_visit.pop_back();
    struct stat st;
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    dirs_.emplace(std::make_pair(st.st_dev, st.st_ino), InMountDir{&m, rel});
    ++recorded;
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      const std::string path = Join(dir, e->d_name);
      struct stat child;
      if (lstat(path.c_str(), &child) == 0 && S_ISDIR(child.st_mode)) {
        to_visit.emplace_back(path, Join(rel, e->d_name));
      } else {
        hiding_devs_.insert(st.st_dev);
      }
    }
    closedir(d);
  }
}

const HostLinks::InMountDir* HostLinks::Find(dev_t dev, ino_t ino) const {
  auto it = dirs_.find({dev, ino});
  return it == dirs_.end() ? nullptr : &it->second;
}

Result<ClassifiedPath> HostLinks::Inside(const InMountDir& dir, std::string_view rest) const {
  return resolver_.Classify(PathBase::Virtual(*dir.mount, dir.rel), rest, /*empty_path_ok=*/true);
}

std::optional<Result<ClassifiedPath>> HostLinks::IntoMount(std::string_view abs, bool follow_last,
                                                           std::string_view root) const {
  if (dirs_.empty() || abs.empty() || abs[0] != '/' || abs.size() >= PATH_MAX) {
    return std::nullopt;
  }
  const View view(root);
  if (view.failed()) return std::nullopt;  // the root is gone: the kernel's walk reports it
  return Look(view, abs, follow_last);
}

std::optional<Result<ClassifiedPath>> HostLinks::Look(const View& view, std::string_view abs,
                                                      bool follow_last) const {
  const std::string path(abs);
  struct stat st;
  // A trailing slash makes the kernel follow a last link whatever the call.
  if (view.Stat(path, false, &st) == 0) {
    const bool followed = S_ISLNK(st.st_mode) && follow_last;
    if (followed) {
      if (view.Stat(path, true, &st) != 0) {
        // A link whose target the host lacks: it may name something only the mount has.
        return errno == ENOENT ? Walk(view, abs, follow_last) : std::nullopt;
      }
    }
    if (const InMountDir* d = Find(st.st_dev, st.st_ino)) {
      auto r = Inside(*d, "");
      if (r.ok()) r->trailing_slash = EndsWithSlash(abs);
      return r;
    }
    // A file hidden under a mount point is known by its directory (the link's target's, when
    // a link was followed: found by the walk).
    if (!hiding_devs_.contains(st.st_dev)) return std::nullopt;
    if (followed) return Walk(view, abs, follow_last);
  } else if (errno != ENOENT) {
    return std::nullopt;  // ENOTDIR, EACCES, ELOOP...: the kernel's to report
  } else if (EndsWithSlash(abs)) {
    return Walk(view, abs, follow_last);  // the slash followed a link the host cannot resolve
  }
  // A name the host lacks (or hides): where its directory is decides.
  auto [dir, last] = SplitLast(abs);
  if (view.Stat(dir, true, &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return std::nullopt;
    if (const InMountDir* d = Find(st.st_dev, st.st_ino)) return Inside(*d, last);
    return std::nullopt;
  }
  return errno == ENOENT ? Walk(view, abs, follow_last) : std::nullopt;
}

std::optional<Result<ClassifiedPath>> HostLinks::Walk(const View& view, std::string_view abs,
                                                      bool follow_last) const {
  // `cur`: the host directory reached, as the kernel names it (no link in it), outside every
  // mount; `rest`: what is left to walk from it.
  std::string cur = "/";
  const size_t first = abs.find_first_not_of('/');
  std::string rest = first == std::string_view::npos ? "" : std::string(abs.substr(first));
  int links = 0;
  while (!rest.empty()) {
    const size_t end = std::min(rest.find('/'), rest.size());
    const std::string name = rest.substr(0, end);
    const size_t next = rest.find_first_not_of('/', end);
    const std::string after = next == std::string::npos ? "" : rest.substr(next);
    // Slashes after the last name: the kernel follows a last link then, and wants a directory.
    const bool last = after.empty();
    const std::string tail = last && end < rest.size() ? "/" : "";
    if (name == ".") {
      rest = after;
      continue;
    }
    if (name == "..") {
      // The ancestors of a directory outside every mount are outside too.
      const size_t slash = cur.rfind('/');
      cur = slash == 0 ? "/" : cur.substr(0, slash);
      rest = after;
      continue;
    }
    const std::string here = Join(cur, name);
    struct stat st;
    if (view.Stat(here, false, &st) != 0) {
      return std::nullopt;  // the kernel reports it
    }
    if (S_ISLNK(st.st_mode) && (!last || follow_last || !tail.empty())) {
      if (++links > kMaxEscapes) return std::nullopt;  // ELOOP, the kernel's
      char target[PATH_MAX];
      const ssize_t n = view.ReadLink(here, target, sizeof target - 1);
      if (n <= 0) return std::nullopt;
      std::string walked(target, static_cast<size_t>(n));
      if (walked[0] == '/') cur.assign(1, '/');
      if (!after.empty() || !tail.empty()) {
        walked.push_back('/');
        walked.append(after);
      }
      rest = walked.substr(std::min(walked.find_first_not_of('/'), walked.size()));
      continue;
    }
    const InMountDir* d = Find(st.st_dev, st.st_ino);
    if (d && d->rel == "/" && FirstName(after) == "..") {
      // Up from the mount point at once: to its host parent, as from the mount's root. (Given
      // to the schema, the ".." would only escape to here again.)
      d = nullptr;
    }
    if (d) {
      auto r = Inside(*d, after);
      if (r.ok() && !tail.empty()) r->trailing_slash = true;
      return r;
    }
    if (!S_ISDIR(st.st_mode)) return std::nullopt;  // the end, or ENOTDIR: the kernel's
    cur = here;
    rest = after;
  }
  return std::nullopt;
}

}  // namespace amino::monitor::mounts
