// schema_bench --growth: how create and stat rates change as the tree grows, beside the host's.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_rows.h"
#include "schema/filesystem.h"

namespace amino::bench {

using schema::Cred;
using schema::FileSystem;
using schema::OpenResult;
using schema::Status;
using schema::Transaction;

void RunGrowth(FileSystem& fs, const std::string& fs_dir, const std::string& native, long total) {
  // One system call's worth of work in its own transaction.
  auto call = [&](const std::function<Status(Transaction&)>& body) {
    Check(fs.Run(nullptr, {}, body), "transaction");
  };
  std::printf("%10s %12s %12s %7s %12s %12s %7s %10s\n", "files", "amino cr/s", "native cr/s",
              "ratio", "amino st/s", "native st/s", "ratio", "db MiB");
  auto name = [](long i) {
    return "/g" + std::to_string(i / 1000) + "/f" + std::to_string(i % 1000);
  };
  std::mt19937_64 rng(3);
  long made = 0;
  for (long decade = 1000; made < total; decade *= 10) {
    const long upto = std::min(decade, total);
    const int n = static_cast<int>(upto - made);
    const long first = made;
    auto create_amino = [&](int k) {
      const long i = first + k;
      call([&](Transaction& t) -> Status {
        if (i % 1000 == 0) {
          AMINO_RETURN_IF_ERROR(
              fs.Mkdir(t, Cred::Root(), "/g" + std::to_string(i / 1000), 0755).status());
        }
        AMINO_ASSIGN_OR_RETURN(
            OpenResult o, fs.Open(t, Cred::Root(), name(i), O_CREAT | O_EXCL | O_WRONLY, 0644));
        return fs.Close(t, o.id);
      });
    };
    auto create_native = [&](int k) {
      const long i = first + k;
      if (i % 1000 == 0) {
        std::string d = native + "/g" + std::to_string(i / 1000);
        CheckSys(mkdir(d.c_str(), 0755) == 0, d);
      }
      std::string p = native + name(i);
      int fd = open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
      CheckSys(fd >= 0, p);
      close(fd);
    };
    const double ca = n / Time(n, create_amino);
    const double cn = n / Time(n, create_native);
    made = upto;
    const int stats = 20000;
    std::vector<std::string> picks(stats);
    for (std::string& p : picks) p = name(static_cast<long>(rng() % static_cast<uint64_t>(made)));
    const double sa =
        stats / Time(stats, [&](int k) {
          call([&](Transaction& t) { return fs.GetStat(t, Cred::Root(), picks[k]).status(); });
        });
    const double sn = stats / Time(stats, [&](int k) {
                        struct stat st;
                        std::string p = native + picks[k];
                        CheckSys(stat(p.c_str(), &st) == 0, p);
                      });
    uint64_t bytes = 0;
    for (const auto& e : std::filesystem::directory_iterator(fs_dir)) {
      if (e.is_regular_file() && e.path().extension() == ".db") {
        bytes += e.file_size();
      }
    }
    std::printf("%10ld %12.0f %12.0f %7.3f %12.0f %12.0f %7.3f %10.1f\n", made, ca, cn, ca / cn, sa,
                sn, sa / sn, bytes / 1048576.0);
    std::fflush(stdout);
  }
}

}  // namespace amino::bench
