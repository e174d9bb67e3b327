// Micro benchmarks of the schema, each beside the same operation on the host file system in the
// same directory, so every result is a ratio measured in one run. Each schema operation runs in
// its own top-level transaction, as one system call would (kWriteNoSync unless a row says
// otherwise); the native calls are plain system calls without fsync unless a row says otherwise.
// Speed is reported, never asserted. Also checks with db_stat that 4 KiB file pages stay inline
// in the Data db (no overflow pages).
//
//   schema_bench [--dir DIR] [--quick]
//   schema_bench [--dir DIR] --growth N   how create and stat rates change as the tree grows
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_rows.h"
#include "schema/filesystem.h"

namespace amino::bench {
namespace {

using schema::Cred;
using schema::DirEntry;
using schema::Durability;
using schema::FileId;
using schema::FileSystem;
using schema::OpenResult;
using schema::Status;
using schema::Transaction;
using schema::TxnOptions;

const Cred kRoot = Cred::Root();
constexpr size_t kPage = 4096;

struct Sizes {
  int reps;   // each row runs this many times (amino and native alternating); median
  int files;  // created in one directory, then stat'ed and listed
  int stats;
  int readdir_passes;
  uint64_t data_bytes;  // the file the data rows read and write
  int random_ops;
  int commits;  // per durability without sync
  int sync_commits;
};

constexpr Sizes kFull{3, 10000, 20000, 5, 64ull << 20, 8192, 3000, 300};
constexpr Sizes kQuick{1, 2000, 2000, 2, 4ull << 20, 1024, 300, 30};

class Bench {
 public:
  Bench(std::string root, const Sizes& sizes) : root_(std::move(root)), sizes_(sizes) {
    fs_dir_ = root_ + "/amino";
    native_ = root_ + "/native";
    CheckSys(mkdir(native_.c_str(), 0755) == 0, native_);
    Check(FileSystem::Mkfs(fs_dir_), "mkfs");
    OpenFs();
  }

  void Run() {
    Metadata();
    Data();
    InlinePages();
    Commits();
    std::printf("\nmedian of %d run(s) per row; ratio = amino op/s / native op/s\n", sizes_.reps);
    PrintTable(rows_);
  }

 private:
  // Seconds for one run of a row's operations; `rep` numbers the run.
  using Timed = std::function<double(int rep)>;

  void OpenFs() {
    auto fs = FileSystem::Open(fs_dir_);
    if (!fs.ok()) Die("open: " + fs.status().message());
    fs_ = std::move(fs).value();
  }

  // One system call's worth of work in its own transaction.
  void Call(const std::function<Status(Transaction&)>& body, TxnOptions opts = {}) {
    Check(fs_->Run(nullptr, opts, body), "transaction");
  }

  // Runs both sides `reps` times, alternating, each after a sync() so that one side's
  // write-back does not land in the other's timing; records the medians.
  void Measure(const std::string& name, double ops, const Timed& amino, const Timed& native,
               const std::string& native_label) {
    std::vector<double> a, b;
    for (int rep = 0; rep < sizes_.reps; ++rep) {
      sync();
      a.push_back(amino(rep));
      sync();
      b.push_back(native(rep));
    }
    rows_.push_back({name, ops / Median(a), ops / Median(b), native_label});
  }

  static std::string Many(int rep) { return "/many" + std::to_string(rep); }

