#include "monitor/service/stat_convert.h"

#include <sys/sysmacros.h>

namespace amino::monitor::service {

namespace {

constexpr blksize_t kBlockSize = 4096;  // ext4's st_blksize, and the schema's transfer unit

statx_timestamp ToTimestamp(const timespec& ts) {
  statx_timestamp out{};
  out.tv_sec = ts.tv_sec;
  out.tv_nsec = static_cast<uint32_t>(ts.tv_nsec);
  return out;
}

// ext4 gives a directory one 4 KiB block until its entries need more; programs print it (ls -l,
// stat, du), so a directory reports that much instead of the schema's 0.
uint64_t SizeOf(const schema::Attr& a) { return S_ISDIR(a.mode) && a.size == 0 ? 4096 : a.size; }
// A symbolic link whose target fits in ext4's inode (under 60 bytes, a "fast" link) occupies no
// block there; the schema stores every target in a page.
constexpr uint64_t kFastSymlinkMax = 59;
uint64_t BlocksOf(const schema::Attr& a) {
  if (S_ISDIR(a.mode) && a.blocks == 0) return 8;
  if (S_ISLNK(a.mode) && a.size <= kFastSymlinkMax) return 0;
  return a.blocks;
}

}  // namespace

struct stat ToStat(const schema::Stat& st, dev_t dev) {
  const schema::Attr& a = st.attr;
  struct stat out {};
  out.st_dev = dev;
  out.st_ino = static_cast<ino_t>(st.ino);
  out.st_nlink = a.nlink;
  out.st_mode = a.mode;
  out.st_uid = a.uid;
  out.st_gid = a.gid;
  out.st_rdev = static_cast<dev_t>(a.rdev);
  out.st_size = static_cast<off_t>(SizeOf(a));
  out.st_blksize = kBlockSize;
  out.st_blocks = static_cast<blkcnt_t>(BlocksOf(a));
  out.st_atim = a.atime;
  out.st_mtim = a.mtime;
  out.st_ctim = a.ctime;
  return out;
}

struct statx ToStatx(const schema::Stat& st, dev_t dev, unsigned mask) {
  const schema::Attr& a = st.attr;
  struct statx out {};
  out.stx_mask = STATX_BASIC_STATS;
  out.stx_blksize = kBlockSize;
  out.stx_nlink = a.nlink;
  out.stx_uid = a.uid;
  out.stx_gid = a.gid;
  out.stx_mode = static_cast<uint16_t>(a.mode);
  out.stx_ino = st.ino;
  out.stx_size = SizeOf(a);
  out.stx_blocks = BlocksOf(a);
  // Of the attributes every file system reports, only "mount root" can be set here: the
  // mount's root directory is one, as the host directory it covers would be.
  out.stx_attributes_mask = STATX_ATTR_AUTOMOUNT | STATX_ATTR_MOUNT_ROOT;
  if (st.ino == schema::kRootId) out.stx_attributes |= STATX_ATTR_MOUNT_ROOT;
  out.stx_atime = ToTimestamp(a.atime);
  out.stx_ctime = ToTimestamp(a.ctime);
  out.stx_mtime = ToTimestamp(a.mtime);
  out.stx_rdev_major = gnu_dev_major(static_cast<dev_t>(a.rdev));
  out.stx_rdev_minor = gnu_dev_minor(static_cast<dev_t>(a.rdev));
  out.stx_dev_major = gnu_dev_major(dev);
  out.stx_dev_minor = gnu_dev_minor(dev);
  // As ext4 with multigrain timestamps (Linux 6.13 on) reports them: the change and
  // modification times only to a caller that asks for one of them.
  if (!(mask & (STATX_CTIME | STATX_MTIME))) {
    out.stx_mask &= ~(STATX_CTIME | STATX_MTIME);
    out.stx_ctime = {};
    out.stx_mtime = {};
  }
  return out;
}

}  // namespace amino::monitor::service
