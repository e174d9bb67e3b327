// What a shared mapping's write-back knows of a mapping file's pages: for each page known to be
// in step with the schema, the mark (hash) of its bytes then; 0 for a page not known to be.
// Kept in runs of 16 pages (a write-back's chunk), so that a chunk's marks are one lookup and a
// file written far out costs nothing for the pages between.
#pragma once

#include <array>
#include <cstdint>
#include <map>

namespace amino::monitor::service {

class PageMarks {
 public:
  static constexpr uint64_t kRun = 16;  // pages in a run

  // The mark of page `index`, 0 when it is not known to be in step.
  uint64_t Get(uint64_t index) const;
  void Set(uint64_t index, uint64_t mark);
  // Pages [first, end) are no longer known to be in step.
  void Forget(uint64_t first, uint64_t end);
  void Clear() { runs_.clear(); }
  // Whether every page of [first, end) has a mark.
  bool AllKnown(uint64_t first, uint64_t end) const;
  bool empty() const { return runs_.empty(); }

 private:
  std::map<uint64_t, std::array<uint64_t, kRun>> runs_;  // run number -> its pages' marks
};

}  // namespace amino::monitor::service
