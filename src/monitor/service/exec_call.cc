#include "monitor/service/exec_call.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "monitor/pass_descriptor.h"
#include "monitor/service/shebang.h"
#include "monitor/shared_region.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

using schema::Status;

constexpr int kMaxInterpreters = 5;        // the kernel's exec depth before ELOOP
constexpr size_t kMaxArgs = 1 << 21;       // far above what ARG_MAX lets through
constexpr uint64_t kMaxCopy = 1ull << 32;  // the largest file copied for exec
constexpr uint64_t kPage = 4096;

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
  std::string head(kExecHeadSize, '\0');
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

}  // namespace

ExecCall::ExecCall(MountHandler& handler, Thread& thread, SyscallRegs& regs)
    : h(handler),
      t(thread),
      call(regs),
      at(regs.nr() == SYS_execveat),
      dirfd(at ? static_cast<int>(regs.arg(0)) : AT_FDCWD),
      path_arg(at ? 1 : 0),
      argv_addr(regs.arg(path_arg + 1)),
      envp_addr(regs.arg(path_arg + 2)),
      flags(at ? static_cast<int>(regs.arg(4)) : 0) {}

Decision ExecCall::Run() {
  if (call.notified) return Decision::Pass();  // never: exec always stops (NeedsStop)
  if (std::optional<Decision> d = ResumePassed()) return *d;
  // Malformed calls fail the same way whatever the path: the kernel's to refuse.
  if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) return Decision::Pass();
  if (ReadString(*t.proc, call.arg(path_arg), PATH_MAX, &path) != 0) return Decision::Pass();
  if (path.empty() && !(flags & AT_EMPTY_PATH)) return Decision::Pass();
  if (int err =
          h.Resolve(t, dirfd, path, flags & AT_EMPTY_PATH,
                    flags & AT_SYMLINK_NOFOLLOW ? LastName::kLookUp : LastName::kFollow, &target)) {
    return Decision::Emulate(err);
  }
  first = target;
  filename = path;
  if (dirfd != AT_FDCWD && (path.empty() || path[0] != '/')) {
    filename = "/dev/fd/" + std::to_string(dirfd) + (path.empty() ? "" : "/" + path);
    name_usable = !CloseOnExec(t.tid, dirfd);
  }
  cred = h.CredOf(t);
  host = HostRef{dirfd, path, (flags & AT_SYMLINK_NOFOLLOW) != 0};
  for (auto step : {&ExecCall::FindProgram, &ExecCall::CheckHostScripts, &ExecCall::Materialize,
                    &ExecCall::PlaceArguments}) {
    if (std::optional<Decision> d = (this->*step)()) return *d;
  }
  return Rewrite();
}

std::optional<Decision> ExecCall::ResumePassed() {
  auto it = h.exec_fds_.find(t.tid);
  if (it == h.exec_fds_.end()) return std::nullopt;
  const MountHandler::ExecFd passed = it->second;
  h.exec_fds_.erase(it);
  if (!at || dirfd != passed.fd || flags != AT_EMPTY_PATH) return std::nullopt;
  // The exec of a set-id copy by descriptor: at its exit, the descriptor is closed and the
  // program's own registers put back if it failed (a successful one closed it, close-on-exec).
  MountHandler::Pending p;
  p.kind = MountHandler::Pending::Kind::kExec;
  p.original = passed.original;
  p.old_fd = passed.fd;
  h.pending_[t.tid] = std::move(p);
  return Decision::ObserveExit();
}

std::optional<Decision> ExecCall::FindProgram() {
  for (int depth = 0;; ++depth) {
    head.clear();
    stored = target.kind == Target::Kind::kServed || target.kind == Target::Kind::kFile;
    if (!stored) {
      if (target.kind == Target::Kind::kSubstitute) host = HostRef{AT_FDCWD, target.path, false};
      head = HostHead(t.tid, host);
    } else {
      monitor_runs_it = true;
      if (std::optional<Decision> d = ReadStored(depth)) return d;
      if (target.kind == Target::Kind::kSubstitute) {
        --depth;  // the same program, on the host: look at it there
        continue;
      }
    }

    Shebang sb;
    if (!ParseShebang(head, &sb)) return std::nullopt;  // the program (or ENOEXEC, the kernel's)
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
    if (int err = h.Resolve(t, AT_FDCWD, sb.name, false, LastName::kFollow, &target))
      return Decision::Emulate(err);
    // An interpreter the kernel would not find where the monitor does (relative to a cwd in a
    // mount, or through a link out of one) is the monitor's to run as well.
    if (target.kind == Target::Kind::kSubstitute) monitor_runs_it = true;
    host = HostRef{AT_FDCWD, sb.name, false};
  }
}

