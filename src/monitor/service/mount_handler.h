// The handler of `amino run` with Amino mounts (DESIGN.md §2–§4): every file call that names a
// path or a descriptor inside a mount is serviced from the mount's schema, each in its own
// transaction; every other call goes to the kernel untouched, or with a substitute path when
// its argument was relative to a directory inside a mount (or a link there led out of it).
//
// The work is split by kind of call (docs/impl.md walks one call through them):
//   mount_txn.cc          entry of every call (OnEntry), plain or inside the caller's
//                         application transaction; libamino's pseudo-calls (TxnCall)
//   mount_handler.cc      dispatch by call (Serve); what exits, task exits and execs change
//   mount_open.cc         opens: the file opened in the schema, the tracee given a shadow
//   mount_descriptors.cc  the shadows' life cycle (dup, close, fcntl, passing in SCM_RIGHTS)
//   mount_resolve.cc      path arguments to targets; substitute paths; the per-call transaction
//   mount_proc_links.cc   /proc links of traced processes (fd, cwd, root) as the kernel follows
//   mount_cwd.cc          the cwd: chdir, fchdir, getcwd (virtual inside a mount; its state and
//                         rules are monitor/working_dir.h)
//   mount_paths.cc        calls on paths: arguments in the kernel's order, targets, rename and
//                         link across file systems; path_call.h serves them in the schema
//   mount_data.cc         calls on served descriptors; fd_call.h serves them by kind
//   exec_call.h           exec of programs stored in a mount (program_copies.h, shebang.h)
//   mount_mmap.cc         mmap of served files (shared ones through shared_mappings.h)
//   mount_nodes.cc        opens of stored FIFOs and device nodes (on host nodes, host_nodes.h)
//   mount_sockets.cc      AF_UNIX sockets bound at paths in a mount (bind, connect, their names)
//   mount_foreign.cc      calls of another ABI (int $0x80, x32) that name a mount: refused
//   mount_kernel_mounts.cc  the kernel's mount calls (mount, umount2, open_tree...) on mount
//                         paths: refused
// Beside the class: mount_fs.cc runs one call in its own transaction on a mount (RunCall),
// served_file.cc is a descriptor's open file, user_txn.cc the application transactions.
#pragma once

#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "monitor/call_handler.h"
#include "monitor/descriptor_calls.h"
#include "monitor/host/host_context.h"
#include "monitor/host/host_handler.h"
#include "monitor/host_dir_guard.h"
#include "monitor/mounts/host_links.h"
#include "monitor/mounts/mount_table.h"
#include "monitor/mounts/path_resolver.h"
#include "monitor/path_call_decoder.h"
#include "monitor/service/host_nodes.h"
#include "monitor/service/mount_dirs.h"
#include "monitor/service/mount_fs.h"
#include "monitor/service/placeholder_pool.h"
#include "monitor/service/served_file.h"
#include "monitor/service/shared_mappings.h"
#include "monitor/service/user_txn.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"
#include "monitor/txn_control.h"
#include "schema/cred.h"

