#include "model_side.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace amino::schema::testing::model {

std::string Outcome::ToString() const {
  if (skipped) return "(slot empty: skipped)";
  std::string s = err == 0 ? "ok" : std::string(strerrorname_np(err) ? strerrorname_np(err) : "?");
  if (!value.empty()) s += " " + value;
  return s;
}

std::string StatString(uint32_t mode, uint32_t nlink, uint32_t uid, uint32_t gid, uint64_t size) {
  char buf[160];
  const char* type = S_ISREG(mode)   ? "reg"
                     : S_ISDIR(mode) ? "dir"
                     : S_ISLNK(mode) ? "lnk"
                                     : "other";
  // A directory's st_size is not meaningful (filesystem.h): leave it out.
  if (S_ISDIR(mode)) {
    std::snprintf(buf, sizeof buf, "%s mode=0%o nlink=%u uid=%u gid=%u", type, mode & 07777, nlink,
                  uid, gid);
  } else {
    std::snprintf(buf, sizeof buf, "%s mode=0%o nlink=%u uid=%u gid=%u size=%llu", type,
                  mode & 07777, nlink, uid, gid, static_cast<unsigned long long>(size));
  }
  return buf;
}

std::string DataString(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char buf[64];
  std::snprintf(buf, sizeof buf, "len=%zu fnv=%016llx head=", bytes.size(),
                static_cast<unsigned long long>(h));
  std::string s = buf;
  for (size_t i = 0; i < bytes.size() && i < 8; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(bytes[i]));
    s += buf;
  }
  return s;
}

std::optional<Outcome> FdCheck(const Op& op, int open_flags) {
  int acc = open_flags & O_ACCMODE;
  switch (op.kind) {
    case Kind::kRead:
      if (acc == O_WRONLY) return Outcome{EBADF, {}, false};
      break;
    case Kind::kWrite:
      if (acc == O_RDONLY) return Outcome{EBADF, {}, false};
      break;
    case Kind::kFTruncate:
      if (op.len < 0 || acc == O_RDONLY) return Outcome{EINVAL, {}, false};
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::string Entry::ToString() const {
  std::string s = StatString(mode, nlink, uid, gid, size);
  if (S_ISREG(mode)) s += " content=" + DataString(content);
  if (S_ISLNK(mode)) s += " target=\"" + target + "\"";
  for (const auto& [k, v] : xattrs) s += " " + k + "=" + DataString(v);
  return s;
}

const Cred& CredOf(int index) {
  static const Cred kCreds[] = {Cred::Root(), Cred::User(1000, 1000),
                                Cred::User(1001, 1001, {1000})};
  return kCreds[index];
}

}  // namespace amino::schema::testing::model
