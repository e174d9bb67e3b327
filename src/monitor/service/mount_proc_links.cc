// Links in /proc of traced processes (a served descriptor's /proc/PID/fd/N, the cwd link of a
// process whose cwd is in a mount, /proc/PID/root): what they stand for, as the kernel would
// follow them.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <string>

#include "monitor/calls/validate.h"
#include "monitor/mounts/proc_link.h"
#include "monitor/service/mount_handler.h"
#include "monitor/shared_region.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

Thread* MountHandler::ProcLinkOwner(Thread& t, pid_t pid) {
  if (pid == 0) return &t;
  Thread* owner = table_ ? table_->Find(pid) : nullptr;
  return owner && owner->proc ? owner : nullptr;
}

int MountHandler::ThroughProcLink(Thread& t, const std::string& path, std::string* out) {
  using Kind = mounts::ProcLinkPath::Kind;
  const mounts::ProcLinkPath link = mounts::ParseProcLink(path);
  if (link.kind == Kind::kNone || link.rest.empty()) return 0;  // a last link: the caller's
  Thread* owner = ProcLinkOwner(t, link.pid);
  if (!owner) return 0;  // not a traced process: the kernel's business
  std::string base;
  switch (link.kind) {
    case Kind::kCwd: {
      if (!owner->proc->fs->cwd.is_virtual()) return 0;  // the kernel has the cwd itself
      const std::string cwd = CwdPath(*owner);
      if (cwd.empty()) return -ENOENT;  // removed: nothing is below it
      base = CwdMount(*owner).mount->HostPathOf(cwd);
      break;
    }
    case Kind::kRoot:
      base = host::ReadLink("/proc/" + std::to_string(owner->tid) + "/root");
      if (base == "/") base.clear();
      break;
    case Kind::kFd: {
      auto it = owner->proc->fds->files.find(link.fd);
      if (it == owner->proc->fds->files.end()) return 0;  // the kernel: ENOENT
      if (auto f = std::dynamic_pointer_cast<ServedFile>(it->second)) {
        if (!f->is_dir()) return -ENOTDIR;
        const std::string dir = DirPath(*f);
        if (dir.empty()) return -ENOENT;
        base = f->mfs->mount->HostPathOf(dir);
      } else {
        base = host::ReadLink("/proc/" + std::to_string(owner->tid) + "/fd/" +
                              std::to_string(link.fd));
      }
      // Not a directory by name (a pipe, a removed directory): the kernel's answer stands.
      if (base.empty() || base[0] != '/' || base.ends_with(" (deleted)")) return 0;
      break;
    }
    case Kind::kNone:
      return 0;
  }
  *out = base + link.rest;
  return 0;
}

std::optional<std::string> MountHandler::ServedFdLink(Thread& t, const std::string& path) {
  if (std::shared_ptr<ServedFile> f = ServedFdFile(t, path)) {
    std::optional<std::string> now = PathOfId(*f->mfs, f->id);
    if (!now) return f->mfs->mount->HostPathOf(f->opened_name.empty() ? "/" : f->opened_name);
    if (!now->empty()) return f->mfs->mount->HostPathOf(*now);
    return f->mfs->mount->HostPathOf(f->opened_name.empty() ? "/" : f->opened_name) + " (deleted)";
  }
  Thread* owner = CwdLinkOwner(t, path);
  if (!owner) return std::nullopt;
  const mounts::Mount& mount = *CwdMount(*owner).mount;
  const std::string cwd = CwdPath(*owner);
  if (!cwd.empty()) return mount.HostPathOf(cwd);
  const std::string& last = owner->proc->fs->cwd.last_path();
  return mount.HostPathOf(last.empty() ? "/" : last) + " (deleted)";
}

void MountHandler::FollowServedFdLink(Thread& t, const std::string& path, bool follows,
                                      Target* target) {
  if (!follows || target->kind != Target::Kind::kHost) return;
  std::shared_ptr<ServedFile> f = ServedFdFile(t, path);
  if (!f) {
    // /proc/PID/cwd of a process whose cwd is in a mount: that directory.
    Thread* owner = CwdLinkOwner(t, path);
    if (!owner) return;
    f = CwdDir(*owner);
  }
  // By its name when it has one (every call can take a path); a removed file, or a symbolic
  // link (O_PATH | O_NOFOLLOW: the link is the file, not its target), by itself.
  std::optional<std::string> now =
      S_ISLNK(f->type) ? std::optional<std::string>() : PathOfId(*f->mfs, f->id);
  *target = Target();
  target->mfs = f->mfs;
  if (now && !now->empty()) {
    target->kind = Target::Kind::kServed;
    target->path = std::move(*now);
  } else {
    target->kind = Target::Kind::kFile;
    target->file = std::move(f);
  }
}

Thread* MountHandler::CwdLinkOwner(Thread& t, const std::string& path) {
  const mounts::ProcLinkPath link = mounts::ParseProcLink(path);
  if (link.kind != mounts::ProcLinkPath::Kind::kCwd || !link.rest.empty()) return nullptr;
  Thread* owner = ProcLinkOwner(t, link.pid);
  return owner && owner->proc->fs->cwd.is_virtual() ? owner : nullptr;
}

std::shared_ptr<ServedFile> MountHandler::ServedFdFile(Thread& t, const std::string& path) {
  const mounts::ProcLinkPath link = mounts::ParseProcLink(path);
  if (link.kind != mounts::ProcLinkPath::Kind::kFd || !link.rest.empty()) return nullptr;
  Thread* owner = ProcLinkOwner(t, link.pid);
  if (!owner) return nullptr;
  auto it = owner->proc->fds->files.find(link.fd);
  if (it == owner->proc->fds->files.end()) return nullptr;
  return std::dynamic_pointer_cast<ServedFile>(it->second);
}

}  // namespace amino::monitor::service
