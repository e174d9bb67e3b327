// Namespace calls: directories, unlink, rename, links, symbolic links, the working directory
// and the umask.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

#include "executor.h"

namespace amino::fuzz {

// Long by design: one case per call, each the call and its one-line record; a table.
bool Executor::RunNamespace(const Op& op, std::string* line) {
  std::string& s = *line;
  const std::string name = NameText(op.name);
  const std::string name2 = NameText(op.name2);
  const char* path = Name(op.name);
  const char* path2 = Name(op.name2);
  const std::string dir = DirText(op.dir);
  const std::string dir2 = DirText(op.dir2);
  long r;
  int e;
  switch (op.kind) {
    case Kind::kMkdir:
      s = "mkdir(" + name + "," + Octal(op.a) + ")";
      r = syscall(SYS_mkdir, path, op.a);
      break;
    case Kind::kMkdirat:
      s = "mkdirat(" + dir + "," + name + "," + Octal(op.a) + ")";
      r = syscall(SYS_mkdirat, DirFd(op.dir), path, op.a);
      break;
    case Kind::kRmdir:
      s = "rmdir(" + name + ")";
      r = syscall(SYS_rmdir, path);
      break;
    case Kind::kUnlink:
      s = "unlink(" + name + ")";
      r = syscall(SYS_unlink, path);
      break;
    case Kind::kUnlinkat:
      s = "unlinkat(" + dir + "," + name + "," + std::to_string(op.a) + ")";
      r = syscall(SYS_unlinkat, DirFd(op.dir), path, op.a);
      break;
    case Kind::kRename:
      s = "rename(" + name + "," + name2 + ")";
      r = syscall(SYS_rename, path, path2);
      break;
    case Kind::kRenameat:
      s = "renameat(" + dir + "," + name + "," + dir2 + "," + name2 + ")";
      r = syscall(SYS_renameat, DirFd(op.dir), path, DirFd(op.dir2), path2);
      break;
    case Kind::kRenameat2:
      s = "renameat2(" + dir + "," + name + "," + dir2 + "," + name2 + "," + std::to_string(op.a) +
          ")";
      r = syscall(SYS_renameat2, DirFd(op.dir), path, DirFd(op.dir2), path2, op.a);
      break;
    case Kind::kLink:
      s = "link(" + name + "," + name2 + ")";
      r = syscall(SYS_link, path, path2);
      break;
    case Kind::kLinkat: {
      // With AT_EMPTY_PATH the source is the descriptor itself (an O_TMPFILE file gets a name).
      const bool empty = op.a == AT_EMPTY_PATH;
      s = "linkat(" + (empty ? SlotText(op.slot) + ",\"\"" : dir + "," + name) + "," + dir2 + "," +
          name2 + "," + std::to_string(op.a) + ")";
      r = syscall(SYS_linkat, empty ? Fd(op.slot) : DirFd(op.dir), empty ? "" : path,
                  DirFd(op.dir2), path2, op.a);
      break;
    }
    case Kind::kSymlink:
    case Kind::kSymlinkat: {
      const std::string& target = Pool::Targets()[static_cast<size_t>(op.name2)];
      if (op.kind == Kind::kSymlink) {
        s = "symlink(" + Pool::Show(target) + "," + name + ")";
        r = syscall(SYS_symlink, target.c_str(), path);
      } else {
        s = "symlinkat(" + Pool::Show(target) + "," + dir + "," + name + ")";
        r = syscall(SYS_symlinkat, target.c_str(), DirFd(op.dir), path);
      }
      break;
    }
    case Kind::kReadlink:
    case Kind::kReadlinkat: {
      std::vector<char> buf(static_cast<size_t>(op.a) + 1);
      if (op.kind == Kind::kReadlink) {
        s = "readlink(" + name + "," + std::to_string(op.a) + ")";
        r = syscall(SYS_readlink, path, buf.data(), op.a);
      } else {
        s = "readlinkat(" + dir + "," + name + "," + std::to_string(op.a) + ")";
        r = syscall(SYS_readlinkat, DirFd(op.dir), path, buf.data(), op.a);
      }
      e = errno;
      s += Result(r, e);
      if (r > 0) s += " " + Escape(std::string(buf.data(), static_cast<size_t>(r)));
      return true;
    }
    case Kind::kChdir:
      s = "chdir(" + name + ")";
      r = syscall(SYS_chdir, path);
      break;
    case Kind::kFchdir:
      s = "fchdir(" + SlotText(op.slot) + ")";
      r = syscall(SYS_fchdir, Fd(op.slot));
      break;
    case Kind::kChdirRoot:
      s = "chdir(<root>)";
      r = syscall(SYS_chdir, root_.c_str());
      break;
    case Kind::kGetcwd: {
      // The path relative to the scratch root: where the root itself lies differs by side.
      std::vector<char> buf(static_cast<size_t>(op.a));
      s = "getcwd(" + std::to_string(op.a) + ")";
      r = syscall(SYS_getcwd, buf.data(), buf.size());
      e = errno;
      if (r < 0) {
        s += Result(r, e);
      } else {
        std::string cwd(buf.data());
        if (cwd == root_) {
          s += " = \"/\"";
        } else if (cwd.compare(0, root_.size() + 1, root_ + "/") == 0) {
          s += " = " + Escape(cwd.substr(root_.size()));
        } else {
          s += " = <outside the scratch root>";
        }
      }
      return true;
    }
    case Kind::kBind:
    case Kind::kConnect: {
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
      const bool bind_it = op.kind == Kind::kBind;
      s = std::string(bind_it ? "bind(" : "connect(") + name + ")";
      const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (bind_it ? 0 : SOCK_NONBLOCK), 0);
      const auto* addr = reinterpret_cast<const sockaddr*>(&a);
      // An empty path would be an abstract name, shared by every process on the machine, so
      // whether it is taken depends on other tests: an empty path binds by autobind (a fresh
      // abstract name), which no run can take from another.
      const socklen_t len = *path ? sizeof a : offsetof(sockaddr_un, sun_path);
      r = bind_it ? bind(fd, addr, len) : connect(fd, addr, sizeof a);
      e = errno;
      s += Result(r, e);
      if (r == 0 && bind_it) {
        listen(fd, 4);
        listeners_.push_back(fd);
        return true;
      }
      if (r == 0) {
        // The name the peer was bound by, as given.
        sockaddr_un peer{};
        socklen_t len = sizeof peer;
        if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0) {
          s += " peer=" + Escape(std::string(peer.sun_path, strnlen(peer.sun_path, len - 2)));
        }
      }
      close(fd);
      return true;
    }
    case Kind::kUmask:
      s = "umask(" + Octal(op.a) + ")";
      r = syscall(SYS_umask, op.a);
      s += " = " + Octal(r);
      return true;
    default:
      return false;
  }
  s += Result(r, errno);
  return true;
}

}  // namespace amino::fuzz
