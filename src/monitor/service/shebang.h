// The #! line of a script, read exactly as Linux's fs/binfmt_script.c reads it: exec follows
// interpreters itself (exec_call.h), so a script stored in a mount runs as it would natively.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace amino::monitor::service {

// BINPRM_BUF_SIZE: how much of a file exec reads to recognise it.
inline constexpr size_t kExecHeadSize = 256;

struct Shebang {
  std::string name;                // the interpreter
  std::optional<std::string> arg;  // its one optional argument (the rest of the line)
};

// False when `head` (a file's first bytes) is not a script the kernel would run: the kernel
// then tries the next format, and ENOEXEC is its answer for anything but ELF.
bool ParseShebang(std::string_view head, Shebang* out);

}  // namespace amino::monitor::service
