// Data micro benchmarks after the Amino evaluation (§4.5): sequential and random reads and writes
// of 4 KiB blocks on one large file. As in the paper, random order is a shuffled permutation of
// the block numbers, so no block is touched twice in a phase and the cache cannot serve a
// repeated block; the harness starts every phase from a cold cache (remount, drop_caches). Write
// phases overwrite the existing file in place and end with fsync inside the timed region, so
// every block written reaches the device before the phase counts as done.
//
//   data_bench --phase fill|seqread|randread|seqwrite|randwrite --file PATH --size BYTES
//              [--block B] [--time SECONDS] [--seed S]
//
// fill creates the file (1 MiB writes, fsync): preparation, not a measurement. Other phases stop
// after --time seconds or at the end of the file, whichever comes first. Prints "RESULT ops=N
// seconds=S ...".
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "bench_util.h"

namespace amino::bench {
namespace {

constexpr const char* kProg = "data_bench";

int Main(int argc, char** argv) {
  std::string phase, path;
  uint64_t size = 0, block = 4096, seed = 42;
  double time_limit = 0;
  CLI::App app{"Data micro benchmarks: sequential and random 4 KiB reads and writes"};
  app.add_option("--phase", phase, "fill, seqread, randread, seqwrite or randwrite")
      ->required()
      ->check(CLI::IsMember({"fill", "seqread", "randread", "seqwrite", "randwrite"}));
  app.add_option("--file", path, "The file")->required();
  app.add_option("--size", size, "File size in bytes (a multiple of the block)")->required();
  app.add_option("--block", block, "Transfer size")->capture_default_str();
  app.add_option("--time", time_limit, "Stop after this many seconds (0: whole file)")
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed of the random order")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (block == 0 || size < block) {
    std::fprintf(stderr, "%s: --size must be at least one --block\n", kProg);
    return 2;
  }
  const uint64_t blocks = size / block;
  Rng rng(seed);

  if (phase == "fill") {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) Die(kProg, "create " + path);
    std::vector<char> buf(1 << 20);
    for (char& c : buf) c = static_cast<char>(rng.Below(256));
    const double t0 = NowSeconds();
    for (uint64_t done = 0; done < blocks * block;) {
      const uint64_t n = std::min<uint64_t>(buf.size(), blocks * block - done);
      if (write(fd, buf.data(), n) != static_cast<ssize_t>(n)) Die(kProg, "write " + path);
      done += n;
    }
    if (fsync(fd) != 0 || close(fd) != 0) Die(kProg, "fsync " + path);
    PrintResult(blocks, NowSeconds() - t0);
    return 0;
  }

  const bool random = phase == "randread" || phase == "randwrite";
  const bool writing = phase == "seqwrite" || phase == "randwrite";
  std::vector<uint64_t> order(blocks);
  std::iota(order.begin(), order.end(), 0);
  if (random) std::shuffle(order.begin(), order.end(), rng.engine());
  std::vector<char> buf(block);
  for (char& c : buf) c = static_cast<char>(rng.Below(256));

  const int fd = open(path.c_str(), writing ? O_WRONLY : O_RDONLY);
  if (fd < 0) Die(kProg, "open " + path);
  uint64_t ops = 0;
  const double t0 = NowSeconds();
  for (uint64_t b : order) {
    if (time_limit > 0 && NowSeconds() - t0 >= time_limit) break;
    const off_t at = static_cast<off_t>(b * block);
    const ssize_t n =
        writing ? pwrite(fd, buf.data(), block, at) : pread(fd, buf.data(), block, at);
    if (n != static_cast<ssize_t>(block)) Die(kProg, phase + " " + path);
    ++ops;
  }
  if (writing && fsync(fd) != 0) Die(kProg, "fsync " + path);
  const double t1 = NowSeconds();
  if (close(fd) != 0) Die(kProg, "close " + path);
  PrintResult(ops, t1 - t0, "blocks=" + std::to_string(blocks));
  return 0;
}

}  // namespace
}  // namespace amino::bench

int main(int argc, char** argv) { return amino::bench::Main(argc, argv); }
