// AF_UNIX sockets bound at paths in a mount. The schema stores the socket's name and attributes
// (an S_IFSOCK node, listed, renamed, linked and removed like any file); the live socket is the
// kernel's, bound at a host node in the monitor's private directory (host_nodes.h) that stands
// for the stored node, as FIFOs are:
//   bind     the schema makes the node (the caller's permissions and umask; EADDRINUSE when the
//            name exists), then the monitor binds the caller's socket (a duplicate taken with
//            pidfd_getfd) at the host node, which gets the stored node's owner and mode;
//   connect  the schema walks the path, checks write permission and that a socket is there;
//            the caller's own connect is then pointed at the host node, so that the kernel
//            records the caller's credentials (SO_PEERCRED) and blocks it as usual;
//   getsockname, getpeername: a host node's address reads as the path the socket was bound by.
//   sendto   with an address (a datagram to an unconnected socket), as connect;
//   sendmsg  the same, its header copied to the shared region with the host node as msg_name;
//   sendmmsg the messages before the first to a path in a mount as made, then that one as
//            sendmsg (SendMmsg).
// bind, connect, sendto with an address, sendmsg and sendmmsg take a ptrace stop (NeedsStop,
// TrapOnlyWhen): only at a stop can the address register be changed. Only sockets bound under
// this `amino run` are live: a stored socket from an earlier run refuses connections
// (ECONNREFUSED), as a socket file nobody listens on does. Not served: the address of a peer
// bound in a mount as accept, recvfrom and recvmsg report it.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "monitor/service/mount_handler.h"
#include "monitor/shared_region.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

constexpr size_t kPathOffset = offsetof(sockaddr_un, sun_path);

// The path an AF_UNIX address names in the file system, when the call's address (`addr`,
// `len` bytes) is one; nullopt for anything the kernel answers alone: another family, an
// abstract name, autobind, a length or address it refuses.
std::optional<std::string> SocketPathOf(Process& p, uint64_t addr, uint64_t len_arg) {
  const int len = static_cast<int>(len_arg);
  if (len <= static_cast<int>(kPathOffset) || len > static_cast<int>(sizeof(sockaddr_un))) {
    return std::nullopt;
  }
  sockaddr_un a{};
  if (ReadMemory(p, addr, &a, static_cast<size_t>(len)) != 0) return std::nullopt;
  if (a.sun_family != AF_UNIX || a.sun_path[0] == '\0') return std::nullopt;
  // unix_mkname_bsd(): the name ends at the first NUL or at the given length.
  return std::string(a.sun_path, strnlen(a.sun_path, static_cast<size_t>(len) - kPathOffset));
}

// The caller's descriptor `fd` as the monitor's own (same open file description): -errno when
// it has none, or it is not an AF_UNIX socket (-ENOTSOCK).
int UnixSocketOf(Thread& t, int fd) {
  const int copy = CopyProcessFd(*t.proc, fd);
  if (copy < 0) return copy;
  int domain = 0;
  socklen_t size = sizeof domain;
  if (getsockopt(copy, SOL_SOCKET, SO_DOMAIN, &domain, &size) != 0 || domain != AF_UNIX) {
    close(copy);
    return -ENOTSOCK;
  }
  return copy;
}

// Whether the caller's `fd` is an AF_UNIX datagram socket. Only those look a destination
// address up: a stream socket refuses one (EISCONN or EOPNOTSUPP), a seqpacket socket ignores it.
bool IsDatagramSocket(Thread& t, int fd) {
  host::ScopedFd socket(UnixSocketOf(t, fd));
  int type = 0;
  socklen_t size = sizeof type;
  return socket.get() >= 0 && getsockopt(socket.get(), SOL_SOCKET, SO_TYPE, &type, &size) == 0 &&
         type == SOCK_DGRAM;
}

}  // namespace

