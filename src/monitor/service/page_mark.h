// What a 4 KiB page's bytes hash to, for a shared mapping's write-back (shared_mappings.h):
// XXH3, 64 bits, never 0 (0 marks a page not known to be in step). With AVX2 where the
// processor has it: a write-back hashes every page of the range it covers.
#pragma once

#include <cstdint>

namespace amino::monitor::service {

constexpr uint64_t kMarkedPage = 4096;  // bytes a mark covers

uint64_t PageMark(const char* page);

// The same, by the portable (SSE2) code and by the AVX2 code (only where the processor has it).
uint64_t PageMarkSse2(const char* page);
uint64_t PageMarkAvx2(const char* page);

}  // namespace amino::monitor::service
