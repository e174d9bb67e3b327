#include "monitor/profiles/profile_parser.h"

#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace amino::monitor::profiles {
namespace {

struct Token {
  enum class Kind { kWord, kString, kOperator, kComma, kEnd } kind = Kind::kEnd;
  std::string text;
  int column = 0;
};

std::string Describe(const Token& t) {
  switch (t.kind) {
    case Token::Kind::kWord:
    case Token::Kind::kOperator:
      return "'" + t.text + "'";
    case Token::Kind::kString:
      return "\"" + t.text + "\"";
    case Token::Kind::kComma:
      return "','";
    case Token::Kind::kEnd:
      return "the end of the line";
  }
  return "?";
}

// The tokens of one line (its comment dropped); false with *error set on a bad character or an
// unterminated string.
bool Tokenize(const std::string& line, std::vector<Token>* out, std::string* error, int* col) {
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') break;
    Token t;
    t.column = static_cast<int>(i) + 1;
    if (c == '"') {
      t.kind = Token::Kind::kString;
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '\\' && i + 1 < line.size() && (line[i + 1] == '"' || line[i + 1] == '\\')) {
          t.text += line[i + 1];
          i += 2;
        } else if (line[i] == '"') {
          ++i;
          closed = true;
          break;
        } else {
          t.text += line[i++];
        }
      }
      if (!closed) {
        *col = t.column;
        *error = "unterminated string (a string ends with '\"' on the same line)";
        return false;
      }
    } else if (c == ',') {
      t.kind = Token::Kind::kComma;
      t.text = ",";
      ++i;
    } else if (c == '=' || c == '!' || c == '<' || c == '>') {
      t.kind = Token::Kind::kOperator;
      t.text = c;
      ++i;
      if (i < line.size() && line[i] == '=') t.text += line[i++];
      if (t.text == "=" || t.text == "!") {
        *col = t.column;
        *error = "unknown operator '" + t.text +
                 "' (==, !=, <, <=, >, >=; a pattern holding '=' or '!' is written in quotes)";
        return false;
      }
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      *col = t.column;
      *error = "unexpected control character";
      return false;
    } else {
      t.kind = Token::Kind::kWord;
      while (i < line.size() && !strchr(" \t\r#\",=!<>", line[i]) &&
             static_cast<unsigned char>(line[i]) >= 0x20 && line[i] != 0x7f) {
        t.text += line[i++];
      }
    }
    out->push_back(std::move(t));
  }
  Token end;
  end.column = static_cast<int>(line.size()) + 1;
  out->push_back(end);
  return true;
}

// Parses one statement; throws nothing, reports through `fail`.
class LineParser {
 public:
  // `described`: whether an earlier line gave the description (an empty one counts).
  LineParser(const std::vector<Token>& tokens, Profile& profile, Location where, bool& described)
      : tokens_(tokens), profile_(profile), where_(std::move(where)), described_(described) {}

  // Empty on success; else the error, with *column where it is.
  std::string Parse(int* column) {
    const std::string error = Statement();
    *column = error_column_;
    return error;
  }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool PeekWord(const char* word) const {
    return Peek().kind == Token::Kind::kWord && Peek().text == word;
  }
  std::string Fail(const Token& at, const std::string& message) {
    error_column_ = at.column;
    return message;
  }
  std::string Expected(const std::string& what) {
    return Fail(Peek(), "expected " + what + ", found " + Describe(Peek()));
  }

  std::string Statement() {
    if (Peek().kind == Token::Kind::kEnd) return "";
    if (PeekWord("description")) {
      Next();
      if (Peek().kind != Token::Kind::kString) return Expected("a quoted description");
      if (described_) return Fail(Peek(), "a second description");
      described_ = true;
      profile_.description = Next().text;
      return End();
    }
    if (!PeekWord("on")) return Expected("'on' or 'description'");
    Rule rule;
    rule.where = where_;
    rule.where.column = Next().column;
    if (std::string e = ParseEvent(&rule.event); !e.empty()) return e;
    if (PeekWord("by")) {
      Next();
      if (!PatternAhead()) return Expected("a program pattern after 'by'");
      if (std::string e = ParsePattern(EventKind::kExec, &rule.event.program); !e.empty()) {
        return e;
      }
    }
    if (PeekWord("when")) {
      Next();
      if (std::string e = ParseCondition(rule.event.kind, &rule.when); !e.empty()) return e;
    }
    if (!PeekWord("do")) {
      return Expected(!rule.when.all.empty()        ? "'and' or 'do'"
                      : !rule.event.program.empty() ? "'when' or 'do'"
                                                    : "'by', 'when' or 'do'");
    }
    Next();
    for (;;) {
      Action a;
      const Token& at = Peek();
      if (std::string e = ParseAction(rule.event.kind, &a); !e.empty()) return e;
      if (a.private_ &&
          (rule.event.kind == EventKind::kCall || rule.event.kind == EventKind::kReturn)) {
        return Fail(at,
                    "'begin private' at a function's call or return: a call's transaction "
                    "is its thread's own already");
      }
      rule.actions.push_back(std::move(a));
      if (Peek().kind != Token::Kind::kComma) break;
      Next();
    }
    if (std::string e = End(); !e.empty()) return e;
    profile_.rules.push_back(std::move(rule));
    return "";
  }

