#include "base/status.h"

#include <cstring>

namespace amino {

std::string Status::message() const {
  switch (kind_) {
    case Kind::kOk:
      return "ok";
    case Kind::kErrno:
      return std::strerror(err_);
    case Kind::kEscape:
      return "left the file system at " + msg_;
    case Kind::kConflict:
      return "transaction conflict: " + msg_;
    case Kind::kStorage:
      return "storage failure: " + msg_;
  }
  return "unknown status";
}

}  // namespace amino
