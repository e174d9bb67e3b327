#include "monitor/profiles/profile.h"

#include <fnmatch.h>

namespace amino::monitor::profiles {

std::string Location::ToString() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const char* EventName(EventKind kind) {
  switch (kind) {
    case EventKind::kExec:
      return "exec";
    case EventKind::kExit:
      return "exit";
    case EventKind::kOpen:
      return "open";
    case EventKind::kClose:
      return "close";
    case EventKind::kSignal:
      return "signal";
    case EventKind::kCall:
      return "call";
    case EventKind::kReturn:
      return "return";
    case EventKind::kConflict:
      return "conflict";
  }
  return "?";
}

const char* VariableName(Variable v) {
  switch (v) {
    case Variable::kStatus:
      return "status";
    case Variable::kSignal:
      return "signal";
    case Variable::kCount:
      return "count";
    case Variable::kDepth:
      return "depth";
    case Variable::kResult:
      return "result";
  }
  return "?";
}

bool HasVariable(EventKind kind, Variable v) {
  switch (v) {
    case Variable::kDepth:
      return true;
    case Variable::kStatus:
      return kind == EventKind::kExit;
    case Variable::kSignal:
      return kind == EventKind::kExit || kind == EventKind::kSignal;
    case Variable::kCount:
      return kind == EventKind::kOpen || kind == EventKind::kClose;
    case Variable::kResult:
      return kind == EventKind::kReturn;
  }
  return false;
}

bool Holds(const Comparison& c, int64_t actual) {
  switch (c.op) {
    case Compare::kEq:
      return actual == c.value;
    case Compare::kNe:
      return actual != c.value;
    case Compare::kLt:
      return actual < c.value;
    case Compare::kLe:
      return actual <= c.value;
    case Compare::kGt:
      return actual > c.value;
    case Compare::kGe:
      return actual >= c.value;
  }
  return false;
}

int64_t Values::Of(Variable v) const {
  switch (v) {
    case Variable::kStatus:
      return status;
    case Variable::kSignal:
      return signal;
    case Variable::kCount:
      return count;
    case Variable::kDepth:
      return depth;
    case Variable::kResult:
      return result;
  }
  return 0;
}

bool Holds(const Condition& c, const Values& values) {
  for (const Comparison& each : c.all) {
    if (!Holds(each, values.Of(each.variable))) return false;
  }
  return true;
}

bool MatchesPath(const std::string& pattern, const std::string& path) {
  if (pattern.empty()) return true;
  if (pattern.find('/') != std::string::npos) return fnmatch(pattern.c_str(), path.c_str(), 0) == 0;
  const size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

}  // namespace amino::monitor::profiles
