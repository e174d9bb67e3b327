// A Postmark-compatible workload generator (Katcher 1997; Postmark 1.5's operation mix and
// parameters) with the two changes the Amino evaluation made: it can run transactions for a time
// limit instead of a fixed count, and --txn wraps each Postmark transaction (a read or append
// plus a create or delete) in one Amino transaction through libamino.
//
//   pmgen --dir DIR [--files N] [--size-low B] [--size-high B] [--subdirs S]
//         [--transactions T | --time SECONDS] [--block B] [--bias-read R] [--bias-create C]
//         [--seed S] [--txn]
//
// Like Postmark: a pool of N files with sizes uniform in [low, high) is created (spread over S
// subdirectories), then each transaction reads a whole file (probability R/10) or appends a
// random amount up to the high size to one, and creates a new file (probability C/10) or
// deletes one; finally every file is deleted. I/O uses read(2)/write(2) in blocks of B bytes.
// Prints "RESULT ops=<transactions> seconds=<transaction phase> ..." with the pool creation and
// deletion times and the counts per operation.
//
// libamino is loaded at run time (dlopen "libamino.so") so the generator builds and runs without
// it; --txn fails with a clear message when it cannot be loaded.
#include <amino/amino.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "bench_util.h"
using BeginFn = decltype(&amino_begin);
using CommitFn = decltype(&amino_commit);

namespace amino::bench {
namespace {

constexpr const char* kProg = "pmgen";

struct Options {
  std::string dir;
  uint64_t files = 500;
  uint64_t size_low = 500;
  uint64_t size_high = 10000;
  uint64_t subdirs = 0;
  uint64_t transactions = 500;
  double time_limit = 0;  // seconds; 0 = run `transactions`
  uint64_t block = 4096;
  int bias_read = 5;
  int bias_create = 5;
  uint64_t seed = 42;
  bool txn = false;
};

// Amino transactions, bound at run time.
class Txn {
 public:
  void Load() {
    void* lib = dlopen("libamino.so", RTLD_NOW);
    if (lib == nullptr) {
      std::fprintf(stderr, "%s: --txn needs libamino.so: %s\n", kProg, dlerror());
      std::exit(2);
    }
    begin_ = reinterpret_cast<BeginFn>(dlsym(lib, "amino_begin"));
    commit_ = reinterpret_cast<CommitFn>(dlsym(lib, "amino_commit"));
    if (begin_ == nullptr || commit_ == nullptr) {
      std::fprintf(stderr, "%s: libamino.so lacks amino_begin/amino_commit\n", kProg);
      std::exit(2);
    }
  }
  bool enabled() const { return begin_ != nullptr; }
  void Begin() {
    if (begin_(nullptr) < 0) Die(kProg, "amino_begin");
  }
  void Commit() {
    if (commit_() < 0) Die(kProg, "amino_commit");
  }

 private:
  BeginFn begin_ = nullptr;
  CommitFn commit_ = nullptr;
};

struct File {
  std::string name;
  uint64_t size = 0;  // 0: free slot
};

class Generator {
 public:
  explicit Generator(const Options& o)
      : o_(o), rng_(o.seed), table_(2 * o.files), source_(2 * o.size_high + o.block) {
    // Printable bytes, as Postmark writes, so a mailbox-like file stays text.
    for (char& c : source_) c = static_cast<char>(32 + rng_.Below(95));
    buf_.resize(o.block);
  }

  void MakeSubdirs() {
    for (uint64_t i = 0; i < o_.subdirs; ++i) {
      const std::string d = o_.dir + "/s" + std::to_string(i);
      if (mkdir(d.c_str(), 0755) != 0) Die(kProg, "mkdir " + d);
    }
  }
  void RemoveSubdirs() {
    for (uint64_t i = 0; i < o_.subdirs; ++i) {
      const std::string d = o_.dir + "/s" + std::to_string(i);
      if (rmdir(d.c_str()) != 0) Die(kProg, "rmdir " + d);
    }
  }

  void Create() {
    size_t slot = 0;
    while (table_[slot].size != 0) ++slot;  // a free slot exists: used <= files < 2*files
    File& f = table_[slot];
    f.name = o_.dir + "/" + (o_.subdirs ? "s" + std::to_string(rng_.Below(o_.subdirs)) + "/" : "") +
             "f" + std::to_string(next_name_++);
    f.size = o_.size_low + rng_.Below(o_.size_high - o_.size_low);
    if (f.size == 0) f.size = 1;
    const int fd = open(f.name.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) Die(kProg, "create " + f.name);
    WriteBlocks(fd, f.size, f.name);
    if (close(fd) != 0) Die(kProg, "close " + f.name);
    ++used_;
    ++created_;
  }

  void Delete(size_t slot) {
    File& f = table_[slot];
    if (unlink(f.name.c_str()) != 0) Die(kProg, "unlink " + f.name);
    f.size = 0;
    --used_;
    ++deleted_;
  }

  void Read(size_t slot) {
    const File& f = table_[slot];
    const int fd = open(f.name.c_str(), O_RDONLY);
    if (fd < 0) Die(kProg, "open " + f.name);
    for (;;) {
      const ssize_t n = read(fd, buf_.data(), buf_.size());
      if (n < 0) Die(kProg, "read " + f.name);
      if (n == 0) break;
    }
    if (close(fd) != 0) Die(kProg, "close " + f.name);
    ++read_;
  }

