#include "canon.h"

#include <fcntl.h>
#include <string.h>

#include <cstdio>

namespace amino::fuzz {

std::string ErrnoName(int e) {
  const char* name = strerrorname_np(e);
  return name ? name : "E" + std::to_string(e);
}

std::string Result(long r, int err) {
  if (r < 0) return " = -1 " + ErrnoName(err);
  return " = " + std::to_string(r);
}

uint64_t Fnv(const void* data, size_t n, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string Hex(uint64_t v) {
  char buf[20];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void FillPattern(char* buf, size_t n, uint64_t seed, int pattern) {
  switch (pattern % 4) {
    case 0:  // zeros: written data that reads like a hole
      memset(buf, 0, n);
      return;
    case 1: {  // text
      static const char kText[] = "the quick brown fox jumps over the lazy dog\n";
      for (size_t i = 0; i < n; ++i) buf[i] = kText[(i + seed) % (sizeof kText - 1)];
      return;
    }
    default: {  // pseudo-random bytes, with a run of zeros every 3000 bytes
      uint64_t x = seed | 1;
      for (size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (i % 3000) < 200 ? 0 : static_cast<char>(x);
      }
      return;
    }
  }
}

std::string Escape(const std::string& s) {
  if (s.size() > 64) {
    return "<" + std::to_string(s.size()) + " bytes " + Hex(Fnv(s.data(), s.size())) + ">";
  }
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
      char buf[8];
      snprintf(buf, sizeof buf, "\\%03o", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

std::string TimeText(int64_t sec, int64_t nsec, const Canon& c) {
  if (sec > c.start - 86400 && sec < c.start + 86400) return "now";
  char buf[48];
  snprintf(buf, sizeof buf, "%lld.%09lld", static_cast<long long>(sec),
           static_cast<long long>(nsec));
  return buf;
}

namespace {

char TypeChar(mode_t m) {
  switch (m & S_IFMT) {
    case S_IFREG:
      return 'f';
    case S_IFDIR:
      return 'd';
    case S_IFLNK:
      return 'l';
    case S_IFIFO:
      return 'p';
    case S_IFSOCK:
      return 's';
    case S_IFCHR:
      return 'c';
    case S_IFBLK:
      return 'b';
    default:
      return '?';
  }
}

std::string Fields(mode_t mode, uint64_t nlink, uint32_t uid, uint32_t gid, int64_t size,
                   int64_t blocks, int64_t asec, int64_t ansec, int64_t msec, int64_t mnsec,
                   const Canon& c) {
  std::string s(1, TypeChar(mode));
  s += " " + Octal(mode & 07777) + " n" + std::to_string(nlink) + " u" + std::to_string(uid) +
       " g" + std::to_string(gid);
  // A directory's size is its file system's business (ext4: blocks, tmpfs: entries).
  if (!S_ISDIR(mode)) s += " s" + std::to_string(size);
  // Whether data was allocated is the file's history; how much is the file system's.
  if (S_ISREG(mode) && !c.portable) s += blocks ? " b+" : " b0";
  s += " a:" + TimeText(asec, ansec, c) + " m:" + TimeText(msec, mnsec, c);
  return s;
}

}  // namespace

std::string StatText(const struct stat& st, const Canon& c) {
  return Fields(st.st_mode, st.st_nlink, st.st_uid, st.st_gid, st.st_size, st.st_blocks,
                st.st_atim.tv_sec, st.st_atim.tv_nsec, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, c);
}

std::string StatxText(const struct statx& sx, const Canon& c) {
  // Only the basic fields; which extra ones (btime, mount id, ...) a file system fills is its own.
  std::string s = "mask=" + Octal(sx.stx_mask & STATX_BASIC_STATS) + " ";
  return s + Fields(sx.stx_mode, sx.stx_nlink, sx.stx_uid, sx.stx_gid,
                    static_cast<int64_t>(sx.stx_size), static_cast<int64_t>(sx.stx_blocks),
                    sx.stx_atime.tv_sec, sx.stx_atime.tv_nsec, sx.stx_mtime.tv_sec,
                    sx.stx_mtime.tv_nsec, c);
}

std::string Octal(int64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "0%llo", static_cast<unsigned long long>(v));
  return buf;
}

std::string OpenFlagsText(int64_t flags) {
  // The kernel's O_LARGEFILE, which F_GETFL reports on 64-bit systems (the C library defines
  // O_LARGEFILE as 0 there).
  constexpr int64_t kLargefile = 0100000;
  std::string s;
  switch (flags & O_ACCMODE) {
    case O_RDONLY:
      s = "O_RDONLY";
      break;
    case O_WRONLY:
      s = "O_WRONLY";
      break;
    case O_RDWR:
      s = "O_RDWR";
      break;
    default:
      s = "O_ACCMODE";
  }
  flags &= ~O_ACCMODE;
  if ((flags & O_TMPFILE) == O_TMPFILE) {
    s += "|O_TMPFILE";
    flags &= ~O_TMPFILE;
  }
  static const struct {
    int64_t bit;
    const char* name;
  } kBits[] = {{O_CREAT, "O_CREAT"},       {O_EXCL, "O_EXCL"},         {O_TRUNC, "O_TRUNC"},
               {O_APPEND, "O_APPEND"},     {O_NONBLOCK, "O_NONBLOCK"}, {O_DIRECTORY, "O_DIRECTORY"},
               {O_NOFOLLOW, "O_NOFOLLOW"}, {O_CLOEXEC, "O_CLOEXEC"},   {O_PATH, "O_PATH"},
               {O_SYNC, "O_SYNC"},         {O_DSYNC, "O_DSYNC"},       {O_NOATIME, "O_NOATIME"},
               {O_NOCTTY, "O_NOCTTY"},     {kLargefile, "O_LARGEFILE"}};
  for (const auto& b : kBits) {
    if ((flags & b.bit) == b.bit) {
      s += std::string("|") + b.name;
      flags &= ~b.bit;
    }
  }
  if (flags) {
    char buf[32];
    snprintf(buf, sizeof buf, "|0x%llx", static_cast<unsigned long long>(flags));
    s += buf;
  }
  return s;
}

}  // namespace amino::fuzz
