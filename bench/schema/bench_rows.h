// What every row of schema_bench shares: failing loudly, timing a loop, the median of runs,
// and the table the rows are printed in (speed is reported, never asserted).
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "schema/filesystem.h"

namespace amino::bench {

[[noreturn]] inline void Die(const std::string& what) {
  std::cerr << "schema_bench: " << what << "\n";
  exit(1);
}

inline void Check(const schema::Status& st, const std::string& what) {
  if (!st.ok()) Die(what + ": " + st.message());
}

inline void CheckSys(bool ok, const std::string& what) {
  if (!ok) Die(what + ": " + std::strerror(errno));
}

// Seconds taken by `ops` repetitions of `body(i)`.
inline double Time(int ops, const std::function<void(int)>& body) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < ops; ++i) body(i);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  std::string name;
  double amino_ops_per_s;
  double native_ops_per_s;
  std::string native_label;
};

inline void PrintTable(const std::vector<Row>& rows) {
  std::printf("%-38s %11s %9s %11s %9s %7s  %s\n", "operation", "amino op/s", "amino us",
              "native op/s", "native us", "ratio", "native operation");
  for (const Row& r : rows) {
    std::printf("%-38s %11.0f %9.2f %11.0f %9.2f %7.3f  %s\n", r.name.c_str(), r.amino_ops_per_s,
                1e6 / r.amino_ops_per_s, r.native_ops_per_s, 1e6 / r.native_ops_per_s,
                r.amino_ops_per_s / r.native_ops_per_s, r.native_label.c_str());
  }
}

// schema_bench --growth (growth.cc): `total` empty files made in directories of 1,000 in `fs`
// (whose databases are in `fs_dir`) and under `native`, with the create rate of each decade
// (10^3, 10^4, ... files) and the rate of stats of random files of the tree so far, beside the
// host's, and the size of the databases (*.db, not the log).
void RunGrowth(schema::FileSystem& fs, const std::string& fs_dir, const std::string& native,
               long total);

}  // namespace amino::bench