namespace amino::monitor::service {

// Where one path argument of a call leads.
struct Target {
  enum class Kind {
    kHost,        // the kernel, with the argument as the tracee wrote it
    kSubstitute,  // the kernel, with `path` (absolute) in place of the argument
    kServed,      // the schema of `mfs`, at mount-relative `path`
    kFile,        // the served descriptor `file` itself (AT_EMPTY_PATH, futimens)
  };
  Kind kind = Kind::kHost;
  std::string path;
  MountFs* mfs = nullptr;
  std::shared_ptr<ServedFile> file;
  bool trailing_slash = false;
  // How Resolve was asked: whether the call follows a last link, and whether host links into
  // mounts are looked for (not after a chroot), for the continuations of an escape.
  bool follow_last = false;
  bool host_links = false;
  // The process's root as the monitor names it ("/" unless it called chroot): where an
  // absolute link target met in a mount continues (EscapeFrom).
  std::string root = "/";
};

// How a call treats the last name of its path, for a host link there (host_links.h).
enum class LastName {
  kFollow,  // follows a link there (stat, open, chdir, connect...)
  kLookUp,  // does not, unless a slash follows the name (lstat, readlink, lchown...)
  kNever,   // never, slash or not: the call makes or removes the name (mkdir, unlink, rmdir,
            // rename, mknod, the new name of symlink and link, bind)
};

// Whether the call may create, change or remove the file its path names (path_pin.cc): an
// open for writing or creation, mkdir, rename, unlink, chmod, utimes, setxattr and the like.
bool MayChangeNamedFile(const SyscallRegs& call);

// How transactions end (amino run --durability, --lock-timeout).
struct ServiceOptions {
  bool sync = false;                // every top-level commit is flushed (sync)
  bool flush_user_commits = false;  // application commits are flushed (sync, commit)
  bool external = false;            // external synchrony (external_sync.h)
  std::chrono::milliseconds lock_timeout{10000};
};

class MountHandler : public CallHandler, public TxnControl {
 public:
  // `mounts`: the prepared table (mount_prepare.h).
  static schema::Result<std::unique_ptr<MountHandler>> Create(mounts::MountTable table,
                                                              const ServiceOptions& options);
  ~MountHandler() override;
  // Makes the host directory under each mount point read-only for the run, where the mount
  // cover cannot be made (host_dir_guard.h).
  void GuardHostDirs();

  Decision OnEntry(Thread& t, SyscallRegs& call) override;
  void OnExit(Thread& t, SyscallRegs& call) override;
  void OnExec(Thread& t) override;
  void OnTaskExit(Thread& t) override;
  void OnNewTask(Thread& parent, Thread& child, bool thread) override;
  std::vector<long> ExtraTrapped() const override;
  std::vector<std::string> CoveredPoints() const override;
  bool NeedsStop(long nr) const override;
  std::vector<TrapCondition> TrapOnlyWhen(long nr) const override;
  bool Emulates() const override { return true; }
  uint64_t Releases() const override;
  long OnForeignCall(Thread& t, const ForeignCall& call) override;  // mount_foreign.cc
  void SetProcessTable(ProcessTable* table) override;
  void SetListener(ptrace_ext::NotifyListener* listener) override;

  // Transactions begun and ended by profiles (txn_control.h; mount_txn.cc).
  long BeginFor(Thread& t) override;
  long End(uint64_t id, bool commit) override;
  bool Within(pid_t tid, uint64_t id) const override { return txns_.Within(tid, id); }
  void Join(pid_t tid, uint64_t id) override { txns_.Join(tid, id); }
  void Leave(pid_t tid, uint64_t id) override { txns_.Leave(tid, id); }
  bool ServedPath(Thread& t, int fd, std::string* path, bool* writing) const override;
  void SetDoomedSink(std::function<void(uint64_t)> sink) override {
    txns_.SetDoomedSink(std::move(sink));
  }
  uint64_t CurrentOf(pid_t tid) const override { return static_cast<uint64_t>(txns_.Current(tid)); }
  std::string AbsolutePath(Thread& t, int dirfd, const std::string& path) override;

  // The body of a serviced path call: runs in the call's transaction on `rel` in `m`.
  using PathBody =
      std::function<schema::Status(MountFs& m, schema::Transaction& txn, const std::string& rel)>;
  // The body of a call on a served file, in the call's transaction.
  using FileBody = std::function<schema::Status(schema::Transaction& txn)>;
  // After a successful commit: copies results to the tracee; returns the call's result.
  using Done = std::function<long()>;

 private:
  friend class ServedPathCall;  // serves the path calls (path_call.h)
  friend class ExecCall;        // serves exec (exec_call.h)

  MountHandler(mounts::MountTable table, std::vector<std::unique_ptr<MountFs>> mounts,
               const ServiceOptions& options);

  // --- mount_txn.cc
  // libamino's pseudo-calls (include/amino/amino.h).
  Decision TxnCall(Thread& t, SyscallRegs& call);
  // A serviced call lost a lock conflict: it waits (parked), or fails when its application
  // transaction had to be aborted.
  Decision Conflict();
  // Closes that waited for a transaction to end.
  void CloseDeferred();
  // Flushes every mount's log before output leaves the tree; false (reported) on failure.
  bool FlushForOutput();
  // Settles everything at the end of the trace (and at destruction).
  void Finish() override;
  void PrintStats(FILE* out) const override;

