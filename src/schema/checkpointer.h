// Checkpoints of a store's environment taken by a thread of their own. A checkpoint writes
// every dirty page of the cache; taken on the spot it holds up the call whose commit made it
// due (7% of the monitor's time extracting a tree of headers into a mount on tmpfs, and the
// pages' writes themselves where the database is on a disk). A process that may use one CPU
// only takes them on the spot: there the thread would only add its switches.
#pragma once

#include <db.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace amino::schema {

class Checkpointer {
 public:
  // `kbytes`: a checkpoint is taken only once that much log was written since the last one.
  Checkpointer(DB_ENV* env, uint32_t kbytes);
  ~Checkpointer();  // waits for a checkpoint under way; must come before the environment closes
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // A checkpoint may be due: the thread looks soon (once more after one under way), or the
  // caller takes it now when there is no thread.
  void Ask();
  // Checkpoints the thread took (stats, tests).
  uint64_t taken() const;

  // Whether this process may run on more than one CPU: only then is there a thread.
  static bool Worthwhile();

 private:
  void Run(std::stop_token stop);

  DB_ENV* const env_;
  const uint32_t kbytes_;
  const bool use_thread_;
  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  bool asked_ = false;
  uint64_t taken_ = 0;
  std::jthread thread_;  // last: stopped and joined before the rest goes
};

}  // namespace amino::schema
