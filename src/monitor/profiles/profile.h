// A transaction profile (docs/profiles.md): rules that begin, commit and abort transactions
// for an unmodified program at events of its life — its exec, its exit, opens and closes of
// matching files, signals. What a rule file holds, once parsed (profile_parser.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace amino::monitor::profiles {

// Where something was written: FILE:LINE:COL, lines and columns from 1.
struct Location {
  std::string file;
  int line = 0;
  int column = 0;
  std::string ToString() const;
};

// Values a condition may test; which ones an event has is fixed (VariablesOf).
enum class Variable {
  kStatus,  // exit: the exit status, 128+N when killed by signal N (as a shell's $?)
  kSignal,  // exit: the signal that killed it (0 when it exited); signal: the signal's number
  kCount,   // open, close: the process's descriptors open on the rule's files, after the event
  kDepth,   // every event: the process's depth in the traced tree (the command is 0)
  kResult,  // return: the function's return value as a C int (the low 32 bits of rax)
};

enum class Compare { kEq, kNe, kLt, kLe, kGt, kGe };

struct Comparison {
  Variable variable = Variable::kStatus;
  Compare op = Compare::kEq;
  int64_t value = 0;
};

// Comparisons that must all hold ("and"); empty holds always.
struct Condition {
  std::vector<Comparison> all;
};

enum class EventKind { kExec, kExit, kOpen, kClose, kSignal, kCall, kReturn, kConflict };

struct Event {
  EventKind kind = EventKind::kExec;
  // exec: the program (a name matches the file name, a path the whole path); open, close: the
  // file (absolute pattern, or a file name); call, return: the function's name; "" matches
  // any. Shell wildcards (fnmatch).
  std::string pattern;
  // call, return: the object (program or library) defining the function; "" matches any.
  std::string object;
  // The program the process runs (for exec: the one it ran before, its parent's after a fork);
  // "" matches any.
  std::string program;
  bool writing = false;  // open, close: only descriptors opened for writing
  int signal = 0;        // signal: its number
};

struct Action {
  enum class Kind { kBegin, kCommit, kAbort, kCommitIf, kAbortIf, kKill };
  Kind kind = Kind::kBegin;
  bool nested = false;    // begin: even inside a transaction this profile began
  bool private_ = false;  // begin: processes started later do not share it
  Condition condition;    // commit-if, abort-if
};

struct Rule {
  Location where;
  Event event;
  Condition when;
  std::vector<Action> actions;
};

struct Profile {
  std::string name;  // the file name without ".profile"
  std::string path;
  std::string description;
  std::vector<Rule> rules;
};

const char* EventName(EventKind kind);
const char* VariableName(Variable v);
// Whether event `kind` gives `v` a value.
bool HasVariable(EventKind kind, Variable v);
bool Holds(const Comparison& c, int64_t actual);

// The values of an event's variables, as the monitor observed them.
struct Values {
  int64_t status = 0, signal = 0, count = 0, depth = 0, result = 0;
  int64_t Of(Variable v) const;
};
bool Holds(const Condition& c, const Values& values);

// Whether `pattern` matches the path `path`: "" matches any; a pattern with a '/' the whole
// path, one without the path's last component.
bool MatchesPath(const std::string& pattern, const std::string& path);

}  // namespace amino::monitor::profiles
