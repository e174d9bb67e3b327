// POSIX access control lists as Linux keeps them (fs/posix_acl.c): the value format of the
// system.posix_acl_access and system.posix_acl_default attributes, and the rules that tie an ACL
// to the mode bits. Pure functions over values; xattr_ops.cc stores them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "schema/cred.h"
#include "schema/status.h"

namespace amino::schema {

inline constexpr std::string_view kAclAccessName = "system.posix_acl_access";
inline constexpr std::string_view kAclDefaultName = "system.posix_acl_default";

// Tags and permissions of <linux/posix_acl.h>.
enum AclTag : uint16_t {
  kAclUserObj = 0x01,
  kAclUser = 0x02,
  kAclGroupObj = 0x04,
  kAclGroup = 0x08,
  kAclMask = 0x10,
  kAclOther = 0x20,
};

struct AclEntry {
  uint16_t tag = 0;
  uint16_t perm = 0;  // 4 read, 2 write, 1 execute
  uint32_t id = 0;    // uid or gid of a named entry; unused (-1 in values) for the others
};

using Acl = std::vector<AclEntry>;

// posix_acl_from_xattr + posix_acl_valid: EOPNOTSUPP for another format version, EINVAL for a
// malformed or invalid list. A value of no entries (empty, or the header alone) is an empty Acl,
// which removes the attribute. Like the kernel, named entries need not be sorted or unique.
Result<Acl> ParseAcl(std::string_view value);
// The value getxattr returns: version 2 header, unnamed entries' ids as -1.
std::string EncodeAcl(const Acl& acl);

// posix_acl_equiv_mode: sets the permission bits of `*mode` from the ACL and returns whether
// the ACL says more than the mode can (named entries or a mask).
bool AclToMode(const Acl& acl, uint32_t* mode);
// posix_acl_chmod: the owner, mask (group without one) and other entries take `mode`'s bits.
void AclChmod(Acl* acl, uint32_t mode);
// posix_acl_create_masq: a new file's access ACL from its directory's default ACL and the
// requested `*mode`; both are ANDed. Returns whether the result is more than the mode.
bool AclCreateMasq(Acl* acl, uint32_t* mode);
// posix_acl_permission: true when `want` (4 read, 2 write, 1 execute) is granted to `c` on a
// file owned by `file_uid`:`file_gid`.
bool AclPermits(const Acl& acl, uint32_t file_uid, uint32_t file_gid, const Cred& c, int want);

}  // namespace amino::schema
