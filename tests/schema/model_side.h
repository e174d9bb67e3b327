// The two implementations the model test drives with the same ops: the kernel on a scratch
// directory (the oracle) and the schema. Each reports an op's outcome in one canonical text form
// so that the two can be compared and printed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model_ops.h"
#include "schema/filesystem.h"

namespace amino::schema::testing::model {

struct Outcome {
  int err = 0;           // errno, 0 on success
  std::string value;     // what the call returned or the state it left that is compared
  bool skipped = false;  // the op named an empty slot

  bool operator==(const Outcome& o) const {
    return err == o.err && value == o.value && skipped == o.skipped;
  }
  std::string ToString() const;
};

// One name in a final tree.
struct Entry {
  uint32_t mode = 0;
  uint32_t nlink = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t ino = 0;
  std::string content;  // regular files
  std::string target;   // symbolic links
  std::map<std::string, std::string> xattrs;
  std::string ToString() const;  // everything but ino
};
using Tree = std::map<std::string, Entry>;  // by mount-relative path

// The stat fields that mean the same on both sides (not ino, times, blocks, a directory's size).
std::string StatString(uint32_t mode, uint32_t nlink, uint32_t uid, uint32_t gid, uint64_t size);
// Length, a hash and the first bytes: enough to tell two byte strings apart in a report.
std::string DataString(const std::string& bytes);

// The checks Linux makes on a file descriptor before the file system sees the call (the access
// mode it was opened with); the monitor makes them for the schema. nullopt: the call proceeds.
std::optional<Outcome> FdCheck(const Op& op, int open_flags);

class Side {
 public:
  virtual ~Side() = default;
  virtual Outcome Apply(const Op& op) = 0;
  // Closes every open slot (as root).
  virtual void CloseAll() = 0;
  // The whole tree, walked as root; false with `error` set when the walk itself failed.
  virtual bool Snapshot(Tree* tree, std::string* error) = 0;
};

// The kernel: ops on `root` (a scratch directory), as the op's credentials.
std::unique_ptr<Side> MakeHostSide(const std::string& root);
// The schema: each op in its own transaction (FileSystem::Run), as the monitor runs them.
std::unique_ptr<Side> MakeSchemaSide(FileSystem* fs);

const Cred& CredOf(int index);

}  // namespace amino::schema::testing::model
