// The schema's stat record as the kernel reports a file's status: struct stat (stat, lstat,
// newfstatat, fstat) and struct statx. Fields the schema does not keep are given as ext4 gives
// them (a 4 KiB st_blksize) or left out of stx_mask (the birth time, the mount id).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "schema/filesystem.h"

namespace amino::monitor::service {

// `dev`: the mount's device number (MountFs::dev).
struct stat ToStat(const schema::Stat& st, dev_t dev);

// `mask`: what the caller asked for. As on ext4 the basic fields come whatever was asked, except
// the change and modification times, which come only when one of them is asked for; nothing
// beyond them is known here. stx_mask says which fields are filled.
struct statx ToStatx(const schema::Stat& st, dev_t dev, unsigned mask = STATX_BASIC_STATS);

}  // namespace amino::monitor::service
