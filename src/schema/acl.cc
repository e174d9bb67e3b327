#include "schema/acl.h"

#include <cerrno>

namespace amino::schema {
namespace {

constexpr uint32_t kAclVersion = 2;
constexpr size_t kHeaderSize = 4;
constexpr size_t kEntrySize = 8;
constexpr uint32_t kUndefinedId = 0xffffffff;

uint32_t GetLE(std::string_view in, size_t at, size_t bytes) {
  uint32_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= uint32_t(uint8_t(in[at + i])) << (8 * i);
  return v;
}

void PutLE(std::string* out, uint32_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// posix_acl_valid: the order USER_OBJ, USER..., GROUP_OBJ, GROUP..., MASK, OTHER, exactly one
// of each unnamed entry but the mask, which named entries require.
bool Valid(const Acl& acl) {
  enum { kUserObj, kUsers, kGroups, kOther, kDone } state = kUserObj;
  bool needs_mask = false;
  for (const AclEntry& e : acl) {
    if (e.perm & ~7u) return false;
    switch (e.tag) {
      case kAclUserObj:
        if (state != kUserObj) return false;
        state = kUsers;
        break;
      case kAclUser:
        if (state != kUsers) return false;
        needs_mask = true;
        break;
      case kAclGroupObj:
        if (state != kUsers) return false;
        state = kGroups;
        break;
      case kAclGroup:
        if (state != kGroups) return false;
        needs_mask = true;
        break;
      case kAclMask:
        if (state != kGroups) return false;
        state = kOther;
        break;
      case kAclOther:
        if (state != kOther && !(state == kGroups && !needs_mask)) return false;
        state = kDone;
        break;
      default:
        return false;
    }
  }
  return state == kDone;
}

}  // namespace

Result<Acl> ParseAcl(std::string_view value) {
  Acl acl;
  if (value.empty()) return acl;
  if (value.size() < kHeaderSize) return Status::Errno(EINVAL);
  if (GetLE(value, 0, 4) != kAclVersion) return Status::Errno(EOPNOTSUPP);
  if ((value.size() - kHeaderSize) % kEntrySize != 0) return Status::Errno(EINVAL);
  for (size_t at = kHeaderSize; at < value.size(); at += kEntrySize) {
    AclEntry e;
    e.tag = static_cast<uint16_t>(GetLE(value, at, 2));
    e.perm = static_cast<uint16_t>(GetLE(value, at + 2, 2));
    e.id = GetLE(value, at + 4, 4);
    if (e.tag == kAclUser || e.tag == kAclGroup) {
      // (uid_t)-1 maps to no user or group.
      if (e.id == kUndefinedId) return Status::Errno(EINVAL);
    } else {
      e.id = kUndefinedId;
    }
    acl.push_back(e);
  }
  if (!acl.empty() && !Valid(acl)) return Status::Errno(EINVAL);
  return acl;
}

std::string EncodeAcl(const Acl& acl) {
  std::string out;
  out.reserve(kHeaderSize + kEntrySize * acl.size());
  PutLE(&out, kAclVersion, 4);
  for (const AclEntry& e : acl) {
    PutLE(&out, e.tag, 2);
    PutLE(&out, e.perm, 2);
    PutLE(&out, e.tag == kAclUser || e.tag == kAclGroup ? e.id : kUndefinedId, 4);
  }
  return out;
}

bool AclToMode(const Acl& acl, uint32_t* mode) {
  uint32_t bits = 0;
  bool more = false;
  for (const AclEntry& e : acl) {
    switch (e.tag) {
      case kAclUserObj:
        bits |= (e.perm & 7u) << 6;
        break;
      case kAclGroupObj:
        bits |= (e.perm & 7u) << 3;
        break;
      case kAclOther:
        bits |= e.perm & 7u;
        break;
      case kAclMask:
        bits = (bits & ~070u) | ((e.perm & 7u) << 3);
        more = true;
        break;
      default:
        more = true;
        break;
    }
  }
  *mode = (*mode & ~0777u) | bits;
  return more;
}

void AclChmod(Acl* acl, uint32_t mode) {
  AclEntry* group_obj = nullptr;
  AclEntry* mask = nullptr;
  for (AclEntry& e : *acl) {
    switch (e.tag) {
      case kAclUserObj:
        e.perm = static_cast<uint16_t>((mode >> 6) & 7);
        break;
      case kAclGroupObj:
        group_obj = &e;
        break;
      case kAclMask:
        mask = &e;
        break;
      case kAclOther:
        e.perm = static_cast<uint16_t>(mode & 7);
        break;
      default:
        break;
    }
  }
  if (AclEntry* g = mask ? mask : group_obj) g->perm = static_cast<uint16_t>((mode >> 3) & 7);
}

bool AclCreateMasq(Acl* acl, uint32_t* mode_p) {
  uint32_t mode = *mode_p;
  AclEntry* group_obj = nullptr;
  AclEntry* mask = nullptr;
  bool more = false;
  for (AclEntry& e : *acl) {
    switch (e.tag) {
      case kAclUserObj:
        e.perm &= static_cast<uint16_t>((mode >> 6) & 7);
        mode &= (uint32_t(e.perm) << 6) | ~0700u;
        break;
      case kAclUser:
      case kAclGroup:
        more = true;
        break;
      case kAclGroupObj:
        group_obj = &e;
        break;
      case kAclOther:
        e.perm &= static_cast<uint16_t>(mode & 7);
        mode &= uint32_t(e.perm) | ~07u;
        break;
      case kAclMask:
        mask = &e;
        more = true;
        break;
      default:
        break;
    }
  }
  if (AclEntry* g = mask ? mask : group_obj) {
    g->perm &= static_cast<uint16_t>((mode >> 3) & 7);
    mode &= (uint32_t(g->perm) << 3) | ~070u;
  }
  *mode_p = (*mode_p & ~0777u) | (mode & 0777u);
  return more;
}

bool AclPermits(const Acl& acl, uint32_t file_uid, uint32_t file_gid, const Cred& c, int want) {
  const unsigned w = static_cast<unsigned>(want) & 7u;
  auto masked = [&](size_t i) {
    for (size_t j = i + 1; j < acl.size(); ++j) {
      if (acl[j].tag == kAclMask) return (acl[i].perm & acl[j].perm & w) == w;
    }
    return (acl[i].perm & w) == w;
  };
  bool found = false;
  for (size_t i = 0; i < acl.size(); ++i) {
    const AclEntry& e = acl[i];
    switch (e.tag) {
      case kAclUserObj:
        if (c.uid == file_uid) return (e.perm & w) == w;
        break;
      case kAclUser:
        if (c.uid == e.id) return masked(i);
        break;
      case kAclGroupObj:
      case kAclGroup:
        if (c.in_group(e.tag == kAclGroupObj ? file_gid : e.id)) {
          found = true;
          if ((e.perm & w) == w) return masked(i);
        }
        break;
      case kAclOther:
        return !found && (e.perm & w) == w;
      default:
        break;
    }
  }
  return false;
}

}  // namespace amino::schema
