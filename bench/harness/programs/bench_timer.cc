// Runs a command and writes its elapsed time and the CPU time of its whole process tree to a
// file. The harness starts it *inside* the tracer (`amino run -- bench_timer OUT -- CMD`), so
// what it measures is the workload alone; the harness measures the tracer plus everything below
// it from outside, and the difference is the monitor's own CPU time.
//
//   bench_timer OUTFILE -- CMD ARGS...
//
// OUTFILE receives one line: "elapsed=S user=S system=S status=N". The exit status is CMD's
// (128+N when signal N killed it).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "bench_util.h"

namespace {

double Seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[2], "--") != 0) {
    std::fprintf(stderr, "usage: bench_timer OUTFILE -- CMD ARGS...\n");
    return 2;
  }
  const double start = amino::bench::NowSeconds();
  const pid_t pid = fork();
  if (pid < 0) amino::bench::Die("bench_timer", "fork");
  if (pid == 0) {
    execvp(argv[3], argv + 3);
    std::fprintf(stderr, "bench_timer: %s: %s\n", argv[3], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) amino::bench::Die("bench_timer", "waitpid");
  }
  const double elapsed = amino::bench::NowSeconds() - start;
  rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  FILE* out = std::fopen(argv[1], "w");
  if (out == nullptr) amino::bench::Die("bench_timer", argv[1]);
  std::fprintf(out, "elapsed=%.6f user=%.6f system=%.6f status=%d\n", elapsed, Seconds(ru.ru_utime),
               Seconds(ru.ru_stime), code);
  if (std::fclose(out) != 0) amino::bench::Die("bench_timer", argv[1]);
  return code;
}
