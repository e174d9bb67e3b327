// Costs of librvm beside an explicit-logging baseline, measured in one run and printed as a
// Markdown table.
//
// The baseline is what LRVM asks of a program: call set_range(addr, len) before writing, which
// copies the range into an undo log (here an arena reserved up front, so no allocation is timed);
// commit discards the log, abort copies it back in reverse. librvm needs no call: the first write
// to a page in a transaction faults and the handler copies the page. Rows:
//
//   first write to a page        one store to a page not yet written in the transaction (RVM: a
//                                SIGSEGV, a 4 KiB copy and an mprotect); the baseline logs the
//                                whole page, and in a second row only the 8 bytes written
//   rvm_set_range + write        librvm told explicitly (no fault, still a copy and an mprotect)
//   begin+commit, k pages        a whole top-level transaction writing one word in each of k
//                                pages (every other page, so no two are adjacent)
//   commit alone, k pages        just the commit call of that transaction
//   begin+abort, k pages         the same transaction aborted
//   nested begin+commit          a child transaction writing one page inside a parent that has
//                                256 pages writable (RVM write-protects them again at begin)
//   persistent commit, k pages   RVM only: a region kept in a Berkeley DB store (log written to
//                                the OS at commit), one word changed in each of k pages
//
// Times are medians of several batches; speed is reported, never asserted.
//
//   rvm_bench [--quick] [--dir DIR]
#include <signal.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "amino/rvm.h"

namespace amino::bench {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::cerr << "rvm_bench: " << what << "\n";
  exit(1);
}

void Check(int err, const std::string& what) {
  if (err != 0) Die(what + ": " + std::strerror(err));
}

// LRVM-style explicit undo logging.
class ExplicitLog {
 public:
  explicit ExplicitLog(size_t arena_bytes) : arena_(arena_bytes) {}
  void Begin() { levels_.push_back(ranges_.size()); }
  void SetRange(void* addr, size_t len) {
    if (used_ + len > arena_.size()) Die("explicit log arena too small");
    std::memcpy(arena_.data() + used_, addr, len);
    ranges_.push_back(Range{static_cast<char*>(addr), len, used_});
    used_ += len;
  }
  void Commit() {
    levels_.pop_back();
    if (levels_.empty()) {
      ranges_.clear();
      used_ = 0;
    }
  }
  void Abort() {
    size_t start = levels_.back();
    levels_.pop_back();
    for (size_t i = ranges_.size(); i-- > start;) {
      std::memcpy(ranges_[i].addr, arena_.data() + ranges_[i].offset, ranges_[i].len);
    }
    used_ = start < ranges_.size() ? ranges_[start].offset : used_;
    ranges_.resize(start);
  }

 private:
  struct Range {
    char* addr;
    size_t len;
    size_t offset;
  };
  std::vector<char> arena_;
  size_t used_ = 0;
  std::vector<Range> ranges_;
  std::vector<size_t> levels_;
};

using Clock = std::chrono::steady_clock;

double Ns(Clock::duration d) { return std::chrono::duration<double, std::nano>(d).count(); }

// Median over `batches` of the nanoseconds per unit that `batch()` reports.
double Median(int batches, const std::function<double()>& batch) {
  std::vector<double> v;
  for (int i = 0; i < batches; ++i) v.push_back(batch());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  std::string what;
  size_t k;            // pages per transaction (1 for per-page rows)
  double rvm_ns;       // per operation (a page write, or a transaction)
  double explicit_ns;  // < 0: no baseline
};

std::string Fixed(double v, int digits) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Rate(double pages_per_s) {
  char buf[64];
  if (pages_per_s >= 1e6) {
    snprintf(buf, sizeof buf, "%.2f M", pages_per_s / 1e6);
  } else {
    snprintf(buf, sizeof buf, "%.1f k", pages_per_s / 1e3);
  }
  return buf;
}

