// Where the path argument of a file-system call leads: to the host (the kernel does the call,
// with the argument as it is or with a substitute path) or into an Amino mount (the schema
// does it, given a mount-relative path). Pure: no system calls, no state but the mount table.
//
// The walk is lexical on a component stack (DESIGN.md §2). From a host directory it collapses
// ".", ".." and repeated slashes (".." at "/" stays at "/") and, after every component it
// pushes, asks the table whether the stack is now a mount point. Once inside a mount it stops
// interpreting: the rest of the argument goes to the schema as written (repeated slashes aside),
// because there "x/.." depends on what x is (a symbolic link, a file, nothing), which only the
// schema knows. The schema follows links stored in the mount, and a resolution that leaves the
// mount (".." at its root, an absolute link target) comes back as Status::Escape
// (src/base/status.h); ContinueOnHost takes it from there.
//
// Lexical resolution is exact where no ".." cancels a component the path itself named: the walk
// starts from a host directory as the kernel names it (canonical, so its own ".." are exact).
// Where "x/.." is cancelled lexically the result carries a check (ClassifiedPath::check_path)
// that the caller confirms with two stats, and Recheck continues from where the kernel really
// went. Not seen by a lexical walk: a host symbolic link whose target lies inside a mount, which
// the kernel follows to the mount point's own (empty) host directory; HostLinks (host_links.h)
// asks the kernel about those.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "monitor/mounts/mount_table.h"

namespace amino::monitor::mounts {

// The directory a relative path starts from (the cwd, or the directory descriptor of an *at
// call). Views: the strings and the Mount must outlive it.
class PathBase {
 public:
  // A host directory as the kernel names it (readlink of /proc/PID/cwd or /proc/PID/fd/N): an
  // absolute path. A host directory at or below a mount point counts as inside that mount
  // (a program started with its cwd there sees the mount).
  static PathBase Host(std::string_view dir) { return PathBase(dir, nullptr); }
  // A directory inside a mount (a virtual cwd, an Amino directory descriptor): `rel` is its
  // mount-relative path now ("/" or "/a/b"; normal, no symbolic link in it; a caller that lets
  // directories be renamed under a cwd looks it up again by file id). The schema resolves the
  // result from the mount's root, so it checks search permission on the directory's ancestors
  // too, where the kernel checks only from the cwd on.
  static PathBase Virtual(const Mount& mount, std::string_view rel) {
    return PathBase(rel, &mount);
  }

  bool is_virtual() const { return mount_ != nullptr; }
  std::string_view path() const { return path_; }  // host directory, or mount-relative path
  const Mount* mount() const { return mount_; }

 private:
  PathBase(std::string_view path, const Mount* mount) : path_(path), mount_(mount) {}
  std::string_view path_;
  const Mount* mount_;
};

struct ClassifiedPath {
  enum class Kind { kHost, kAmino };
  Kind kind = Kind::kHost;

  // kHost: the kernel may be given the caller's argument (and directory descriptor) as they
  // are. True exactly when the walk started from a host directory (or "/", for an absolute
  // path) and never entered a mount.
  bool unchanged = false;
  // kHost, !unchanged: the absolute host path to give the kernel instead (through the shared
  // region). Normal except that a final "." or ".." and a trailing slash are kept, so the
  // kernel applies its rules for them ("x/." to rmdir is EINVAL, "x/" must be a directory).
  // kAmino: the mount-relative path for the schema, starting with "/", with the components
  // after the mount point as the argument wrote them ("/a/../b/", "/.").
  std::string path;
  // kAmino: the mount.
  const Mount* mount = nullptr;
  // The argument (or escaped path) ends with a slash: the named file must be a directory
  // (mkdir accepts it, open with O_CREAT fails with EISDIR, ...).
  bool trailing_slash = false;
  // Set by ContinueOnHost (and kept by Recheck): a kHost result carries a substitute path.
  bool from_escape = false;

  // The lexical check. Set when a ".." cancelled a component the walked path named itself
  // ("x/../amino/f"): the kernel would have required x to be a directory and followed it if a
  // symbolic link, so the result stands only if the kernel agrees about that prefix.
  // `check_path`: the walked path up to and including the last such "..", as written, made
  // absolute; `check_expect`: where the lexical walk put it (a normal absolute host path,
  // outside every mount); `check_rest`: the offset in the walked path where the rest begins.
  // The caller stats both (with the tracee's credentials): an error on check_path is the call's
  // error, as the kernel would report it; different files mean the kernel's walk went elsewhere,
  // and Recheck gives the classification that follows the kernel. Empty when nothing needs it.
  std::string check_path;
  std::string check_expect;
  size_t check_rest = 0;

  bool is_host() const { return kind == Kind::kHost; }
  bool is_amino() const { return kind == Kind::kAmino; }
};

// Continuations that may follow one another before a resolution ends (each a link or a ".."
// leaving a mount): beyond this the call fails with ELOOP, as the kernel's 40 links do.
inline constexpr int kMaxEscapes = 40;

class PathResolver {
 public:
  explicit PathResolver(const MountTable& table) : table_(table) {}

  // Classifies `path` relative to `base`. Errors (as a system call would report them):
  // ENAMETOOLONG for PATH_MAX bytes or more (no NUL within PATH_MAX), or when the path given
  // to the schema or the kernel would be that long; ENOENT for an empty path unless
  // `empty_path_ok` (AT_EMPTY_PATH), in which case the call is on the base itself: the
  // directory descriptor (kHost, unchanged) or the virtual directory (kAmino). Components over
  // NAME_MAX bytes inside a mount are the schema's to refuse, in walk order as the kernel does
  // ("missing/LONG" is ENOENT, "LONG/x" ENAMETOOLONG).
  Result<ClassifiedPath> Classify(const PathBase& base, std::string_view path,
                                  bool empty_path_ok = false) const;

  // Where a resolution continues after the schema left `mount` with Status::Escape(escaped)
  // (escaped_path()): an absolute path (an absolute link target followed by the rest) is
  // walked from "/"; a relative one ("..", "../x": ".." at the mount's root followed by the
  // rest) from the mount point's host directory, where ".." reaches its host parent. The
  // result may enter a mount again (the same or another); a kHost result always carries a
  // substitute path (`unchanged` is false). The caller counts continuations (kMaxEscapes).
  Result<ClassifiedPath> ContinueOnHost(const Mount& mount, std::string_view escaped) const;

  // After a failed check of `r` (see ClassifiedPath::check_path): `kernel_dir` is the
  // kernel's name for r.check_path (readlink of /proc/self/fd/N after an O_PATH open) and
  // `walked` the path `r` came from (the argument, or the escaped path). Classifies the rest
  // from there; a kHost result keeps the argument unchanged unless r.from_escape.
  Result<ClassifiedPath> Recheck(const ClassifiedPath& r, std::string_view kernel_dir,
                                 std::string_view walked) const;

 private:
  const MountTable& table_;
};

// Where a call on two paths (rename, link, renameat2) is carried out, decided on both paths'
// final classifications (each one's parent directory resolved, continuations followed; Linux
// reports an error resolving either parent before EXDEV).
enum class PairPlacement {
  kHost,         // both on the host: the kernel does it, and reports its own EXDEV
  kSameMount,    // both in one mount: the schema does it
  kCrossDevice,  // one in a mount and the other elsewhere: EXDEV
};
PairPlacement PlacePair(const ClassifiedPath& a, const ClassifiedPath& b);
// True when both paths are inside the same mount.
bool SameMount(const ClassifiedPath& a, const ClassifiedPath& b);

}  // namespace amino::monitor::mounts