  std::string End() {
    if (Peek().kind != Token::Kind::kEnd) return Expected("the end of the line");
    return "";
  }

  // A pattern: a word or a string that is not one of the rule's keywords.
  bool PatternAhead() const {
    if (Peek().kind == Token::Kind::kString) return true;
    return Peek().kind == Token::Kind::kWord && Peek().text != "when" && Peek().text != "do" &&
           Peek().text != "by";
  }

  std::string ParsePattern(EventKind kind, std::string* pattern) {
    const Token& t = Next();
    const char* what = kind == EventKind::kExec ? "program" : "file";
    if (t.text.empty()) {
      return Fail(t, std::string("an empty pattern (omit it to match every ") + what + ")");
    }
    if (t.text[0] != '/' && t.text.find('/') != std::string::npos) {
      return Fail(t, std::string("a ") + what + " pattern is an absolute path or a " + what +
                         " name, not '" + t.text + "'");
    }
    *pattern = t.text;
    return "";
  }

  std::string ParseEvent(Event* e) {
    const Token& t = Peek();
    if (t.kind != Token::Kind::kWord) {
      return Expected("an event (exec, exit, open, close, signal, call, return, conflict)");
    }
    if (t.text == "exec") {
      e->kind = EventKind::kExec;
      Next();
      if (PatternAhead()) return ParsePattern(e->kind, &e->pattern);
      return "";
    }
    if (t.text == "exit" || t.text == "conflict") {
      e->kind = t.text == "exit" ? EventKind::kExit : EventKind::kConflict;
      Next();
      return "";
    }
    if (t.text == "open" || t.text == "close") {
      e->kind = t.text == "open" ? EventKind::kOpen : EventKind::kClose;
      Next();
      if (PeekWord("write")) {
        Next();
        e->writing = true;
      }
      if (PatternAhead()) return ParsePattern(e->kind, &e->pattern);
      return "";
    }
    if (t.text == "signal") {
      e->kind = EventKind::kSignal;
      Next();
      if (Peek().kind != Token::Kind::kWord || PeekWord("do") || PeekWord("when") ||
          PeekWord("by")) {
        return Expected("a signal name (TERM, SIGINT, ...)");
      }
      e->signal = SignalNumber(Peek().text);
      if (e->signal == 0) return Fail(Peek(), "unknown signal '" + Peek().text + "'");
      if (e->signal == SIGKILL || e->signal == SIGSTOP) {
        return Fail(Peek(), "SIGKILL and SIGSTOP reach a process before anyone can see them");
      }
      Next();
      return "";
    }
    if (t.text == "call" || t.text == "return") {
      e->kind = t.text == "call" ? EventKind::kCall : EventKind::kReturn;
      Next();
      if (!PatternAhead() || PeekWord("in")) return Expected("a function name");
      e->pattern = Next().text;
      if (e->pattern.empty()) return Fail(Peek(), "an empty function name");
      if (PeekWord("in")) {
        Next();
        if (!PatternAhead()) return Expected("a program or library pattern after 'in'");
        if (std::string err = ParsePattern(EventKind::kExec, &e->object); !err.empty()) {
          return err;
        }
      }
      return "";
    }
    return Expected("an event (exec, exit, open, close, signal, call, return, conflict)");
  }

  static int SignalNumber(std::string name) {
    if (name.rfind("SIG", 0) == 0) name = name.substr(3);
    for (int sig = 1; sig < 32; ++sig) {
      const char* abbrev = sigabbrev_np(sig);
      if (abbrev && name == abbrev) return sig;
    }
    return 0;
  }

