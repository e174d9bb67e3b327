// Kernel objects for the FIFOs and device nodes stored in Amino mounts. The schema holds their
// names and attributes, but a FIFO's pipe and a device are the kernel's: an open of such a node
// is given to the kernel on a host node that stands for it. One host node per stored node (mount
// and file id, so every name of it reaches the same node), in a directory private to the monitor:
// a FIFO (every opener in the traced tree shares its pipe, for as long as the monitor runs), or a
// device node of the same type and number; a socket is bound there by the monitor. Its owner, group
// and permission bits are the stored node's, brought up to date at each open, so that the kernel's
// own check of the opener agrees with the schema's. The directory is made on first need and removed
// with everything in it when the monitor is done.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

#include "schema/records.h"

namespace amino::monitor::service {

class HostNodes {
 public:
  HostNodes() = default;
  ~HostNodes() { Remove(); }
  HostNodes(const HostNodes&) = delete;
  HostNodes& operator=(const HostNodes&) = delete;

  // The host path for stored node `id` of mount number `mount`, with attributes `attr` (a FIFO,
  // character or block device), made or brought up to date. Where device nodes cannot be made
  // (no CAP_MKNOD, or only file systems mounted nodev), the device's own node in /dev/char or
  // /dev/block stands for it, with its own owner and permissions. 0 or -errno (the errno of the
  // failed mknod when nothing can stand for a device).
  int Prepare(int mount, schema::FileId id, const schema::Attr& attr, std::string* path);

  // Sockets: a fresh host path for stored socket `id` of mount `mount` to be bound at (a stale
  // node there is removed). 0 or -errno.
  int SocketPath(int mount, schema::FileId id, std::string* path);
  // The socket bound at `path` given the stored node's owner and mode, as Prepare does, so that
  // the kernel's check of a connecting process agrees with the schema's. 0, or -ECONNREFUSED
  // when no socket is there.
  int MatchSocket(const std::string& path, const schema::Attr& attr);

  // Removes the directory and every node in it (a FIFO still open keeps its pipe).
  void Remove();

  // The private directory ("" before the first Prepare).
  const std::string& dir() const { return dir_; }

 private:
  int MakeDir();
  // Gives the node at `node` (lstat `st`) the owner and mode of `attr`: 0 or -errno.
  static int Match(const std::string& node, const struct stat& st, const schema::Attr& attr);
  std::string dir_;
  bool devices_open_ = false;  // its file system lets device nodes be opened (not nodev)
};

}  // namespace amino::monitor::service
