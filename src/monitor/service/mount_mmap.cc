// mmap of served files (DESIGN.md §2).
//
// MAP_PRIVATE mappings: under notify, the descriptor's placeholder (the memfd the tracee holds
// for it) is given the file's size and the mapped range's bytes, and the kernel maps it as
// asked, with no stop: as natively, past the end of the file the mapping raises SIGBUS, and its
// pages not yet written show the bytes of a later mapping of the same description. At a stop
// (the other backends, a process's first mapping) they are anonymous memory filled with the
// file's bytes: a copy, not coherent with later writes to the file, reading zeros past its end.
// MAP_SHARED mappings map the file's mapping file (shared_mappings.h).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "monitor/remote_syscall.h"
#include "monitor/service/exec_call.h"
#include "monitor/service/mount_handler.h"
#include "monitor/shared_region.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

using schema::Status;

constexpr uint64_t kMaxCopy = 1ull << 32;  // the largest file copied for a private mapping
constexpr uint64_t kPage = 4096;

}  // namespace

Decision MountHandler::Exec(Thread& t, SyscallRegs& call) { return ExecCall(*this, t, call).Run(); }

std::optional<Decision> MountHandler::ReadMapped(ServedFile& f, uint64_t off, uint64_t plen,
                                                 std::string* data, uint64_t* size) {
  bool read = false;
  Decision d = RunOnFile(
      f,
      [&](schema::Transaction& txn) -> Status {
        auto st = f.mfs->fs->FStat(txn, f.id);
        if (!st.ok()) return st.status();
        if (size) *size = st->attr.size;
        data->clear();
        if (off >= st->attr.size) return Status::Ok();
        const uint64_t n = std::min<uint64_t>(plen, st->attr.size - off);
        if (n > kMaxCopy) return Status::Errno(ENOMEM);
        data->resize(static_cast<size_t>(n));
        auto got = f.mfs->fs->Read(txn, f.id, off, data->data(), data->size());
        if (!got.ok()) return got.status();
        data->resize(*got);
        return Status::Ok();
      },
      [&] {
        read = true;
        return 0L;
      });
  if (read) return std::nullopt;
  return d;
}

Decision MountHandler::Mmap(Thread& t, SyscallRegs& call, ServedFile& f) {
  const uint64_t addr = call.arg(0);
  const uint64_t len = call.arg(1);
  const int prot = static_cast<int>(call.arg(2));
  const int flags = static_cast<int>(call.arg(3));
  const uint64_t off = call.arg(5);
  // The kernel's checks, in its order (arch mmap, ksys_mmap_pgoff, do_mmap).
  if (off & (kPage - 1)) return Decision::Emulate(-EINVAL);
  if (f.flags & O_PATH) return Decision::Emulate(-EBADF);
  if (flags & MAP_HUGETLB) return Decision::Emulate(-EINVAL);
  if (len == 0) return Decision::Emulate(-EINVAL);
  const uint64_t plen = (len + kPage - 1) & ~(kPage - 1);
  if (plen == 0) return Decision::Emulate(-ENOMEM);
  if ((off / kPage) + (plen / kPage) < off / kPage) return Decision::Emulate(-EOVERFLOW);
  const int type = flags & MAP_TYPE;
  const bool shared = type == MAP_SHARED || type == MAP_SHARED_VALIDATE;
  if (!shared && type != MAP_PRIVATE) return Decision::Emulate(-EINVAL);
  constexpr int kLegacy = MAP_SHARED | MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_DENYWRITE |
                          MAP_EXECUTABLE | 0x4000000 /* MAP_UNINITIALIZED */ | MAP_GROWSDOWN |
                          MAP_LOCKED | MAP_NORESERVE | MAP_POPULATE | MAP_NONBLOCK | MAP_STACK |
                          MAP_HUGETLB | MAP_FIXED_NOREPLACE;
  if (type == MAP_SHARED_VALIDATE && (flags & ~kLegacy)) return Decision::Emulate(-EOPNOTSUPP);
  if (shared && (prot & PROT_WRITE) && !f.writable()) return Decision::Emulate(-EACCES);
  if (!f.readable()) return Decision::Emulate(-EACCES);
  if (!S_ISREG(f.type)) return Decision::Emulate(-ENODEV);
  // A shared mapping's file is opened by the tracee itself: at a stop.
  if (call.notified && shared) return Decision::StopFirst();
  NoteDataAccess(f);  // generic_file_mmap() touches atime
  if (call.notified) return MapPrivateInPlaceholder(t, call, f);
  if (shared) return MapShared(t, call, f);

  std::string data;
  if (auto failed = ReadMapped(f, off, plen, &data, nullptr)) return *failed;

  // Anonymous memory where the file would be mapped (MAP_FIXED as asked: ld.so maps segments
  // over its reservation), writable while it is filled, then given the protection asked for.
  constexpr int kKept = MAP_FIXED | MAP_FIXED_NOREPLACE | MAP_32BIT | MAP_NORESERVE | MAP_POPULATE |
                        MAP_LOCKED | MAP_NONBLOCK | MAP_STACK;
  const int fill_prot = data.empty() ? prot : (prot | PROT_READ | PROT_WRITE);
  RemoteSyscalls rs(t, call, false, exit_sink_, listener_);
  const long mapped = rs.Call(SYS_mmap, addr, len, static_cast<uint64_t>(fill_prot),
                              static_cast<uint64_t>(MAP_PRIVATE | MAP_ANONYMOUS | (flags & kKept)),
                              static_cast<uint64_t>(-1), 0);
  long result = mapped;
  if (mapped >= 0 || mapped < -4095) {
    const uint64_t at = static_cast<uint64_t>(mapped);
    if (!data.empty() && WriteMemory(*t.proc, at, data.data(), data.size()) != 0) {
      result = -ENOMEM;
    } else if (fill_prot != prot) {
      const long r = rs.Call(SYS_mprotect, at, plen, static_cast<uint64_t>(prot));
      if (r < 0) result = r;
    }
    if (result != mapped) rs.Call(SYS_munmap, at, plen);
  }
  rs.ReturnFromCall(result);
  return Decision::Restart();
}

