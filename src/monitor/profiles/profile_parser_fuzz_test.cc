// Fuzzing the transaction-profile language (docs/profiles.md): whatever a user's editor leaves in
// a file, `amino profile check` must answer with located errors (FILE:LINE:COL), and a file it
// accepts must make rules the monitor can run; random inputs never crash the parser.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "monitor/profiles/profile.h"
#include "monitor/profiles/profile_parser.h"
#include "monitor/profiles/profile_test_support.h"

namespace amino::monitor::profiles {
namespace {

using namespace testing;

// "" when `e` is a well-formed error for `text`, else what is wrong with it. *last_line is the
// line of the previous located error: one error per line, in order.
std::string CheckError(const std::string& e, const std::string& file,
                       const std::vector<std::string>& lines, bool has_nul, int* last_line) {
  if (e == file + kNulMessage) return has_nul ? "" : "a NUL error without a NUL byte";
  if (e.rfind(file + ":", 0) != 0) return "no FILE: prefix";
  size_t i = file.size() + 1;
  auto number = [&](int* out) {
    const size_t start = i;
    int64_t value = 0;
    while (i < e.size() && e[i] >= '0' && e[i] <= '9' && i - start < 10) {
      value = value * 10 + (e[i++] - '0');
    }
    *out = static_cast<int>(value);
    return i > start && value <= INT32_MAX;
  };
  int line = 0, column = 0;
  if (!number(&line) || i >= e.size() || e[i++] != ':') return "no LINE:";
  if (!number(&column) || e.compare(i, 2, ": ") != 0) return "no COL: ";
  if (e.size() <= i + 2) return "no message";
  if (line < 1 || static_cast<size_t>(line) > lines.size() + 1) return "line out of the file";
  if (column < 1) return "column before the line";
  if (static_cast<size_t>(line) <= lines.size()) {
    if (static_cast<size_t>(column) > lines[line - 1].size() + 1) return "column after the line";
  } else if (column != 1 || e.compare(i + 2, 8, "no rules") != 0) {
    return "an error after the last line that is not 'no rules' at column 1";
  }
  if (line <= *last_line) return "a second error on one line, or errors out of order";
  *last_line = line;
  return "";
}

// "" when parsing `text` behaves, else what went wrong; *accepted when it had no error.
std::string CheckParse(const std::string& text, bool* accepted = nullptr) {
  const std::string file = "fuzz.profile";
  const Parsed p = ParseProfile(text, file, "fuzz");
  if (accepted) *accepted = p.ok();
  const std::vector<std::string> lines = Lines(text);
  const bool has_nul = text.find('\0') != std::string::npos;
  int last_line = 0;
  bool nul_reported = false;
  for (const std::string& e : p.errors) {
    if (std::string problem = CheckError(e, file, lines, has_nul, &last_line); !problem.empty()) {
      return problem + ": " + e;
    }
    nul_reported = nul_reported || e == file + kNulMessage;
  }
  if (has_nul && !nul_reported) return "a NUL byte not reported";
  if (!p.ok()) return "";
  if (p.profile.rules.empty()) return "no error and no rule";
  int previous = 0;
  for (const Rule& r : p.profile.rules) {
    const std::string where = r.where.ToString() + ": ";
    if (r.actions.empty()) return where + "a rule without actions";
    if (r.where.file != file) return where + "a rule located in another file";
    if (r.where.line <= previous || static_cast<size_t>(r.where.line) > lines.size()) {
      return where + "a rule's line out of the file or out of order";
    }
    previous = r.where.line;
    const std::string& line = lines[r.where.line - 1];
    if (r.where.column < 1 || static_cast<size_t>(r.where.column) > line.size() ||
        line.compare(r.where.column - 1, 2, "on") != 0) {
      return where + "a rule's column is not at its 'on'";
    }
    // What the monitor assumes of a parsed rule.
    const EventKind kind = r.event.kind;
    const bool file_event = kind == EventKind::kOpen || kind == EventKind::kClose;
    if ((kind == EventKind::kSignal) != (r.event.signal != 0)) return where + "a stray signal";
    if (r.event.signal < 0 || r.event.signal >= 32) return where + "a signal out of range";
    if (r.event.writing && !file_event) return where + "'write' on an event without files";
    const bool function_event = kind == EventKind::kCall || kind == EventKind::kReturn;
    if (function_event && r.event.pattern.empty()) return where + "a function event without name";
    if (!function_event && !r.event.object.empty()) return where + "'in' on an event without it";
    if (!file_event && !function_event && kind != EventKind::kExec && !r.event.pattern.empty()) {
      return where + "a pattern on an event without one";
    }
    if (file_event && !r.event.pattern.empty() && r.event.pattern[0] != '/' &&
        r.event.pattern.find('/') != std::string::npos) {
      return where + "a relative file pattern with a '/'";
    }
    std::vector<const Condition*> conditions = {&r.when};
    for (const Action& a : r.actions) {
      const bool conditional =
          a.kind == Action::Kind::kCommitIf || a.kind == Action::Kind::kAbortIf;
      if (conditional == a.condition.all.empty()) return where + "an action's condition";
      if ((a.nested || a.private_) && a.kind != Action::Kind::kBegin) {
        return where + "'nested' or 'private' on an action that is not begin";
      }
      conditions.push_back(&a.condition);
    }
    for (const Condition* c : conditions) {
      for (const Comparison& cmp : c->all) {
        if (!HasVariable(kind, cmp.variable)) return where + "a variable the event has not";
      }
    }
  }
  return "";
}

size_t Below(std::mt19937& rng, size_t n) { return n == 0 ? 0 : rng() % n; }

const std::vector<std::string>& FuzzTokens() {
  static const std::vector<std::string> tokens = {"on",
                                                  "do",
                                                  "when",
                                                  "by",
                                                  "in",
                                                  "call",
                                                  "return",
                                                  "result",
                                                  "${ARG}",
                                                  "and",
                                                  "\"",
                                                  "\\\"",
                                                  "\\\\",
                                                  "==",
                                                  "!=",
                                                  "<=",
                                                  ">=",
                                                  "<",
                                                  ">",
                                                  "=",
                                                  "!",
                                                  ",",
                                                  "#",
                                                  "0",
                                                  "1",
                                                  "15",
                                                  "-1",
                                                  "+2",
                                                  "128",
                                                  "99999999999999999999",
                                                  "begin",
                                                  "nested",
                                                  "private",
                                                  "commit",
                                                  "abort",
                                                  "commit-if",
                                                  "abort-if",
                                                  "exec",
                                                  "exit",
                                                  "open",
                                                  "close",
                                                  "write",
                                                  "signal",
                                                  "TERM",
                                                  "SIGINT",
                                                  "KILL",
                                                  "status",
                                                  "signal",
                                                  "count",
                                                  "depth",
                                                  "description",
                                                  "/",
                                                  "*",
                                                  "a/b",
                                                  "/x/*.db",
                                                  "\"\"",
                                                  " ",
                                                  "\t",
                                                  "\r",
                                                  "\n",
                                                  std::string(1, '\0'),
                                                  "\x7f",
                                                  "\xc3\xa9",
                                                  "\xff",
                                                  "\x01"};
  return tokens;
}

// `text` changed by a few random edits; `splices` are the lines to splice in.
std::string Mutate(std::string text, const std::vector<std::string>& splices, std::mt19937& rng) {
  const std::vector<std::string>& tokens = FuzzTokens();
  const size_t mutations = 1 + Below(rng, 8);
  for (size_t m = 0; m < mutations; ++m) {
    switch (Below(rng, 6)) {
      case 0:  // a byte flipped, or replaced by any byte
        if (!text.empty()) {
          char& c = text[Below(rng, text.size())];
          c = Below(rng, 2) ? static_cast<char>(c ^ (1 << Below(rng, 8)))
                            : static_cast<char>(Below(rng, 256));
        }
        break;
      case 1:  // a token inserted, glued or between blanks
        text.insert(Below(rng, text.size() + 1),
                    Below(rng, 2) ? tokens[Below(rng, tokens.size())]
                                  : " " + tokens[Below(rng, tokens.size())] + " ");
        break;
      case 2:  // a few bytes deleted
        if (!text.empty()) {
          const size_t at = Below(rng, text.size());
          text.erase(at, 1 + Below(rng, 16));
        }
        break;
      case 3: {  // a line of a source spliced in at a line start
        size_t at = Below(rng, text.size() + 1);
        const size_t newline = text.rfind('\n', at == 0 ? 0 : at - 1);
        at = at == 0 || newline == std::string::npos ? 0 : newline + 1;
        text.insert(at, splices[Below(rng, splices.size())] + "\n");
        break;
      }
      case 4: {  // a line deleted or doubled
        std::vector<std::string> lines = Lines(text);
        if (lines.empty()) break;
        const size_t which = Below(rng, lines.size());
        if (Below(rng, 2)) {
          lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(which));
        } else {
          lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(which), lines[which]);
        }
        text.clear();
        for (const std::string& line : lines) text += line + "\n";
        break;
      }
      default:  // the text cut short, often mid-token or mid-string
        text.resize(Below(rng, text.size() + 1));
        break;
    }
  }
  return text;
}

