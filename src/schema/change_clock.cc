#include "schema/change_clock.h"

#include <mutex>
#include <unordered_set>

namespace amino::schema {
namespace {

// Files seen beyond this many are forgotten at once; every file not changed since then counts
// as seen (its ctime is before `forgotten_at`).
constexpr size_t kMaxSeen = 1 << 16;

bool Before(const timespec& a, const timespec& b) {
  return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

struct Clock {
  std::mutex mu;  // the schema may be used from several threads
  std::unordered_set<FileId> seen;
  timespec floor{};
  timespec forgotten_at{};

  timespec Fine() {
    timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    if (Before(t, floor)) t = floor;  // the wall clock was set back: never behind a given time
    floor = t;
    return t;
  }
  timespec Coarse() const {
    timespec t;
    clock_gettime(CLOCK_REALTIME_COARSE, &t);
    return Before(t, floor) ? floor : t;
  }
};

Clock& TheClock() {
  static Clock* c = new Clock;  // never destroyed: used until the process ends
  return *c;
}

}  // namespace

timespec CoarseNow() {
  Clock& c = TheClock();
  std::lock_guard<std::mutex> l(c.mu);
  return c.Coarse();
}

timespec ChangeTimeFor(FileId id, const timespec& ctime) {
  Clock& c = TheClock();
  std::lock_guard<std::mutex> l(c.mu);
  // Forgotten with the others (its ctime is older than the forgetting): counted as seen, which
  // only costs a fine-grained time.
  const bool seen = c.seen.erase(id) != 0 || Before(ctime, c.forgotten_at);
  if (!seen) return c.Coarse();
  timespec t = c.Fine();
  if (!Before(ctime, t)) {
    // Seen, so the change must show, even where the clock has not moved past the old time.
    t = ctime;
    if (++t.tv_nsec == 1000000000) {
      t.tv_nsec = 0;
      ++t.tv_sec;
    }
    c.floor = t;
  }
  return t;
}

void NoteTimesSeen(FileId id) {
  Clock& c = TheClock();
  std::lock_guard<std::mutex> l(c.mu);
  if (c.seen.size() >= kMaxSeen) {
    c.seen.clear();
    c.forgotten_at = c.Fine();
  }
  c.seen.insert(id);
}

}  // namespace amino::schema
