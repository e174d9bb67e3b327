// Lexical operations on host paths: a path is a sequence of components separated by one or
// more slashes, and "." and ".." are evaluated on a stack of components without asking the
// kernel (DESIGN.md §2). A *normal* absolute path starts with "/", has no empty, "." or ".."
// component and no trailing slash ("/" itself is normal).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace amino::monitor::mounts {

inline constexpr size_t kPathMax = 4096;  // PATH_MAX: a path argument's bytes plus its NUL
inline constexpr size_t kNameMax = 255;   // NAME_MAX: the bytes of one component

// Walks the non-empty components of a path in order.
class ComponentCursor {
 public:
  explicit ComponentCursor(std::string_view path) : path_(path) {}
  // Moves to the next component; false when there is none left.
  bool Next();
  std::string_view name() const { return path_.substr(begin_, end_ - begin_); }
  size_t begin() const { return begin_; }  // offset of the current component in the path
  size_t end() const { return end_; }      // offset just past it
  // True when no component follows the current one (only slashes, if anything).
  bool AtLast() const { return path_.find_first_not_of('/', end_) == std::string_view::npos; }

 private:
  std::string_view path_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

// A normal absolute path built one component at a time: "." is no change, ".." drops the last
// component and stays at "/" when there is none (as the kernel does at the root).
class PathStack {
 public:
  // `normal` must be a normal absolute path.
  explicit PathStack(std::string_view normal = "/") : path_(normal) {}
  void Push(std::string_view name);  // one component, neither "." nor ".." nor empty
  void Pop();
  // Applies one component: ".", ".." or a name.
  void Apply(std::string_view component);
  const std::string& path() const { return path_; }
  bool at_root() const { return path_.size() == 1; }

 private:
  std::string path_;
};

bool IsNormalAbsolute(std::string_view path);
// The normal form of an absolute path (`path` must start with "/").
std::string NormalizeAbsolute(std::string_view path);
// True when the normal absolute path `path` is `dir` or lies below it, comparing whole
// components: "/a/b" is within "/a", "/a2" is not.
bool IsWithin(std::string_view path, std::string_view dir);
// For `path` within `dir` (both normal): the rest below `dir` as a path starting with "/"
// ("/" for `dir` itself).
std::string_view RemainderBelow(std::string_view path, std::string_view dir);
// The normal absolute path `dir` followed by the relative path `rest` (normalised).
std::string JoinNormal(std::string_view dir, std::string_view rest);

}  // namespace amino::monitor::mounts
