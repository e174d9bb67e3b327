// Model-based random test: random sequences of file-system calls run on the schema and on the
// kernel (a scratch directory on the host) must give the same results, errnos, data and final
// trees, and fsck must find the schema consistent after every step. A failing sequence is shrunk
// to a minimal one by delta debugging (replaying subsequences on fresh state) and printed.
//
// Environment:
//   AMINO_MODEL_SEED=N[,N...]  the seeds to run (default: a fixed list)
//   AMINO_MODEL_OPS=N          ops per seed (default 1500)
//   AMINO_MODEL_FSCK_EVERY=N   run fsck after every N-th step (default 1; 0: only at the end)
//   AMINO_MODEL_SHRINK_SECONDS=N  time allowed for shrinking one failure (default 20)
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model_ops.h"
#include "model_side.h"
#include "schema/filesystem.h"
#include "schema/fsck.h"
#include "temp_dir.h"

namespace amino::schema::testing::model {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t EnvNumber(const char* name, uint64_t def) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : def;
}

std::vector<uint64_t> Seeds() {
  const char* v = std::getenv("AMINO_MODEL_SEED");
  if (!v || !*v) return {1, 2, 3, 4, 5, 6};
  std::vector<uint64_t> seeds;
  std::stringstream in(v);
  std::string item;
  while (std::getline(in, item, ',')) seeds.push_back(std::strtoull(item.c_str(), nullptr, 10));
  return seeds;
}

struct Failure {
  size_t step = 0;      // index of the failing op; ops.size() for the final comparison
  std::string what;     // the class of failure, kept while shrinking: op kind or "fsck"/"tree"
  std::string message;  // expected vs actual
};

struct RunResult {
  std::optional<Failure> failure;
  size_t steps_clean = 0;
};

std::string CompareTrees(const Tree& host, const Tree& schema) {
  std::ostringstream out;
  int shown = 0;
  std::set<std::string> paths;
  for (const auto& [p, e] : host) paths.insert(p);
  for (const auto& [p, e] : schema) paths.insert(p);
  // Which names are the same file: compare each name's class of names.
  auto classes = [](const Tree& t) {
    std::map<uint64_t, std::set<std::string>> by_ino;
    for (const auto& [p, e] : t) by_ino[e.ino].insert(p);
    std::map<std::string, std::set<std::string>> of;
    for (const auto& [p, e] : t) of[p] = by_ino[e.ino];
    return of;
  };
  auto hc = classes(host);
  auto sc = classes(schema);
  for (const std::string& p : paths) {
    if (shown >= 10) break;
    auto h = host.find(p);
    auto s = schema.find(p);
    if (h == host.end()) {
      out << "  " << p << ": only in the schema: " << s->second.ToString() << "\n";
    } else if (s == schema.end()) {
      out << "  " << p << ": missing from the schema; host has " << h->second.ToString() << "\n";
    } else if (h->second.ToString() != s->second.ToString()) {
      out << "  " << p << ":\n    host:   " << h->second.ToString()
          << "\n    schema: " << s->second.ToString() << "\n";
    } else if (hc[p] != sc[p]) {
      out << "  " << p << ": hard links differ: host {";
      for (const std::string& n : hc[p]) out << n << " ";
      out << "} schema {";
      for (const std::string& n : sc[p]) out << n << " ";
      out << "}\n";
    } else {
      continue;
    }
    ++shown;
  }
  return out.str();
}

std::optional<std::string> FsckProblems(FileSystem* fs) {
  Result<std::vector<Violation>> v = Fsck(fs->store());
  if (!v.ok()) return "fsck failed: " + v.status().message();
  if (v->empty()) return std::nullopt;
  std::string s;
  for (const Violation& x : *v) s += "  " + x.invariant + ": " + x.detail + "\n";
  return s;
}

// Runs `ops` on a fresh schema and a fresh scratch directory; the first difference wins.
RunResult Replay(const std::vector<Op>& ops, uint64_t fsck_every) {
  RunResult result;
  TempDir db("amino-model-db-");
  TempDir host("amino-model-host-");
  auto fail = [&](size_t step, std::string what, std::string message) {
    result.failure = Failure{step, std::move(what), std::move(message)};
    return result;
  };
  Status st = FileSystem::Mkfs(db.path() + "/fs");
  if (!st.ok()) return fail(0, "setup", "mkfs: " + st.message());
  OpenOptions options;
  options.cache_bytes = 4 << 20;  // small trees; a smaller cache makes each replay start faster
  Result<std::unique_ptr<FileSystem>> opened = FileSystem::Open(db.path() + "/fs", options);
  if (!opened.ok()) return fail(0, "setup", "open: " + opened.status().message());
  std::unique_ptr<FileSystem> fs = std::move(opened).value();
  {
    std::unique_ptr<Side> h = MakeHostSide(host.path());
    std::unique_ptr<Side> s = MakeSchemaSide(fs.get());
    for (size_t i = 0; i < ops.size(); ++i) {
      Outcome ho = h->Apply(ops[i]);
      Outcome so = s->Apply(ops[i]);
      if (!(ho == so)) {
        // The class of the failure is the call's name ("cred=N name(...)").
        std::string line = ToString(ops[i]);
        size_t name = line.find(' ') + 1;
        return fail(i, line.substr(name, line.find('(') - name),
                    "host (Linux): " + ho.ToString() + "\n  schema:       " + so.ToString());
      }
      if (fsck_every != 0 && (i + 1) % fsck_every == 0) {
        if (auto problems = FsckProblems(fs.get())) {
          return fail(i, "fsck", "fsck after this step:\n" + *problems);
        }
      }
      result.steps_clean = i + 1;
    }
    h->CloseAll();
    s->CloseAll();
    if (auto problems = FsckProblems(fs.get())) {
      return fail(ops.size(), "fsck", "fsck after closing every file:\n" + *problems);
    }
    Tree ht, stree;
    std::string error;
    if (!h->Snapshot(&ht, &error)) return fail(ops.size(), "tree", error);
    if (!s->Snapshot(&stree, &error)) return fail(ops.size(), "tree", error);
    std::string diff = CompareTrees(ht, stree);
    if (!diff.empty()) return fail(ops.size(), "tree", "final trees differ:\n" + diff);
  }
  return result;
}

