// Meta-data micro benchmarks after the Amino evaluation (§4.4): create, stat, readdir and unlink
// over D directories of F files each. Files are spread over directories so that no file system
// is penalised for linear directory lookups; each phase is a separate run so the harness can
// remount (cold cache) in between, as the paper did.
//
//   meta_bench --phase create|stat|readdir|unlink --dir DIR --dirs D --files F
//
// create: mkdir d0..d{D-1} and create F empty files in each (ops = directories + files);
// stat: stat(2) every file (ops = files); readdir: read every directory to its end (ops =
// directories, entries=N counts the names seen); unlink: unlink every file and rmdir every
// directory (ops = files + directories). Prints "RESULT ops=N seconds=S ...".
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <string>

#include "bench_util.h"

namespace amino::bench {
namespace {

constexpr const char* kProg = "meta_bench";

std::string DirName(const std::string& root, uint64_t d) { return root + "/d" + std::to_string(d); }
std::string FileName(const std::string& root, uint64_t d, uint64_t f) {
  return DirName(root, d) + "/f" + std::to_string(f);
}

int Main(int argc, char** argv) {
  std::string phase, root;
  uint64_t dirs = 10, files = 100;
  CLI::App app{"Meta-data micro benchmarks: create, stat, readdir, unlink"};
  app.add_option("--phase", phase, "create, stat, readdir or unlink")
      ->required()
      ->check(CLI::IsMember({"create", "stat", "readdir", "unlink"}));
  app.add_option("--dir", root, "Directory to work in (must exist)")->required();
  app.add_option("--dirs", dirs, "Number of directories")->capture_default_str();
  app.add_option("--files", files, "Files per directory")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  uint64_t ops = 0, entries = 0;
  const double t0 = NowSeconds();
  if (phase == "create") {
    for (uint64_t d = 0; d < dirs; ++d) {
      if (mkdir(DirName(root, d).c_str(), 0755) != 0) Die(kProg, "mkdir " + DirName(root, d));
      ++ops;
      for (uint64_t f = 0; f < files; ++f) {
        const std::string p = FileName(root, d, f);
        const int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0 || close(fd) != 0) Die(kProg, "create " + p);
        ++ops;
      }
    }
  } else if (phase == "stat") {
    struct stat st;
    for (uint64_t d = 0; d < dirs; ++d) {
      for (uint64_t f = 0; f < files; ++f) {
        const std::string p = FileName(root, d, f);
        if (stat(p.c_str(), &st) != 0) Die(kProg, "stat " + p);
        ++ops;
      }
    }
  } else if (phase == "readdir") {
    for (uint64_t d = 0; d < dirs; ++d) {
      DIR* dir = opendir(DirName(root, d).c_str());
      if (dir == nullptr) Die(kProg, "opendir " + DirName(root, d));
      errno = 0;
      while (readdir(dir) != nullptr) ++entries;
      if (errno != 0) Die(kProg, "readdir " + DirName(root, d));
      closedir(dir);
      ++ops;
    }
    // "." and ".." included: every directory must have shown all its files.
    if (entries != dirs * (files + 2)) {
      std::fprintf(stderr, "%s: readdir saw %llu entries, expected %llu\n", kProg,
                   static_cast<unsigned long long>(entries),
                   static_cast<unsigned long long>(dirs * (files + 2)));
      return 1;
    }
  } else {
    for (uint64_t d = 0; d < dirs; ++d) {
      for (uint64_t f = 0; f < files; ++f) {
        const std::string p = FileName(root, d, f);
        if (unlink(p.c_str()) != 0) Die(kProg, "unlink " + p);
        ++ops;
      }
      if (rmdir(DirName(root, d).c_str()) != 0) Die(kProg, "rmdir " + DirName(root, d));
      ++ops;
    }
  }
  const double t1 = NowSeconds();
  PrintResult(ops, t1 - t0, "entries=" + std::to_string(entries));
  return 0;
}

}  // namespace
}  // namespace amino::bench

int main(int argc, char** argv) { return amino::bench::Main(argc, argv); }
