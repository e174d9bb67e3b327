#include "monitor/process_table.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "monitor/shared_region.h"

namespace amino::monitor {

Process::~Process() {
  if (mem_fd >= 0) close(mem_fd);
  if (pidfd >= 0) close(pidfd);
}

int ProcessPidFd(Process& p) {
  if (p.pidfd < 0) {
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, p.tgid, 0));
    if (fd < 0) return -errno;
    p.pidfd = fd;
  }
  return p.pidfd;
}

int CopyProcessFd(Process& p, int fd) {
  const int pidfd = ProcessPidFd(p);
  if (pidfd < 0) return pidfd;
  const int copy = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  return copy < 0 ? -errno : copy;
}

Thread* ProcessTable::Find(pid_t tid) {
  auto it = threads_.find(tid);
  return it == threads_.end() ? nullptr : it->second.get();
}

Thread& ProcessTable::AddRoot(pid_t pid) {
  auto t = std::make_unique<Thread>();
  t->tid = pid;
  t->proc = std::make_shared<Process>();
  t->proc->tgid = pid;
  t->proc->fds = std::make_shared<FdTable>();
  t->proc->fs = std::make_shared<FsContext>();
  t->state = Thread::State::kAwaitingStart;
  Thread& ref = *t;
  threads_[pid] = std::move(t);
  return ref;
}

Thread& ProcessTable::AddChild(Thread& parent, pid_t tid, unsigned long flags) {
  std::unique_ptr<Thread>& slot = threads_[tid];
  const bool early = slot && slot->state == Thread::State::kEarlyStop;
  if (!slot) {
    slot = std::make_unique<Thread>();
    slot->tid = tid;
    slot->state = Thread::State::kAwaitingStart;
  }
  // fork copies the parent's memory; CLONE_VM (threads, vfork) shares it.
  slot->memory = (flags & CLONE_VM) ? parent.memory : std::make_shared<AddressSpace>();
  if (flags & CLONE_THREAD) {
    slot->proc = parent.proc;
  } else {
    auto p = std::make_shared<Process>();
    p->tgid = tid;
    p->parent_tgid = parent.proc->tgid;
    p->fds =
        (flags & CLONE_FILES) ? parent.proc->fds : std::make_shared<FdTable>(*parent.proc->fds);
    p->fs = (flags & CLONE_FS) ? parent.proc->fs : std::make_shared<FsContext>(*parent.proc->fs);
    p->region = parent.proc->region;  // fork and CLONE_VM both keep the mapping
    slot->proc = std::move(p);
  }
  if (early) slot->state = Thread::State::kEarlyStop;  // the caller resumes it now
  return *slot;
}

Thread& ProcessTable::AddEarly(pid_t tid) {
  auto t = std::make_unique<Thread>();
  t->tid = tid;
  t->state = Thread::State::kEarlyStop;
  Thread& ref = *t;
  threads_[tid] = std::move(t);
  return ref;
}

Thread& ProcessTable::OnExec(pid_t tid, pid_t former_tid) {
  Thread* execer = Find(former_tid);
  std::shared_ptr<Process> proc = execer ? execer->proc : nullptr;
  std::vector<pid_t> gone;
  for (auto& [id, t] : threads_) {
    if (proc && t->proc == proc && id != former_tid) gone.push_back(id);
  }
  std::unique_ptr<Thread> moved;
  if (execer) {
    moved = std::move(threads_[former_tid]);
    threads_.erase(former_tid);
  }
  for (pid_t id : gone) threads_.erase(id);
  if (!moved) {
    moved = std::make_unique<Thread>();
    moved->proc = std::make_shared<Process>();
    moved->proc->fds = std::make_shared<FdTable>();
    moved->proc->fs = std::make_shared<FsContext>();
  }
  moved->tid = tid;
  moved->state = Thread::State::kRunning;
  moved->memory = std::make_shared<AddressSpace>();  // exec leaves a vfork parent's memory
  Process& p = *moved->proc;
  p.tgid = tid;
  p.fds = std::make_shared<FdTable>(*p.fds);  // exec unshares a table shared by CLONE_FILES
  p.region.reset();
  if (p.mem_fd >= 0) {
    close(p.mem_fd);  // the old address space is gone
    p.mem_fd = -1;
  }
  if (p.pidfd >= 0) {
    close(p.pidfd);  // opened again for the tgid the process has now
    p.pidfd = -1;
  }
  Thread& ref = *moved;
  threads_[tid] = std::move(moved);
  return ref;
}

void ProcessTable::Remove(pid_t tid) { threads_.erase(tid); }

}  // namespace amino::monitor
