// Executor basics and the descriptor calls: open family, close, close_range, dup family, fcntl.
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "executor.h"

namespace amino::fuzz {

Executor::Executor(std::string root, Canon canon)
    : root_(std::move(root)), canon_(canon), privileged_(geteuid() == 0) {
  for (int& fd : fd_) fd = -1;
}

int Executor::DirFd(int slot) const { return slot < 0 ? AT_FDCWD : fd_[slot]; }

std::string Executor::DirText(int slot) { return slot < 0 ? "AT_FDCWD" : SlotText(slot); }

std::string Executor::NameText(int name) {
  return Pool::Show(Pool::Names()[static_cast<size_t>(name)]);
}

const char* Executor::Name(int name) const {
  return Pool::Names()[static_cast<size_t>(name)].c_str();
}

std::string Executor::Install(int dst, int fd) {
  const int old = fd_[dst];
  fd_[dst] = fd;
  if (old < 0 || old == fd) return "";
  for (int s = 0; s < kSlots; ++s) {
    if (fd_[s] == old) return "";
  }
  long r = syscall(SYS_close, old);
  return " (old " + SlotText(dst) + " closed" + Result(r, errno) + ")";
}

std::string Executor::Run(const Op& op) {
  std::string line;
  if (RunDescriptor(op, &line) || RunData(op, &line) || RunAttribute(op, &line) ||
      RunNamespace(op, &line)) {
    return line;
  }
  return "unknown op " + std::to_string(static_cast<int>(op.kind));
}

// Long by design: one case per call, each the call and its one-line record; a table.
bool Executor::RunDescriptor(const Op& op, std::string* line) {
  std::string& s = *line;
  const std::string to = "->" + SlotText(op.dst);
  long r;
  int e;
  // A call that returns a descriptor: its result, and the slot it goes to.
  auto installed = [&](long res, int err) {
    s += Result(res, err);
    if (res >= 0) s += Install(op.dst, static_cast<int>(res));
  };
  switch (op.kind) {
    case Kind::kOpen:
      s = "open(" + NameText(op.name) + "," + OpenFlagsText(op.a) + "," + Octal(op.b) + ")" + to;
      r = syscall(SYS_open, Name(op.name), op.a, op.b);
      installed(r, errno);
      return true;
    case Kind::kOpenat:
      s = "openat(" + DirText(op.dir) + "," + NameText(op.name) + "," + OpenFlagsText(op.a) + "," +
          Octal(op.b) + ")" + to;
      r = syscall(SYS_openat, DirFd(op.dir), Name(op.name), op.a, op.b);
      installed(r, errno);
      return true;
    case Kind::kOpenat2: {
      // The struct's size: its own, too small (EINVAL), larger with a zero tail (accepted) or a
      // non-zero tail (E2BIG).
      struct {
        open_how how;
        uint64_t tail;
      } arg{};
      arg.how.flags = static_cast<uint64_t>(op.a);
      arg.how.mode = static_cast<uint64_t>(op.b);
      arg.how.resolve = static_cast<uint64_t>(op.c);
      size_t size = sizeof(open_how);
      if (op.form == 5) size = 8;
      if (op.form == 6) size = sizeof arg;
      if (op.form == 7) size = sizeof arg, arg.tail = 1;
      s = "openat2(" + DirText(op.dir) + "," + NameText(op.name) + ",{" + OpenFlagsText(op.a) +
          "," + Octal(op.b) + ",resolve=" + std::to_string(op.c) + "}," + std::to_string(size) +
          ")" + to;
      r = syscall(SYS_openat2, DirFd(op.dir), Name(op.name), &arg, size);
      installed(r, errno);
      return true;
    }
    case Kind::kCreat:
      s = "creat(" + NameText(op.name) + "," + Octal(op.b) + ")" + to;
      r = syscall(SYS_creat, Name(op.name), op.b);
      installed(r, errno);
      return true;
    case Kind::kClose:
      s = "close(" + SlotText(op.slot) + ")";
      r = syscall(SYS_close, Fd(op.slot));
      s += Result(r, errno);
      fd_[op.slot] = -1;
      return true;
    case Kind::kCloseRange: {
      // Never below 3: the standard streams carry the output.
      const unsigned first = static_cast<unsigned>(op.a);
      unsigned last = first;
      if (op.b == 2) last = first + 2;
      if (op.b == -1) last = ~0u;
      if (op.b == -2) last = first - 1;
      s = "close_range(" + std::to_string(first) + "," +
          (last == ~0u ? std::string("~0") : std::to_string(last)) + "," + std::to_string(op.c) +
          ")";
      r = syscall(SYS_close_range, first, last, static_cast<unsigned>(op.c));
      s += Result(r, errno);
      if (r == 0 && !(op.c & CLOSE_RANGE_CLOEXEC)) {
        for (int& fd : fd_) {
          if (fd >= 0 && static_cast<unsigned>(fd) >= first && static_cast<unsigned>(fd) <= last) {
            fd = -1;
          }
        }
      }
      return true;
    }
    case Kind::kDup:
      s = "dup(" + SlotText(op.slot) + ")" + to;
      r = syscall(SYS_dup, Fd(op.slot));
      installed(r, errno);
      return true;
    case Kind::kDup2:
    case Kind::kDup3: {
      const bool three = op.kind == Kind::kDup3;
      int target;
      std::string target_text;
      if (op.a >= 0) {
        target = static_cast<int>(op.a);
        target_text = std::to_string(op.a);
      } else if (op.a == -1) {
        // Another slot's descriptor; 12 when that slot is empty.
        target = Fd(op.slot2) >= 0 ? Fd(op.slot2) : 12;
        target_text = SlotText(op.slot2);
      } else {
        target = Fd(op.slot);
        target_text = SlotText(op.slot);
      }
      s = std::string(three ? "dup3(" : "dup2(") + SlotText(op.slot) + "," + target_text +
          (three ? "," + OpenFlagsText(op.b) : "") + ")" + to;
      // A negative target (the source slot is empty) fails with EBADF, as the kernel says.
      r = three ? syscall(SYS_dup3, Fd(op.slot), target, op.b)
                : syscall(SYS_dup2, Fd(op.slot), target);
      installed(r, errno);
      return true;
    }
    case Kind::kFcntlDupfd:
      s = std::string("fcntl(") + SlotText(op.slot) +
          (op.b == F_DUPFD ? ",F_DUPFD," : ",F_DUPFD_CLOEXEC,") + std::to_string(op.a) + ")" + to;
      r = syscall(SYS_fcntl, Fd(op.slot), op.b, op.a);
      installed(r, errno);
      return true;
    case Kind::kFcntlFl:
      if (op.a == F_GETFL) {
        s = "fcntl(" + SlotText(op.slot) + ",F_GETFL)";
        r = syscall(SYS_fcntl, Fd(op.slot), F_GETFL);
        e = errno;
        s += r < 0 ? Result(r, e) : " = " + OpenFlagsText(r);
      } else {
        s = "fcntl(" + SlotText(op.slot) + ",F_SETFL," + OpenFlagsText(op.b) + ")";
        r = syscall(SYS_fcntl, Fd(op.slot), F_SETFL, op.b);
        s += Result(r, errno);
      }
      return true;
    case Kind::kFcntlFd:
      s = "fcntl(" + SlotText(op.slot) +
          (op.a == F_GETFD ? ",F_GETFD)" : ",F_SETFD," + std::to_string(op.b) + ")");
      r = op.a == F_GETFD ? syscall(SYS_fcntl, Fd(op.slot), F_GETFD)
                          : syscall(SYS_fcntl, Fd(op.slot), F_SETFD, op.b);
      s += Result(r, errno);
      return true;
    case Kind::kFcntlBad:
      s = "fcntl(" + SlotText(op.slot) + ",9999)";
      r = syscall(SYS_fcntl, Fd(op.slot), 9999, 0);
      s += Result(r, errno);
      return true;
    default:
      return false;
  }
}

}  // namespace amino::fuzz
