#include "cli/cli_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace amino::cli {

void Error(std::string_view cmd, std::string_view message) {
  std::cerr << "amino " << cmd << ": " << message << std::endl;
}

void Warning(std::string_view cmd, std::string_view message) {
  std::cerr << "amino " << cmd << ": warning: " << message << std::endl;
}

std::string ErrnoText(int err) { return std::strerror(err); }

std::string Describe(const schema::Status& status) { return status.message(); }

schema::Status CheckDatabaseDir(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return schema::Status::Errno(errno);
  if (!S_ISDIR(st.st_mode)) return schema::Status::Errno(ENOTDIR);
  return schema::Status::Ok();
}

std::unique_ptr<schema::FileSystem> OpenFileSystem(std::string_view cmd, const std::string& dir) {
  schema::Status st = CheckDatabaseDir(dir);
  if (!st.ok()) {
    Error(cmd, Printable(dir) + ": " + Describe(st));
    return nullptr;
  }
  auto fs = schema::FileSystem::Open(dir);
  if (!fs.ok()) {
    // Storage failures already name the directory and the file at fault.
    const schema::Status& s = fs.status();
    Error(cmd, s.is_storage() ? Describe(s) : Printable(dir) + ": " + Describe(s));
    return nullptr;
  }
  return std::move(fs).value();
}

schema::Result<std::vector<schema::DirEntry>> ReadAllEntries(schema::FileSystem& fs,
                                                             schema::Transaction& t,
                                                             const schema::Cred& cred,
                                                             const std::string& path) {
  AMINO_ASSIGN_OR_RETURN(schema::OpenResult dir, fs.Open(t, cred, path, O_RDONLY | O_DIRECTORY));
  std::vector<schema::DirEntry> all;
  schema::Status st;
  std::string after;
  for (;;) {
    auto batch = fs.ReadDir(t, dir.id, after, 256);
    if (!batch.ok()) {
      st = batch.status();
      break;
    }
    if (batch->empty()) break;
    // Names come in increasing order; anything else means a damaged database, and continuing
    // would never end.
    if (!after.empty() && batch->front().name <= after) {
      st = schema::Status::Storage(EIO, path + ": directory entries out of order");
      break;
    }
    after = batch->back().name;
    for (auto& e : *batch) all.push_back(std::move(e));
  }
  schema::Status closed = fs.Close(t, dir.id);
  AMINO_RETURN_IF_ERROR(st);
  AMINO_RETURN_IF_ERROR(closed);
  return all;
}

namespace {

// Length of the valid UTF-8 sequence at s[i] (a printable character), or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  unsigned char c = s[i];
  size_t n;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    unsigned char cc = s[i + k];
    if ((cc & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3f);
  }
  // Overlong forms, surrogates, beyond U+10FFFF and the C1 controls are escaped too.
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
      (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0)) {
    return 0;
  }
  return n;
}

}  // namespace

std::string Printable(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    unsigned char c = bytes[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (size_t n = Utf8Length(bytes, i)) {
        out.append(bytes.substr(i, n));
        i += n;
        continue;
      }
    }
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\%03o", c);
        out += buf;
      }
    }
    ++i;
  }
  return out;
}

bool PathIsWithin(const std::string& path, const std::string& dir) {
  struct stat d;
  if (stat(dir.c_str(), &d) != 0) return false;
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  if (ec) return false;
  for (;;) {
    struct stat st;
    if (stat(p.c_str(), &st) == 0 && st.st_dev == d.st_dev && st.st_ino == d.st_ino) return true;
    if (!p.has_relative_path()) return false;  // reached "/"
    p = p.parent_path();
  }
}

namespace {
volatile sig_atomic_t interrupted = 0;
void OnInterrupt(int) { interrupted = 1; }
}  // namespace

void CatchInterrupts() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

bool Interrupted() { return interrupted != 0; }

std::string HostJoin(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out += '/';
  out += name;
  return out;
}

}  // namespace amino::cli
