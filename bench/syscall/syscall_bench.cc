// Cost of one system call, per call kind: the micro benchmark behind the monitor's overhead. Run
// natively it gives the kernel's cost; run under `amino run` (or strace) the difference is what
// interception adds. Each kind is issued as the raw system call, so the name printed is exactly
// the call a tracer sees (glibc would turn fstat() and stat() into newfstatat).
//
//   syscall_bench [--kind K]... [--iterations N] [--rounds R] [--dir DIR]
//
// Prints one line per kind: "<kind> <median ns per call> <min> <max>". A call that fails makes
// the program exit 1: a monitor that breaks a call must not look fast.
#include <fcntl.h>
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

constexpr size_t kPreadSize = 4096;
constexpr size_t kFileSize = 64 * 1024;

[[noreturn]] void Die(const std::string& what) { bench::Die("syscall_bench", what); }

// The files and buffers the calls work on; created once, before timing.
struct Fixture {
  std::string dir;
  std::string path;  // a regular file of kFileSize bytes
  int file_fd = -1;
  int zero_fd = -1;
  char buf[kPreadSize];
  struct stat st;
};

struct Kind {
  const char* name;
  const char* what;
  // One call; returns false when the call did not do what it should.
  std::function<bool(Fixture&)> call;
};

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {"getppid", "untrapped call", [](Fixture&) { return syscall(SYS_getppid) > 0; }},
      {"fstat", "trapped pass-through (regular file)",
       [](Fixture& f) { return syscall(SYS_fstat, f.file_fd, &f.st) == 0; }},
      {"read", "1 byte from /dev/zero",
       [](Fixture& f) { return syscall(SYS_read, f.zero_fd, f.buf, 1) == 1; }},
      {"pread64", "4 KiB from a regular file (page cache)",
       [](Fixture& f) {
         return syscall(SYS_pread64, f.file_fd, f.buf, kPreadSize, 0) ==
                static_cast<long>(kPreadSize);
       }},
      {"newfstatat", "stat of a path (as glibc's stat() issues it)",
       [](Fixture& f) { return syscall(SYS_newfstatat, AT_FDCWD, f.path.c_str(), &f.st, 0) == 0; }},
  };
  return kinds;
}

void Setup(Fixture& f) {
  std::string tmpl = f.dir + "/syscall_bench.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  f.file_fd = mkstemp(name.data());
  if (f.file_fd < 0) Die("mkstemp in " + f.dir);
  f.path = name.data();
  std::vector<char> data(kFileSize, 'a');
  if (write(f.file_fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    Die("write " + f.path);
  }
  f.zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  if (f.zero_fd < 0) Die("open /dev/zero");
}

void Teardown(Fixture& f) {
  close(f.zero_fd);
  close(f.file_fd);
  unlink(f.path.c_str());
}

// Nanoseconds per call over `iterations` calls.
double Round(const Kind& k, Fixture& f, int iterations) {
  const uint64_t start = NowNs();
  for (int i = 0; i < iterations; ++i) {
    if (!k.call(f)) Die(std::string(k.name) + " failed");
  }
  return static_cast<double>(NowNs() - start) / iterations;
}

// Runs the named kinds and prints one line each.
void RunKinds(const std::vector<std::string>& names, Fixture& f, int iterations, int rounds) {
  Setup(f);
  for (const std::string& name : names) {
    const Kind& k = *std::find_if(Kinds().begin(), Kinds().end(),
                                  [&](const Kind& kind) { return name == kind.name; });
    TimeKind(k.name, iterations, rounds, [&](int n) { return Round(k, f, n); });
  }
  Teardown(f);
}

}  // namespace
}  // namespace amino::bench

int main(int argc, char** argv) {
  using amino::bench::Kinds;
  CLI::App app{"Nanoseconds per system call, by call kind (median of rounds after a warm-up)."};
  amino::bench::MicroOptions o;
  std::vector<std::string> all;
  for (const auto& k : Kinds()) all.push_back(k.name);
  amino::bench::AddMicroOptions(app, o, all, "Where the regular file is created");
  CLI11_PARSE(app, argc, argv);
  if (o.list) {
    for (const auto& k : Kinds()) std::printf("%s\t%s\n", k.name, k.what);
    return 0;
  }
  amino::bench::Fixture f;
  f.dir = o.dir;
  amino::bench::RunKinds(o.kinds.empty() ? all : o.kinds, f, o.iterations, o.rounds);
  return 0;
}
