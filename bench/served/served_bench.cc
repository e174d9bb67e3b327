// Cost of one file operation, per kind, on the files in --dir: the micro benchmark of served
// calls. Run on a host directory it gives the kernel's cost; under `amino run` on a host directory
// what tracing (--emulate=none) or performing calls in the monitor (--emulate=host) adds; under
// `amino run --mount MP=DB` with --dir inside MP the cost of a call served from the database,
// each one a transaction. Every call is issued as the raw system call a program's libc issues on
// x86-64, so the call the monitor sees is the one named.
//
//   served_bench [--kind K]... [--iterations N] [--rounds R] [--dir DIR]
//
// Everything a kind needs (files, names, offsets) is made before its timed rounds; files a round
// uses up (create, unlink) are made or removed between rounds, untimed. Prints one line per kind:
// "<kind> <median ns per operation> <min> <max>". A call that fails or returns something else
// than natively makes the program exit 1: a monitor that breaks a call must not look fast.
#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "micro/micro.h"

namespace amino::bench {
namespace {

constexpr long kPage = 4096;
constexpr long kBigFile = 4 << 20;  // read-4k and write-4k work on a file of this size
constexpr int kDirEntries = 100;    // readdir-100's directory
constexpr int kOffsets = 4096;      // random offsets, used round-robin

[[noreturn]] void Die(const std::string& what) { bench::Die("served_bench", what); }

// The kind that installs a filter of its own, which nothing removes: run after every other.
constexpr const char* kFilteredKind = "getppid-filtered";

// What the kinds work on; made in the kind's setup, before any timing.
struct Fixture {
  std::string dir;    // this run's own directory inside --dir
  std::string small;  // a 4 KiB regular file
  std::string big;    // a kBigFile regular file
  std::string other;  // a second name for rename
  std::string subdir;
  std::vector<std::string> names;  // create, unlink, mkdir-rmdir: one per operation of a round
  std::vector<long> offsets;       // page-aligned, in [0, kBigFile)
  int fd = -1;
  bool flipped = false;  // rename: the file is under `other` now
  alignas(kPage) char buf[kPage];
  alignas(8) char dents[32768];
  struct stat st;
};

long Sys(long nr, long a = 0, long b = 0, long c = 0, long d = 0) {
  return syscall(nr, a, b, c, d);
}
long Path(const std::string& s) { return reinterpret_cast<long>(s.c_str()); }

// A seccomp filter that lets every call run: what any filter costs an untrapped call, with
// nothing to decide (the kernel caches its verdict per call number).
void InstallAllowAllFilter() {
  sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  sock_fprog prog{1, allow};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      Sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, reinterpret_cast<long>(&prog)) != 0) {
    Die("install an allow-all seccomp filter");
  }
}

int OpenAt(const std::string& path, int flags, mode_t mode = 0) {
  return static_cast<int>(Sys(SYS_openat, AT_FDCWD, Path(path), flags | O_CLOEXEC, mode));
}

void WriteFile(const std::string& path, long size) {
  const int fd = OpenAt(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) Die("create " + path);
  std::vector<char> chunk(256 * 1024, 'a');
  for (long done = 0; done < size;) {
    const long n = std::min<long>(size - done, static_cast<long>(chunk.size()));
    if (Sys(SYS_write, fd, reinterpret_cast<long>(chunk.data()), n) != n) Die("write " + path);
    done += n;
  }
  if (Sys(SYS_close, fd) != 0) Die("close " + path);
}

void Names(Fixture& f, int n, const char* prefix) {
  f.names.clear();
  for (int i = 0; i < n; ++i) f.names.push_back(f.dir + "/" + prefix + std::to_string(i));
}

void CreateNames(Fixture& f) {
  for (const std::string& name : f.names) {
    const int fd = OpenAt(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0 || Sys(SYS_close, fd) != 0) Die("create " + name);
  }
}

void UnlinkNames(Fixture& f) {
  for (const std::string& name : f.names) {
    if (Sys(SYS_unlink, Path(name)) != 0) Die("unlink " + name);
  }
}