  // What a thread's rewritten or observed call needs at its exit (the descriptor calls' own:
  // descriptors_).
  struct Pending {
    enum class Kind {
      kNone,
      kRestore,       // only the registers to put back (a substitute path)
      kPlaceholder,   // memfd_create in place of an open: the result becomes a shadow
      kChdir,         // a host chdir or fchdir: the kernel's cwd changed
      kVirtualChdir,  // chdir into a mount: the kernel went to the mount point; cwd becomes virtual
      kExec,          // an exec of a materialised program: the copy is removed after
      kSentOne,       // sendmmsg of one message made a sendmsg: its length goes to the caller's
                      // header, and the result is 1
    } kind = Kind::kNone;
    SyscallRegs original;
    std::shared_ptr<OpenFile> file;
    int old_fd = -1;
    VirtualDir cwd;  // kVirtualChdir: the cwd it makes
    std::string temp_path;
  };
  // Threads given a descriptor of a set-id program's copy to exec (exec_call.h): its number,
  // and the registers of the exec call as the program made it.
  struct ExecFd {
    int fd = -1;
    SyscallRegs original;
  };
  std::unordered_map<pid_t, ExecFd> exec_fds_;
  // A chdir or fchdir (`p`) succeeded: the thread's cwd is the host one again, or virtual.
  void ChangedCwd(Thread& t, const Pending& p);

  // --- mount_handler.cc
  // OnEntry for a file call, inside the caller's application transaction.
  Decision Serve(Thread& t, SyscallRegs& call);
  Decision ServePlain(Thread& t, SyscallRegs& call);
  Decision ServeInTxn(Thread& t, SyscallRegs& call);
  Decision MmapCall(Thread& t, SyscallRegs& call);
  Decision SyncCall(Thread& t, SyscallRegs& call);
  Decision MadviseCall(Thread& t, SyscallRegs& call);
  // --- mount_open.cc
  Decision OpenAt2(Thread& t, SyscallRegs& call);
  Decision Open(Thread& t, SyscallRegs& call, int dirfd, uint64_t path_addr, int flags, mode_t mode,
                int path_arg);
  Decision OpenServed(Thread& t, SyscallRegs& call, Target& target, int flags, mode_t mode,
                      int path_arg);
  // An open of "." in a removed working directory (a kFile target): the dead directory again.
  Decision OpenDeadDir(Thread& t, SyscallRegs& call, ServedFile& dir, int flags);
  // Gives the tracee a placeholder descriptor for `file` as the result of its open call.
  Decision InstallShadow(Thread& t, SyscallRegs& call, std::shared_ptr<ServedFile> file);
  // --- mount_descriptors.cc
  // dup*, close, close_range, fd passing (descriptor_calls.h), and sendmsg to a socket path.
  Decision Descriptors(Thread& t, SyscallRegs& call);
  // A descriptor of `f` in t's process goes (close, close_range, dup2 onto it): the process's
  // record locks on a served file go, and what it stored through shared mappings is written back.
  void Closing(Thread& t, OpenFile& f);
  Decision Fcntl(Thread& t, SyscallRegs& call, ServedFile& f);

