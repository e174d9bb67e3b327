// Executes generated operations with raw system calls (so that each call is the one named, not
// whatever the C library turns it into) and describes each as one canonical line.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "canon.h"
#include "ops.h"

namespace amino::fuzz {

class Executor {
 public:
  Executor(std::string root, Canon canon);

  // "name(args) = result extra", without the index.
  std::string Run(const Op& op);

 private:
  // Each returns false when the kind is not its family's.
  bool RunDescriptor(const Op& op, std::string* line);
  bool RunData(const Op& op, std::string* line);
  bool RunAttribute(const Op& op, std::string* line);
  bool RunNamespace(const Op& op, std::string* line);

  // The descriptor in a slot, -1 when empty (so that using it fails with EBADF).
  int Fd(int slot) const { return fd_[slot]; }
  int DirFd(int slot) const;
  static std::string SlotText(int slot) { return "@" + std::to_string(slot); }
  static std::string DirText(int slot);
  static std::string NameText(int name);
  const char* Name(int name) const;

  // Stores a descriptor the call returned in `dst`; the descriptor the slot held before is
  // closed unless another slot still holds it. Returns the text of that close, if any.
  std::string Install(int dst, int fd);

  uid_t OwnerChoice(int64_t i) const;
  gid_t GroupChoice(int64_t i) const;

  int fd_[kSlots];
  std::vector<int> listeners_;  // the sockets kBind bound, listening until the end
  std::string root_;
  Canon canon_;
  bool privileged_;
};

}  // namespace amino::fuzz
