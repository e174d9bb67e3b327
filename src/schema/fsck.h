// The consistency checker: the paper's seven integrity constraints over the raw databases, plus
// the structural rules the schema relies on. The oracle of the crash and fuzz tests.
#pragma once

#include <string>
#include <vector>

#include "schema/status.h"
#include "schema/store.h"

namespace amino::schema {

struct Violation {
  std::string invariant;  // UNIQID, REFCOUNT, NOORPHANEDFILES, NOORPHANEDBLOCKS,
                          // HARDLINKUSESDLMD, PAGESMATCHSIZE, LASTPAGEMATCHESSIZE, or a
                          // structural rule (see fsck.cc)
  std::string detail;     // which record, what was found, what was expected
};

// Checks every record in one read-only transaction. An empty vector means consistent.
Result<std::vector<Violation>> Fsck(Store& store);

}  // namespace amino::schema
