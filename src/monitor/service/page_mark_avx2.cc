// Compiled with -mavx2 (CMakeLists.txt), and called only where the processor has AVX2: so it
// includes nothing but xxHash (inlined, file-local) and defines nothing else, lest the linker
// take an AVX2 copy of some shared inline function for the whole program.
#include <xxhash.h>

#include "monitor/service/page_mark.h"

namespace amino::monitor::service {

uint64_t PageMarkAvx2(const char* page) { return (XXH3_64bits(page, kMarkedPage) << 1) | 1; }

}  // namespace amino::monitor::service