  std::string ParseCondition(EventKind kind, Condition* c) {
    for (;;) {
      Comparison cmp;
      const Token& var = Peek();
      if (var.kind != Token::Kind::kWord) return Expected("status, signal, count, depth or result");
      std::optional<Variable> v;
      for (Variable each : {Variable::kStatus, Variable::kSignal, Variable::kCount,
                            Variable::kDepth, Variable::kResult}) {
        if (var.text == VariableName(each)) v = each;
      }
      if (!v) return Expected("status, signal, count, depth or result");
      if (!HasVariable(kind, *v)) {
        return Fail(var, std::string("'") + VariableName(*v) + "' has no value at " +
                             EventName(kind) + " (status: exit; signal: exit, signal; count: " +
                             "open, close; result: return; depth: every event)");
      }
      cmp.variable = *v;
      Next();
      const Token& op = Peek();
      if (op.kind != Token::Kind::kOperator) return Expected("a comparison (==, !=, <, <=, >, >=)");
      cmp.op = op.text == "=="   ? Compare::kEq
               : op.text == "!=" ? Compare::kNe
               : op.text == "<"  ? Compare::kLt
               : op.text == "<=" ? Compare::kLe
               : op.text == ">"  ? Compare::kGt
                                 : Compare::kGe;
      Next();
      const Token& num = Peek();
      if (num.kind != Token::Kind::kWord) return Expected("an integer");
      const char* first = num.text.data();
      const char* last = first + num.text.size();
      auto [end, ec] = std::from_chars(first, last, cmp.value);
      if (num.kind != Token::Kind::kWord || num.text.empty() || ec != std::errc() || end != last) {
        if (ec == std::errc::result_out_of_range) return Fail(num, "number out of range");
        return Expected("an integer");
      }
      Next();
      c->all.push_back(cmp);
      if (!PeekWord("and")) return "";
      Next();
    }
  }

  std::string ParseAction(EventKind kind, Action* a) {
    const Token& t = Peek();
    if (t.kind != Token::Kind::kWord) return Expected("an action (begin, commit, abort, ...)");
    if (t.text == "begin") {
      a->kind = Action::Kind::kBegin;
      Next();
      for (;;) {
        if (PeekWord("nested") && !a->nested) {
          a->nested = true;
        } else if (PeekWord("private") && !a->private_) {
          a->private_ = true;
        } else {
          return "";
        }
        Next();
      }
    }
    if (t.text == "commit" || t.text == "abort" || t.text == "kill") {
      a->kind = t.text == "commit"  ? Action::Kind::kCommit
                : t.text == "abort" ? Action::Kind::kAbort
                                    : Action::Kind::kKill;
      Next();
      return "";
    }
    if (t.text == "commit-if" || t.text == "abort-if") {
      a->kind = t.text == "commit-if" ? Action::Kind::kCommitIf : Action::Kind::kAbortIf;
      Next();
      return ParseCondition(kind, &a->condition);
    }
    return Expected("an action (begin, commit, abort, commit-if, abort-if, kill)");
  }

  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  Profile& profile_;
  Location where_;
  int error_column_ = 1;
  bool& described_;
};

}  // namespace

Parsed ParseProfile(const std::string& text, const std::string& file, const std::string& name) {
  Parsed parsed;
  parsed.profile.name = name;
  parsed.profile.path = file;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  bool described = false;
  while (std::getline(in, line)) {
    ++number;
    Location where{file, number, 1};
    std::vector<Token> tokens;
    std::string error;
    int column = 1;
    if (Tokenize(line, &tokens, &error, &column)) {
      error = LineParser(tokens, parsed.profile, where, described).Parse(&column);
    }
    if (!error.empty()) {
      where.column = column;
      parsed.errors.push_back(where.ToString() + ": " + error);
    }
  }
  if (text.find('\0') != std::string::npos) {
    parsed.errors.push_back(file + ": a NUL byte (a profile is a text file)");
  }
  if (parsed.errors.empty() && parsed.profile.rules.empty()) {
    parsed.errors.push_back(file + ":" + std::to_string(number + 1) +
                            ":1: no rules (a profile needs at least one 'on ... do ...' line)");
  }
  return parsed;
}

Parsed ReadProfile(const std::string& path) {
  Parsed failed;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    failed.errors.push_back(path + ": " + std::strerror(errno));
    return failed;
  }
  if (!S_ISREG(st.st_mode)) {
    failed.errors.push_back(path + ": not a regular file");
    return failed;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    failed.errors.push_back(path + ": " + std::strerror(errno));
    return failed;
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::string name = path.substr(path.rfind('/') + 1);
  if (name.size() > 8 && name.compare(name.size() - 8, 8, ".profile") == 0) {
    name.resize(name.size() - 8);
  }
  return ParseProfile(text.str(), path, name);
}

}  // namespace amino::monitor::profiles