// Long by design: the body that reads the program is shared by the descriptor and the path
// forms, and the loop over paths that leave the mount reuses it.
std::optional<Decision> ExecCall::ReadStored(int depth) {
  bytes.clear();
  auto read_program = [&](schema::FileSystem& fs, schema::Transaction& txn,
                          const schema::Stat& st) -> Status {
    const uint64_t size = st.attr.size;
    head.resize(static_cast<size_t>(std::min<uint64_t>(size, kExecHeadSize)));
    auto n = fs.Read(txn, st.ino, 0, head.data(), head.size());
    if (!n.ok()) return n.status();
    head.resize(*n);
    Shebang sb;
    if (ParseShebang(head, &sb)) return Status::Ok();
    if (size > kMaxCopy) return Status::Errno(ENOMEM);
    // Set-group-ID counts only with group execute (without it, it marks mandatory locking).
    const mode_t bits = (st.attr.mode & S_ISUID) |
                        ((st.attr.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) ? S_ISGID : 0);
    setid.reset();
    if (bits)
      setid = SetId{st.attr.uid, st.attr.gid, bits, static_cast<mode_t>(st.attr.mode & 0777)};
    bytes.resize(static_cast<size_t>(size));
    n = fs.Read(txn, st.ino, 0, bytes.data(), bytes.size());
    if (!n.ok()) return n.status();
    bytes.resize(*n);
    return Status::Ok();
  };
  // Whether the caller may also read what it runs: a copy of a program it may only run is
  // one it cannot read either (as the kernel marks such a process undumpable natively).
  auto NoteReadable = [&](const Status& may_read) -> Status {
    readable = may_read.ok();
    return may_read.ok() || may_read.error() == EACCES ? Status::Ok() : may_read;
  };
  bool read = false;
  auto done = [&] {
    read = true;
    return 0L;
  };
  Decision d;
  if (target.kind == Target::Kind::kFile) {
    ServedFile& f = *target.file;
    d = h.RunOnFile(
        f,
        [&](schema::Transaction& txn) -> Status {
          auto st = f.mfs->fs->FStat(txn, f.id);
          if (!st.ok()) return st.status();
          if (!S_ISREG(st->attr.mode)) return Status::Errno(EACCES);
          AMINO_RETURN_IF_ERROR(f.mfs->fs->FAccess(txn, cred, f.id, X_OK));
          AMINO_RETURN_IF_ERROR(NoteReadable(f.mfs->fs->FAccess(txn, cred, f.id, R_OK)));
          return read_program(*f.mfs->fs, txn, *st);
        },
        done);
    if (!read) return d;  // failed, or parked on a lock
    return std::nullopt;
  }
  const bool nofollow = depth == 0 && (flags & AT_SYMLINK_NOFOLLOW);
  MountFs* ran_on = nullptr;
  std::string escaped;
  MountHandler::PathBody body = [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
    ran_on = &m;
    escaped.clear();
    auto st = m.fs->GetStat(txn, cred, rel, !nofollow);
    if (!st.ok()) {
      // Left the mount: followed below, as the kernel would go on (never a substitute of the
      // call's path argument, which an interpreter is not).
      if (st.status().is_escape()) {
        escaped = st.status().escaped_path();
        return Status::Ok();
      }
      return st.status();
    }
    if (nofollow && S_ISLNK(st->attr.mode)) return Status::Errno(ELOOP);
    if (target.trailing_slash && !S_ISDIR(st->attr.mode)) return Status::Errno(ENOTDIR);
    if (!S_ISREG(st->attr.mode)) return Status::Errno(EACCES);
    AMINO_RETURN_IF_ERROR(m.fs->Access(txn, cred, rel, X_OK, !nofollow));
    AMINO_RETURN_IF_ERROR(NoteReadable(m.fs->Access(txn, cred, rel, R_OK, !nofollow)));
    return read_program(*m.fs, txn, *st);
  };
  for (int hops = 0;; ++hops) {
    d = h.RunOnTarget(t, call, target, path_arg, body, done);
    if (!read || escaped.empty()) break;
    if (hops == mounts::kMaxEscapes) return Decision::Emulate(-ELOOP);
    auto next = h.resolver_.ContinueOnHost(*ran_on->mount, h.EscapeFrom(target, escaped));
    if (!next.ok()) return Decision::Emulate(-next.status().error());
    target.trailing_slash = next->trailing_slash;
    target.path = next->path;
    if (next->is_host()) {
      target.kind = Target::Kind::kSubstitute;
      break;
    }
    target.mfs = h.FsFor(next->mount);
    read = false;
  }
  if (!read) return d;  // failed, or parked on a lock
  return std::nullopt;
}