  void Metadata() {
    const int n = sizes_.files;
    Measure(
        "create (open O_CREAT + close)", n,
        [&](int rep) {
          Call([&](Transaction& t) { return fs_->Mkdir(t, kRoot, Many(rep), 0755).status(); });
          return Time(n, [&](int i) {
            Call([&](Transaction& t) -> Status {
              AMINO_ASSIGN_OR_RETURN(OpenResult o,
                                     fs_->Open(t, kRoot, Many(rep) + "/f" + std::to_string(i),
                                               O_CREAT | O_EXCL | O_WRONLY, 0644));
              return fs_->Close(t, o.id);
            });
          });
        },
        [&](int rep) {
          std::string dir = native_ + Many(rep);
          CheckSys(mkdir(dir.c_str(), 0755) == 0, dir);
          return Time(n, [&](int i) {
            std::string p = dir + "/f" + std::to_string(i);
            int fd = open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
            CheckSys(fd >= 0, p);
            close(fd);
          });
        },
        "open+close");

    std::mt19937 rng(1);
    std::vector<std::string> picks(sizes_.stats);
    for (std::string& p : picks) p = Many(0) + "/f" + std::to_string(rng() % n);
    Measure(
        "stat (random file of the dir)", sizes_.stats,
        [&](int) {
          return Time(sizes_.stats, [&](int i) {
            Call([&](Transaction& t) { return fs_->GetStat(t, kRoot, picks[i]).status(); });
          });
        },
        [&](int) {
          return Time(sizes_.stats, [&](int i) {
            struct stat st;
            std::string p = native_ + picks[i];
            CheckSys(stat(p.c_str(), &st) == 0, p);
          });
        },
        "stat");

    // readdir: one transaction per chunk of 256 entries, as one getdents call would be.
    const int passes = sizes_.readdir_passes;
    Measure(
        "readdir entries (" + std::to_string(n) + "-entry dir)", double(n) * passes,
        [&](int) {
          size_t listed = 0;
          double s = Time(passes, [&](int) {
            FileId dir = 0;
            Call([&](Transaction& t) -> Status {
              AMINO_ASSIGN_OR_RETURN(OpenResult o,
                                     fs_->Open(t, kRoot, Many(0), O_RDONLY | O_DIRECTORY));
              dir = o.id;
              return Status::Ok();
            });
            std::string after;
            for (bool more = true; more;) {
              Call([&](Transaction& t) -> Status {
                AMINO_ASSIGN_OR_RETURN(std::vector<DirEntry> chunk,
                                       fs_->ReadDir(t, dir, after, 256));
                more = !chunk.empty();
                if (more) after = chunk.back().name;
                listed += chunk.size();
                return Status::Ok();
              });
            }
            Call([&](Transaction& t) { return fs_->Close(t, dir); });
          });
          if (listed != size_t(n) * passes) Die("readdir listed a wrong number of entries");
          return s;
        },
        [&](int) {
          return Time(passes, [&](int) {
            DIR* d = opendir((native_ + Many(0)).c_str());
            CheckSys(d != nullptr, "opendir");
            while (readdir(d)) {
            }
            closedir(d);
          });
        },
        "opendir+readdir");
  }

