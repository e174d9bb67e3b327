#include "monitor/parked_calls.h"

#include <algorithm>

namespace amino::monitor {
namespace {

bool Released(const ParkedCall& p, uint64_t releases) {
  return p.lock_wait && p.releases != releases;
}

}  // namespace

void ParkedCalls::Park(ParkedCall p, uint64_t now_ns, uint64_t releases) {
  p.pause_ns = kPauseNs;
  if (auto it = carried_.find(p.tid); it != carried_.end()) {
    if (p.lock_wait) p.pause_ns = it->second;
    carried_.erase(it);
  }
  p.releases = releases;
  p.due_ns = now_ns + p.pause_ns;
  p.due = false;
  calls_.push_back(p);
}

std::vector<ParkedCall> ParkedCalls::TakeReady(uint64_t now_ns, uint64_t releases) {
  std::vector<ParkedCall> ready;
  std::vector<ParkedCall> waiting;
  for (ParkedCall& p : calls_) {
    p.due = !p.lock_wait || now_ns >= p.due_ns;
    if (!p.due && !Released(p, releases)) {
      waiting.push_back(p);
      continue;
    }
    // A lock wait that ran out its pause waits longer next time; one tried for a release keeps
    // its pause.
    carried_[p.tid] = p.due && p.lock_wait ? std::min(p.pause_ns * 2, kMaxLockPauseNs) : p.pause_ns;
    ready.push_back(p);
  }
  calls_.swap(waiting);
  return ready;
}

int64_t ParkedCalls::WaitNs(uint64_t now_ns, uint64_t releases) const {
  if (calls_.empty()) return -1;
  uint64_t soonest = UINT64_MAX;
  for (const ParkedCall& p : calls_) {
    if (Released(p, releases) || p.due_ns <= now_ns) return 0;
    soonest = std::min(soonest, p.due_ns - now_ns);
  }
  return static_cast<int64_t>(soonest);
}

}  // namespace amino::monitor
