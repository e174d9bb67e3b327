// Mail delivery load after the Amino evaluation (§4.3): S concurrent senders hand messages to a
// local delivery agent, one agent process per message, each addressed to one of M mailboxes
// chosen at random; message sizes are drawn from a normal distribution (the paper's mean 5,993 B,
// standard deviation 4,166 B, from a trimmed mean of real mail), at least 64 bytes. Senders send
// as fast as the agent accepts (a closed loop), so the result is the highest rate the agent and
// the file system sustain.
//
//   mail_gen --dir DIR [--mailboxes M] [--senders S] [--time T | --messages N] [--warmup W]
//            [--mean B] [--sd B] [--seed S] -- AGENT ARGS...
//
// In AGENT ARGS the word {mbox} becomes the mailbox's path (DIR/userK) and {user} its user name.
// An agent that exits with EX_TEMPFAIL (75: try again later) leaves the message queued, as a mail
// system does: the sender hands it over again after a short pause (at most kMaxRequeues times);
// any other non-zero exit fails the run. Prints "RESULT ops=<messages delivered after the
// warm-up> seconds=<measured time> bytes=<their size> requeued=<deliveries tried again>".
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "bench_util.h"

namespace amino::bench {
namespace {

constexpr const char* kProg = "mail_gen";
constexpr int kTempFail = 75;       // EX_TEMPFAIL
constexpr int kMaxRequeues = 1000;  // for one message: past this the agent is taken as broken

struct Options {
  std::string dir;
  uint64_t mailboxes = 100;
  uint64_t senders = 4;
  double time_limit = 0;
  uint64_t messages = 100;
  double warmup = 0;
  double mean = 5993;
  double sd = 4166;
  uint64_t seed = 42;
  std::vector<std::string> agent;
};

std::string Message(Rng& rng, const Options& o, const std::string& user, uint64_t id) {
  const double drawn = std::round(rng.Normal(o.mean, o.sd));
  const size_t size = drawn < 64 ? 64 : static_cast<size_t>(drawn);
  std::string m = "From: sender" + std::to_string(id % 97) + "@bench.invalid\nTo: " + user +
                  "@bench.invalid\nSubject: message " + std::to_string(id) + "\nMessage-Id: <" +
                  std::to_string(id) + "@bench.invalid>\n\n";
  // Body lines of at most 72 characters; a line never starts with "From " so mbox readers keep
  // one message per delivery.
  while (m.size() < size) {
    const size_t len = std::min<size_t>(72, size - m.size());
    for (size_t i = 0; i + 1 < len; ++i) m += static_cast<char>('a' + rng.Below(26));
    m += '\n';
  }
  return m;
}

// Runs the agent once with the message on its standard input; returns its exit status.
int Deliver(const Options& o, const std::string& user, const std::string& msg) {
  int fds[2];
  if (pipe(fds) != 0) Die(kProg, "pipe");
  const pid_t pid = fork();
  if (pid < 0) Die(kProg, "fork");
  if (pid == 0) {
    dup2(fds[0], 0);
    close(fds[0]);
    close(fds[1]);
    std::vector<std::string> words;
    for (const std::string& w : o.agent) {
      if (w == "{mbox}") {
        words.push_back(o.dir + "/" + user);
      } else if (w == "{user}") {
        words.push_back(user);
      } else {
        // Placeholders inside a word too (procmail takes DEFAULT={mbox}).
        std::string x = w;
        for (size_t at; (at = x.find("{mbox}")) != std::string::npos;)
          x.replace(at, 6, o.dir + "/" + user);
        words.push_back(x);
      }
    }
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "%s: %s: %s\n", kProg, argv[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[0]);
  for (size_t done = 0; done < msg.size();) {
    const ssize_t n = write(fds[1], msg.data() + done, msg.size() - done);
    if (n < 0) Die(kProg, "write to the agent");
    done += static_cast<size_t>(n);
  }
  close(fds[1]);
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) Die(kProg, "waitpid");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// One sender process; reports "delivered bytes requeued" on `out` after the warm-up.
void Sender(const Options& o, uint64_t index, double start, int out) {
  Rng rng(o.seed * 1000003 + index);
  uint64_t delivered = 0, bytes = 0, sent = 0, requeued = 0;
  const uint64_t quota = (o.messages + o.senders - 1 - index) / o.senders;  // split N over S
  for (;;) {
    const double now = NowSeconds();
    if (o.time_limit > 0 ? now - start >= o.warmup + o.time_limit : sent >= quota) break;
    const std::string user = "user" + std::to_string(rng.Below(o.mailboxes));
    const std::string msg = Message(rng, o, user, index * 1000000000ull + sent);
    int status = Deliver(o, user, msg);
    for (int again = 0; status == kTempFail && again < kMaxRequeues; ++again) {
      ++requeued;
      usleep(1000 + static_cast<useconds_t>(rng.Below(9000)));  // 1-10 ms, then again
      status = Deliver(o, user, msg);
    }
    if (status != 0) {
      std::fprintf(stderr, "%s: the agent exited with status %d for %s\n", kProg, status,
                   user.c_str());
      _exit(1);
    }
    ++sent;
    if (o.time_limit == 0 || NowSeconds() - start >= o.warmup) {
      ++delivered;
      bytes += msg.size();
    }
  }
  char line[96];
  const int n = std::snprintf(
      line, sizeof line, "%llu %llu %llu\n", static_cast<unsigned long long>(delivered),
      static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(requeued));
  if (write(out, line, static_cast<size_t>(n)) != n) _exit(1);
  _exit(0);
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"Concurrent mail delivery through a local delivery agent"};
  app.add_option("--dir", o.dir, "Directory of the mailboxes (must exist)")->required();
  app.add_option("--mailboxes", o.mailboxes, "Number of mailboxes")->capture_default_str();
  app.add_option("--senders", o.senders, "Concurrent senders")->capture_default_str();
  auto* count = app.add_option("--messages", o.messages, "Messages in all")->capture_default_str();
  app.add_option("--time", o.time_limit, "Send for this many seconds instead")->excludes(count);
  app.add_option("--warmup", o.warmup, "Seconds not counted at the start (with --time)");
  app.add_option("--mean", o.mean, "Mean message size (bytes)")->capture_default_str();
  app.add_option("--sd", o.sd, "Standard deviation of the size (bytes)")->capture_default_str();
  app.add_option("--seed", o.seed, "Random seed")->capture_default_str();
  app.add_option("agent", o.agent, "The delivery agent and its arguments")->required();
  CLI11_PARSE(app, argc, argv);
  if (o.mailboxes == 0 || o.senders == 0) {
    std::fprintf(stderr, "%s: need at least one mailbox and one sender\n", kProg);
    return 2;
  }
  // Agents may change directory (procmail goes to $HOME): hand them absolute paths.
  if (o.dir[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) == nullptr) Die(kProg, "getcwd");
    o.dir = std::string(cwd) + "/" + o.dir;
  }