Decision MountHandler::WithSocketAddress(Thread& t, SyscallRegs& call, const std::string& host_path,
                                         int addr_arg, const msghdr* header, bool one_of_many) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (host_path.size() >= sizeof a.sun_path) return Decision::Emulate(-ENAMETOOLONG);
  std::memcpy(a.sun_path, host_path.data(), host_path.size());
  const socklen_t len = static_cast<socklen_t>(kPathOffset + host_path.size() + 1);
  Decision restart;
  if (!EnsureRegion(t, call, &restart)) return restart;
  const uint64_t addr =
      t.proc->region->Put(t.tid, 0, std::string_view(reinterpret_cast<const char*>(&a), sizeof a));
  if (!addr) return Decision::Emulate(-ENAMETOOLONG);
  uint64_t header_addr = 0;
  if (header) {
    // The kernel reads a sendmsg header and writes nothing back: a copy serves. Its data and
    // control messages stay where the caller has them.
    msghdr copy = *header;
    copy.msg_name = reinterpret_cast<void*>(addr);
    copy.msg_namelen = len;
    header_addr = t.proc->region->Put(
        t.tid, 4096, std::string_view(reinterpret_cast<const char*>(&copy), sizeof copy));
    if (!header_addr) return Decision::Emulate(-ENAMETOOLONG);
  }
  Pending p;
  p.kind = one_of_many ? Pending::Kind::kSentOne : Pending::Kind::kRestore;
  p.original = call;
  pending_[t.tid] = std::move(p);
  if (one_of_many) {
    // sendmmsg(fd, msgvec, vlen, flags) of one message is sendmsg(fd, msg, flags); the length
    // it sends is written back at the exit (the shared region is read-only to the tracee, so
    // the kernel could not write it into a copy there).
    call.regs.orig_rax = SYS_sendmsg;
    call.set_arg(2, call.arg(3));
  }
  if (header) {
    call.set_arg(addr_arg, header_addr);
  } else {
    call.set_arg(addr_arg, addr);
    call.set_arg(addr_arg + 1, len);
  }
  return Decision::ObserveExit();
}

