// exec of programs stored in a mount, and mmap of served files (DESIGN.md §2).
//
// exec. The kernel can only run what it can open, so a program stored in a mount is copied to a
// host file (in a directory private to the monitor; the copy is removed when the exec has
// happened or failed) and the call is given that path. A script is not copied: its interpreter
// is run as the kernel's binfmt_script would run it, with the script's own path as argument, so
// the interpreter reads the script through the monitor and $0, __file__ and paths relative to
// the script stay Amino paths. The #! line is read here, interpreters are followed in turn (one
// may be stored in a mount itself, or a script on the host may name one), and the kernel is
// given only the last program. A set-user-ID or set-group-ID program's copy carries the stored
// owner, group, set-id bits and execute permissions, so the kernel's exec changes the ids as it
// would natively, for those who may run the stored program; only a monitor running as root can
// make it (otherwise the copy runs with the caller's ids, as on a nosuid mount). Nobody may keep
// it: it is written in a directory of root's, mode 0700, with a name nobody can guess, opened
// read-only by the monitor and removed with its directory before the tracee is given that
// descriptor (close-on-exec) and made to exec it with execveat(fd, "", AT_EMPTY_PATH); a failed
// exec closes the descriptor again. A file without a name cannot be linked back (not even
// through /proc), and the process is named after the copy's last name, the stored one.
//
// Known differences from a native exec of the same file: /proc/self/exe and AT_EXECFN name the
// copy (a set-id program's AT_EXECFN is /dev/fd/N, its /proc/self/exe ends in "(deleted)"), and
// $ORIGIN in a stored program's run path is the copy's directory; a process running a stored script
// is named after its interpreter (comm), not after the script; a stored file open for writing can
// be executed (no ETXTBSY); an interpreter named in a #! line that lies inside a mount is found,
// which the kernel could not do.
//
// mmap. MAP_PRIVATE mappings are anonymous memory filled with the file's bytes: a copy, not
// coherent with later writes to the file (a private mapping may differ there natively too, once
// written). Beyond the end of the file the mapping reads zeros where a native one raises SIGBUS
// past the last page. MAP_SHARED mappings map the file's mapping file (shared_mappings.h).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/remote_syscall.h"
#include "monitor/service/mount_handler.h"
#include "monitor/shared_region.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

void RemoveProgramCopy(const std::string& path) {
  unlink(path.c_str());
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return;
  const std::string dir = path.substr(0, slash);
  if (dir.compare(dir.rfind('/') + 1, 6, "setid.") == 0) rmdir(dir.c_str());
}