void PrintTable(const std::vector<Row>& rows) {
  std::cout << "| operation | k | RVM ns/op | explicit ns/op | RVM / explicit | RVM pages/s | "
               "explicit pages/s |\n";
  std::cout << "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const Row& r : rows) {
    bool base = r.explicit_ns >= 0;
    std::cout << "| " << r.what << " | " << r.k << " | " << Fixed(r.rvm_ns, 0) << " | "
              << (base ? Fixed(r.explicit_ns, 0) : "—") << " | "
              << (base ? Fixed(r.rvm_ns / r.explicit_ns, 1) + "×" : "—") << " | "
              << Rate(r.k * 1e9 / r.rvm_ns) << " | "
              << (base ? Rate(r.k * 1e9 / r.explicit_ns) : "—") << " |\n";
  }
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

struct Sizes {
  int batches;
  size_t first_write_pages;  // per transaction in the first-write rows
  int first_write_txns;      // per batch
  size_t pages_per_batch;    // in the transaction rows: k * transactions per batch
  size_t persistent_pages_per_batch;
  size_t nested_txns;  // per batch
};
constexpr Sizes kFull{5, 1024, 8, 64 * 1024, 8 * 1024, 2000};
constexpr Sizes kQuick{3, 256, 2, 4 * 1024, 512, 200};

class Bench {
 public:
  Bench(const Sizes& sizes, const std::string& dir)
      : s_(sizes),
        ps_(static_cast<size_t>(sysconf(_SC_PAGESIZE))),
        // Room for the largest transaction's pages, or for a parent and all its nested children.
        log_((std::max(kPages, 256 + sizes.nested_txns) + 1) * ps_) {
    Check(rvm_map(kPages * ps_, 0, &region_), "rvm_map");
    m_ = static_cast<char*>(rvm_base(region_));
    plain_ = static_cast<char*>(mmap(nullptr, kPages * ps_, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0));
    if (plain_ == MAP_FAILED) Die("mmap");
    // Materialise every page of the region, so that no row times the kernel's first touch.
    Check(rvm_begin(), "begin");
    for (size_t p = 0; p < kPages; ++p) m_[p * ps_] = 1;
    Check(rvm_commit(), "commit");
    Check(rvm_store_open(dir.c_str(), 0, &store_), "rvm_store_open " + dir);
    Check(rvm_open(store_, "bench", kPages * ps_, RVM_CREATE, &persistent_), "rvm_open");
    pm_ = static_cast<char*>(rvm_base(persistent_));
  }
  ~Bench() {
    rvm_unmap(persistent_);
    rvm_store_close(store_);
    rvm_unmap(region_);
    munmap(plain_, kPages * ps_);
  }

  std::vector<Row> Run() {
    std::vector<Row> rows;
    FirstWrites(rows);
    for (size_t k : {size_t{1}, size_t{16}, size_t{256}, size_t{4096}}) Transactions(rows, k);
    Nested(rows);
    for (size_t k : {size_t{1}, size_t{16}, size_t{256}}) Persistent(rows, k);
    return rows;
  }

  // What the kernel charges for RVM's two ingredients on this machine: changing one page's
  // protection (a split or merge of a mapping and a page-table update) and delivering a signal.
  std::pair<double, double> KernelReference() {
    const int n = 1000;
    char* scratch = static_cast<char*>(
        mmap(nullptr, 2 * n * ps_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0));
    if (scratch == MAP_FAILED) Die("mmap");
    double mprotect_ns = Median(s_.batches, [&] {
      auto t0 = Clock::now();
      for (int i = 0; i < n; ++i) mprotect(scratch + 2 * i * ps_, ps_, PROT_READ | PROT_WRITE);
      for (int i = 0; i < n; ++i) mprotect(scratch + 2 * i * ps_, ps_, PROT_READ);
      return Ns(Clock::now() - t0) / (2.0 * n);
    });
    munmap(scratch, 2 * n * ps_);
    signal(SIGUSR1, [](int) {});
    double signal_ns = Median(s_.batches, [&] {
      auto t0 = Clock::now();
      for (int i = 0; i < n; ++i) raise(SIGUSR1);
      return Ns(Clock::now() - t0) / n;
    });
    signal(SIGUSR1, SIG_DFL);
    return {mprotect_ns, signal_ns};
  }