Decision MountHandler::Bind(Thread& t, SyscallRegs& call) {
  std::optional<std::string> path = SocketPathOf(*t.proc, call.arg(1), call.arg(2));
  if (!path) return Decision::Pass();
  // The kernel looks at the descriptor before the address: a bad one, or another kind of
  // socket, fails there without a path being looked up.
  host::ScopedFd socket(UnixSocketOf(t, static_cast<int>(call.arg(0))));
  if (socket.get() < 0) return Decision::Pass();
  Target target;
  // bind never follows a last link: a name taken by one is EADDRINUSE.
  if (int err = Resolve(t, AT_FDCWD, *path, false, LastName::kNever, &target))
    return Decision::Emulate(err);
  if (target.kind == Target::Kind::kHost) return Decision::Pass();
  if (target.kind == Target::Kind::kFile) return Decision::Emulate(-EADDRINUSE);
  const schema::Cred cred = CredOf(t);
  // unix_bind_bsd(): the node's mode is the socket inode's (0777) less the umask.
  const mode_t mode = S_IFSOCK | (0777 & ~UmaskOf(t));
  schema::Stat made;
  MountFs* made_in = nullptr;
  std::string made_at;
  Decision d = RunOnTargetOr(
      target,
      [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> schema::Status {
        auto r = m.fs->Mknod(txn, cred, rel, mode, 0, 0);
        if (!r.ok()) {
          return r.status().error() == EEXIST ? schema::Status::Errno(EADDRINUSE) : r.status();
        }
        made = *r;
        made_in = &m;
        made_at = rel;
        return schema::Status::Ok();
      },
      [] { return 0L; },
      [&](const std::string& host) { return WithSocketAddress(t, call, host, 1); });
  if (!made_in || d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
  // The node exists: now the socket, which the kernel refuses to bind twice (and the node then
  // goes again, as in unix_bind_bsd()).
  const int mount = MountIndex(made_in);
  std::string host;
  int err = nodes_.SocketPath(mount, made.ino, &host);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (err == 0 && host.size() >= sizeof a.sun_path) err = -ENAMETOOLONG;
  if (err == 0) {
    std::memcpy(a.sun_path, host.data(), host.size());
    const socklen_t len = static_cast<socklen_t>(kPathOffset + host.size() + 1);
    if (bind(socket.get(), reinterpret_cast<const sockaddr*>(&a), len) != 0) err = -errno;
  }
  if (err == 0) err = nodes_.MatchSocket(host, made.attr);
  if (err != 0) {
    CallOutcome undo = RunCall(*made_in, [&](schema::Transaction& txn) {
      return made_in->fs->Unlink(txn, schema::Cred::Root(), made_at);
    });
    (void)undo;
    return Decision::Emulate(err);
  }
  socket_names_[host] = *path;
  socket_nodes_[{mount, made.ino}] = host;
  return Decision::Emulate(0);
}

Decision MountHandler::Connect(Thread& t, SyscallRegs& call) {
  std::optional<std::string> path = SocketPathOf(*t.proc, call.arg(1), call.arg(2));
  if (!path) return Decision::Pass();
  {
    host::ScopedFd socket(UnixSocketOf(t, static_cast<int>(call.arg(0))));
    if (socket.get() < 0) return Decision::Pass();
  }
  return ToSocketNode(t, *path,
                      [&](const std::string& host) { return WithSocketAddress(t, call, host, 1); });
}

Decision MountHandler::SendTo(Thread& t, SyscallRegs& call) {
  if (!call.arg(4)) return Decision::Pass();
  std::optional<std::string> path = SocketPathOf(*t.proc, call.arg(4), call.arg(5));
  if (!path) return Decision::Pass();
  if (!IsDatagramSocket(t, static_cast<int>(call.arg(0)))) return Decision::Pass();
  return ToSocketNode(t, *path,
                      [&](const std::string& host) { return WithSocketAddress(t, call, host, 4); });
}

std::optional<Decision> MountHandler::SendMsgTo(Thread& t, SyscallRegs& call) {
  msghdr header{};
  if (ReadMemory(*t.proc, call.arg(1), &header, sizeof header) != 0) return std::nullopt;
  if (!header.msg_name) return std::nullopt;
  std::optional<std::string> path =
      SocketPathOf(*t.proc, reinterpret_cast<uint64_t>(header.msg_name), header.msg_namelen);
  if (!path || !IsDatagramSocket(t, static_cast<int>(call.arg(0)))) return std::nullopt;
  return ToSocketNode(t, *path, [&](const std::string& host) {
    return WithSocketAddress(t, call, host, 1, &header);
  });
}

Decision MountHandler::SendMmsg(Thread& t, SyscallRegs& call) {
  const unsigned vlen = std::min(static_cast<unsigned>(call.arg(2)), unsigned{IOV_MAX});
  if (vlen == 0 || !IsDatagramSocket(t, static_cast<int>(call.arg(0)))) return Decision::Pass();
  std::vector<mmsghdr> messages(vlen);
  if (ReadMemory(*t.proc, call.arg(1), messages.data(), vlen * sizeof(mmsghdr)) != 0) {
    return Decision::Pass();  // the kernel says EFAULT
  }
  for (unsigned i = 0; i < vlen; ++i) {
    const msghdr& h = messages[i].msg_hdr;
    if (!h.msg_name) continue;
    std::optional<std::string> path =
        SocketPathOf(*t.proc, reinterpret_cast<uint64_t>(h.msg_name), h.msg_namelen);
    Target target;
    if (!path || (Resolve(t, AT_FDCWD, *path, false, LastName::kFollow, &target) == 0 &&
                  target.kind == Target::Kind::kHost)) {
      continue;
    }
    if (i > 0) {
      // The ones before it, by the kernel; it comes first in the caller's next call.
      Pending p;
      p.kind = Pending::Kind::kRestore;
      p.original = call;
      pending_[t.tid] = std::move(p);
      call.set_arg(2, i);
      return Decision::ObserveExit();
    }
    return ToSocketNode(t, *path, [&](const std::string& host) {
      return WithSocketAddress(t, call, host, 1, &h, true);
    });
  }
  return Decision::Pass();
}

Decision MountHandler::ToSocketNode(Thread& t, const std::string& path,
                                    const std::function<Decision(const std::string&)>& point_at) {
  Target target;
  if (int err = Resolve(t, AT_FDCWD, path, false, LastName::kFollow, &target))
    return Decision::Emulate(err);
  FollowServedFdLink(t, path, true, &target);
  if (target.kind == Target::Kind::kHost) return Decision::Pass();
  if (target.kind == Target::Kind::kFile) return Decision::Emulate(-ECONNREFUSED);
  const schema::Cred cred = CredOf(t);
  schema::Stat node;
  MountFs* found_in = nullptr;
  // unix_find_bsd(): the walk, write permission, then whether a socket is there.
  Decision d = RunOnTargetOr(
      target,
      [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> schema::Status {
        auto st = m.fs->GetStat(txn, cred, rel, true);
        if (!st.ok()) return st.status();
        AMINO_RETURN_IF_ERROR(m.fs->Access(txn, cred, rel, W_OK, true));
        if (!S_ISSOCK(st->attr.mode)) return schema::Status::Errno(ECONNREFUSED);
        node = *st;
        found_in = &m;
        return schema::Status::Ok();
      },
      [] { return 0L; }, point_at);
  if (!found_in || d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
  auto it = socket_nodes_.find({MountIndex(found_in), node.ino});
  if (it == socket_nodes_.end()) return Decision::Emulate(-ECONNREFUSED);
  if (int err = nodes_.MatchSocket(it->second, node.attr)) return Decision::Emulate(err);
  // unix_find_bsd() touches the socket file's access time once it found a socket there. In a
  // transaction of its own, as a read's (served_file.h): an application transaction must not
  // hold the file for writing for it, and an access time is not worth a wait.
  (void)RunCallAlone(*found_in, [&](schema::Transaction& txn) {
    return found_in->fs->TouchAtime(txn, node.ino).status();
  });
  return point_at(it->second);
}

Decision MountHandler::SocketName(Thread& t, SyscallRegs& call) {
  if (socket_names_.empty()) return Decision::Pass();
  host::ScopedFd socket(UnixSocketOf(t, static_cast<int>(call.arg(0))));
  if (socket.get() < 0) return Decision::Pass();
  sockaddr_un a{};
  socklen_t len = sizeof a;
  const int r = call.nr() == SYS_getsockname
                    ? getsockname(socket.get(), reinterpret_cast<sockaddr*>(&a), &len)
                    : getpeername(socket.get(), reinterpret_cast<sockaddr*>(&a), &len);
  if (r != 0 || len <= kPathOffset || a.sun_path[0] == '\0') return Decision::Pass();
  auto it = socket_names_.find(std::string(a.sun_path, strnlen(a.sun_path, len - kPathOffset)));
  if (it == socket_names_.end()) return Decision::Pass();
  // As the kernel reports a name bound in the file system: the path as given, with its NUL.
  sockaddr_un shown{};
  shown.sun_family = AF_UNIX;
  std::memcpy(shown.sun_path, it->second.data(), it->second.size());
  const int shown_len = static_cast<int>(kPathOffset + it->second.size() + 1);
  // move_addr_to_user(): the caller's length, at most the address's, then the address's.
  int room;
  if (ReadMemory(*t.proc, call.arg(2), &room, sizeof room) != 0) return Decision::Emulate(-EFAULT);
  room = std::min(room, shown_len);
  if (room < 0) return Decision::Emulate(-EINVAL);
  if (room > 0 && WriteMemory(*t.proc, call.arg(1), &shown, static_cast<size_t>(room)) != 0) {
    return Decision::Emulate(-EFAULT);
  }
  if (WriteMemory(*t.proc, call.arg(2), &shown_len, sizeof shown_len) != 0) {
    return Decision::Emulate(-EFAULT);
  }
  return Decision::Emulate(0);
}

}  // namespace amino::monitor::service
