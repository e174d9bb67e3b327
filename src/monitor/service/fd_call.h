// One call on a served descriptor, as MountHandler::ServeFd (mount_data.cc) hands it on, and
// what serves it, by kind:
//   mount_data.cc       dispatch; attributes, size, synchronisation, flock
//   fd_call_io.cc       read and write in every form; lseek; the argument checks they share
//   fd_call_dir.cc      getdents; the descriptor forms of the xattr calls
//   fd_call_space.cc    fallocate (collapse and insert among its modes); record locks
//   fd_call_copies.cc   sendfile, splice, copy_file_range
// Each does what the same call does on ext4, in the order Linux checks its arguments; the data
// comes from the schema in one transaction per call and reaches the tracee after the commit.
#pragma once

#include <fcntl.h>
#include <sys/uio.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "monitor/service/mount_handler.h"
#include "monitor/tracee_iovecs.h"

namespace amino::monitor::service::fd_calls {

inline constexpr size_t kMaxRw = kMaxRwCount;
inline constexpr int kRwfSupported = 0x1ff;  // RWF_HIPRI .. RWF_NOSIGNAL
inline constexpr int kRwfNoWait = 0x08, kRwfAppend = 0x10, kRwfNoAppend = 0x20, kRwfAtomic = 0x40;
inline constexpr int kRwfDsync = 0x02, kRwfSync = 0x04;
inline constexpr size_t kChunk = 1 << 20;
inline constexpr uint64_t kBlock = 4096;  // the block of ext4 (and st_blksize) fallocate moves
inline constexpr int64_t kOffsetMax = LLONG_MAX;

using FileBody = MountHandler::FileBody;
using Done = MountHandler::Done;
using Status = schema::Status;

// What the helpers need of the handler for one call on a served descriptor.
struct FdCall {
  Thread& t;
  ServedFile& f;
  // A transaction on a served file's file system (RunOnFile).
  std::function<Decision(ServedFile&, const FileBody&, const Done&)> run_on;
  // The served file behind another descriptor of the caller, or nullptr.
  std::function<std::shared_ptr<ServedFile>(int)> served;
  schema::Cred cred;
  // The mapping files that follow what the monitor writes (shared_mappings.h).
  SharedMappings& maps;

  Decision run(const FileBody& body, const Done& done) { return run_on(f, body, done); }
};

inline Decision Emulate(long r) { return Decision::Emulate(r); }
inline long Ok() { return 0; }
// Access mode 3 (O_ACCMODE, "for ioctl only") allows neither reading nor writing.
inline bool CanRead(const ServedFile& f) {
  return !(f.flags & O_PATH) && (f.access_mode() == O_RDONLY || f.access_mode() == O_RDWR);
}
inline bool CanWrite(const ServedFile& f) {
  return !(f.flags & O_PATH) && (f.access_mode() == O_WRONLY || f.access_mode() == O_RDWR);
}

// rw_verify_area: the range [pos, pos + count) must be representable.
long VerifyArea(int64_t pos, uint64_t count);
// RWF_* flags as ext4 takes them for a buffered transfer.
long CheckRwf(int rwf, bool dir);
// Copies up to `len` bytes from the tracee: the number readable before the first fault.
size_t ReadUpTo(Process& p, uint64_t addr, char* buf, size_t len);
// generic_file_llseek_size: the new position, or -errno.
int64_t GenericSeek(uint64_t pos, int64_t off, int whence, int64_t maxsize, int64_t eof);

// The calls, each on the descriptor c.f (fd_call_io.cc).
// read, write and their vectored and positioned forms: the arguments checked in the kernel's
// order, then one transaction.
Decision Transfer(FdCall& c, SyscallRegs& call);
Decision ReadData(FdCall& c, const std::vector<iovec>& iov, size_t total, int64_t start,
                  bool at_cursor);
Decision WriteData(FdCall& c, const std::vector<iovec>& iov, size_t total, int64_t start,
                   bool at_cursor, bool append, bool sync);
Decision Seek(FdCall& c, int64_t off, int whence);
// fd_call_dir.cc
Decision Getdents(FdCall& c, uint64_t addr, unsigned count, bool wide);
Decision Xattr(FdCall& c, SyscallRegs& call);
// fd_call_space.cc
Decision Fallocate(FdCall& c, SyscallRegs& call);
// fcntl F_GETLK .. F_OFD_SETLKW: the range is made absolute here (its base may be the size).
Decision RecordLock(FdCall& c, SyscallRegs& call);
// fd_call_copies.cc
Decision Splice(FdCall& c, SyscallRegs& call);
Decision Sendfile(FdCall& c, SyscallRegs& call);
Decision CopyFileRange(FdCall& c, SyscallRegs& call);

}  // namespace amino::monitor::service::fd_calls