  void Data() {
    const int pages = static_cast<int>(sizes_.data_bytes / kPage);
    const std::string buf(kPage, 'd');
    std::string in(kPage, '\0');
    const std::string mib = std::to_string(sizes_.data_bytes >> 20) + " MiB";
    auto big = [](int rep) { return "/big" + std::to_string(rep); };
    auto open_amino = [&](const std::string& path) {
      FileId id = 0;
      Call([&](Transaction& t) -> Status {
        AMINO_ASSIGN_OR_RETURN(OpenResult o, fs_->Open(t, kRoot, path, O_CREAT | O_RDWR, 0644));
        id = o.id;
        return Status::Ok();
      });
      return id;
    };
    auto close_amino = [&](FileId id) { Call([&](Transaction& t) { return fs_->Close(t, id); }); };
    auto open_native = [&](const std::string& path) {
      int fd = open((native_ + path).c_str(), O_CREAT | O_RDWR, 0644);
      CheckSys(fd >= 0, native_ + path);
      return fd;
    };

    // Each run writes a new file, so every run extends a file as the first did.
    Measure(
        "4 KiB sequential write (" + mib + ")", pages,
        [&](int rep) {
          FileId id = open_amino(big(rep));
          double s = Time(pages, [&](int i) {
            Call([&](Transaction& t) {
              return fs_->Write(t, kRoot, id, uint64_t(i) * kPage, buf.data(), kPage).status();
            });
          });
          close_amino(id);
          return s;
        },
        [&](int rep) {
          int fd = open_native(big(rep));
          double s = Time(pages, [&](int i) {
            CheckSys(pwrite(fd, buf.data(), kPage, off_t(i) * kPage) == kPage, "pwrite");
          });
          close(fd);
          return s;
        },
        "pwrite");

    FileId id = open_amino(big(0));
    int fd = open_native(big(0));
    Measure(
        "4 KiB sequential read (" + mib + ")", pages,
        [&](int) {
          return Time(pages, [&](int i) {
            Call([&](Transaction& t) {
              return fs_->Read(t, id, uint64_t(i) * kPage, in.data(), kPage).status();
            });
          });
        },
        [&](int) {
          return Time(pages, [&](int i) {
            CheckSys(pread(fd, in.data(), kPage, off_t(i) * kPage) == kPage, "pread");
          });
        },
        "pread (page cache)");

    std::mt19937_64 rng(2);
    const int r = sizes_.random_ops;
    std::vector<uint64_t> offs(r);
    for (uint64_t& o : offs) o = (rng() % pages) * kPage;
    Measure(
        "4 KiB random write (" + mib + ")", r,
        [&](int) {
          return Time(r, [&](int i) {
            Call([&](Transaction& t) {
              return fs_->Write(t, kRoot, id, offs[i], buf.data(), kPage).status();
            });
          });
        },
        [&](int) {
          return Time(r, [&](int i) {
            CheckSys(pwrite(fd, buf.data(), kPage, off_t(offs[i])) == kPage, "pwrite");
          });
        },
        "pwrite");

    std::shuffle(offs.begin(), offs.end(), rng);
    Measure(
        "4 KiB random read (" + mib + ")", r,
        [&](int) {
          return Time(r, [&](int i) {
            Call([&](Transaction& t) {
              return fs_->Read(t, id, offs[i], in.data(), kPage).status();
            });
          });
        },
        [&](int) {
          return Time(r, [&](int i) {
            CheckSys(pread(fd, in.data(), kPage, off_t(offs[i])) == kPage, "pread");
          });
        },
        "pread (page cache)");
    close(fd);
    close_amino(id);
  }

  // A small transaction (create + write 4 KiB) under each durability.
  void Commits() {
    const std::string buf(kPage, 'c');
    struct Mode {
      Durability durability;
      const char* name;
      int n;
      bool native_sync;
    };
    const Mode modes[] = {
        {Durability::kNoSync, "commit create+write 4K, NoSync", sizes_.commits, false},
        {Durability::kWriteNoSync, "commit create+write 4K, WriteNoSync", sizes_.commits, false},
        {Durability::kSync, "commit create+write 4K, Sync", sizes_.sync_commits, true},
    };
    int m = 0;
    for (const Mode& mode : modes) {
      const std::string prefix = "/commit" + std::to_string(m++) + "-";
      TxnOptions opts;
      opts.durability = mode.durability;
      Measure(
          mode.name, mode.n,
          [&](int rep) {
            std::string dir = prefix + std::to_string(rep);
            Call([&](Transaction& t) { return fs_->Mkdir(t, kRoot, dir, 0755).status(); });
            return Time(mode.n, [&](int i) {
              Call(
                  [&](Transaction& t) -> Status {
                    AMINO_ASSIGN_OR_RETURN(OpenResult o,
                                           fs_->Open(t, kRoot, dir + "/f" + std::to_string(i),
                                                     O_CREAT | O_EXCL | O_WRONLY, 0644));
                    AMINO_RETURN_IF_ERROR(
                        fs_->Write(t, kRoot, o.id, 0, buf.data(), kPage).status());
                    return fs_->Close(t, o.id);
                  },
                  opts);
            });
          },
          [&](int rep) {
            std::string dir = native_ + prefix + std::to_string(rep);
            CheckSys(mkdir(dir.c_str(), 0755) == 0, dir);
            int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
            CheckSys(dfd >= 0, dir);
            double s = Time(mode.n, [&](int i) {
              std::string p = dir + "/f" + std::to_string(i);
              int fd = open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
              CheckSys(fd >= 0, p);
              CheckSys(write(fd, buf.data(), kPage) == kPage, "write");
              if (mode.native_sync) CheckSys(fsync(fd) == 0 && fsync(dfd) == 0, "fsync");
              close(fd);
            });
            close(dfd);
            return s;
          },
          mode.native_sync ? "open+write+fsync(file, dir)+close" : "open+write+close");
    }
  }