namespace {

using schema::Status;

constexpr size_t kHeadSize = 256;          // BINPRM_BUF_SIZE: what exec reads to recognise a file
constexpr int kMaxInterpreters = 5;        // the kernel's exec depth before ELOOP
constexpr size_t kMaxArgs = 1 << 21;       // far above what ARG_MAX lets through
constexpr uint64_t kMaxCopy = 1ull << 32;  // the largest file copied for exec or mmap
constexpr uint64_t kPage = 4096;
constexpr uint64_t kRedZone = 128;  // below the stack pointer, the program's own (x86-64 ABI)

bool IsEscape(const Status& st) { return st.error() == EXDEV && !st.escaped_path().empty(); }

// --- The #! line, exactly as fs/binfmt_script.c reads it -----------------------------------

struct Shebang {
  std::string name;
  std::optional<std::string> arg;
};

bool SpaceTab(char c) { return c == ' ' || c == '\t'; }
char* NextNonSpaceTab(char* first, char* last) {
  for (; first <= last; ++first) {
    if (!SpaceTab(*first)) return first;
  }
  return nullptr;
}
char* NextTerminator(char* first, char* last) {
  for (; first <= last; ++first) {
    if (SpaceTab(*first) || !*first) return first;
  }
  return nullptr;
}

// False when `head` (a file's first bytes) is not a script the kernel would run: the kernel
// then tries the next format, and ENOEXEC is its answer for anything but ELF.
bool ParseShebang(std::string_view head, Shebang* out) {
  char buf[kHeadSize] = {};
  std::memcpy(buf, head.data(), std::min(head.size(), kHeadSize));
  if (buf[0] != '#' || buf[1] != '!') return false;
  char* buf_end = buf + kHeadSize - 1;
  char* i_end = nullptr;
  for (char* p = buf; p < buf + kHeadSize && *p; ++p) {
    if (*p == '\n') {
      i_end = p;
      break;
    }
  }
  if (!i_end) {
    i_end = NextNonSpaceTab(buf + 2, buf_end);
    if (!i_end) return false;                           // only blanks
    if (!NextTerminator(i_end, buf_end)) return false;  // the name may be cut short
    i_end = buf_end;
  }
  while (SpaceTab(i_end[-1])) --i_end;
  char* i_name = NextNonSpaceTab(buf + 2, i_end);
  if (!i_name || i_name == i_end) return false;
  char* i_sep = NextTerminator(i_name, i_end);
  char* i_arg = nullptr;
  if (i_sep && *i_sep != '\0') i_arg = NextNonSpaceTab(i_sep, i_end);
  *i_end = '\0';
  if (i_sep) *i_sep = '\0';
  out->name = i_name;
  out->arg.reset();
  if (i_arg) out->arg = std::string(i_arg);
  return true;
}

// --- Copies of stored programs for the kernel -----------------------------------------------

// ROOT/TID/NAME: one directory per thread, so that a copy keeps the program's name (the kernel
// names the process after the file it runs) while concurrent execs stay apart. ROOT is made on
// first use where files may be executed, and removed with everything in it at exit.
// The owner, group and set-id bits of a stored set-user-ID or set-group-ID program.
struct SetId {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t bits = 0;  // S_ISUID, S_ISGID
  mode_t perm = 0;  // the stored permission bits (0777)
};

// The permission bits of a set-id program's copy: the stored read and execute bits, so that the
// kernel lets only those whom the stored file lets run it (or a descriptor of it); but when the
// caller's permission came from a stored ACL, which the copy does not carry, 0555 as for other
// programs (the exec permission was checked on the stored file).
mode_t SetIdCopyMode(const SetId& s, const schema::Cred& caller) {
  const mode_t mirrored = s.perm & 0555;
  mode_t cls = mirrored & 0007;
  if (caller.uid == s.uid) {
    cls = (mirrored >> 6) & 7;
  } else if (caller.gid == s.gid ||
             std::find(caller.groups.begin(), caller.groups.end(), s.gid) != caller.groups.end()) {
    cls = (mirrored >> 3) & 7;
  }
  return ((caller.uid == 0 || (cls & 1)) ? mirrored : 0555) | s.bits;
}

class ProgramCopies {
 public:
  static ProgramCopies& Get() {
    static ProgramCopies copies;
    return copies;
  }
  ~ProgramCopies() {
    if (root_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  // The path of a new copy of `bytes` named `name` for thread `tid`, or 0 and -errno. A
  // `setid` program's copy is owned by its stored owner and group with its set-id bits, in a
  // directory of its own (RemoveProgramCopy removes both).
  int Write(pid_t tid, const std::string& name, std::string_view bytes,
            const std::optional<SetId>& setid, const schema::Cred& caller, std::string* path) {
    if (root_.empty() && !MakeRoot()) return -EACCES;
    if (++writes_ % 64 == 0) {
      // Directories of threads gone: removing a directory still in use fails harmlessly.
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(root_, ec)) {
        for (const auto& sub : std::filesystem::directory_iterator(e.path(), ec)) {
          if (sub.path().filename().string().starts_with("setid.")) rmdir(sub.path().c_str());
        }
        rmdir(e.path().c_str());
      }
    }
    std::string dir = root_ + "/" + std::to_string(tid);
    if (mkdir(dir.c_str(), 0711) != 0 && errno != EEXIST) return -errno;
    const bool keep_setid = setid && geteuid() == 0;
    if (keep_setid) {
      // Root's, mode 0700, unguessable: only the monitor opens the copy, and removes it with
      // the directory before the tracee is given a descriptor of it (see PassDescriptor).
      dir += "/setid.XXXXXX";
      if (!mkdtemp(dir.data())) return -errno;
    }
    *path = dir + "/" + name;
    unlink(path->c_str());  // a copy an exec left behind (a thread that exec'd and changed id)
    const int fd = open(path->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    if (fd < 0) return -errno;
    int err = 0;
    for (size_t done = 0; done < bytes.size();) {
      ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        err = n < 0 ? errno : EIO;
        break;
      }
      done += static_cast<size_t>(n);
    }
    // Anyone may run a plain copy: the exec permission was checked on the stored file. The
    // owner changes first, since chown clears set-id bits.
    if (!err && keep_setid && fchown(fd, setid->uid, setid->gid) != 0) err = errno;
    if (!err && fchmod(fd, keep_setid ? SetIdCopyMode(*setid, caller) : 0555) != 0) err = errno;
    close(fd);
    if (err) RemoveProgramCopy(*path);
    return -err;
  }

 private:
  bool MakeRoot() {
    // The first that honours set-id bits, else the first that can run programs at all.
    for (const unsigned long refuse : {ST_NOEXEC | ST_RDONLY | ST_NOSUID, ST_NOEXEC | ST_RDONLY})
      if (MakeRootIn(refuse)) return true;
    std::fprintf(stderr, "amino run: no directory to copy programs to for exec\n");
    return false;
  }
  bool MakeRootIn(unsigned long refuse) {
    for (const char* base : {"/dev/shm", "/tmp", "/var/tmp"}) {
      struct statvfs vfs;
      if (statvfs(base, &vfs) != 0 || (vfs.f_flag & refuse)) continue;
      std::string dir = std::string(base) + "/amino-exec.XXXXXX";
      if (!mkdtemp(dir.data())) continue;
      chmod(dir.c_str(), 0711);  // searchable by the tracees' users, not listable
      root_ = dir;
      return true;
    }
    return false;
  }
  std::string root_;
  uint64_t writes_ = 0;
};

// Gives the stopped tracee `fd` (close-on-exec) and returns its number there, or -errno: the
// tracee makes a socket pair, the monitor takes one end with pidfd_getfd and sends `fd` through
// it, the tracee receives it on the other end and closes both. The tracee's buffers lie on its
// stack below the red zone (the region is not the tracee's to write).
uint64_t MappingStart(pid_t tid, uint64_t addr);

long PassDescriptor(RemoteSyscalls& rs, Thread& t, int fd) {
  constexpr size_t kPair = 0, kMsg = 16, kIov = kMsg + sizeof(msghdr), kByte = kIov + 16,
                   kCtl = kByte + 16, kCtlLen = CMSG_SPACE(sizeof(int)), kSize = kCtl + kCtlLen;
  const uint64_t rsp = rs.saved().regs.rsp;
  const uint64_t base = (rsp - kRedZone - kSize) & ~uint64_t{15};
  const uint64_t low = MappingStart(t.tid, rsp - 1);
  if (!low || base < low) return -ENOMEM;
  const uint64_t pair = base + kPair;
  long r = rs.Call(SYS_socketpair, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair);
  if (r < 0) return r;
  int sv[2];
  if (ReadMemory(*t.proc, pair, sv, sizeof sv) != 0) return -EFAULT;
  auto close_pair = [&] {
    rs.Call(SYS_close, static_cast<uint64_t>(sv[0]));
    rs.Call(SYS_close, static_cast<uint64_t>(sv[1]));
  };
  {
    host::ScopedFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, t.proc->tgid, 0)));
    host::ScopedFd end(
        pidfd.get() < 0 ? -1 : static_cast<int>(syscall(SYS_pidfd_getfd, pidfd.get(), sv[0], 0)));
    if (end.get() < 0) {
      const int err = errno;
      close_pair();
      return -err;
    }
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char ctl[kCtlLen] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl;
    msg.msg_controllen = sizeof ctl;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(end.get(), &msg, MSG_DONTWAIT) != 1) {
      const int err = errno;
      close_pair();
      return -err;
    }
  }
  // The tracee's recvmsg: msghdr, iovec, one byte and the control buffer.
  msghdr msg{};
  msg.msg_iov = reinterpret_cast<iovec*>(base + kIov);
  msg.msg_iovlen = 1;
  msg.msg_control = reinterpret_cast<void*>(base + kCtl);
  msg.msg_controllen = kCtlLen;
  const uint64_t iov[2] = {base + kByte, 1};
  std::string blob(kSize - kMsg, '\0');
  std::memcpy(blob.data(), &msg, sizeof msg);
  std::memcpy(blob.data() + (kIov - kMsg), iov, sizeof iov);
  if (WriteMemory(*t.proc, base + kMsg, blob.data(), blob.size()) != 0) {
    close_pair();
    return -EFAULT;
  }
  r = rs.Call(SYS_recvmsg, static_cast<uint64_t>(sv[1]), base + kMsg,
              MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  close_pair();
  if (r != 1) return r < 0 ? r : -EIO;
  alignas(cmsghdr) char ctl[kCtlLen];
  if (ReadMemory(*t.proc, base + kCtl, ctl, sizeof ctl) != 0) return -EFAULT;
  const cmsghdr* c = reinterpret_cast<const cmsghdr*>(ctl);
  if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(sizeof(int))) {
    return -EIO;
  }
  int got;
  std::memcpy(&got, CMSG_DATA(c), sizeof got);
  return got;
}

