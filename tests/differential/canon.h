// Canonical text of results: what two correct runs of the same sequence print identically, and
// nothing that differs between correct runs by design (inode and device numbers, change times,
// times the kernel set to "now", directory sizes, fs-specific statfs fields).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>

namespace amino::fuzz {

struct Canon {
  int64_t start = 0;      // the run's start time: times near it were set by the kernel
  bool portable = false;  // leave out what only the same file system type reproduces
};

// "ENOENT" (the symbolic name) for an errno value.
std::string ErrnoName(int e);

// " = 3", or " = -1 ENOENT" with the errno of the failed call.
std::string Result(long r, int err);

// FNV-1a 64, as 16 hex digits.
uint64_t Fnv(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull);
std::string Hex(uint64_t v);

// The bytes a write with this seed and pattern puts: random, zeros, or text.
void FillPattern(char* buf, size_t n, uint64_t seed, int pattern);

// A string with control and non-ASCII bytes escaped, long ones abbreviated.
std::string Escape(const std::string& s);

// The stat fields compared: type, permission bits, link count, owner, group, size (not of
// directories), whether a regular file has blocks, and access and modification times when they
// were set explicitly (else "now").
std::string StatText(const struct stat& st, const Canon& c);
std::string StatxText(const struct statx& sx, const Canon& c);

// A timestamp: "now" within a day of the start, else seconds.nanoseconds.
std::string TimeText(int64_t sec, int64_t nsec, const Canon& c);

// Flag words as symbolic names (O_*, AT_*, ...), the rest in hex.
std::string OpenFlagsText(int64_t flags);
std::string Octal(int64_t v);

}  // namespace amino::fuzz
