// The schema reports with the project's result type (base/status.h).
#pragma once

#include "base/status.h"

namespace amino::schema {

using ::amino::Result;
using ::amino::Status;

}  // namespace amino::schema