// The last component of `path`, as the kernel names a process after the file it runs.
std::string BaseName(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  if (base.empty() || base == "." || base == "..") base = "program";
  return base;
}

bool CloseOnExec(pid_t tid, int fd) {
  std::ifstream in("/proc/" + std::to_string(tid) + "/fdinfo/" + std::to_string(fd));
  std::string key;
  while (in >> key) {
    if (key == "flags:") {
      unsigned long flags = 0;
      in >> std::oct >> flags;
      return flags & O_CLOEXEC;
    }
  }
  return false;
}

// --- Programs on the host -------------------------------------------------------------------

// How the tracee names a host file: `path` relative to `dirfd` (the file itself when empty).
struct HostRef {
  int dirfd = AT_FDCWD;
  std::string path;
  bool nofollow = false;
};

// An O_PATH descriptor of the file, opened with `creds` when given (else as the monitor), or
// -errno.
int OpenHost(pid_t tid, const HostRef& ref, const host::Creds* creds) {
  host::ScopedFd base;
  int dfd = AT_FDCWD;
  if (ref.path.empty() || ref.path[0] != '/') {
    std::string dir = "/proc/" + std::to_string(tid) +
                      (ref.dirfd == AT_FDCWD ? "/cwd" : "/fd/" + std::to_string(ref.dirfd));
    base.reset(open(dir.c_str(), O_PATH | O_CLOEXEC));
    if (base.get() < 0) return -errno;
    if (ref.path.empty()) {
      int fd = fcntl(base.get(), F_DUPFD_CLOEXEC, 0);
      return fd < 0 ? -errno : fd;
    }
    dfd = base.get();
  }
  std::optional<host::AsTracee> as;
  if (creds) as.emplace(*creds);
  int fd = openat(dfd, ref.path.c_str(), O_PATH | O_CLOEXEC | (ref.nofollow ? O_NOFOLLOW : 0));
  return fd < 0 ? -errno : fd;
}