// Random page-aligned offsets of the big file (a fixed sequence: every run does the same I/O).
void Offsets(Fixture& f) {
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < kOffsets; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f.offsets.push_back(static_cast<long>(x % (kBigFile / kPage)) * kPage);
  }
}

// The descriptor kinds' file: a 4 KiB file, open read-only in f.fd.
void OpenSmall(Fixture& f) {
  WriteFile(f.small, kPage);
  f.fd = OpenAt(f.small, O_RDONLY);
  if (f.fd < 0) Die("open " + f.small);
}

struct Kind {
  const char* name;
  const char* what;                                       // --list: what one operation is
  std::function<void(Fixture&)> setup = nullptr;          // once, before the warm-up
  std::function<void(Fixture&, int n)> before = nullptr;  // before each round of n operations
  std::function<bool(Fixture&, int i)> op;                // operation i of the round
  std::function<void(Fixture&, int n)> after = nullptr;   // after each round
};

// Long by design: the table of kinds, one entry (set-up, operation, clean-up) per row of the
// report.
const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {.name = "stat",
       .what = "newfstatat of an existing file",
       .setup = [](Fixture& f) { WriteFile(f.small, kPage); },
       .op =
           [](Fixture& f, int) {
             return Sys(SYS_newfstatat, AT_FDCWD, Path(f.small), reinterpret_cast<long>(&f.st),
                        0) == 0 &&
                    f.st.st_size == kPage;
           }},
      {.name = "open-close",
       .what = "openat O_RDONLY of an existing file + close (2 calls)",
       .setup = [](Fixture& f) { WriteFile(f.small, kPage); },
       .op =
           [](Fixture& f, int) {
             const int fd = OpenAt(f.small, O_RDONLY);
             return fd >= 0 && Sys(SYS_close, fd) == 0;
           }},
      {.name = "read-4k",
       .what = "pread64 of 4 KiB at a random page-aligned offset of a 4 MiB file",
       .setup =
           [](Fixture& f) {
             WriteFile(f.big, kBigFile);
             Offsets(f);
             f.fd = OpenAt(f.big, O_RDONLY);
             if (f.fd < 0) Die("open " + f.big);
           },
       .op =
           [](Fixture& f, int i) {
             return Sys(SYS_pread64, f.fd, reinterpret_cast<long>(f.buf), kPage,
                        f.offsets[i % kOffsets]) == kPage &&
                    f.buf[0] == 'a';
           }},
      {.name = "write-4k",
       .what = "pwrite64 of 4 KiB at a random page-aligned offset of a 4 MiB file",
       .setup =
           [](Fixture& f) {
             WriteFile(f.big, kBigFile);
             Offsets(f);
             f.fd = OpenAt(f.big, O_WRONLY);
             if (f.fd < 0) Die("open " + f.big);
             std::fill(std::begin(f.buf), std::end(f.buf), 'b');
           },
       .op =
           [](Fixture& f, int i) {
             return Sys(SYS_pwrite64, f.fd, reinterpret_cast<long>(f.buf), kPage,
                        f.offsets[i % kOffsets]) == kPage;
           }},
      {.name = "append-4k",
       .what = "write of 4 KiB at the end of a growing file (O_APPEND; emptied between rounds)",
       .setup =
           [](Fixture& f) {
             f.fd = OpenAt(f.big, O_WRONLY | O_CREAT | O_APPEND, 0644);
             if (f.fd < 0) Die("create " + f.big);
             std::fill(std::begin(f.buf), std::end(f.buf), 'c');
           },
       .before =
           [](Fixture& f, int) {
             if (Sys(SYS_ftruncate, f.fd, 0) != 0) Die("ftruncate " + f.big);
           },
       .op =
           [](Fixture& f, int) {
             return Sys(SYS_write, f.fd, reinterpret_cast<long>(f.buf), kPage) == kPage;
           }},
      {.name = "create",
       .what = "openat O_CREAT|O_EXCL|O_WRONLY of a new name + close (2 calls)",
       .before = [](Fixture& f, int n) { Names(f, n, "c"); },
       .op =
           [](Fixture& f, int i) {
             const int fd = OpenAt(f.names[i], O_WRONLY | O_CREAT | O_EXCL, 0644);
             return fd >= 0 && Sys(SYS_close, fd) == 0;
           },
       .after = [](Fixture& f, int) { UnlinkNames(f); }},
      {.name = "unlink",
       .what = "unlink of an empty file made before the round",
       .before =
           [](Fixture& f, int n) {
             Names(f, n, "u");
             CreateNames(f);
           },
       .op = [](Fixture& f, int i) { return Sys(SYS_unlink, Path(f.names[i])) == 0; }},
      {.name = "rename",
       .what = "rename of a 4 KiB file to a new name in its directory (back and forth)",
       .setup = [](Fixture& f) { WriteFile(f.small, kPage); },
       .op =
           [](Fixture& f, int) {
             const std::string& from = f.flipped ? f.other : f.small;
             const std::string& to = f.flipped ? f.small : f.other;
             f.flipped = !f.flipped;
             return Sys(SYS_rename, Path(from), Path(to)) == 0;
           }},
      {.name = "readdir-100",
       .what = "one listing: openat of a directory of 100 files, getdents64 to the end, close",
       .setup =
           [](Fixture& f) {
             if (Sys(SYS_mkdir, Path(f.subdir), 0755) != 0) Die("mkdir " + f.subdir);
             for (int i = 0; i < kDirEntries; ++i) {
               WriteFile(f.subdir + "/entry" + std::to_string(i), 0);
             }
           },
       .op =
           [](Fixture& f, int) {
             const int fd = OpenAt(f.subdir, O_RDONLY | O_DIRECTORY);
             if (fd < 0) return false;
             int entries = 0;
             long n;
             while ((n = Sys(SYS_getdents64, fd, reinterpret_cast<long>(f.dents), sizeof f.dents)) >
                    0) {
               for (long off = 0; off < n; ++entries) {
                 off += reinterpret_cast<dirent64*>(f.dents + off)->d_reclen;
               }
             }
             if (Sys(SYS_close, fd) != 0 || n < 0) return false;
             if (entries == kDirEntries + 2) return true;  // with "." and ".."
             std::fprintf(stderr, "served_bench: readdir-100 listed %d entries, not %d\n", entries,
                          kDirEntries + 2);
             std::exit(1);
           }},
      {.name = "mkdir-rmdir",
       .what = "mkdir of a new name + rmdir of it (2 calls)",
       .before = [](Fixture& f, int n) { Names(f, n, "d"); },
       .op =
           [](Fixture& f, int i) {
             return Sys(SYS_mkdir, Path(f.names[i]), 0755) == 0 &&
                    Sys(SYS_rmdir, Path(f.names[i])) == 0;
           }},
      {.name = "dup2",
       .what = "dup2 of an open file onto a free number + close (2 calls; a shell's redirection)",
       .setup = OpenSmall,
       .op =
           [](Fixture& f, int) {
             constexpr int kTarget = 200;
             return Sys(SYS_dup2, f.fd, kTarget) == kTarget && Sys(SYS_close, kTarget) == 0;
           }},
      {.name = "dupfd",
       .what = "fcntl F_DUPFD_CLOEXEC of an open file to the lowest free number + close (2 "
               "calls; Python's os.dup, find's walk)",
       .setup = OpenSmall,
       .op =
           [](Fixture& f, int) {
             const long copy = Sys(SYS_fcntl, f.fd, F_DUPFD_CLOEXEC, 0);
             return copy >= 0 && Sys(SYS_close, copy) == 0;
           }},
      {.name = "mmap-4k",
       .what = "mmap of an open 4 KiB file (MAP_PRIVATE, PROT_READ) + munmap (2 calls; a "
               "loader's mapping of a library)",
       .setup = OpenSmall,
       .op =
           [](Fixture& f, int) {
             void* p = mmap(nullptr, kPage, PROT_READ, MAP_PRIVATE, f.fd, 0);
             if (p == MAP_FAILED) return false;
             const bool ok = static_cast<const char*>(p)[kPage - 1] == 'a';
             return munmap(p, kPage) == 0 && ok;
           }},
      {.name = "fcntl-setfd",
       .what = "fcntl F_SETFD FD_CLOEXEC of an open file",
       .setup = OpenSmall,
       .op = [](Fixture& f, int) { return Sys(SYS_fcntl, f.fd, F_SETFD, FD_CLOEXEC) == 0; }},
      {.name = "getppid",
       .what = "getppid: a call no backend traps",
       .op = [](Fixture&, int) { return Sys(SYS_getppid) > 0; }},
      {.name = kFilteredKind,
       .what = "getppid under an allow-all seccomp filter of its own: natively, the floor any "
               "filter puts under an untrapped call (runs last: the filter stays)",
       .setup = [](Fixture&) { InstallAllowAllFilter(); },
       .op = [](Fixture&, int) { return Sys(SYS_getppid) > 0; }},
  };
  return kinds;
}