  // --- mount_resolve.cc
  // Where `path` (read from the tracee) relative to `dirfd` leads. 0 or -errno.
  // `last`: how the call treats the path's last name (a host link into a mount there leads
  // into the mount when the call follows it, host_links.h).
  int Resolve(Thread& t, int dirfd, const std::string& path, bool empty_ok, LastName last,
              Target* out);
  // "x/../y": the lexical walk holds only if the kernel goes through x as the resolver assumed
  // (r.check_path). 0 or -errno; *kernel_dir set to where the kernel's walk really is when it
  // differs.
  int WhereDotDotLeads(Thread& t, const mounts::ClassifiedPath& r, std::string* kernel_dir);
  // Where the walk of a path starts: a host directory ("/" for an absolute path) or a
  // mount-relative directory of `mount`, and what is walked from it.
  struct WalkBase {
    std::string path;
    std::string host_dir;
    std::string virtual_dir;
    const mounts::Mount* mount = nullptr;
  };
  // The base of `given`'s walk from `dirfd` (Resolve's first half): nullopt to walk from
  // *base, else Resolve's answer (0 with *out set, or the kernel's to give; or -errno).
  std::optional<int> WalkBaseOf(Thread& t, int dirfd, const std::string& given, bool empty_ok,
                                Target* out, WalkBase* base);
  // The thread's virtual cwd's directory as a description (not counted open).
  std::shared_ptr<ServedFile> CwdDir(Thread& t);
  // openat2's RESOLVE_* restrictions on `path` (from `dirfd`), which leads into a mount as
  // `target`. 0 or -errno.
  int CheckResolveRules(Thread& t, int dirfd, const std::string& path, uint64_t resolve,
                        const Target& target);
  // What readlink of `path` gives when it names a served descriptor's link in /proc
  // (/proc/PID/fd/N, /proc/self/fd/N, /dev/fd/N) or the cwd link of a process whose cwd is in
  // a mount (/proc/PID/cwd): the host-side name. nullopt otherwise.
  std::optional<std::string> ServedFdLink(Thread& t, const std::string& path);
  // The served file whose descriptor's link in /proc `path` is exactly, or nullptr.
  std::shared_ptr<ServedFile> ServedFdFile(Thread& t, const std::string& path);
  // The traced thread whose cwd link `path` is exactly, when that cwd is in a mount.
  Thread* CwdLinkOwner(Thread& t, const std::string& path);
  // A call that follows `path`'s last link, when `path` is one of those links, acts on that
  // file or directory (not on the placeholder or host directory the kernel would reach):
  // `target` is changed into it. `follows`: the call follows a last link.
  void FollowServedFdLink(Thread& t, const std::string& path, bool follows, Target* target);
  // A path through a /proc link of a traced process followed by more (/proc/self/cwd/x,
  // /proc/PID/root/MP/x, /proc/self/fd/N/x: mounts/proc_link.h) goes where the link stands
  // for: *out is set to that path when it differs from where the kernel would go, else left
  // empty. 0 or -errno (a removed directory, a descriptor of a file).
  int ThroughProcLink(Thread& t, const std::string& path, std::string* out);
  // The thread a /proc path's PID names (0: `t`), when the monitor traces it; else nullptr.
  Thread* ProcLinkOwner(Thread& t, pid_t pid);
  // The open_how of a notified open, openat, creat or openat2 (0, or EFAULT).
  int OpenHowOfCall(Thread& t, const SyscallRegs& call, open_how* how);
  // --- path_pin.cc: for a task whose memory another task shares, the path arguments of a call
  // that may change what they name are read once (TakePaths, into the snapshot ReadString
  // answers from while the call is served); a call then let through to the kernel is given
  // those bytes (PinPaths: through the shared region, or made by the monitor when notified).
  void TakePaths(Thread& t, const SyscallRegs& call, StringSnapshot* snapshot);
  Decision PinPaths(Thread& t, SyscallRegs& call, const StringSnapshot& snapshot);
  // The call goes to the kernel with `host_path` as path argument `arg`.
  // A chdir given a substitute is still seen at its exit, where the kernel's cwd changed.
  Decision Substitute(Thread& t, SyscallRegs& call, int arg, const std::string& host_path);
  // Runs `body` on a served target, following a link or ".." that leaves the mount.
  Decision RunOnTarget(Thread& t, SyscallRegs& call, Target& target, int arg, const PathBody& body,
                       const Done& done);
  // The same, with `on_host` deciding the call once the walk has left for a host path.
  Decision RunOnTargetOr(Target& target, const PathBody& body, const Done& done,
                         const std::function<Decision(const std::string&)>& on_host);
  Decision RunOnFile(ServedFile& f, const FileBody& body, const Done& done);
  Decision Outcome(const CallOutcome& o, const Done& done);
  Decision Chdir(Thread& t, SyscallRegs& call);
  // Makes directory `id` (at `dir` in `m`) the thread's virtual cwd once the call succeeds.
  // `hold`: the directory counted open for the new cwd (CwdHold).
  Decision EnterVirtualDir(Thread& t, SyscallRegs& call, MountFs& m, schema::FileId id,
                           const std::string& dir, const std::string& last_path,
                           std::shared_ptr<ServedFile> hold);
  // The description that a cwd on directory `id` holds, once the call's Reopen committed.
  std::shared_ptr<ServedFile> CwdHold(Thread& t, MountFs& m, schema::FileId id);
  Decision Fchdir(Thread& t, SyscallRegs& call);
  // chdir or fchdir to served directory `f`, which may have been removed.
  Decision ChdirToFile(Thread& t, SyscallRegs& call, ServedFile& f);
  Decision Getcwd(Thread& t, SyscallRegs& call);
  // The mount-relative path of a served directory now ("" when it has no name any more).
  std::string DirPath(ServedFile& f);
  // The thread's virtual cwd's mount-relative path ("" once removed), and its mount.
  std::string CwdPath(Thread& t);
  MountFs& CwdMount(Thread& t);
  // The kernel's cwd by name.
  const std::string& HostCwd(Thread& t);
  // The process's root as the monitor names it: "/" unless it called chroot (changed_root.h).
  std::string RootOf(Thread& t);
  // Where a walk that left a mount with `escaped` (an escape's path) continues: an absolute
  // link target is the process's, from its root.
  std::string EscapeFrom(const Target& target, const std::string& escaped);
  // HostLinks::IntoMount for host path `abs` (a chroot'd process's, `root`, walked from there).
  std::optional<Result<mounts::ClassifiedPath>> LinksIntoMount(const std::string& root,
                                                               const std::string& abs,
                                                               bool follow_last);
  // chroot: to a host directory, or a mount point's, by the kernel (monitor/changed_root.h).
  Decision Chroot(Thread& t, SyscallRegs& call);
  int MountIndex(const MountFs* m) const;
  MountFs* FsFor(const mounts::Mount* m);
  // The mount-relative path of file `id` now ("" when it has no name), by its names; nullopt
  // when they could not be read (a lock of another transaction, a failing database): not an
  // answer to keep.
  std::optional<std::string> PathOfId(MountFs& m, schema::FileId id);

