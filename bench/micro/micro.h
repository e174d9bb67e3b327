// What the per-call micro benchmarks (bench/syscall, bench/served) share: the clock, the failure
// exit, the options every one of them takes, and the timing of a kind (a warm-up, then the median
// of timed rounds) printed as one "<kind> <median ns> <min> <max>" line, which their drivers
// parse.
#pragma once

#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace amino::bench {

inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO: no system call, never trapped
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Exits 1 with "PROGRAM: WHAT: strerror(errno)": a call that fails must not look fast.
[[noreturn]] inline void Die(const char* program, const std::string& what) {
  std::fprintf(stderr, "%s: %s: %s\n", program, what.c_str(), std::strerror(errno));
  std::exit(1);
}

// The options every micro benchmark takes.
struct MicroOptions {
  std::vector<std::string> kinds;  // empty: all
  int iterations = 20000;
  int rounds = 5;
  std::string dir = "/tmp";
  bool list = false;
};

// Adds --kind (checked against `all`), --iterations, --rounds, --dir (described by `dir_what`)
// and --list to `app`, with `o`'s values as defaults.
inline void AddMicroOptions(CLI::App& app, MicroOptions& o, const std::vector<std::string>& all,
                            const std::string& dir_what) {
  app.add_option("--kind", o.kinds, "Kinds to run (default: all)")->check(CLI::IsMember(all));
  app.add_option("--iterations", o.iterations, "Operations per round")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--rounds", o.rounds, "Timed rounds; the median is printed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--dir", o.dir, dir_what)->capture_default_str();
  app.add_flag("--list", o.list, "Print the kinds and what each measures, then exit");
}

// Times one kind: `round(n)` performs n operations and returns nanoseconds per operation. One
// warm-up round of iterations/10 (page cache, branch predictors, a monitor's first-call paths),
// then `rounds` rounds of `iterations`; prints "<name> <median> <min> <max>".
inline void TimeKind(const char* name, int iterations, int rounds,
                     const std::function<double(int)>& round) {
  round(std::max(1, iterations / 10));
  std::vector<double> ns;
  for (int r = 0; r < rounds; ++r) ns.push_back(round(iterations));
  std::sort(ns.begin(), ns.end());
  std::printf("%s %.1f %.1f %.1f\n", name, ns[ns.size() / 2], ns.front(), ns.back());
  std::fflush(stdout);
}

}  // namespace amino::bench