std::optional<Decision> ExecCall::CheckHostScripts() {
  if (!monitor_runs_it) {
    // The kernel can do it all once given the program's host path.
    if (first.kind == Target::Kind::kHost) return Decision::Pass();
    front.clear();
    stored = false;
    target = first;
    return std::nullopt;
  }
  const host::Creds creds = h.HostCredsOf(t);
  for (const HostRef& ref : host_scripts) {
    if (int err = HostMayExec(t.tid, ref, creds)) {
      return Decision::Emulate(err);
    }
  }
  return std::nullopt;
}

std::optional<Decision> ExecCall::Materialize() {
  if (!front.empty()) {
    if (int err = ReadArgv(*t.proc, argv_addr, &argv)) return Decision::Emulate(err);
  }
  Decision restart;
  if (!h.EnsureRegion(t, call, &restart)) return restart;  // the call comes again

  // A set-id copy is never named to the tracee: it is exec'd through a descriptor of it, given
  // to the tracee once the copy has no name left (execveat with AT_EMPTY_PATH), so nobody can
  // rename, link or open it meanwhile. The tracee's other threads could take that descriptor
  // until the exec ends them, which is worth what a descriptor of the stored file would be: the
  // copy's permission bits are the stored ones.
  if (stored) {
    if (int err = ProgramCopies::Get().Write(t.tid, BaseName(filename), bytes, setid, cred,
                                             readable, &copy)) {
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
      rs.emplace(t, call, false, h.exit_sink_, h.listener_);
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
  path_addr = t.proc->region->Put(t.tid, 0, exec_path + '\0');
  if (!path_addr) return Fail(ENAMETOOLONG);
  return std::nullopt;
}

Decision ExecCall::Fail(int err) {
  if (!copy.empty()) RemoveProgramCopy(copy);
  if (rs) {
    rs->Call(SYS_close, static_cast<uint64_t>(exec_fd));
    rs->ReturnFromCall(-err);
    return Decision::Restart();
  }
  return Decision::Emulate(-err);
}

std::optional<Decision> ExecCall::PlaceArguments() {
  new_argv = argv_addr;
  if (front.empty()) return std::nullopt;
  // The new argument strings, then the pointer array: in the region after the path when they
  // fit, else on the tracee's stack below its red zone (as a signal frame would be; a
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
  SharedRegion& region = *t.proc->region;
  const size_t region_at = (exec_path.size() + 1 + 15) & ~size_t{15};
  if (region_at + blob.size() <= SharedRegion::kSlotSize) {
    const uint64_t base = path_addr + region_at;  // the path is at the slot's start
    fill(base);
    if (!region.Put(t.tid, region_at, blob)) return Fail(E2BIG);
    new_argv = base + array_at;
    return std::nullopt;
  }
  const uint64_t rsp = call.regs.rsp;
  const uint64_t base = (rsp - kRedZone - blob.size()) & ~uint64_t{15};
  const uint64_t low = MappingStart(t.tid, rsp - 1);
  if (!low || base < low) return Fail(E2BIG);
  fill(base);
  if (WriteMemory(*t.proc, base, blob.data(), blob.size()) != 0) return Fail(E2BIG);
  new_argv = base + array_at;
  return std::nullopt;
}

Decision ExecCall::Rewrite() {
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
    h.exec_fds_[t.tid] = MountHandler::ExecFd{static_cast<int>(exec_fd), call};
    rs->FinishWith(with);
    return Decision::Restart();
  }
  MountHandler::Pending p;
  p.kind = MountHandler::Pending::Kind::kExec;  // at the exit: the copy removed, registers back
  p.original = call;
  p.temp_path = copy;
  h.pending_[t.tid] = std::move(p);
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

}  // namespace amino::monitor::service