  // --- mount_paths.cc
  Decision PathCall(Thread& t, SyscallRegs& call);
  // A path call on descriptor `fd` itself (AT_EMPTY_PATH, futimens): `null_path` when its path
  // argument (register `arg`) was NULL. `extras`: what the call copied besides its paths.
  Decision PathCallOnDescriptor(Thread& t, SyscallRegs& call, int fd, bool null_path, int arg,
                                const PathExtras& extras);
  // A path that is the /proc link of a served descriptor: readlink names the file, and calls
  // that follow it act on the file (`targets` changed). nullopt: the call goes on.
  std::optional<Decision> ThroughFdLinks(Thread& t, SyscallRegs& call, const SyscallInfo& info,
                                         const std::string& path, int n, Target* targets);
  // Rename and link, once both paths have targets: on the host, in one mount, or across file
  // systems (EXDEV once each path passed the checks `pair_error(i)` makes: an errno, 0, or -1
  // for a lock held by another).
  Decision PathPair(Thread& t, SyscallRegs& call, Target* targets, int* args,
                    const PathExtras& extras, const std::function<int(int)>& pair_error);
  // Serves a path call whose targets are in a mount (path_call.h), with the arguments besides
  // its paths as the decoder read them. `reruns`: how often a rename or link ran again after a
  // path left the mount and came back into it.
  Decision ServePath(Thread& t, SyscallRegs& call, Target* targets, int n, int* path_args,
                     const PathExtras& extras, int reruns = 0);

  // --- mount_data.cc
  Decision ServeFd(Thread& t, SyscallRegs& call, ServedFile& f);
  bool WriteBackMappings(Thread& t, const SyscallRegs& call, ServedFile& f);

  // --- mount_mmap.cc
  Decision Exec(Thread& t, SyscallRegs& call);  // ExecCall (exec_call.h)
  Decision Mmap(Thread& t, SyscallRegs& call, ServedFile& f);
  Decision MapShared(Thread& t, SyscallRegs& call, ServedFile& f);
  Decision MapPrivateInPlaceholder(Thread& t, SyscallRegs& call, ServedFile& f);
  // Bytes [off, off + plen) of `f` (fewer at its end) and its size; a decision when the
  // transaction could not read them (a conflict, an error).
  std::optional<Decision> ReadMapped(ServedFile& f, uint64_t off, uint64_t plen, std::string* data,
                                     uint64_t* size);