// The first bytes of a regular host file, read as the kernel reads them (whatever the caller
// may read); empty when it cannot be looked at (the kernel will say why).
std::string HostHead(pid_t tid, const HostRef& ref) {
  host::ScopedFd fd(OpenHost(tid, ref, nullptr));
  struct stat st;
  if (fd.get() < 0 || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  host::ScopedFd data(
      open(("/proc/self/fd/" + std::to_string(fd.get())).c_str(), O_RDONLY | O_CLOEXEC));
  if (data.get() < 0) return {};
  std::string head(kHeadSize, '\0');
  ssize_t n = pread(data.get(), head.data(), head.size(), 0);
  head.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return head;
}

// What the kernel would check before running a host script whose interpreter the monitor
// handles instead: 0 or -errno.
int HostMayExec(pid_t tid, const HostRef& ref, const host::Creds& creds) {
  host::ScopedFd fd(OpenHost(tid, ref, &creds));
  if (fd.get() < 0) return fd.get();
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return -errno;
  if (!S_ISREG(st.st_mode)) return S_ISLNK(st.st_mode) ? -ELOOP : -EACCES;
  host::AsTracee as(creds);
  const std::string self = "/proc/self/fd/" + std::to_string(fd.get());
  return faccessat(AT_FDCWD, self.c_str(), X_OK, AT_EACCESS) == 0 ? 0 : -errno;
}

// --- Arguments -----------------------------------------------------------------------------

// The tracee's argv pointers (up to the NULL), or -errno.
int ReadArgv(Process& p, uint64_t argv, std::vector<uint64_t>* out) {
  out->clear();
  if (!argv) return 0;  // no argv: no arguments
  std::string bytes;
  size_t used = 0;
  for (uint64_t at = argv;;) {
    const size_t n = kPage - (at & (kPage - 1));
    const size_t old = bytes.size();
    bytes.resize(old + n);
    if (ReadMemory(p, at, bytes.data() + old, n) != 0) return -EFAULT;
    at += n;
    for (; bytes.size() - used >= 8; used += 8) {
      uint64_t v;
      std::memcpy(&v, bytes.data() + used, 8);
      if (!v) return 0;
      if (out->size() == kMaxArgs) return -E2BIG;
      out->push_back(v);
    }
  }
}

// The lower end of the mapping holding `addr` (the stack), or 0.
uint64_t MappingStart(pid_t tid, uint64_t addr) {
  std::ifstream maps("/proc/" + std::to_string(tid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &lo, &hi) == 2 && lo <= addr && addr < hi) {
      return lo;
    }
  }
  return 0;
}

}  // namespace

