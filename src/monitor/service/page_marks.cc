#include "monitor/service/page_marks.h"

#include <algorithm>

namespace amino::monitor::service {

uint64_t PageMarks::Get(uint64_t index) const {
  auto it = runs_.find(index / kRun);
  return it == runs_.end() ? 0 : it->second[index % kRun];
}

void PageMarks::Set(uint64_t index, uint64_t mark) {
  if (mark == 0) return Forget(index, index + 1);
  runs_[index / kRun][index % kRun] = mark;  // a new run's other pages are 0: unknown
}

void PageMarks::Forget(uint64_t first, uint64_t end) {
  if (first >= end) return;
  const uint64_t first_run = first / kRun, last_run = (end - 1) / kRun;
  for (auto it = runs_.lower_bound(first_run); it != runs_.end() && it->first <= last_run;) {
    const uint64_t base = it->first * kRun;
    const uint64_t lo = std::max(first, base), hi = std::min(end, base + kRun);
    std::fill(it->second.begin() + static_cast<long>(lo - base),
              it->second.begin() + static_cast<long>(hi - base), 0);
    if (std::all_of(it->second.begin(), it->second.end(), [](uint64_t m) { return m == 0; })) {
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
}

bool PageMarks::AllKnown(uint64_t first, uint64_t end) const {
  for (uint64_t index = first; index < end;) {
    auto it = runs_.find(index / kRun);
    if (it == runs_.end()) return false;
    const uint64_t base = it->first * kRun, hi = std::min(end, base + kRun);
    for (; index < hi; ++index) {
      if (it->second[index - base] == 0) return false;
    }
  }
  return true;
}

}  // namespace amino::monitor::service