  // --- mount_nodes.cc
  // An open (`flags`) that reached stored FIFO or device node `node` of `m`, the access granted
  // by the schema: the kernel opens the host node that stands for it, so the descriptor is the
  // kernel's own (a pipe shared by every opener, the device).
  Decision OpenNode(Thread& t, SyscallRegs& call, MountFs& m, const schema::Stat& node, int flags);
  // A notified open of a FIFO, done by the monitor without blocking, as the kernel would do it
  // for the caller: an open that must wait for the other end is parked and tried again.
  struct FifoWait {
    uint64_t notification = 0;
    std::string path;  // the host node
    int flags = 0;
    host::Creds creds;
    std::shared_ptr<NodeFile> node;  // what the descriptor stands for
    // A blocking reader's end, opened at once (it counts as a reader, as a reader waiting in
    // the kernel does) and handed over once a writer has come.
    host::ScopedFd reader;
  };
  Decision OpenFifoNotified(Thread& t, SyscallRegs& call, std::unique_ptr<FifoWait> w);
  // At the exit of the memfd_create that made `file`'s placeholder `fd` (ptrace stop): the
  // placeholder reopened with the open's access mode and status flags, as /proc shows them.
  void ShowOpenFlags(Thread& t, const SyscallRegs& call, const ServedFile& file, int fd);
  // The monitor's descriptor `fd` of a node installed as the notified call's result, and
  // recorded as `node` in the caller's table.
  Decision ReplyWithNode(Thread& t, const SyscallRegs& call, int fd, int flags,
                         std::shared_ptr<NodeFile> node);
  // fstat, or newfstatat/statx of "" with AT_EMPTY_PATH, of a node's descriptor: the stored
  // node's status (nullopt: not such a call, or the node is gone; the kernel answers).
  std::optional<Decision> NodeStat(Thread& t, SyscallRegs& call);
  // The parked FIFO open of this notified call, tried again (nullopt: it is no such call).
  // Ends the waits whose call no longer waits (a signal ended it, or its thread died).
  std::optional<Decision> ResumeFifoWait(Thread& t, SyscallRegs& call);
  // Whether a writer has had the FIFO open since `fd` (a non-blocking read end) was opened.
  bool WriterCame(int fd);

  // --- mount_kernel_mounts.cc
  // mount, umount2, pivot_root, open_tree, move_mount, fspick, mount_setattr: EINVAL when a
  // path they name is in a mount.
  Decision KernelMountCall(Thread& t, SyscallRegs& call);
  Decision MountOptions(Thread& t, SyscallRegs& call);
  Decision Fsconfig(Thread& t, SyscallRegs& call);
  long MountPathError(Thread& t, int dirfd, const std::string& path);
  // Whether the walk of `path` from `dirfd` starts inside a mount (a relative path from a
  // virtual cwd or a served directory): the monitor then answers for it, errors included.
  bool WalkStartsInMount(Thread& t, int dirfd, const std::string& path);
  // name_to_handle_at: a file in a mount has no kernel handle (EOPNOTSUPP, as a file system
  // without export operations answers); elsewhere the kernel's.
  Decision NameToHandle(Thread& t, SyscallRegs& call);