std::string Listing(const std::vector<Op>& ops, size_t upto) {
  std::ostringstream out;
  for (size_t i = 0; i < ops.size() && i <= upto; ++i) {
    out << "  [" << i << "] " << ToString(ops[i]) << "\n";
  }
  return out.str();
}

// Delta debugging (ddmin) over the op sequence: keep removing chunks while the same kind of
// failure remains, then single ops; ops after the failing step are dropped at once.
std::vector<Op> Shrink(std::vector<Op> ops, const Failure& original, Failure* last, int* replays) {
  const auto deadline =
      Clock::now() + std::chrono::seconds(EnvNumber("AMINO_MODEL_SHRINK_SECONDS", 20));
  *last = original;
  if (original.step < ops.size()) ops.resize(original.step + 1);
  auto still_fails = [&](const std::vector<Op>& candidate) {
    ++*replays;
    // fsck only at the end: the sequence is cut right after the failing step, so a violation
    // is still there, and replays run several times faster.
    RunResult r = Replay(candidate, 0);
    if (!r.failure || r.failure->what != original.what) return false;
    *last = *r.failure;
    return true;
  };
  size_t n = 2;
  while (ops.size() >= 2 && Clock::now() < deadline) {
    size_t chunk = (ops.size() + n - 1) / n;
    bool reduced = false;
    for (size_t start = 0; start < ops.size() && Clock::now() < deadline; start += chunk) {
      std::vector<Op> candidate(ops.begin(), ops.begin() + static_cast<long>(start));
      candidate.insert(candidate.end(),
                       ops.begin() + static_cast<long>(std::min(ops.size(), start + chunk)),
                       ops.end());
      if (candidate.empty() || !still_fails(candidate)) continue;
      if (last->step < candidate.size()) candidate.resize(last->step + 1);
      ops = std::move(candidate);
      n = std::max<size_t>(n - 1, 2);
      reduced = true;
      break;
    }
    if (!reduced) {
      if (n >= ops.size()) break;
      n = std::min(n * 2, ops.size());
    }
  }
  return ops;
}

TEST(ModelTest, RandomSequencesMatchLinux) {
  umask(0);  // modes given to the schema are final; give the host the same ones
  const uint64_t n_ops = EnvNumber("AMINO_MODEL_OPS", 1500);
  const uint64_t fsck_every = EnvNumber("AMINO_MODEL_FSCK_EVERY", 1);
  size_t clean = 0;
  double secs = 0;
  for (uint64_t seed : Seeds()) {
    std::vector<Op> ops = Generate(seed, n_ops);
    auto start = Clock::now();
    RunResult r = Replay(ops, fsck_every);
    secs += std::chrono::duration<double>(Clock::now() - start).count();
    clean += r.steps_clean;
    if (!r.failure) continue;
    const Failure& f = *r.failure;
    std::ostringstream msg;
    msg << "seed " << seed << " (AMINO_MODEL_SEED=" << seed << " AMINO_MODEL_OPS=" << n_ops
        << "): step " << f.step << (f.step < ops.size() ? ": " + ToString(ops[f.step]) : "")
        << "\n  " << f.message << "\nsequence up to the failure:\n"
        << Listing(ops, f.step);
    Failure last;
    int replays = 0;
    std::vector<Op> small = Shrink(ops, f, &last, &replays);
    msg << "shrunk (" << replays << " replays) to " << small.size() << " ops, failing at step "
        << last.step << ":\n"
        << Listing(small, small.size()) << "  " << last.message << "\n";
    ADD_FAILURE() << msg.str();
  }
  std::cout << "model test: " << clean << " ops ran clean in " << secs << " s ("
            << static_cast<int>(clean / (secs > 0 ? secs : 1)) << " ops/s, fsck every "
            << fsck_every << ")\n";
  RecordProperty("clean_ops", static_cast<int>(clean));
}

}  // namespace
}  // namespace amino::schema::testing::model
