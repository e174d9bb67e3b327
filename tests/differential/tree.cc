#include "tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

namespace amino::fuzz {

namespace {

// Digest of the non-zero bytes and where each run of them starts, over the data extents
// (SEEK_DATA/SEEK_HOLE), so that a far sparse offset costs nothing to read.
std::string Contents(int fd, off_t size, const Canon& canon) {
  uint64_t h = Fnv("", 0);
  std::string extents;
  int nextents = 0;
  off_t pos = 0;
  off_t run_end = -1;
  std::vector<char> buf(1 << 16);
  while (pos < size) {
    off_t data = lseek(fd, pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;
      return " data=" + ErrnoName(errno);
    }
    off_t hole = lseek(fd, data, SEEK_HOLE);
    if (hole < 0) return " data=" + ErrnoName(errno);
    if (++nextents <= 8) {
      extents +=
          (extents.empty() ? "" : ",") + std::to_string(data) + "+" + std::to_string(hole - data);
    }
    for (off_t at = data; at < hole;) {
      ssize_t n = pread(fd, buf.data(), std::min<off_t>(hole - at, buf.size()), at);
      if (n < 0) return " data=" + ErrnoName(errno);
      if (n == 0) break;
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[i] == 0) continue;
        const off_t p = at + i;
        if (p != run_end) h = Fnv(&p, sizeof p, h);
        h = Fnv(&buf[i], 1, h);
        run_end = p + 1;
      }
      at += n;
    }
    pos = hole;
  }
  std::string s = " data=" + Hex(h);
  // Extents are the file system's unit of allocation, the same for ext4 and Amino (4 KiB), but
  // not a contract of the system-call interface.
  if (!canon.portable) {
    if (nextents > 8) extents += ",...(" + std::to_string(nextents) + ")";
    s += " ext=[" + extents + "]";
  }
  return s;
}

std::string Xattrs(const std::string& path) {
  std::vector<char> list(1 << 16);
  ssize_t n = llistxattr(path.c_str(), list.data(), list.size());
  if (n < 0) return " xattrs=" + ErrnoName(errno);
  std::vector<std::string> names;
  for (ssize_t at = 0; at < n;) {
    names.emplace_back(list.data() + at);
    at += static_cast<ssize_t>(names.back().size()) + 1;
  }
  std::sort(names.begin(), names.end());
  std::string s;
  std::vector<char> value(1 << 16);
  for (const std::string& name : names) {
    ssize_t v = lgetxattr(path.c_str(), name.c_str(), value.data(), value.size());
    s += " x:" + Escape(name) + "=";
    s += v < 0 ? ErrnoName(errno)
               : std::to_string(v) + ":" + Hex(Fnv(value.data(), static_cast<size_t>(v)));
  }
  return s;
}

// Reading for the listing leaves access times alone where the caller may (it owns the file, or
// is root), so that a second listing sees what the first did.
int OpenQuietly(const std::string& path, int flags) {
  int fd = open(path.c_str(), flags | O_CLOEXEC | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = open(path.c_str(), flags | O_CLOEXEC);
  return fd;
}

void Visit(const std::string& root, const std::string& rel, const Canon& canon) {
  const std::string path = rel.empty() ? root : root + "/" + rel;
  const std::string shown = rel.empty() ? "." : rel;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    printf("tree %s lstat=%s\n", Escape(shown).c_str(), ErrnoName(errno).c_str());
    return;
  }
  std::string line = "tree " + Escape(shown) + " " + StatText(st, canon);
  if (S_ISLNK(st.st_mode)) {
    std::vector<char> target(st.st_size + 2);
    ssize_t n = readlink(path.c_str(), target.data(), target.size());
    line += n < 0 ? " -> " + ErrnoName(errno)
                  : " -> " + Escape(std::string(target.data(), static_cast<size_t>(n)));
  } else if (S_ISREG(st.st_mode)) {
    int fd = OpenQuietly(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0) {
      line += " data=" + ErrnoName(errno);
    } else {
      line += Contents(fd, st.st_size, canon);
      close(fd);
    }
  }
  line += Xattrs(path);
  printf("%s\n", line.c_str());
  if (!S_ISDIR(st.st_mode)) return;
  const int dfd = OpenQuietly(path, O_RDONLY | O_DIRECTORY);
  DIR* d = dfd < 0 ? nullptr : fdopendir(dfd);
  if (!d) {
    printf("tree %s list=%s\n", Escape(shown).c_str(), ErrnoName(errno).c_str());
    return;
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) Visit(root, rel.empty() ? n : rel + "/" + n, canon);
}

}  // namespace

void PrintTree(const std::string& root, const Canon& canon) { Visit(root, "", canon); }

}  // namespace amino::fuzz