  // --- mount_sockets.cc
  // bind, connect and sendto of an AF_UNIX socket to a path in a mount: the stored node is the
  // schema's, the live socket the kernel's, bound at a host node (host_nodes.h) that stands for it.
  Decision Bind(Thread& t, SyscallRegs& call);
  Decision Connect(Thread& t, SyscallRegs& call);
  Decision SendTo(Thread& t, SyscallRegs& call);  // a datagram to a path
  // sendmmsg: the messages before the first one to a path in a mount go to the kernel as made
  // (the count cut there); that one alone as sendmsg does it. sendmmsg may send fewer messages
  // than it was given (it says how many), and callers send the rest again.
  Decision SendMmsg(Thread& t, SyscallRegs& call);
  // sendmsg with a path as its destination (msg_name): nullopt when it has none in a mount.
  std::optional<Decision> SendMsgTo(Thread& t, SyscallRegs& call);
  // connect, sendto and sendmsg to `path`: the schema's checks, then the kernel on the host node
  // when a socket bound here is there. `point_at` gives the call a host path in place of its
  // address (the host node, or where a link out of the mount led).
  Decision ToSocketNode(Thread& t, const std::string& path,
                        const std::function<Decision(const std::string&)>& point_at);
  // getsockname, getpeername: a host node's address reads as the path the socket was bound by.
  Decision SocketName(Thread& t, SyscallRegs& call);
  // The call goes to the kernel with a sockaddr_un of `host_path` in place of its address
  // (registers `addr_arg` and `addr_arg` + 1), put back at its exit. With `header` (sendmsg),
  // register `addr_arg` points instead at a copy of the caller's message header whose msg_name
  // is that address; both copies are in the shared region. `one_of_many`: a sendmmsg, made a
  // sendmsg of that message.
  Decision WithSocketAddress(Thread& t, SyscallRegs& call, const std::string& host_path,
                             int addr_arg, const msghdr* header = nullptr,
                             bool one_of_many = false);
  // Host node of each socket bound under this run -> the path it was bound by, as given.
  std::unordered_map<std::string, std::string> socket_names_;
  // Stored socket (mount number, file id) -> its host node.
  std::map<std::pair<int, schema::FileId>, std::string> socket_nodes_;

  // RunCall (mount_fs.h) inside the application transaction of the call being served, if any.
  CallOutcome RunCall(MountFs& m, const std::function<schema::Status(schema::Transaction&)>& body) {
    return service::RunCall(m, caller_txn_, body);
  }
  // Per-call transactions run so far on every mount.
  uint64_t CallsRun() const;

  // Credentials of the calling thread for the schema (file-system ids; `real` for access(2)).
  schema::Cred CredOf(Thread& t, bool real = false);
  // The same, as the host sees them (root's when /proc no longer shows the thread).
  host::Creds HostCredsOf(Thread& t);
  mode_t UmaskOf(Thread& t);
  std::shared_ptr<ServedFile> ServedOf(Thread& t, int fd);

  mounts::MountTable mount_table_;
  mounts::PathResolver resolver_;
  mounts::HostLinks host_links_;  // host symbolic links into mounts
  std::vector<std::unique_ptr<MountFs>> mounts_;
  std::vector<std::unique_ptr<HostDirGuard>> guards_;  // GuardHostDirs
  SharedMappings shared_maps_;
  host::CredCache creds_;
  // The host file system, for calls on host paths that must be substituted while the thread
  // is not at a ptrace stop (a notified call cannot have its registers changed): performed by
  // the monitor, as --emulate=host does (OpenInstead, PerformInstead). It holds no descriptor
  // of the tracees' and sees no other call.
  host::HostHandler host_;
  PlaceholderPool placeholders_;
  DescriptorCalls descriptors_{[this](Thread& t, OpenFile& f) { Closing(t, f); }};
  std::unordered_map<pid_t, Pending> pending_;
  HostNodes nodes_;
  std::unordered_map<pid_t, std::unique_ptr<FifoWait>> fifo_waits_;
  host::ScopedFd probe_read_, probe_write_;  // a pipe WriterCame copies into without consuming
  // Declared after the mounts: transactions end before the file systems close.
  TxnManager txns_;
  MountDirs mount_dirs_;  // directories renames must not move (mount_dirs.h)
  // Renames the kernel made or was let make on host paths (counted at the call, and again at
  // the renaming thread's next call, when it has surely happened): cached host cwds older than
  // the count are read again.
  uint64_t host_renames_ = 0;
  pid_t renamer_ = 0;
  pid_t caller_ = 0;                    // the thread whose call is being served
  std::unordered_set<pid_t> changing_;  // parked calls that would change something
  CallerTxn caller_txn_;                // its application transaction, while one is being served
  bool external_ = false;
  bool flush_failed_ = false;  // reported once
  bool finished_ = false;
};

}  // namespace amino::monitor::service