  double UnloggedWriteNs() {
    const size_t n = s_.first_write_pages;
    return Median(s_.batches, [&] {
      auto t0 = Clock::now();
      for (size_t i = 0; i < n; ++i) Page(plain_, i)[0] = static_cast<char>(i);
      asm volatile("" ::: "memory");
      return Ns(Clock::now() - t0) / static_cast<double>(n);
    });
  }

 private:
  static constexpr size_t kPages = 8192 + 2;  // every other page of 4096, plus room
  char* Page(char* base, size_t i) { return base + 2 * i * ps_; }

  void FirstWrites(std::vector<Row>& rows) {
    const size_t n = s_.first_write_pages;
    auto per_page = [&](const std::function<void(char*, size_t)>& write, bool rvm) {
      return Median(s_.batches, [&] {
        double total = 0;
        for (int t = 0; t < s_.first_write_txns; ++t) {
          rvm ? Check(rvm_begin(), "begin") : log_.Begin();
          auto t0 = Clock::now();
          for (size_t i = 0; i < n; ++i) write(rvm ? m_ : plain_, i);
          total += Ns(Clock::now() - t0);
          rvm ? Check(rvm_commit(), "commit") : log_.Commit();
        }
        return total / static_cast<double>(n * s_.first_write_txns);
      });
    };
    auto store = [&](char* base, size_t i) { Page(base, i)[8] = static_cast<char>(i); };
    double rvm = per_page(store, true);
    double page = per_page(
        [&](char* base, size_t i) {
          log_.SetRange(Page(base, i), ps_);
          store(base, i);
        },
        false);
    double word = per_page(
        [&](char* base, size_t i) {
          log_.SetRange(Page(base, i) + 8, 8);
          store(base, i);
        },
        false);
    double set_range = per_page(
        [&](char* base, size_t i) {
          Check(rvm_set_range(Page(base, i) + 8, 8), "rvm_set_range");
          store(base, i);
        },
        true);
    rows.push_back(Row{"first write to a page (explicit: set_range of the page)", 1, rvm, page});
    rows.push_back(Row{"first write to a page (explicit: set_range of 8 bytes)", 1, rvm, word});
    rows.push_back(
        Row{"rvm_set_range + write (explicit: set_range of 8 bytes)", 1, set_range, word});
  }

  // Writes one word in each of `k` pages of `base` inside an open transaction.
  void Dirty(char* base, size_t k, bool rvm, char v) {
    for (size_t i = 0; i < k; ++i) {
      if (!rvm) log_.SetRange(Page(base, i), ps_);
      Page(base, i)[16] = v;
    }
  }

  void Transactions(std::vector<Row>& rows, size_t k) {
    const size_t txns = std::max<size_t>(4, s_.pages_per_batch / k);
    char v = 0;
    auto whole = [&](bool rvm, bool abort) {
      return Median(s_.batches, [&] {
        auto t0 = Clock::now();
        for (size_t t = 0; t < txns; ++t) {
          rvm ? Check(rvm_begin(), "begin") : log_.Begin();
          Dirty(rvm ? m_ : plain_, k, rvm, ++v);
          if (abort) {
            rvm ? Check(rvm_abort(), "abort") : log_.Abort();
          } else {
            rvm ? Check(rvm_commit(), "commit") : log_.Commit();
          }
        }
        return Ns(Clock::now() - t0) / static_cast<double>(txns);
      });
    };
    auto commit_only = [&](bool rvm) {
      return Median(s_.batches, [&] {
        double total = 0;
        for (size_t t = 0; t < txns; ++t) {
          rvm ? Check(rvm_begin(), "begin") : log_.Begin();
          Dirty(rvm ? m_ : plain_, k, rvm, ++v);
          auto t0 = Clock::now();
          rvm ? Check(rvm_commit(), "commit") : log_.Commit();
          total += Ns(Clock::now() - t0);
        }
        return total / static_cast<double>(txns);
      });
    };
    rows.push_back(Row{"begin + write + commit", k, whole(true, false), whole(false, false)});
    rows.push_back(Row{"commit alone", k, commit_only(true), commit_only(false)});
    rows.push_back(Row{"begin + write + abort", k, whole(true, true), whole(false, true)});
  }