// --- exec -----------------------------------------------------------------------------------

Decision MountHandler::Exec(Thread& t, SyscallRegs& call) {
  if (call.notified) return Decision::Pass();  // never: exec always stops (NeedsStop)
  const bool at = call.nr() == SYS_execveat;
  const int dirfd = at ? static_cast<int>(call.arg(0)) : AT_FDCWD;
  const int path_arg = at ? 1 : 0;
  const uint64_t argv_addr = call.arg(path_arg + 1);
  const uint64_t envp_addr = call.arg(path_arg + 2);
  const int flags = at ? static_cast<int>(call.arg(4)) : 0;
  if (auto it = exec_fds_.find(t.tid); it != exec_fds_.end()) {
    const ExecFd passed = it->second;
    exec_fds_.erase(it);
    if (at && dirfd == passed.fd && flags == AT_EMPTY_PATH) {
      // The exec of a set-id copy by descriptor: at its exit, the descriptor is closed and the
      // program's own registers put back if it failed (a successful one closed it,
      // close-on-exec).
      Pending p;
      p.kind = Pending::Kind::kExec;
      p.original = passed.original;
      p.old_fd = passed.fd;
      pending_[t.tid] = std::move(p);
      return Decision::ObserveExit();
    }
  }
  // Malformed calls fail the same way whatever the path: the kernel's to refuse.
  if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) return Decision::Pass();
  std::string path;
  if (ReadString(*t.proc, call.arg(path_arg), PATH_MAX, &path) != 0) return Decision::Pass();
  if (path.empty() && !(flags & AT_EMPTY_PATH)) return Decision::Pass();
  const bool empty_ok = flags & AT_EMPTY_PATH;
  Target target;
  if (int err = Resolve(t, dirfd, path, empty_ok, &target)) return Decision::Emulate(err);
  const Target first = target;

  // The program's name for its interpreter (bprm->filename), and whether the interpreter can
  // open it after the exec (not through a close-on-exec descriptor).
  std::string filename = path;
  bool name_usable = true;
  if (dirfd != AT_FDCWD && (path.empty() || path[0] != '/')) {
    filename = "/dev/fd/" + std::to_string(dirfd) + (path.empty() ? "" : "/" + path);
    name_usable = !CloseOnExec(t.tid, dirfd);
  }

  const schema::Cred cred = CredOf(t);
  // argv for the program finally run: `front` followed by the tracee's own from `skip` on.
  std::vector<std::string> front;
  size_t skip = 0;
  bool monitor_runs_it = false;       // a stored program, or an interpreter found differently
  std::vector<HostRef> host_scripts;  // host scripts passed over: their checks are ours then
  HostRef host;                       // the current program, when on the host
  host.dirfd = dirfd;
  host.path = path;
  host.nofollow = flags & AT_SYMLINK_NOFOLLOW;
  std::string bytes;  // a stored program to run: its contents
  bool stored = false;
  std::optional<SetId> setid;  // its owner when it is set-user-ID or set-group-ID

  for (int depth = 0;; ++depth) {
    std::string head;
    stored = target.kind == Target::Kind::kServed || target.kind == Target::Kind::kFile;
    if (!stored) {
      if (target.kind == Target::Kind::kSubstitute) host = HostRef{AT_FDCWD, target.path, false};
      head = HostHead(t.tid, host);
    } else {
      monitor_runs_it = true;
      bytes.clear();
      // Reads the program: its head, and all of it unless it is a script.
      auto read_program = [&](schema::FileSystem& fs, schema::Transaction& txn,
                              const schema::Stat& st) -> Status {
        const uint64_t size = st.attr.size;
        head.resize(static_cast<size_t>(std::min<uint64_t>(size, kHeadSize)));
        auto n = fs.Read(txn, st.ino, 0, head.data(), head.size());
        if (!n.ok()) return n.status();
        head.resize(*n);
        Shebang sb;
        if (ParseShebang(head, &sb)) return Status::Ok();
        if (size > kMaxCopy) return Status::Errno(ENOMEM);
        // Set-group-ID counts only with group execute (without it, it marks mandatory locking).
        const mode_t bits =
            (st.attr.mode & S_ISUID) |
            ((st.attr.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) ? S_ISGID : 0);
        setid.reset();
        if (bits) {
          setid = SetId{st.attr.uid, st.attr.gid, bits, static_cast<mode_t>(st.attr.mode & 0777)};
        }
        bytes.resize(static_cast<size_t>(size));
        n = fs.Read(txn, st.ino, 0, bytes.data(), bytes.size());
        if (!n.ok()) return n.status();
        bytes.resize(*n);
        return Status::Ok();
      };
      bool read = false;
      auto done = [&] {
        read = true;
        return 0L;
      };
      Decision d;
      if (target.kind == Target::Kind::kFile) {
        ServedFile& f = *target.file;
        d = RunOnFile(
            f,
            [&](schema::Transaction& txn) -> Status {
              auto st = f.mfs->fs->FStat(txn, f.id);
              if (!st.ok()) return st.status();
              if (!S_ISREG(st->attr.mode)) return Status::Errno(EACCES);
              AMINO_RETURN_IF_ERROR(f.mfs->fs->FAccess(txn, cred, f.id, X_OK));
              return read_program(*f.mfs->fs, txn, *st);
            },
            done);
      } else {
        const bool nofollow = depth == 0 && (flags & AT_SYMLINK_NOFOLLOW);
        MountFs* ran_on = nullptr;
        std::string escaped;
        PathBody body = [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
          ran_on = &m;
          escaped.clear();
          auto st = m.fs->GetStat(txn, cred, rel, !nofollow);
          if (!st.ok()) {
            // Left the mount: followed below, as the kernel would go on (never a substitute
            // of the call's path argument, which an interpreter is not).
            if (IsEscape(st.status())) {
              escaped = st.status().escaped_path();
              return Status::Ok();
            }
            return st.status();
          }
          if (nofollow && S_ISLNK(st->attr.mode)) return Status::Errno(ELOOP);
          if (target.trailing_slash && !S_ISDIR(st->attr.mode)) return Status::Errno(ENOTDIR);
          if (!S_ISREG(st->attr.mode)) return Status::Errno(EACCES);
          AMINO_RETURN_IF_ERROR(m.fs->Access(txn, cred, rel, X_OK, !nofollow));
          return read_program(*m.fs, txn, *st);
        };
        for (int hops = 0;; ++hops) {
          d = RunOnTarget(t, call, target, path_arg, body, done);
          if (!read || escaped.empty()) break;
          if (hops == mounts::kMaxEscapes) return Decision::Emulate(-ELOOP);
          auto next = resolver_.ContinueOnHost(*ran_on->mount, escaped);
          if (!next.ok()) return Decision::Emulate(-next.status().error());
          target.trailing_slash = next->trailing_slash;
          target.path = next->path;
          if (next->is_host()) {
            target.kind = Target::Kind::kSubstitute;
            break;
          }
          target.mfs = FsFor(next->mount);
          read = false;
        }
        if (read && target.kind == Target::Kind::kSubstitute) {
          --depth;  // the same program, on the host: look at it there
          continue;
        }
      }
      if (!read) return d;  // failed, or parked on a lock
    }

    Shebang sb;
    if (!ParseShebang(head, &sb)) break;  // the program to run (or ENOEXEC, the kernel's)
    if (depth == kMaxInterpreters) {
      return monitor_runs_it ? Decision::Emulate(-ELOOP) : Decision::Pass();
    }
    if (depth == 0 && !name_usable) {
      // The kernel's answer for a script reached through a close-on-exec descriptor.
      return stored ? Decision::Emulate(-ENOENT) : Decision::Pass();
    }
    if (!stored) host_scripts.push_back(host);
    // binfmt_script: argv[0] gives way to the interpreter, its argument and the script's name.
    if (front.empty()) {
      skip = 1;
    } else {
      front.erase(front.begin());
    }
    std::vector<std::string> args = {sb.name};
    if (sb.arg) args.push_back(*sb.arg);
    args.push_back(filename);
    front.insert(front.begin(), args.begin(), args.end());
    filename = sb.name;
    if (int err = Resolve(t, AT_FDCWD, sb.name, false, &target)) return Decision::Emulate(err);
    // An interpreter the kernel would not find where the monitor does (relative to a cwd in a
    // mount, or through a link out of one) is the monitor's to run as well.
    if (target.kind == Target::Kind::kSubstitute) monitor_runs_it = true;
    host = HostRef{AT_FDCWD, sb.name, false};
  }

  if (!monitor_runs_it) {
    // The kernel can do it all once given the program's host path.
    if (first.kind == Target::Kind::kHost) return Decision::Pass();
    front.clear();
    stored = false;
    target = first;
  } else {
    const host::Creds* creds = creds_.Get(t.tid);
    for (const HostRef& ref : host_scripts) {
      if (int err = HostMayExec(t.tid, ref, creds ? *creds : host::Creds())) {
        return Decision::Emulate(err);
      }
    }
  }

  std::vector<uint64_t> argv;
  if (!front.empty()) {
    if (int err = ReadArgv(*t.proc, argv_addr, &argv)) return Decision::Emulate(err);
  }
  Decision restart;
  if (!EnsureRegion(t, call, &restart)) return restart;  // the call comes again

  std::string copy;
  std::string exec_path;
  // A set-id copy is never named to the tracee: it is exec'd through a descriptor of it, given
  // to the tracee once the copy has no name left (execveat with AT_EMPTY_PATH), so nobody can
  // rename, link or open it meanwhile. The tracee's other threads could take that descriptor
  // until the exec ends them, which is worth what a descriptor of the stored file would be: the
  // copy's permission bits are the stored ones.
  std::optional<RemoteSyscalls> rs;
  long exec_fd = -1;
  if (stored) {
    if (int err =
            ProgramCopies::Get().Write(t.tid, BaseName(filename), bytes, setid, cred, &copy)) {
      return Decision::Emulate(err);
    }
    exec_path = copy;
    if (setid && geteuid() == 0) {
      // Opened through the tracee's root, so that the descriptor's mount is one of the
      // tracee's mount namespace (mount_cover.h): the kernel honours set-id bits only on a
      // mount of the caller's own namespace.
      const std::string theirs = "/proc/" + std::to_string(t.proc->tgid) + "/root" + copy;
      host::ScopedFd program(open(theirs.c_str(), O_RDONLY | O_CLOEXEC));
      const int err = errno;
      RemoveProgramCopy(copy);
      copy.clear();
      if (program.get() < 0) return Decision::Emulate(-err);
      rs.emplace(t, call, false, exit_sink_, listener_);
      exec_fd = PassDescriptor(*rs, t, program.get());
      if (exec_fd < 0) {
        rs->ReturnFromCall(exec_fd == -ESRCH ? -ENOMEM : exec_fd);
        return Decision::Restart();
      }
      exec_path.clear();
    }
  } else if (target.kind == Target::Kind::kSubstitute) {
    exec_path = target.path;
  } else {
    exec_path = filename;  // a host interpreter, found by the kernel as by the monitor
  }
  SharedRegion& region = *t.proc->region;
  const uint64_t path_addr = region.Put(t.tid, 0, exec_path + '\0');
  auto fail = [&](int err) {
    if (!copy.empty()) RemoveProgramCopy(copy);
    if (rs) {
      rs->Call(SYS_close, static_cast<uint64_t>(exec_fd));
      rs->ReturnFromCall(-err);
      return Decision::Restart();
    }
    return Decision::Emulate(-err);
  };
  if (!path_addr) return fail(ENAMETOOLONG);

  uint64_t new_argv = argv_addr;
  if (!front.empty()) {
    // The new argument strings, then the pointer array: in the region after the path when
    // they fit, else on the tracee's stack below its red zone (as a signal frame would be; a
    // successful exec discards that memory, a failed one never uses it).
    std::string blob;
    std::vector<size_t> offsets;
    for (const std::string& s : front) {
      offsets.push_back(blob.size());
      blob += s;
      blob += '\0';
    }
    blob.resize((blob.size() + 7) & ~size_t{7});
    const size_t array_at = blob.size();
    const size_t count = front.size() + (argv.size() > skip ? argv.size() - skip : 0);
    blob.resize(blob.size() + 8 * (count + 1));
    auto fill = [&](uint64_t base) {
      char* p = blob.data() + array_at;
      for (size_t off : offsets) {
        const uint64_t v = base + off;
        std::memcpy(p, &v, 8);
        p += 8;
      }
      for (size_t i = skip; i < argv.size(); ++i, p += 8) std::memcpy(p, &argv[i], 8);
      std::memset(p, 0, 8);
    };
    const size_t region_at = (exec_path.size() + 1 + 15) & ~size_t{15};
    if (region_at + blob.size() <= SharedRegion::kSlotSize) {
      const uint64_t base = path_addr + region_at;  // the path is at the slot's start
      fill(base);
      if (!region.Put(t.tid, region_at, blob)) return fail(E2BIG);
      new_argv = base + array_at;
    } else {
      const uint64_t rsp = call.regs.rsp;
      const uint64_t base = (rsp - kRedZone - blob.size()) & ~uint64_t{15};
      const uint64_t low = MappingStart(t.tid, rsp - 1);
      if (!low || base < low) return fail(E2BIG);
      fill(base);
      if (WriteMemory(*t.proc, base, blob.data(), blob.size()) != 0) return fail(E2BIG);
      new_argv = base + array_at;
    }
  }

  if (rs) {
    // The exec runs afresh as execveat(fd, "", ...), a host program; its exit closes the
    // descriptor when it failed (MountHandler::OnExit).
    SyscallRegs with = call;
    with.regs.orig_rax = SYS_execveat;
    with.regs.rdi = static_cast<uint64_t>(exec_fd);
    with.regs.rsi = path_addr;
    with.regs.rdx = new_argv;
    with.regs.r10 = envp_addr;
    with.regs.r8 = AT_EMPTY_PATH;
    exec_fds_[t.tid] = ExecFd{static_cast<int>(exec_fd), call};
    rs->FinishWith(with);
    return Decision::Restart();
  }
  Pending p;
  p.kind = Pending::Kind::kExec;  // at the exit: the copy removed, registers back on failure
  p.original = call;
  p.temp_path = copy;
  pending_[t.tid] = std::move(p);
  if (!monitor_runs_it && at) {
    // Only the program's path was substituted: the call and its flags stay.
    call.regs.rdi = static_cast<uint64_t>(AT_FDCWD);
    call.regs.rsi = path_addr;
    return Decision::ObserveExit();
  }
  call.regs.orig_rax = SYS_execve;
  call.regs.rdi = path_addr;
  call.regs.rsi = new_argv;
  call.regs.rdx = envp_addr;
  return Decision::ObserveExit();
}

// --- mmap -----------------------------------------------------------------------------------

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
  if (call.notified) return Decision::Emulate(-ENODEV);  // never: mmap always stops
  NoteDataAccess(f);                                     // generic_file_mmap() touches atime
  if (shared) return MapShared(t, call, f);

  std::string data;
  bool read = false;
  Decision d = RunOnFile(
      f,
      [&](schema::Transaction& txn) -> Status {
        auto st = f.mfs->fs->FStat(txn, f.id);
        if (!st.ok()) return st.status();
        const uint64_t size = st->attr.size;
        data.clear();
        if (off >= size) return Status::Ok();
        const uint64_t n = std::min<uint64_t>(plen, size - off);
        if (n > kMaxCopy) return Status::Errno(ENOMEM);
        data.resize(static_cast<size_t>(n));
        auto got = f.mfs->fs->Read(txn, f.id, off, data.data(), data.size());
        if (!got.ok()) return got.status();
        data.resize(*got);
        return Status::Ok();
      },
      [&] {
        read = true;
        return 0L;
      });
  if (!read) return d;

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
