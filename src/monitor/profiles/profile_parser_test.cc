// Tests of the transaction-profile language (docs/profiles.md): the shipped profiles parse, a
// full example gives the expected rules, every error is located at FILE:LINE:COL with the
// line and column a user must fix, the matching helpers of profile.h follow the documented
// semantics, and profiles are found by name (or reported missing) as `amino run --profile` needs.
#include "monitor/profiles/profile_parser.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "monitor/profiles/profile.h"
#include "monitor/profiles/profile_library.h"
#include "monitor/profiles/profile_test_support.h"

namespace amino::monitor::profiles {
namespace {

using namespace testing;

// 1. What `amino profile list` shows and `--profile NAME` runs must be valid.

TEST(ShippedProfilesTest, EveryShippedProfileParses) {
  const std::vector<std::filesystem::path> files = ShippedFiles();
  EXPECT_GE(files.size(), 5u);
  for (const std::filesystem::path& file : files) {
    SCOPED_TRACE(file.string());
    const Parsed p = ReadProfile(file.string());
    EXPECT_TRUE(p.ok()) << Join(p.errors);
    EXPECT_EQ(p.profile.name, file.stem().string());
    EXPECT_EQ(p.profile.path, file.string());
    EXPECT_FALSE(p.profile.description.empty());
    EXPECT_FALSE(p.profile.rules.empty());
  }
}

// docs/profiles.md promises these names; a renamed or lost file breaks `--profile NAME`.
TEST(ShippedProfilesTest, TheDocumentedProfilesAreShipped) {
  std::set<std::string> names;
  for (const std::filesystem::path& file : ShippedFiles()) names.insert(file.stem().string());
  for (const char* documented : {"whole-program", "file-session", "per-command", "make", "tar",
                                 "tar-members", "cp", "procmail", "per-function", "passwd-tools"}) {
    EXPECT_TRUE(names.count(documented)) << documented;
  }
}

// 2. The language, every construct at once.

TEST(ProfileParserTest, FullExampleGivesTheExpectedRules) {
  const std::string text =
      "# A comment line, then a blank one.\n"
      "\n"
      "description \"says \\\"all\\\" or \\\\nothing\"  # a trailing comment\n"
      "on exec do begin\n"
      "  on exec tar by make when depth > 0 and depth < 3 do begin nested private, commit\n"
      "on exec \"/opt/my \\\"tool\\\"\" by \"/usr/bin/ma*\" do begin nested\n"
      "on exit when status == 0 and signal != -1 do commit-if depth <= 2 and depth >= 0\n"
      "on open write /data/*.db when count == 1 do begin private\n"
      "on open do begin private nested\n"
      "on close \"my file.txt\" do abort-if count != 0, abort\n"
      "on close write do commit\n"
      "\ton signal TERM do abort   \n"
      "on signal SIGINT when signal >= 2 do commit,abort , begin\n"
      "on exit by tar do abort-if status>=128\n";
  const Parsed p = ParseProfile(text, "ex.profile", "ex");
  ASSERT_TRUE(p.ok()) << Join(p.errors);
  EXPECT_EQ(p.profile.name, "ex");
  EXPECT_EQ(p.profile.path, "ex.profile");
  // \" gives a quote, \\ one backslash; the "n" after it stays a letter.
  EXPECT_EQ(p.profile.description, "says \"all\" or \\nothing");
  const std::string term = std::to_string(SIGTERM), sigint = std::to_string(SIGINT);
  const std::vector<std::string> expected = {
      "ex.profile:4:1 exec pattern=[] by=[] write=0 signal=0 when[] do[begin]",
      "ex.profile:5:3 exec pattern=[tar] by=[make] write=0 signal=0 when[depth > 0 and depth < 3] "
      "do[begin nested private, commit]",
      "ex.profile:6:1 exec pattern=[/opt/my \"tool\"] by=[/usr/bin/ma*] write=0 signal=0 when[] "
      "do[begin nested]",
      "ex.profile:7:1 exit pattern=[] by=[] write=0 signal=0 when[status == 0 and signal != -1] "
      "do[commit-if depth <= 2 and depth >= 0]",
      "ex.profile:8:1 open pattern=[/data/*.db] by=[] write=1 signal=0 when[count == 1] "
      "do[begin private]",
      "ex.profile:9:1 open pattern=[] by=[] write=0 signal=0 when[] do[begin nested private]",
      "ex.profile:10:1 close pattern=[my file.txt] by=[] write=0 signal=0 when[] "
      "do[abort-if count != 0, abort]",
      "ex.profile:11:1 close pattern=[] by=[] write=1 signal=0 when[] do[commit]",
      // Columns count bytes: a tab is one.
      "ex.profile:12:2 signal pattern=[] by=[] write=0 signal=" + term + " when[] do[abort]",
      "ex.profile:13:1 signal pattern=[] by=[] write=0 signal=" + sigint +
          " when[signal >= 2] do[commit, abort, begin]",
      // Operators need no blanks around them.
      "ex.profile:14:1 exit pattern=[] by=[tar] write=0 signal=0 when[] "
      "do[abort-if status >= 128]",
  };
  EXPECT_EQ(DumpRules(p.profile), expected);
}

// Windows line ends are blanks, not part of the last word.
TEST(ProfileParserTest, CarriageReturnsAreBlanks) {
  const Parsed p = ParseProfile("on exec tar do begin\r\non exit do commit\r\n", "crlf", "crlf");
  ASSERT_TRUE(p.ok()) << Join(p.errors);
  ASSERT_EQ(p.profile.rules.size(), 2u);
  EXPECT_EQ(p.profile.rules[0].event.pattern, "tar");
  EXPECT_EQ(p.profile.rules[1].where.line, 2);
}

// 3. Errors: the place a user must fix, and what was wrong.

struct BadLine {
  std::string line;
  int column;  // counted by hand
  std::string phrase;
};

TEST(ProfileParserTest, EachErrorNamesItsLineAndColumn) {
  const std::vector<BadLine> table = {
      {"on start do begin", 4,
       "expected an event (exec, exit, open, close, signal, call, return, conflict), found "
       "'start'"},
      {"on exit commit", 9, "expected 'by', 'when' or 'do', found 'commit'"},
      {"on exec by make commit", 17, "expected 'when' or 'do', found 'commit'"},
      {"on exit when depth > 1 commit", 24, "expected 'and' or 'do', found 'commit'"},
      {"on open when status == 0 do begin", 14, "'status' has no value at open"},
      {"on close do commit-if status == 0", 23, "'status' has no value at close"},
      {"on exit do commit-if count == 0", 22, "'count' has no value at exit"},
      {"on exec when signal > 0 do begin", 14, "'signal' has no value at exec"},
      {"on signal FOO do abort", 11, "unknown signal 'FOO'"},
      {"on conflict do retry", 16,
       "expected an action (begin, commit, abort, commit-if, "
       "abort-if, kill), found 'retry'"},
      {"on conflict when status == 1 do kill", 18, "'status' has no value at conflict"},
      {"on call do begin", 9, "expected a function name, found 'do'"},
      {"on return in libc.so.6 do commit", 11, "expected a function name, found 'in'"},
      {"on call f in do begin", 14, "expected a program or library pattern after 'in'"},
      {"on call f in lib/x.so do begin", 14, "a program pattern is an absolute path"},
      {"on call f when result > 0 do begin", 16, "'result' has no value at call"},
      {"on exit when result == 0 do abort", 14, "'result' has no value at exit"},
      {"on signal do abort", 11, "expected a signal name (TERM, SIGINT, ...), found 'do'"},
      {"on signal KILL do abort", 11, "SIGKILL and SIGSTOP reach a process before anyone"},
      {"on exec bin/tar do begin", 9, "a program pattern is an absolute path or a program name"},
      {"on exit by ./make do abort", 12, "a program pattern is an absolute path"},
      {"on signal", 10, "expected a signal name (TERM, SIGINT, ...), found the end of the line"},
      {"on exit when status == 99999999999999999999 do abort", 24, "number out of range"},
      {"on exit when status == x do abort", 24, "expected an integer, found 'x'"},
      {"on exit when status == 1x do abort", 24, "expected an integer, found '1x'"},
      {"on exit when status == \"1\" do abort", 24, "expected an integer, found \"1\""},
      {"on exit when status do abort", 21, "expected a comparison (==, !=, <, <=, >, >=)"},
      {"on exit when status = 0 do abort", 21, "unknown operator '='"},
      {"on exit when status ! 0 do abort", 21, "unknown operator '!'"},
      {"on exit when status === 0 do abort", 23, "unknown operator '='"},
      {"on exit when bogus == 0 do abort", 14, "expected status, signal, count, depth or result"},
      {"on exit when depth > 0 and do abort", 28,
       "expected status, signal, count, depth or result"},
      {"on exec \"tar do begin", 9, "unterminated string"},
      {"description \"ends with \\\"", 13, "unterminated string"},
      {"on open a/b do begin", 9, "a file pattern is an absolute path or a file name, not 'a/b'"},
      {"on close write \"x/y\" do commit", 16, "a file pattern is an absolute path or a file name"},
      {"description \"second\"", 13, "a second description"},
      {"description unquoted", 13, "expected a quoted description, found 'unquoted'"},
      {"description", 12, "expected a quoted description, found the end of the line"},
      {"on exec \"\" do begin", 9, "an empty pattern"},
      {"on open \"\" do begin", 9, "an empty pattern"},
      {"on exit by \"\" do abort", 12, "an empty pattern"},
      {"on exec by do begin", 12, "expected a program pattern after 'by', found 'do'"},
      {"on exit do abort junk", 18, "expected the end of the line, found 'junk'"},
      {"on exit do begin commit", 18, "expected the end of the line, found 'commit'"},
      {"on exit do rollback", 12,
       "expected an action (begin, commit, abort, commit-if, abort-if, kill)"},
      {"on exit do", 11, "expected an action"},
      {"on exit do begin,", 18, "expected an action (begin, commit, abort, ...), found the end"},
      {"on", 3, "expected an event"},
      {"exec do begin", 1, "expected 'on' or 'description', found 'exec'"},
      {"  \"on\" exit do begin", 3, "expected 'on' or 'description', found \"on\""},
      {"on exec\x01 do begin", 8, "unexpected control character"},
      // A tab is one column, as for the rules' locations.
      {"\t on exit do nope", 14, "expected an action"},
  };
  for (const BadLine& bad : table) {
    SCOPED_TRACE(bad.line);
    // A good description and rule before, so that the bad line is line 3 and nothing else fails.
    const std::string text = "description \"first\"\non exit do commit\n" + bad.line + "\n";
    const Parsed p = ParseProfile(text, "bad.profile", "bad");
    ASSERT_EQ(p.errors.size(), 1u) << Join(p.errors);
    const std::string prefix = "bad.profile:3:" + std::to_string(bad.column) + ": ";
    EXPECT_EQ(p.errors[0].substr(0, prefix.size()), prefix) << p.errors[0];
    EXPECT_NE(p.errors[0].find(bad.phrase), std::string::npos) << p.errors[0];
    // The bad line is skipped; the good rule before it stays.
    EXPECT_EQ(p.profile.rules.size(), 1u);
  }
}

// One pass reports every bad line, and the good lines between them still make rules.
TEST(ProfileParserTest, EveryBadLineIsReportedOnce) {
  const std::string text =
      "description \"d\"\n"                   // 1
      "on exec do begin\n"                    // 2
      "on nothing do begin\n"                 // 3: bad
      "on exit do commit\n"                   // 4
      "\n"                                    // 5
      "on open when status == 1 do begin\n"   // 6: bad
      "# on exec do begin\n"                  // 7
      "on close do commit junk  # comment\n"  // 8: bad
      "on signal TERM do abort\n"             // 9
      "on exec do begin, begin, \"x\n";       // 10: bad
  const Parsed p = ParseProfile(text, "many", "many");
  const std::vector<std::string> expected = {
      "many:3:4: expected an event (exec, exit, open, close, signal, call, return, conflict), "
      "found "
      "'nothing'",
      "many:6:14: 'status' has no value at open (status: exit; signal: exit, signal; count: "
      "open, close; result: return; depth: every event)",
      "many:8:20: expected the end of the line, found 'junk'",
      "many:10:26: unterminated string (a string ends with '\"' on the same line)",
  };
  EXPECT_EQ(p.errors, expected);
  std::vector<int> lines;
  for (const Rule& r : p.profile.rules) lines.push_back(r.where.line);
  EXPECT_EQ(lines, (std::vector<int>{2, 4, 9}));
}

TEST(ProfileParserTest, NoRulesIsAnErrorAfterTheLastLine) {
  Parsed p = ParseProfile("# only a comment\ndescription \"x\"\n", "empty", "empty");
  ASSERT_EQ(p.errors.size(), 1u) << Join(p.errors);
  EXPECT_EQ(p.errors[0].rfind("empty:3:1: no rules", 0), 0u) << p.errors[0];
  p = ParseProfile("", "empty", "empty");
  ASSERT_EQ(p.errors.size(), 1u) << Join(p.errors);
  EXPECT_EQ(p.errors[0].rfind("empty:1:1: no rules", 0), 0u) << p.errors[0];
}

// A NUL is reported wherever it is, even where the tokenizer skips it (a string, a comment):
// a binary file given by mistake must not pass.
TEST(ProfileParserTest, NulByteIsReported) {
  for (const std::string& text : {std::string("on exec do begin # \0\n", 21),
                                  std::string("description \"a\0b\"\non exit do abort\n", 35),
                                  std::string("on exec do begin\non exit do commit\0\n", 36)}) {
    SCOPED_TRACE(::testing::PrintToString(text));
    const Parsed p = ParseProfile(text, "nul", "nul");
    EXPECT_FALSE(p.ok());
    EXPECT_NE(std::find(p.errors.begin(), p.errors.end(), std::string("nul") + kNulMessage),
              p.errors.end())
        << Join(p.errors);
  }
  // Outside strings and comments, it is also located.
  const Parsed p =
      ParseProfile(std::string("on exec do begin\non exit do commit\0\n", 36), "nul", "nul");
  EXPECT_NE(std::find(p.errors.begin(), p.errors.end(), "nul:2:18: unexpected control character"),
            p.errors.end())
      << Join(p.errors);
}

// An empty first description is a description too: a second one is an error, not a silent
// replacement.
TEST(ProfileParserTest, SecondDescriptionAfterAnEmptyOneIsAnError) {
  const Parsed p =
      ParseProfile("description \"\"\ndescription \"x\"\non exit do commit\n", "two", "two");
  ASSERT_EQ(p.errors.size(), 1u) << Join(p.errors);
  EXPECT_EQ(p.errors[0].rfind("two:2:13: a second description", 0), 0u) << p.errors[0];
}

// 4. The semantics the monitor applies to parsed rules.

TEST(ProfileSemanticsTest, MatchesPath) {
  struct Case {
    const char* pattern;
    const char* path;
    bool matches;
  };
  const Case cases[] = {
      // Without '/': the last component only.
      {"tar", "/usr/bin/tar", true},
      {"tar", "/usr/bin/star", false},
      {"tar", "/tar/bin/x", false},
      {"*.db", "/a/b/c.db", true},
      {"*.db", "/a/b.db/c", false},
      {"t?r", "/bin/tar", true},
      {"[st]ar", "/bin/sar", true},
      {"[st]ar", "/bin/bar", false},
      // With '/': the whole path.
      {"/usr/bin/tar", "/usr/bin/tar", true},
      {"/bin/tar", "/usr/bin/tar", false},
      {"/usr/bin/tar", "/usr/bin/tar/x", false},
      {"/data/*.db", "/data/x.db", true},
      // ... where '*' crosses '/', so a tree is one pattern.
      {"/data/*", "/data/a/b/c", true},
      {"/data/*.db", "/data/x/y.db", true},
      {"/data/*.db", "/other/x.db", false},
      // "" matches any.
      {"", "/any/thing", true},
      {"", "", true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(MatchesPath(c.pattern, c.path), c.matches)
        << "pattern '" << c.pattern << "' path '" << c.path << "'";
  }
}

TEST(ProfileSemanticsTest, HoldsForEachOperator) {
  struct Case {
    Compare op;
    int64_t value, actual;
    bool holds;
  };
  const Case cases[] = {
      {Compare::kEq, 0, 0, true},  {Compare::kEq, 0, 1, false},    {Compare::kNe, 0, 1, true},
      {Compare::kNe, 3, 3, false}, {Compare::kLt, 3, 2, true},     {Compare::kLt, 3, 3, false},
      {Compare::kLe, 3, 3, true},  {Compare::kLe, 3, 4, false},    {Compare::kGt, 0, 1, true},
      {Compare::kGt, 0, 0, false}, {Compare::kGe, 128, 128, true}, {Compare::kGe, 128, 127, false},
      {Compare::kLt, 0, -1, true},  // values are signed
  };
  for (const Case& c : cases) {
    const Comparison cmp{Variable::kStatus, c.op, c.value};
    EXPECT_EQ(Holds(cmp, c.actual), c.holds) << c.actual << " " << OpName(c.op) << " " << c.value;
  }
}

TEST(ProfileSemanticsTest, ConditionHoldsWhenAllComparisonsDo) {
  Values v;
  v.status = 1;
  v.signal = 15;
  v.count = 2;
  v.depth = 3;
  EXPECT_TRUE(Holds(Condition{}, v));  // no `when`: always
  const Condition each_variable{{{Variable::kStatus, Compare::kEq, 1},
                                 {Variable::kSignal, Compare::kEq, 15},
                                 {Variable::kCount, Compare::kEq, 2},
                                 {Variable::kDepth, Compare::kEq, 3}}};
  EXPECT_TRUE(Holds(each_variable, v));
  for (size_t i = 0; i < each_variable.all.size(); ++i) {
    Condition one_false = each_variable;
    one_false.all[i].value += 100;
    EXPECT_FALSE(Holds(one_false, v)) << VariableName(one_false.all[i].variable);
  }
}

// The table of docs/profiles.md: which events give which variables a value.
TEST(ProfileSemanticsTest, HasVariable) {
  struct Case {
    EventKind kind;
    bool status, signal, count, depth, result;
  };
  const Case cases[] = {
      {EventKind::kExec, false, false, false, true, false},
      {EventKind::kExit, true, true, false, true, false},
      {EventKind::kOpen, false, false, true, true, false},
      {EventKind::kClose, false, false, true, true, false},
      {EventKind::kSignal, false, true, false, true, false},
      {EventKind::kCall, false, false, false, true, false},
      {EventKind::kReturn, false, false, false, true, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(EventName(c.kind));
    EXPECT_EQ(HasVariable(c.kind, Variable::kStatus), c.status);
    EXPECT_EQ(HasVariable(c.kind, Variable::kSignal), c.signal);
    EXPECT_EQ(HasVariable(c.kind, Variable::kCount), c.count);
    EXPECT_EQ(HasVariable(c.kind, Variable::kDepth), c.depth);
    EXPECT_EQ(HasVariable(c.kind, Variable::kResult), c.result);
  }
}

// 5. Finding and reading profile files.

TEST(ProfileFilesTest, MissingFileIsOneErrorNamingIt) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/absent.profile";
  const Parsed p = ReadProfile(path);
  ASSERT_EQ(p.errors.size(), 1u) << Join(p.errors);
  EXPECT_EQ(p.errors[0], path + ": No such file or directory");
}

TEST(ProfileFilesTest, DirectoryIsOneErrorNamingIt) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const Parsed p = ReadProfile(dir.path());
  ASSERT_EQ(p.errors.size(), 1u) << Join(p.errors);
  EXPECT_EQ(p.errors[0], dir.path() + ": not a regular file");
}

TEST(ProfileFilesTest, ReadProfileNamesTheProfileAfterItsFile) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.Write("mine.profile", "on exec do begin\nnonsense\n");
  const Parsed p = ReadProfile(path);
  EXPECT_EQ(p.profile.name, "mine");
  // Errors name the path the user gave, so that an editor can open it.
  EXPECT_EQ(p.errors, (std::vector<std::string>{path + ":2:1: expected 'on' or 'description', "
                                                       "found 'nonsense'"}));
}

TEST(ProfileFilesTest, UnknownNameSaysWhereToLook) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  ScopedProfilePath env(dir.path());
  const Parsed p = FindProfile("no-such-profile");
  ASSERT_EQ(p.errors.size(), 1u) << Join(p.errors);
  EXPECT_NE(p.errors[0].find("'no-such-profile'"), std::string::npos) << p.errors[0];
  EXPECT_NE(p.errors[0].find("'amino profile list'"), std::string::npos) << p.errors[0];
  EXPECT_NE(p.errors[0].find(dir.path()), std::string::npos) << p.errors[0];
}

TEST(ProfileFilesTest, NamesAreFoundInProfilePathFirst) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string own = dir.Write("cp.profile", "description \"mine\"\non exit do abort\n");
  ScopedProfilePath env(dir.path() + ":" + AMINO_SHIPPED_PROFILES);
  Parsed p = FindProfile("cp");  // $AMINO_PROFILE_PATH before the shipped one
  EXPECT_TRUE(p.ok()) << Join(p.errors);
  EXPECT_EQ(p.profile.path, own);
  EXPECT_EQ(p.profile.description, "mine");
  p = FindProfile("whole-program");  // the next directory when the first has none
  EXPECT_TRUE(p.ok()) << Join(p.errors);
  EXPECT_EQ(p.profile.path, std::string(AMINO_SHIPPED_PROFILES) + "/whole-program.profile");
  p = FindProfile(own);  // a path is a file, not a name
  EXPECT_EQ(p.profile.path, own);
}

}  // namespace
}  // namespace amino::monitor::profiles