 public:
  void RunGrowth(long total) { amino::bench::RunGrowth(*fs_, fs_dir_, native_, total); }

 private:
  // db_stat on the Data db: 4 KiB pages must be stored inline (no overflow pages) in 64 KiB
  // database pages. Run with the file system closed, so the statistics are settled.
  void InlinePages() {
    Check(fs_->Checkpoint(), "checkpoint");
    fs_.reset();
    std::string cmd = "db5.3_stat -h '" + fs_dir_ + "' -d data.db 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) Die("cannot run db5.3_stat");
    char line[512];
    long page_size = -1, overflow = -1, leaf = -1;
    std::string leaf_fill = "?";
    while (fgets(line, sizeof line, p)) {
      std::string l(line);
      auto number = [&] { return std::strtol(line, nullptr, 10); };
      if (l.find("Underlying database page size") != std::string::npos) page_size = number();
      if (l.find("Number of tree overflow pages") != std::string::npos) overflow = number();
      if (l.find("Number of tree leaf pages") != std::string::npos) leaf = number();
      if (l.find("bytes free in tree leaf pages") != std::string::npos) {
        size_t open = l.find('(');
        if (open != std::string::npos) leaf_fill = l.substr(open + 1, l.find(')') - open - 1);
      }
    }
    int rc = pclose(p);
    std::printf(
        "\ndb5.3_stat -d data.db (exit %d): page size %ld, leaf pages %ld (%s), "
        "overflow pages %ld\n",
        rc, page_size, leaf, leaf_fill.c_str(), overflow);
    bool inline_ok = rc == 0 && page_size == 65536 && overflow == 0 && leaf > 0;
    std::printf("4 KiB pages inline: %s\n", inline_ok ? "yes" : "NO");
    OpenFs();
  }

  std::string root_;
  std::string fs_dir_;
  std::string native_;
  Sizes sizes_;
  std::unique_ptr<FileSystem> fs_;
  std::vector<Row> rows_;
};

}  // namespace
}  // namespace amino::bench

int main(int argc, char** argv) {
  CLI::App app{"Schema micro benchmarks against the host file system"};
  std::string dir = "/tmp";
  bool quick = false;
  app.add_option("--dir", dir, "directory to create the scratch file systems in")
      ->check(CLI::ExistingDirectory);
  app.add_flag("--quick", quick, "a few-second run with small sizes");
  long growth = 0;
  app.add_option("--growth", growth,
                 "instead: make this many files (in directories of 1,000) and report the create "
                 "and stat rates per decade of the tree's size")
      ->check(CLI::Range(1000L, 100000000L));
  CLI11_PARSE(app, argc, argv);

  std::string tmpl = dir + "/amino-bench-XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    std::perror("mkdtemp");
    return 1;
  }
  {
    const amino::bench::Sizes& sizes = quick ? amino::bench::kQuick : amino::bench::kFull;
    struct utsname u;
    uname(&u);
    std::printf("schema_bench in %s (%s run) on %s %s, %ld CPUs\n", tmpl.c_str(),
                quick    ? "quick"
                : growth ? "growth"
                         : "full",
                u.sysname, u.release, sysconf(_SC_NPROCESSORS_ONLN));
    struct statfs sfs {};
    statfs(tmpl.c_str(), &sfs);
    std::printf("host file system type 0x%lx; native ops run without fsync unless named\n",
                static_cast<unsigned long>(sfs.f_type));
    std::printf("each amino op is one top-level transaction (WriteNoSync unless named)\n");
    double load[1] = {0};
    getloadavg(load, 1);
    std::printf("load average at start: %.2f (other work on the machine skews both columns)\n",
                load[0]);
    amino::bench::Bench bench(tmpl, sizes);
    if (growth > 0) {
      bench.RunGrowth(growth);
    } else {
      bench.Run();
    }
  }
  std::filesystem::remove_all(tmpl);
  return 0;
}
