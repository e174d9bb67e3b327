// Lexical path operations (see lexical_path.h).
#include "monitor/mounts/lexical_path.h"

namespace amino::monitor::mounts {

bool ComponentCursor::Next() {
  size_t b = path_.find_first_not_of('/', end_);
  if (b == std::string_view::npos) {
    begin_ = end_ = path_.size();
    return false;
  }
  size_t e = path_.find('/', b);
  begin_ = b;
  end_ = e == std::string_view::npos ? path_.size() : e;
  return true;
}

void PathStack::Push(std::string_view name) {
  if (path_.size() > 1) path_.push_back('/');
  path_.append(name);
}

void PathStack::Pop() {
  size_t slash = path_.rfind('/');
  path_.resize(slash == 0 ? 1 : slash);
}

void PathStack::Apply(std::string_view component) {
  if (component == ".") return;
  if (component == "..") {
    Pop();
    return;
  }
  Push(component);
}

bool IsNormalAbsolute(std::string_view path) {
  if (path.empty() || path[0] != '/') return false;
  if (path.size() == 1) return true;
  if (path.back() == '/') return false;
  ComponentCursor c(path);
  size_t expected = 1;  // each component starts right after exactly one slash
  while (c.Next()) {
    if (c.begin() != expected || c.name() == "." || c.name() == "..") return false;
    expected = c.end() + 1;
  }
  return true;
}

std::string NormalizeAbsolute(std::string_view path) {
  PathStack stack;
  ComponentCursor c(path);
  while (c.Next()) stack.Apply(c.name());
  return stack.path();
}

bool IsWithin(std::string_view path, std::string_view dir) {
  if (dir.size() == 1) return true;  // everything is within "/"
  if (path.size() < dir.size() || path.substr(0, dir.size()) != dir) return false;
  return path.size() == dir.size() || path[dir.size()] == '/';
}

std::string_view RemainderBelow(std::string_view path, std::string_view dir) {
  if (dir.size() == 1) return path;
  if (path.size() == dir.size()) return "/";
  return path.substr(dir.size());
}

std::string JoinNormal(std::string_view dir, std::string_view rest) {
  PathStack stack(dir);
  ComponentCursor c(rest);
  while (c.Next()) stack.Apply(c.name());
  return stack.path();
}

}  // namespace amino::monitor::mounts
