// Classifying path arguments (see path_resolver.h).
#include "monitor/mounts/path_resolver.h"

#include "monitor/mounts/lexical_path.h"

namespace amino::monitor::mounts {

namespace {

bool EndsWithSlash(std::string_view s) { return !s.empty() && s.back() == '/'; }

// Appends `s` to `out` with every run of slashes as one, also across the seam.
void AppendCollapsed(std::string* out, std::string_view s) {
  for (char ch : s) {
    if (ch == '/' && !out->empty() && out->back() == '/') continue;
    out->push_back(ch);
  }
}

// A path inside `mount`: the normal mount-relative directory `dir` followed by `rest` as
// written (relative; empty for `dir` itself).
Result<ClassifiedPath> InMount(const Mount& mount, std::string_view dir, std::string_view rest,
                               bool trailing_slash) {
  ClassifiedPath r;
  r.kind = ClassifiedPath::Kind::kAmino;
  r.mount = &mount;
  r.trailing_slash = trailing_slash;
  r.path.reserve(dir.size() + rest.size() + 1);
  r.path.assign(dir.empty() ? std::string_view("/") : dir);
  if (!rest.empty()) {
    if (r.path.back() != '/') r.path.push_back('/');
    AppendCollapsed(&r.path, rest);
  }
  // No limit on the whole: PATH_MAX bounds the argument (checked by Classify), not the path a
  // walk from a deep directory reaches.
  return r;
}

// The walk on the host from the normal absolute directory `start` (outside every mount, or
// the mount point being left) along `path`. `substitute`: the kernel cannot be given `path`
// as it is, so a host result carries the path to give it instead.
Result<ClassifiedPath> HostWalk(const MountTable& table, std::string_view start,
                                std::string_view path, bool substitute) {
  PathStack stack(start);
  int named = 0;  // components of `path` now on the stack
  // The last ".." that cancelled a component of `path`: where it ends, and where it led.
  size_t check_end = 0;
  std::string check_expect;
  std::string_view final_literal;
  ClassifiedPath r;
  ComponentCursor c(path);
  while (c.Next()) {
    std::string_view name = c.name();
    if (name == "." || name == "..") {
      if (substitute && c.AtLast()) {
        final_literal = name;  // kept for the kernel's rules on a last "." or ".."
        break;
      }
      if (name == "..") {
        // Popping never enters a mount: the ancestors of a place outside every mount are
        // outside too.
        stack.Pop();
        if (named > 0) {
          --named;
          check_end = c.end();
          check_expect = stack.path();
        }
      }
      continue;
    }
    stack.Push(name);
    ++named;
    if (const Mount* m = table.AtPoint(stack.path())) {
      AMINO_ASSIGN_OR_RETURN(r, InMount(*m, "/", path.substr(c.end()), EndsWithSlash(path)));
      break;
    }
  }
  if (!r.is_amino()) {
    r.trailing_slash = EndsWithSlash(path);
    if (substitute) {
      r.path = stack.path();
      if (!final_literal.empty()) {
        if (r.path.size() > 1) r.path.push_back('/');
        r.path.append(final_literal);
      }
      if (r.trailing_slash && r.path.back() != '/') r.path.push_back('/');
      if (r.path.size() >= kPathMax) return Status::Errno(ENAMETOOLONG);
    } else {
      r.unchanged = true;
    }
  }
  r.from_escape = substitute;
  if (check_end > 0) {
    if (path[0] != '/') {
      r.check_path.assign(start);
      if (r.check_path.size() > 1) r.check_path.push_back('/');
    }
    r.check_path.append(path.substr(0, check_end));
    r.check_expect = std::move(check_expect);
    r.check_rest = check_end;
  }
  return r;
}

// Continues a walk from the host directory `dir` (normal absolute) along `rest`.
Result<ClassifiedPath> WalkFrom(const MountTable& table, std::string_view dir,
                                std::string_view rest, bool substitute) {
  if (std::optional<MountMatch> in = table.Find(dir)) {
    AMINO_ASSIGN_OR_RETURN(ClassifiedPath r,
                           InMount(*in->mount, in->rel, rest, EndsWithSlash(rest)));
    r.from_escape = substitute;
    return r;
  }
  return HostWalk(table, dir, rest, substitute);
}

}  // namespace

Result<ClassifiedPath> PathResolver::Classify(const PathBase& base, std::string_view path,
                                              bool empty_path_ok) const {
  if (path.size() >= kPathMax) return Status::Errno(ENAMETOOLONG);
  if (path.empty()) {
    if (!empty_path_ok) return Status::Errno(ENOENT);
    if (base.is_virtual()) return InMount(*base.mount(), base.path(), "", false);
    // The call is on the host descriptor itself, wherever it lies.
    ClassifiedPath r;
    r.unchanged = true;
    return r;
  }
  if (path[0] == '/') return HostWalk(table_, "/", path, false);
  if (base.is_virtual()) return InMount(*base.mount(), base.path(), path, EndsWithSlash(path));

  std::string normal;
  std::string_view dir = base.path();
  if (!IsNormalAbsolute(dir)) {
    if (dir.empty() || dir[0] != '/') return Status::Errno(EINVAL);
    normal = NormalizeAbsolute(dir);
    dir = normal;
  }
  return WalkFrom(table_, dir, path, false);
}

Result<ClassifiedPath> PathResolver::ContinueOnHost(const Mount& mount,
                                                    std::string_view escaped) const {
  if (escaped.empty()) return Status::Errno(ENOENT);
  return HostWalk(table_, escaped[0] == '/' ? std::string_view("/") : mount.host_point, escaped,
                  true);
}

Result<ClassifiedPath> PathResolver::Recheck(const ClassifiedPath& r, std::string_view kernel_dir,
                                             std::string_view walked) const {
  if (kernel_dir.empty() || kernel_dir[0] != '/' || r.check_rest > walked.size()) {
    return Status::Errno(EINVAL);
  }
  // The rest is relative to the kernel's directory, whatever slashes followed the "..": walked
  // as an absolute path, its own ".." checks would name paths from "/".
  std::string_view rest = walked.substr(r.check_rest);
  if (const size_t first = rest.find_first_not_of('/'); first != std::string_view::npos) {
    rest.remove_prefix(first);
  }
  return WalkFrom(table_, NormalizeAbsolute(kernel_dir), rest, r.from_escape);
}

PairPlacement PlacePair(const ClassifiedPath& a, const ClassifiedPath& b) {
  if (a.is_host() && b.is_host()) return PairPlacement::kHost;
  if (SameMount(a, b)) return PairPlacement::kSameMount;
  return PairPlacement::kCrossDevice;
}

bool SameMount(const ClassifiedPath& a, const ClassifiedPath& b) {
  return a.is_amino() && b.is_amino() && a.mount == b.mount;
}

}  // namespace amino::monitor::mounts
