#include "monitor/changed_root.h"

namespace amino::monitor {

namespace {

bool IsRoot(std::string_view root) { return root.empty() || root == "/"; }

}  // namespace

std::string HostPathInRoot(std::string_view root, std::string_view path, bool keep_climbs) {
  if (IsRoot(root)) return std::string(path);
  std::string out(root);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  // Depth below the root that the kept components reach; a ".." at depth 0 is the root's own.
  long depth = 0;
  bool named = false;  // a name came before: the walk may be below the root despite `depth`
  size_t at = 0;
  while (at < path.size()) {
    size_t end = path.find('/', at);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view c = path.substr(at, end - at);
    at = end + 1;
    if (c.empty() || c == ".") {
      // Kept only at the end: a final "." or slash means to the call what it means natively.
      if (end == path.size() && c == ".") out += "/.";
      continue;
    }
    if (c == "..") {
      if (depth == 0 && !(keep_climbs && named)) continue;
      if (depth > 0) --depth;
    } else {
      ++depth;
      named = true;
    }
    out += '/';
    out += c;
  }
  if (path.size() > 1 && path.back() == '/') out += '/';
  return out;
}

std::optional<std::string> PathFromRoot(std::string_view root, std::string_view host) {
  if (IsRoot(root)) return std::string(host);
  std::string_view r = root;
  while (r.size() > 1 && r.back() == '/') r.remove_suffix(1);
  if (!host.starts_with(r)) return std::nullopt;
  const std::string_view rest = host.substr(r.size());
  if (rest.empty()) return std::string("/");
  if (rest[0] != '/') return std::nullopt;  // "/ab" is not below "/a"
  return std::string(rest);
}

std::string CwdFromRoot(std::string_view root, std::string_view host) {
  if (auto in = PathFromRoot(root, host)) return *in;
  return "(unreachable)" + std::string(host);
}

}  // namespace amino::monitor
