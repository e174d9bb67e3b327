// The canonical listing of a scratch tree: one line per entry, sorted by path, with the
// compared stat fields (see canon.h), the contents of regular files (a digest of their non-zero
// bytes with their offsets, so that a hole and written zeros read alike, and their data extents),
// symbolic link targets, and extended attributes (names and value digests).
#pragma once

#include <string>

#include "canon.h"

namespace amino::fuzz {

void PrintTree(const std::string& root, const Canon& canon);

}  // namespace amino::fuzz
