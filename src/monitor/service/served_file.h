// An open file description of a file in an Amino mount: what the tracee's shadow descriptor
// stands for. Offsets, status flags and the directory cursor live here, shared by every
// descriptor dup() or fork() made of it, as the kernel shares an open file description.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "monitor/process_table.h"
#include "monitor/service/mount_fs.h"
#include "schema/records.h"

namespace amino::monitor::service {

struct UserTxn;

// A FIFO or device node of a mount, opened by the kernel on its host stand-in (host_nodes.h):
// the descriptor is the kernel's, but fstat shows the stored node, as a native one would.
struct NodeFile : OpenFile {
  MountFs* mfs = nullptr;
  schema::FileId id = 0;
  ino_t host_ino = 0;  // the stand-in's inode, to recognise the descriptor after an exec
};

struct ServedFile : OpenFile {
  MountFs* mfs = nullptr;
  schema::FileId id = 0;
  int flags = 0;    // open flags: access mode, O_APPEND, O_NONBLOCK, O_PATH, ... (F_GETFL)
  mode_t type = 0;  // S_IFREG, S_IFDIR, S_IFLNK (O_PATH | O_NOFOLLOW), ...
  uint64_t offset = 0;
  // Directory stream: the name after which the next getdents continues, valid while `offset`
  // equals `dir_offset` (offsets count entries, "." and ".." first; lseek elsewhere rescans).
  std::string dir_after;
  uint64_t dir_offset = 0;
  // A directory's mount-relative path, as of the mount's directory generation `path_generation`
  // (looked up again by id after a directory rename or removal).
  std::string dir_path;
  uint64_t path_generation = 0;
  // Its mount-relative name when opened: what /proc/PID/fd shows, with " (deleted)", once it
  // has no name left.
  std::string opened_name;
  // Opened with O_TMPFILE and not O_EXCL, and not linked since: linkat may give it a name.
  bool linkable = false;
  // The schema counts open descriptions (an unlinked file lives until the last is closed).
  bool counted = false;
  // The mount's change generation when this file's atime was last found current (relatime).
  uint64_t atime_current_at = 0;
  // The open application transaction that took the count (its close runs inside it).
  std::weak_ptr<UserTxn> opened_in;

  ServedFile() = default;
  ServedFile(const ServedFile&) = delete;
  ServedFile& operator=(const ServedFile&) = delete;
  ~ServedFile() override;

  int access_mode() const { return flags & O_ACCMODE; }
  // Access mode 3 (O_ACCMODE) opens for neither (OPEN_FMODE): only ioctl-like calls work.
  bool readable() const {
    return !(flags & O_PATH) && (access_mode() == O_RDONLY || access_mode() == O_RDWR);
  }
  bool writable() const {
    return !(flags & O_PATH) && (access_mode() == O_WRONLY || access_mode() == O_RDWR);
  }
  bool is_dir() const { return S_ISDIR(type); }
};

// An access to the data of served file `f` (read, getdents, mmap): its atime follows relatime,
// in a transaction of its own that gives way to any lock held by another (best effort, as the
// kernel's lazy atime is), first asked of the read cache alone unless the caller already found
// it `due`. O_NOATIME descriptions leave it alone.
void NoteDataAccess(ServedFile& f, bool due = false);

}  // namespace amino::monitor::service