  int fds[2];
  if (pipe(fds) != 0) Die(kProg, "pipe");
  const double start = NowSeconds();
  std::vector<pid_t> pids;
  for (uint64_t i = 0; i < o.senders; ++i) {
    const pid_t pid = fork();
    if (pid < 0) Die(kProg, "fork");
    if (pid == 0) {
      close(fds[0]);
      Sender(o, i, start, fds[1]);
    }
    pids.push_back(pid);
  }
  close(fds[1]);
  bool failed = false;
  for (pid_t pid : pids) {
    int status;
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) Die(kProg, "waitpid");
    }
    failed |= !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  const double end = NowSeconds();
  uint64_t delivered = 0, bytes = 0, requeued = 0;
  FILE* in = fdopen(fds[0], "r");
  unsigned long long d, b, r;
  while (in != nullptr && std::fscanf(in, "%llu %llu %llu", &d, &b, &r) == 3) {
    delivered += d;
    bytes += b;
    requeued += r;
  }
  if (failed) {
    std::fprintf(stderr, "%s: a sender failed\n", kProg);
    return 1;
  }
  const double measured = o.time_limit > 0 ? end - start - o.warmup : end - start;
  PrintResult(delivered, measured,
              "bytes=" + std::to_string(bytes) + " requeued=" + std::to_string(requeued));
  return 0;
}

}  // namespace
}  // namespace amino::bench

int main(int argc, char** argv) { return amino::bench::Main(argc, argv); }