// Nanoseconds per operation over n operations.
double Round(const Kind& k, Fixture& f, int n) {
  if (k.before) k.before(f, n);
  const uint64_t start = NowNs();
  for (int i = 0; i < n; ++i) {
    if (!k.op(f, i)) Die(std::string(k.name) + " failed");
  }
  const uint64_t ns = NowNs() - start;
  if (k.after) k.after(f, n);
  return static_cast<double>(ns) / n;
}

// Removes what a kind left in f.dir (its files and subdirectory); failures are ignored.
void Clean(Fixture& f) {
  if (f.fd >= 0) Sys(SYS_close, f.fd);
  f.fd = -1;
  for (const std::string* p : {&f.small, &f.big, &f.other}) Sys(SYS_unlink, Path(*p));
  for (int i = 0; i < kDirEntries; ++i) {
    Sys(SYS_unlink, Path(f.subdir + "/entry" + std::to_string(i)));
  }
  Sys(SYS_rmdir, Path(f.subdir));
  f.offsets.clear();
  f.flipped = false;
}

void RunKinds(const std::vector<std::string>& names, const MicroOptions& o) {
  // --dir itself may be missing (a fresh mount's work directory); this run works in its own
  // directory inside it, so that runs sharing --dir never meet.
  if (Sys(SYS_mkdir, Path(o.dir), 0755) != 0 && errno != EEXIST) Die("mkdir " + o.dir);
  std::string tmpl = o.dir + "/served_bench.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp in " + o.dir);
  Fixture f;
  f.dir = tmpl;
  f.small = f.dir + "/small";
  f.big = f.dir + "/big";
  f.other = f.dir + "/other";
  f.subdir = f.dir + "/dir100";
  std::vector<std::string> order = names;
  std::stable_partition(order.begin(), order.end(),
                        [](const std::string& n) { return n != kFilteredKind; });
  for (const std::string& name : order) {
    const Kind& k = *std::find_if(Kinds().begin(), Kinds().end(),
                                  [&](const Kind& kind) { return name == kind.name; });
    if (k.setup) k.setup(f);
    TimeKind(k.name, o.iterations, o.rounds, [&](int n) { return Round(k, f, n); });
    Clean(f);
  }
  if (Sys(SYS_rmdir, Path(f.dir)) != 0) Die("rmdir " + f.dir);
}

}  // namespace
}  // namespace amino::bench

int main(int argc, char** argv) {
  using amino::bench::Kinds;
  CLI::App app{
      "Nanoseconds per file operation, by kind, on files in --dir (median of rounds after a "
      "warm-up)."};
  amino::bench::MicroOptions o;
  o.iterations = 2000;
  std::vector<std::string> all;
  for (const auto& k : Kinds()) all.push_back(k.name);
  amino::bench::AddMicroOptions(app, o, all,
                                "Directory the files are made in (inside a directory of its own, "
                                "removed at the end; created when missing)");
  CLI11_PARSE(app, argc, argv);
  if (o.list) {
    for (const auto& k : Kinds()) std::printf("%s\t%s\n", k.name, k.what);
    return 0;
  }
  amino::bench::RunKinds(o.kinds.empty() ? all : o.kinds, o);
  return 0;
}
