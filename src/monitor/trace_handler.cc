#include "monitor/trace_handler.h"

#include <fcntl.h>

#include <cstring>

#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%o", c);
      out += buf;
    }
  }
  return out + "\"";
}

std::string OpenFlags(uint64_t f) {
  static const struct {
    uint64_t bit;
    const char* name;
  } kBits[] = {
      {O_CREAT, "O_CREAT"},         {O_EXCL, "O_EXCL"},         {O_NOCTTY, "O_NOCTTY"},
      {O_TRUNC, "O_TRUNC"},         {O_APPEND, "O_APPEND"},     {O_NONBLOCK, "O_NONBLOCK"},
      {O_DSYNC, "O_DSYNC"},         {O_DIRECT, "O_DIRECT"},     {O_LARGEFILE, "O_LARGEFILE"},
      {O_DIRECTORY, "O_DIRECTORY"}, {O_NOFOLLOW, "O_NOFOLLOW"}, {O_NOATIME, "O_NOATIME"},
      {O_CLOEXEC, "O_CLOEXEC"},     {O_PATH, "O_PATH"}};
  uint64_t acc = f & O_ACCMODE;
  std::string s = acc == O_RDONLY   ? "O_RDONLY"
                  : acc == O_WRONLY ? "O_WRONLY"
                  : acc == O_RDWR   ? "O_RDWR"
                                    : "3";
  f &= ~static_cast<uint64_t>(O_ACCMODE);
  if ((f & __O_TMPFILE) == __O_TMPFILE) {
    s += "|O_TMPFILE";
    f &= ~static_cast<uint64_t>(__O_TMPFILE);
  }
  if ((f & O_SYNC) == O_SYNC) {
    s += "|O_SYNC";
    f &= ~static_cast<uint64_t>(O_SYNC);
  }
  for (auto& b : kBits) {
    if (f & b.bit) {
      s += "|";
      s += b.name;
      f &= ~b.bit;
    }
  }
  if (f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "|%#llx", static_cast<unsigned long long>(f));
    s += buf;
  }
  return s;
}

std::string FormatArg(Thread& t, Arg kind, uint64_t v) {
  char buf[64];
  switch (kind) {
    case Arg::kNone:
      return {};
    case Arg::kInt:
    case Arg::kFd:
      std::snprintf(buf, sizeof buf, "%d", static_cast<int>(v));
      return buf;
    case Arg::kUint:
      std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
      return buf;
    case Arg::kDirFd:
      if (static_cast<int>(v) == AT_FDCWD) return "AT_FDCWD";
      std::snprintf(buf, sizeof buf, "%d", static_cast<int>(v));
      return buf;
    case Arg::kPath:
    case Arg::kXattrName:
    case Arg::kLinkTarget: {
      if (v == 0) return "NULL";
      std::string s;
      if (ReadString(*t.proc, v, 4096, &s) != 0) {
        std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
        return buf;
      }
      return Quote(s);
    }
    case Arg::kOpenFlags:
      return OpenFlags(v);
    case Arg::kMode:
      std::snprintf(buf, sizeof buf, "0%llo", static_cast<unsigned long long>(v));
      return buf;
    case Arg::kAtFlags:
    case Arg::kHex:
    case Arg::kBuf:
      std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
      return buf;
  }
  return {};
}

}  // namespace

std::string FormatCall(Thread& t, const SyscallRegs& call) {
  const SyscallInfo* info = FindSyscall(call.nr());
  std::string s = SyscallName(call.nr());
  s += "(";
  for (int i = 0; info && i < 6 && info->args[i] != Arg::kNone; ++i) {
    if (i) s += ", ";
    s += FormatArg(t, info->args[i], call.arg(i));
  }
  return s + ")";
}

void TraceHandler::Print(const Thread& t, const std::string& text, long result) {
  if (result < 0 && result >= -4095) {
    std::fprintf(out_, "[pid %d] %s = -1 %s (%s)\n", t.tid, text.c_str(),
                 strerrorname_np(static_cast<int>(-result)) ?: "E?",
                 std::strerror(static_cast<int>(-result)));
  } else {
    std::fprintf(out_, "[pid %d] %s = %ld\n", t.tid, text.c_str(), result);
  }
  std::fflush(out_);
}

Decision TraceHandler::OnEntry(Thread& t, SyscallRegs& call) {
  std::string text = FormatCall(t, call);
  Decision d = inner_->OnEntry(t, call);
  if (d.kind == Decision::Kind::kRestart || d.kind == Decision::Kind::kPark) return d;
  if (d.kind == Decision::Kind::kEmulate) {
    Print(t, text, d.result);
    return d;
  }
  if (call.notified) {
    // A notified call has no exit stop (fcntl's commands other than F_DUPFD come so): the
    // kernel's result is not seen.
    std::fprintf(out_, "[pid %d] %s = ?\n", t.tid, text.c_str());
    std::fflush(out_);
    return d;
  }
  pending_[t.tid] = Pending{std::move(text), d.kind == Decision::Kind::kObserveExit};
  return Decision::ObserveExit();
}

void TraceHandler::OnExit(Thread& t, SyscallRegs& call) {
  auto it = pending_.find(t.tid);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (p.inner_wants_exit) inner_->OnExit(t, call);
  Print(t, p.text, call.result());
}

}  // namespace amino::monitor
