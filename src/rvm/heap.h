// The allocator behind rvm_alloc/rvm_free. All its state (header, bins, chunk headers) lives in
// the region itself, as offsets, so the page logging that rewinds the program's data rewinds the
// allocator too, and a persistent region's heap survives being mapped at another address.
//
// Layout: a header at offset 0 (bins of free chunks, the end of the used part), then chunks in
// the style of dlmalloc: [prev_size][size|flags][payload], free chunks linked through their
// payload and coalesced with free neighbours; the untouched tail beyond `top` is never written,
// so a sparse region stays sparse.
#pragma once

#include <cstddef>

#include "rvm/region.h"

namespace amino::rvm {

// The caller holds the region in its transaction.
int HeapAlloc(rvm_region* region, size_t size, void** out);
int HeapFree(rvm_region* region, void* ptr);
int HeapSetRoot(rvm_region* region, void* ptr);
void* HeapGetRoot(const rvm_region* region);

}  // namespace amino::rvm
