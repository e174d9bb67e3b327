#include "monitor/service/page_mark.h"

#include <xxhash.h>

namespace amino::monitor::service {

uint64_t PageMarkSse2(const char* page) { return (XXH3_64bits(page, kMarkedPage) << 1) | 1; }

uint64_t PageMark(const char* page) {
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  return avx2 ? PageMarkAvx2(page) : PageMarkSse2(page);
}

}  // namespace amino::monitor::service