namespace {

// The monitor's own read-write description of the placeholder the tracee holds at `fd` for
// `f` (a memfd), or -1 when that descriptor is not it.
int OpenPlaceholder(const Thread& t, int fd, const ServedFile& f) {
  host::ScopedFd theirs(CopyProcessFd(*t.proc, fd));
  struct stat st;
  if (theirs.get() < 0 || fstat(theirs.get(), &st) != 0 || st.st_ino != f.placeholder_ino ||
      !f.placeholder_ino) {
    return -1;
  }
  const std::string again = "/proc/self/fd/" + std::to_string(theirs.get());
  return open(again.c_str(), O_RDWR | O_CLOEXEC);
}

bool WriteAt(int fd, const char* buf, size_t len, uint64_t at) {
  for (size_t done = 0; done < len;) {
    const ssize_t n = pwrite(fd, buf + done, len - done, static_cast<off_t>(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Decision MountHandler::MapPrivateInPlaceholder(Thread& t, SyscallRegs& call, ServedFile& f) {
  const uint64_t len = call.arg(1);
  const uint64_t off = call.arg(5);
  const uint64_t plen = (len + kPage - 1) & ~(kPage - 1);
  host::ScopedFd mine(OpenPlaceholder(t, static_cast<int>(call.arg(4)), f));
  if (mine.get() < 0) return Decision::StopFirst();  // not the placeholder: copied at a stop
  std::string data;
  uint64_t size = 0;
  if (auto failed = ReadMapped(f, off, plen, &data, &size)) return *failed;
  if (ftruncate(mine.get(), static_cast<off_t>(size)) != 0 ||
      !WriteAt(mine.get(), data.data(), data.size(), off)) {
    return Decision::Emulate(-ENOMEM);  // no room for the bytes in memory
  }
  return Decision::Pass();
}

Decision MountHandler::MapShared(Thread& t, SyscallRegs& call, ServedFile& f) {
  // The kernel maps the file's mapping file (shared_mappings.h), opened by the tracee itself
  // for the time of the call, so that every process mapping the file shares its pages.
  const SharedMappings::Mapping* mapping = nullptr;
  CallOutcome o = shared_maps_.Get(*f.mfs, f.id, &mapping);
  if (o.kind == CallOutcome::Kind::kConflict) return Conflict();
  if (o.kind == CallOutcome::Kind::kStorage) return Decision::Emulate(-EIO);
  if (!o.status.ok()) return Decision::Emulate(-o.status.error());
  Decision restart;
  if (!EnsureRegion(t, call, &restart)) return restart;
  const uint64_t name = t.proc->region->Put(t.tid, 0, mapping->path + '\0');
  if (!name) return Decision::Emulate(-ENOMEM);
  const schema::Cred cred = CredOf(t);
  const int prot = static_cast<int>(call.arg(2));
  const uint64_t access = (prot & PROT_WRITE) ? O_RDWR : O_RDONLY;
  RemoteSyscalls rs(t, call, false, exit_sink_, listener_);
  SharedMappings::LendTo(mapping->fd, cred.uid, cred.gid);
  const long fd = rs.Call(SYS_openat, static_cast<uint64_t>(AT_FDCWD), name, access | O_CLOEXEC, 0);
  SharedMappings::TakeBack(mapping->fd);
  long result = fd;
  if (fd >= 0) {
    result = rs.Call(SYS_mmap, call.arg(0), call.arg(1), call.arg(2), call.arg(3),
                     static_cast<uint64_t>(fd), call.arg(5));
    rs.Call(SYS_close, static_cast<uint64_t>(fd));
  } else if (fd == -EMFILE || fd == -ENFILE) {
    result = -ENOMEM;  // what mmap itself would say; it needs no descriptor
  }
  rs.ReturnFromCall(result);
  return Decision::Restart();
}

}  // namespace amino::monitor::service
