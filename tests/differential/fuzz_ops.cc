// fuzz_ops: runs a seeded random sequence of file-system calls in a scratch directory and prints
// one canonical line per call, then a canonical listing of the tree. Two runs of the same seed
// on identical directories print the same text when the system calls behave the same; the
// differential driver (diff_fuzz.py) compares a native run with one under `amino run`.
//
//   fuzz_ops --seed S --ops N --dir SCRATCH [--only LIST] [--portable] [--no-tree]
//   fuzz_ops --list-only --dir SCRATCH [--portable]
//
// --only LIST (e.g. 0-5,9,12) executes only those operations; the others are still generated,
// so the listed ones are the same as in the full sequence (this is how failures are shrunk).
// --portable leaves out what only the same file-system type reproduces (regular files' block
// counts, data extents, directory offsets), for comparing the host with an Amino mount.
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <string>

#include "executor.h"
#include "tree.h"

namespace {

using amino::fuzz::Canon;

[[noreturn]] void Usage(const char* why) {
  fprintf(stderr,
          "fuzz_ops: %s\nusage: fuzz_ops --seed S --ops N --dir SCRATCH [--only LIST] "
          "[--portable] [--no-tree] [--threaded] [--no-flink]\n       fuzz_ops --list-only --dir "
          "SCRATCH [--portable]\n",
          why);
  exit(2);
}

// "0-5,9" -> {0,1,2,3,4,5,9}
bool ParseOnly(const char* text, std::set<int>* out) {
  const char* p = text;
  while (*p) {
    char* end;
    long a = strtol(p, &end, 10);
    if (end == p || a < 0) return false;
    long b = a;
    if (*end == '-') {
      p = end + 1;
      b = strtol(p, &end, 10);
      if (end == p || b < a) return false;
    }
    for (long i = a; i <= b; ++i) out->insert(static_cast<int>(i));
    if (*end == ',')
      ++end;
    else if (*end)
      return false;
    p = end;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned long long seed = 0;
  long count = -1;
  const char* dir = nullptr;
  bool only_given = false, list_only = false, tree = true, threaded = false, no_flink = false;
  std::set<int> only;
  Canon canon;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Usage(("missing value of " + a).c_str());
      return argv[++i];
    };
    if (a == "--seed") {
      seed = strtoull(value(), nullptr, 10);
    } else if (a == "--ops") {
      count = strtol(value(), nullptr, 10);
    } else if (a == "--dir") {
      dir = value();
    } else if (a == "--only") {
      only_given = true;
      if (!ParseOnly(value(), &only)) Usage("bad --only list");
    } else if (a == "--portable") {
      canon.portable = true;
    } else if (a == "--list-only") {
      list_only = true;
    } else if (a == "--no-tree") {
      tree = false;
    } else if (a == "--threaded") {
      threaded = true;
    } else if (a == "--no-flink") {
      no_flink = true;
    } else {
      Usage(("unknown argument " + a).c_str());
    }
  }
  if (!dir) Usage("--dir is required");
  if (!list_only && count < 0) Usage("--ops is required");
  // Line-buffered: a crash still leaves every finished line in the output.
  setvbuf(stdout, nullptr, _IOLBF, 0);
  canon.start = time(nullptr);
  if (chdir(dir) != 0) {
    fprintf(stderr, "fuzz_ops: cannot enter %s: %s\n", dir, strerror(errno));
    return 2;
  }
  char root[4096];
  if (!getcwd(root, sizeof root)) {
    fprintf(stderr, "fuzz_ops: getcwd: %s\n", strerror(errno));
    return 2;
  }
  if (threaded) {
    // A second thread that only waits: the calls come from a task whose memory another task
    // shares, which a monitor may treat differently (another thread could change a path).
    pthread_t idle;
    if (pthread_create(
            &idle, nullptr,
            [](void*) -> void* {
              for (;;) pause();
            },
            nullptr) != 0) {
      fprintf(stderr, "fuzz_ops: pthread_create failed\n");
      return 2;
    }
  }
  if (!list_only) {
    umask(022);  // the same starting point whatever the caller's
    printf("# seed %llu ops %ld uid %u gid %u\n", seed, count, getuid(), getgid());
    amino::fuzz::Executor exec(root, canon);
    std::vector<amino::fuzz::Op> ops = amino::fuzz::Generate(seed, static_cast<int>(count));
    if (no_flink) {
      // linkat(fd, "", ..., AT_EMPTY_PATH) without CAP_DAC_READ_SEARCH takes the opener's
      // credentials, which a file a monitor opened for the program does not carry: such
      // linkats become plain ones of "" (ENOENT), the rest of the sequence unchanged.
      for (amino::fuzz::Op& op : ops) {
        if (op.kind == amino::fuzz::Kind::kLinkat) op.a &= ~static_cast<int64_t>(AT_EMPTY_PATH);
      }
    }
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      if (only_given && !only.count(i)) continue;
      printf("%d %s\n", i, exec.Run(ops[static_cast<size_t>(i)]).c_str());
    }
  }
  if (tree || list_only) {
    printf("# tree\n");
    amino::fuzz::PrintTree(root, canon);
  }
  return 0;
}