  void Nested(std::vector<Row>& rows) {
    const size_t parent_pages = 256;
    const size_t txns = s_.nested_txns;
    char v = 0;
    auto nested = [&](bool rvm) {
      return Median(s_.batches, [&] {
        rvm ? Check(rvm_begin(), "begin") : log_.Begin();
        Dirty(rvm ? m_ : plain_, parent_pages, rvm, ++v);
        auto t0 = Clock::now();
        for (size_t t = 0; t < txns; ++t) {
          rvm ? Check(rvm_begin(), "begin") : log_.Begin();
          Dirty(rvm ? m_ : plain_, 1, rvm, ++v);
          rvm ? Check(rvm_commit(), "commit") : log_.Commit();
        }
        double ns = Ns(Clock::now() - t0) / static_cast<double>(txns);
        rvm ? Check(rvm_commit(), "commit") : log_.Commit();
        return ns;
      });
    };
    rows.push_back(
        Row{"nested begin + write + commit (parent: 256 pages)", 1, nested(true), nested(false)});
  }

  void Persistent(std::vector<Row>& rows, size_t k) {
    const size_t txns = std::max<size_t>(4, s_.persistent_pages_per_batch / k);
    uint64_t v = 0;
    double ns = Median(s_.batches, [&] {
      auto t0 = Clock::now();
      for (size_t t = 0; t < txns; ++t) {
        Check(rvm_begin(), "begin");
        ++v;
        for (size_t i = 0; i < k; ++i) std::memcpy(Page(pm_, i) + 24, &v, sizeof v);
        Check(rvm_commit(), "commit");
      }
      return Ns(Clock::now() - t0) / static_cast<double>(txns);
    });
    rows.push_back(Row{"persistent begin + write + commit", k, ns, -1});
  }

  Sizes s_;
  size_t ps_;
  ExplicitLog log_;
  rvm_region* region_ = nullptr;
  rvm_store* store_ = nullptr;
  rvm_region* persistent_ = nullptr;
  char* m_ = nullptr;
  char* pm_ = nullptr;
  char* plain_ = nullptr;
};

}  // namespace
}  // namespace amino::bench

int main(int argc, char** argv) {
  CLI::App app{"librvm micro benchmarks beside explicit undo logging"};
  bool quick = false;
  std::string dir;
  app.add_flag("--quick", quick, "small sizes (a smoke test)");
  app.add_option("--dir", dir, "directory for the persistent store (default: a fresh one in /tmp)");
  CLI11_PARSE(app, argc, argv);

  std::string made;
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rvm-bench-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) amino::bench::Die("mkdtemp");
    dir = made = tmpl;
  }
  const auto& sizes = quick ? amino::bench::kQuick : amino::bench::kFull;
  utsname u;
  uname(&u);
  std::cout << "librvm micro benchmarks" << (quick ? " (quick)" : "") << ": " << u.nodename
            << ", Linux " << u.release << ", " << amino::bench::CpuModel() << ", "
            << sysconf(_SC_NPROCESSORS_ONLN) << " CPUs, page size " << sysconf(_SC_PAGESIZE)
            << " bytes; medians of " << sizes.batches << " batches.\n\n";
  double unlogged = 0;
  std::pair<double, double> kernel;
  std::vector<amino::bench::Row> rows;
  {
    amino::bench::Bench bench(sizes, dir + "/store");
    rows = bench.Run();
    unlogged = bench.UnloggedWriteNs();
    kernel = bench.KernelReference();
  }
  amino::bench::PrintTable(rows);
  std::cout << "\nns/op is per page written in the first three rows, per transaction in the "
               "others; k is pages written per transaction. For reference, an unlogged store to "
               "an already writable page takes "
            << amino::bench::Fixed(unlogged, 1) << " ns; one mprotect of a single page "
            << amino::bench::Fixed(kernel.first, 0) << " ns; raising a signal and returning from "
            << "its handler " << amino::bench::Fixed(kernel.second, 0) << " ns.\n";
  if (!made.empty()) std::filesystem::remove_all(made);
  return 0;
}
