// Small helpers shared by the harness's workload programs: a monotonic clock, a seeded random
// generator that is the same on every run, and the one result line the driver parses.
#ifndef AMINO_BENCH_HARNESS_BENCH_UTIL_H_
#define AMINO_BENCH_HARNESS_BENCH_UTIL_H_

#include <time.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace amino::bench {

inline double NowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO: never trapped by a tracer
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Exits with a message naming the program and errno: a workload whose call failed must not look
// fast, so every failure ends the run with a non-zero status.
[[noreturn]] inline void Die(const char* prog, const std::string& what) {
  std::fprintf(stderr, "%s: %s: %s\n", prog, what.c_str(), std::strerror(errno));
  std::exit(1);
}

// Deterministic generator: the same seed gives the same operation sequence on every
// configuration, so configurations do the same work.
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  // Uniform in [0, n); 0 when n is 0 (like Postmark's RND).
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : gen_() % n; }
  double Normal(double mean, double sd) { return std::normal_distribution<double>(mean, sd)(gen_); }
  std::mt19937_64& engine() { return gen_; }

 private:
  std::mt19937_64 gen_;
};

// The line the driver reads: "RESULT ops=N seconds=S" plus extra key=value pairs.
inline void PrintResult(uint64_t ops, double seconds, const std::string& extra = "") {
  std::printf("RESULT ops=%llu seconds=%.6f%s%s\n", static_cast<unsigned long long>(ops), seconds,
              extra.empty() ? "" : " ", extra.c_str());
  std::fflush(stdout);
}

}  // namespace amino::bench

#endif  // AMINO_BENCH_HARNESS_BENCH_UTIL_H_