  void Append(size_t slot) {
    File& f = table_[slot];
    if (f.size >= o_.size_high) return;  // already at the maximum: Postmark skips it too
    const int fd = open(f.name.c_str(), O_WRONLY | O_APPEND);
    if (fd < 0) Die(kProg, "open for append " + f.name);
    const uint64_t amount = rng_.Below(o_.size_high - f.size) + 1;
    WriteBlocks(fd, amount, f.name);
    if (close(fd) != 0) Die(kProg, "close " + f.name);
    f.size += amount;
    ++appended_;
  }

  size_t PickUsed() {
    for (;;) {
      const size_t slot = rng_.Below(table_.size());
      if (table_[slot].size != 0) return slot;
    }
  }

  // One Postmark transaction: read or append, then create or delete.
  void Transaction() {
    if (used_ == 0) {
      Create();
      return;
    }
    if (o_.bias_read != -1) {
      if (static_cast<int>(rng_.Below(10)) < o_.bias_read) {
        Read(PickUsed());
      } else {
        Append(PickUsed());
      }
    }
    if (o_.bias_create != -1) {
      // Never beyond the table (2N slots) nor below one file, so the pool stays bounded.
      const bool create = static_cast<int>(rng_.Below(10)) < o_.bias_create;
      if ((create && used_ < table_.size()) || used_ <= 1) {
        Create();
      } else {
        Delete(PickUsed());
      }
    }
  }

  void DeleteAll() {
    for (size_t i = 0; i < table_.size(); ++i) {
      if (table_[i].size != 0) Delete(i);
    }
  }

  std::string Counts() const {
    return "created=" + std::to_string(created_) + " read=" + std::to_string(read_) +
           " appended=" + std::to_string(appended_) + " deleted=" + std::to_string(deleted_);
  }

 private:
  void WriteBlocks(int fd, uint64_t size, const std::string& name) {
    while (size > 0) {
      const uint64_t n = size < o_.block ? size : o_.block;
      // A random window of the source, so files differ in content like Postmark's.
      const char* from = source_.data() + rng_.Below(source_.size() - n);
      const ssize_t w = write(fd, from, n);
      if (w != static_cast<ssize_t>(n)) Die(kProg, "write " + name);
      size -= n;
    }
  }

  const Options& o_;
  Rng rng_;
  std::vector<File> table_;
  std::vector<char> source_;
  std::vector<char> buf_;
  uint64_t next_name_ = 0;
  uint64_t used_ = 0;
  uint64_t created_ = 0, read_ = 0, appended_ = 0, deleted_ = 0;
};

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"Postmark-compatible generator with a time limit and Amino transactions"};
  app.add_option("--dir", o.dir, "Directory to work in (must exist)")->required();
  app.add_option("--files", o.files, "Initial number of files")->capture_default_str();
  app.add_option("--size-low", o.size_low, "Smallest file size (bytes)")->capture_default_str();
  app.add_option("--size-high", o.size_high, "Largest file size (bytes)")->capture_default_str();
  app.add_option("--subdirs", o.subdirs, "Subdirectories to spread files over")
      ->capture_default_str();
  auto* count = app.add_option("--transactions", o.transactions, "Number of transactions")
                    ->capture_default_str();
  app.add_option("--time", o.time_limit, "Run transactions for this many seconds instead")
      ->excludes(count);
  app.add_option("--block", o.block, "read/write transfer size (bytes)")->capture_default_str();
  app.add_option("--bias-read", o.bias_read, "Chance in 10 of read over append (-1: neither)")
      ->capture_default_str();
  app.add_option("--bias-create", o.bias_create, "Chance in 10 of create over delete (-1: neither)")
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Random seed")->capture_default_str();
  app.add_flag("--txn", o.txn, "Wrap each transaction in an Amino transaction (libamino)");
  CLI11_PARSE(app, argc, argv);
  if (o.files == 0 || o.block == 0 || o.size_high < o.size_low) {
    std::fprintf(stderr, "%s: need --files > 0, --block > 0 and --size-high >= --size-low\n",
                 kProg);
    return 2;
  }

  Txn txn;
  if (o.txn) txn.Load();
  Generator g(o);
  const double t0 = NowSeconds();
  g.MakeSubdirs();
  for (uint64_t i = 0; i < o.files; ++i) g.Create();
  const double t1 = NowSeconds();
  uint64_t done = 0;
  for (;;) {
    if (o.time_limit > 0 ? NowSeconds() - t1 >= o.time_limit : done >= o.transactions) break;
    if (txn.enabled()) txn.Begin();
    g.Transaction();
    if (txn.enabled()) txn.Commit();
    ++done;
  }
  const double t2 = NowSeconds();
  g.DeleteAll();
  g.RemoveSubdirs();
  const double t3 = NowSeconds();
  char extra[200];
  std::snprintf(extra, sizeof extra, "create_seconds=%.6f delete_seconds=%.6f ", t1 - t0, t3 - t2);
  PrintResult(done, t2 - t1, extra + g.Counts());
  return 0;
}

}  // namespace
}  // namespace amino::bench

int main(int argc, char** argv) { return amino::bench::Main(argc, argv); }