std::string RandomText(std::mt19937& rng) {
  const std::vector<std::string>& tokens = FuzzTokens();
  std::string text;
  const size_t pieces = Below(rng, 120);
  const bool bytes_only = Below(rng, 4) == 0;
  for (size_t i = 0; i < pieces; ++i) {
    if (bytes_only) {
      text += static_cast<char>(Below(rng, 256));
    } else if (Below(rng, 3)) {
      text += tokens[Below(rng, tokens.size())];
      if (Below(rng, 2)) text += ' ';
    } else {
      text += static_cast<char>(' ' + Below(rng, 95));
    }
  }
  return text;
}

std::string Printable(const std::string& text) { return ::testing::PrintToString(text); }

TEST(ProfileParserFuzzTest, RandomInputsGiveLocatedErrorsOrRunnableRules) {
  std::vector<std::string> sources;
  for (const std::filesystem::path& file : ShippedFiles()) sources.push_back(ReadAll(file));
  ASSERT_GE(sources.size(), 5u);
  sources.push_back(
      "description \"a \\\"b\\\" \\\\ c\"\n"
      "on exec tar by make when depth > 0 and depth < 3 do begin nested private, commit\n"
      "on open write /data/*.db when count == 1 do begin private\n"
      "on close \"my file.txt\" do abort-if count != 0, abort\n"
      "on signal SIGINT when signal >= 2 do commit, abort\n"
      "on exit when status == 0 and signal != 1 do commit-if depth <= 2 and depth >= 0\n");
  // The checks themselves must hold for what is known good.
  for (const std::string& source : sources) ASSERT_EQ(CheckParse(source), "") << source;

  std::vector<std::string> splices;
  for (const std::string& source : sources) {
    for (std::string& line : Lines(source)) splices.push_back(std::move(line));
  }
  std::mt19937 rng(20240611);
  constexpr int kMutated = 16000, kRandom = 4000;
  int accepted = 0;
  for (int i = 0; i < kMutated; ++i) {
    const std::string input = Mutate(sources[Below(rng, sources.size())], splices, rng);
    bool ok = false;
    ASSERT_EQ(CheckParse(input, &ok), "") << "mutated input " << i << ": " << Printable(input);
    accepted += ok;
  }
  for (int i = 0; i < kRandom; ++i) {
    const std::string input = RandomText(rng);
    ASSERT_EQ(CheckParse(input), "") << "random input " << i << ": " << Printable(input);
  }
  // Mutations must leave some inputs valid, or the checks of valid rules go unexercised.
  EXPECT_GT(accepted, kMutated / 20);
}

}  // namespace
}  // namespace amino::monitor::profiles
