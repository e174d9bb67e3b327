#include "monitor/service/shebang.h"

#include <algorithm>
#include <cstring>

namespace amino::monitor::service {

namespace {

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

}  // namespace

bool ParseShebang(std::string_view head, Shebang* out) {
  char buf[kExecHeadSize] = {};
  std::memcpy(buf, head.data(), std::min(head.size(), kExecHeadSize));
  if (buf[0] != '#' || buf[1] != '!') return false;
  char* buf_end = buf + kExecHeadSize - 1;
  char* i_end = nullptr;
  for (char* p = buf; p < buf + kExecHeadSize && *p; ++p) {
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

}  // namespace amino::monitor::service
