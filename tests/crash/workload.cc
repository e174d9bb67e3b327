#include "workload.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <memory>
#include <optional>
#include <set>

#include "schema/fsck.h"
#include "schema/records.h"
#include "schema/store.h"

namespace amino::crash {
namespace {

using schema::Cred;
using schema::DirEntry;
using schema::Durability;
using schema::FileId;
using schema::FileSystem;
using schema::OpenResult;
using schema::Result;
using schema::Stat;
using schema::Status;
using schema::Transaction;
using schema::TxnOptions;

const Cred kRoot = Cred::Root();

std::string CellPath(char dir, int cell) {
  return std::string("/cells/") + dir + "/c" + std::to_string(cell);
}
std::string ScratchPath(char kind, uint64_t seq) {
  return std::string("/scratch/") + kind + std::to_string(seq);
}

Status WriteWhole(FileSystem& fs, Transaction& t, const std::string& path, const std::string& s,
                  bool create) {
  int flags = O_RDWR | (create ? O_CREAT | O_EXCL : 0);
  AMINO_ASSIGN_OR_RETURN(OpenResult o, fs.Open(t, kRoot, path, flags, 0644));
  AMINO_RETURN_IF_ERROR(fs.Write(t, kRoot, o.id, 0, s.data(), s.size()).status());
  AMINO_RETURN_IF_ERROR(fs.FTruncate(t, kRoot, o.id, static_cast<int64_t>(s.size())));
  return fs.Close(t, o.id);
}

Result<std::string> ReadWhole(FileSystem& fs, Transaction& t, const std::string& path) {
  AMINO_ASSIGN_OR_RETURN(OpenResult o, fs.Open(t, kRoot, path, O_RDONLY));
  std::string s(o.stat.attr.size, '\0');
  AMINO_ASSIGN_OR_RETURN(size_t n, fs.Read(t, o.id, 0, s.data(), s.size()));
  s.resize(n);
  AMINO_RETURN_IF_ERROR(fs.Close(t, o.id));
  return s;
}

bool ParseInt(std::string_view s, int64_t* v) {
  if (s.empty() || s.size() > 18) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && *v >= 0;
}

Result<int64_t> ReadCell(FileSystem& fs, Transaction& t, const std::string& path) {
  AMINO_ASSIGN_OR_RETURN(std::string s, ReadWhole(fs, t, path));
  int64_t v;
  if (!ParseInt(s, &v)) return Status::Storage(EINVAL, path + " holds \"" + s + "\"");
  return v;
}

Status AddToCell(FileSystem& fs, Transaction& t, const std::string& path, int64_t delta) {
  AMINO_ASSIGN_OR_RETURN(int64_t v, ReadCell(fs, t, path));
  return WriteWhole(fs, t, path, std::to_string(v + delta), false);
}

Result<std::vector<DirEntry>> List(FileSystem& fs, Transaction& t, const std::string& dir) {
  AMINO_ASSIGN_OR_RETURN(OpenResult o, fs.Open(t, kRoot, dir, O_RDONLY | O_DIRECTORY));
  std::vector<DirEntry> all;
  std::string after;
  for (;;) {
    AMINO_ASSIGN_OR_RETURN(std::vector<DirEntry> chunk, fs.ReadDir(t, o.id, after, 512));
    if (chunk.empty()) break;
    after = chunk.back().name;
    all.insert(all.end(), chunk.begin(), chunk.end());
  }
  AMINO_RETURN_IF_ERROR(fs.Close(t, o.id));
  return all;
}

void Report(int fd, uint64_t seq) {
  // 8 bytes <= PIPE_BUF: the write is atomic, a kill cannot split it.
  while (write(fd, &seq, sizeof seq) < 0 && errno == EINTR) {
  }
}

// One transaction's random choices, drawn before it runs so that a retry replays them.
struct Plan {
  struct Move {
    int from, to;
    uint64_t amount_draw;
  };
  std::vector<Move> moves;
  int relocated = 0;  // the cell that changes directory
};

Plan Draw(std::mt19937_64& rng) {
  Plan p;
  int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) {
    int from = static_cast<int>(rng() % kCells);
    int to = static_cast<int>(rng() % (kCells - 1));
    if (to >= from) ++to;
    p.moves.push_back({from, to, rng()});
  }
  p.relocated = static_cast<int>(rng() % kCells);
  return p;
}

}  // namespace

std::string ScratchContent(uint64_t seq) {
  std::string s;
  std::string word = std::to_string(seq) + ":";
  while (s.size() < kScratchBytes) s += word;
  s.resize(kScratchBytes);
  return s;
}

Status Populate(const std::string& dir) {
  AMINO_RETURN_IF_ERROR(FileSystem::Mkfs(dir));
  auto fs = FileSystem::Open(dir);
  if (!fs.ok()) return fs.status();
  return (*fs)->Run([&](Transaction& t) -> Status {
    for (const char* d : {"/cells", "/cells/a", "/cells/b", "/log", "/scratch"}) {
      AMINO_RETURN_IF_ERROR((*fs)->Mkdir(t, kRoot, d, 0755).status());
    }
    for (int i = 0; i < kCells; ++i) {
      AMINO_RETURN_IF_ERROR(
          WriteWhole(**fs, t, CellPath('a', i), std::to_string(kInitialValue), true));
    }
    return Status::Ok();
  });
}

int RunWorkload(const std::string& dir, Mode mode, uint64_t first_seq, uint64_t seed,
                int report_fd) {
  auto opened = FileSystem::Open(dir);
  if (!opened.ok()) return 10;
  FileSystem& fs = **opened;
  std::mt19937_64 rng(seed);

  std::vector<char> where(kCells);
  Status st = fs.Run([&](Transaction& t) -> Status {
    for (int i = 0; i < kCells; ++i) {
      auto a = fs.GetStat(t, kRoot, CellPath('a', i));
      where[i] = a.ok() ? 'a' : 'b';
    }
    return Status::Ok();
  });
  if (!st.ok()) return 11;
  Report(report_fd, 0);

  TxnOptions opts;
  opts.durability = mode == Mode::kNoSync ? Durability::kNoSync : Durability::kWriteNoSync;
  std::optional<FileId> open_orphan;  // unlinked in the last transaction, still open
  uint64_t split_debits = 0;
  uint64_t die_after = 1 + rng() % 20;
  for (uint64_t seq = first_seq;; ++seq) {
    Plan plan = Draw(rng);
    std::vector<char> next_where;
    FileId next_orphan = 0;
    st = fs.Run(nullptr, opts, [&](Transaction& t) -> Status {
      next_where = where;
      // One file is always open but nameless: the last close frees the previous one, and a
      // crash leaves one behind for recovery to remove.
      if (open_orphan) AMINO_RETURN_IF_ERROR(fs.Close(t, *open_orphan));
      std::string name = ScratchPath('o', seq);
      AMINO_ASSIGN_OR_RETURN(OpenResult o,
                             fs.Open(t, kRoot, name, O_CREAT | O_EXCL | O_RDWR, 0644));
      std::string data = ScratchContent(seq);
      AMINO_RETURN_IF_ERROR(fs.Write(t, kRoot, o.id, 0, data.data(), data.size()).status());
      AMINO_RETURN_IF_ERROR(fs.Unlink(t, kRoot, name));
      next_orphan = o.id;
      if (mode != Mode::kSplitMoves) {
        for (const Plan::Move& m : plan.moves) {
          std::string from = CellPath(next_where[m.from], m.from);
          std::string to = CellPath(next_where[m.to], m.to);
          AMINO_ASSIGN_OR_RETURN(int64_t v, ReadCell(fs, t, from));
          int64_t amount = static_cast<int64_t>(m.amount_draw % static_cast<uint64_t>(v + 1));
          AMINO_RETURN_IF_ERROR(AddToCell(fs, t, from, -amount));
          AMINO_RETURN_IF_ERROR(AddToCell(fs, t, to, amount));
        }
      }
      int c = plan.relocated;
      char other = next_where[c] == 'a' ? 'b' : 'a';
      AMINO_RETURN_IF_ERROR(fs.Rename(t, kRoot, CellPath(next_where[c], c), CellPath(other, c)));
      next_where[c] = other;
      // The scratch pair: a two-page file and a hard link to it replace the previous pair.
      if (seq > 1) {
        AMINO_RETURN_IF_ERROR(fs.Unlink(t, kRoot, ScratchPath('t', seq - 1)));
        AMINO_RETURN_IF_ERROR(fs.Unlink(t, kRoot, ScratchPath('h', seq - 1)));
      }
      AMINO_RETURN_IF_ERROR(WriteWhole(fs, t, ScratchPath('t', seq), ScratchContent(seq), true));
      AMINO_RETURN_IF_ERROR(fs.Link(t, kRoot, ScratchPath('t', seq), ScratchPath('h', seq)));
      if (seq > kMarkerWindow) {
        AMINO_RETURN_IF_ERROR(fs.Unlink(t, kRoot, "/log/" + std::to_string(seq - kMarkerWindow)));
      }
      return WriteWhole(fs, t, "/log/" + std::to_string(seq), std::to_string(seq), true);
    });
    if (!st.ok()) return 12;
    where = next_where;
    open_orphan = next_orphan;

    if (mode == Mode::kSplitMoves) {
      // Broken on purpose: the debit and the credit of one move commit separately.
      for (const Plan::Move& m : plan.moves) {
        int64_t amount = 0;
        st = fs.Run(nullptr, opts, [&](Transaction& t) -> Status {
          std::string from = CellPath(where[m.from], m.from);
          AMINO_ASSIGN_OR_RETURN(int64_t v, ReadCell(fs, t, from));
          amount = static_cast<int64_t>(m.amount_draw % static_cast<uint64_t>(v + 1));
          return AddToCell(fs, t, from, -amount);
        });
        if (!st.ok()) return 13;
        if (amount > 0 && ++split_debits == die_after) raise(SIGKILL);
        st = fs.Run(nullptr, opts, [&](Transaction& t) -> Status {
          return AddToCell(fs, t, CellPath(where[m.to], m.to), amount);
        });
        if (!st.ok()) return 14;
      }
    }
    Report(report_fd, seq);
  }
}

// Long by design: the checks after a crash in the order they depend on each other (the open
// and its recovery, fsck, what dead processes left, every acknowledged operation).
CheckResult CheckState(const std::string& dir, const Expectation& expect) {
  CheckResult r;
  auto opened = FileSystem::Open(dir);
  if (!opened.ok()) {
    r.problems.push_back("open after the crash failed: " + opened.status().message());
    return r;
  }
  FileSystem& fs = **opened;
  if (!fs.recovered_on_open() && expect.child_opened) {
    r.problems.push_back("opening after the crash ran no recovery");
  }

  auto violations = schema::Fsck(fs.store());
  if (!violations.ok()) {
    r.problems.push_back("fsck failed: " + violations.status().message());
  } else {
    for (const schema::Violation& v : *violations) {
      r.problems.push_back("fsck " + v.invariant + ": " + v.detail);
    }
  }

  // Recovery with no other user removes the files of dead processes: no orphan is left and
  // no file counts an open description.
  Status st = fs.Run([&](Transaction& t) -> Status {
    schema::Store& store = fs.store();
    schema::Cursor orphans(store.orphan(), t.raw());
    AMINO_RETURN_IF_ERROR(orphans.status());
    AMINO_ASSIGN_OR_RETURN(bool any, orphans.First());
    if (any) r.problems.push_back("the Orphan db is not empty after recovery");
    schema::Cursor data(store.data(), t.raw());
    AMINO_RETURN_IF_ERROR(data.status());
    for (auto more = data.First();; more = data.Next()) {
      if (!more.ok()) return more.status();
      if (!*more) break;
      FileId id;
      schema::InodeValue v;
      if (schema::ParseIdKey(data.key(), &id) && id != schema::kSuperblockId &&
          schema::DecodeInodeValue(data.value(), &v) && v.open_count != 0) {
        r.problems.push_back("id " + std::to_string(id) + " has open count " +
                             std::to_string(v.open_count) + " after recovery");
      }
    }
    return Status::Ok();
  });
  if (!st.ok()) r.problems.push_back("reading the raw records failed: " + st.message());

  st = fs.Run([&](Transaction& t) -> Status {
    // Cells: each exactly once, in either directory; the total is exact.
    std::vector<int> seen(kCells, 0);
    int64_t sum = 0;
    for (char d : {'a', 'b'}) {
      AMINO_ASSIGN_OR_RETURN(std::vector<DirEntry> entries,
                             List(fs, t, std::string("/cells/") + d));
      for (const DirEntry& e : entries) {
        int64_t cell;
        if (e.name.size() < 2 || e.name[0] != 'c' || !ParseInt(e.name.substr(1), &cell) ||
            cell >= kCells) {
          r.problems.push_back("unexpected file /cells/" + std::string(1, d) + "/" + e.name);
          continue;
        }
        seen[cell]++;
        auto v = ReadCell(fs, t, CellPath(d, static_cast<int>(cell)));
        if (!v.ok()) {
          r.problems.push_back("cell " + e.name + ": " + v.status().message());
          continue;
        }
        sum += *v;
        r.histogram[*v / 250 * 250]++;
      }
    }
    for (int i = 0; i < kCells; ++i) {
      if (seen[i] != 1) {
        r.problems.push_back("cell c" + std::to_string(i) + " appears " + std::to_string(seen[i]) +
                             " times");
      }
    }
    if (sum != kTotal) {
      r.problems.push_back("sum of the cells is " + std::to_string(sum) + ", expected " +
                           std::to_string(kTotal));
    }

    // Markers: exactly the window ending at K, with K the last reported commit or the one
    // after it (committed but killed before it was reported).
    AMINO_ASSIGN_OR_RETURN(std::vector<DirEntry> markers, List(fs, t, "/log"));
    std::set<uint64_t> seqs;
    for (const DirEntry& e : markers) {
      int64_t s;
      if (!ParseInt(e.name, &s) || s == 0) {
        r.problems.push_back("unexpected marker /log/" + e.name);
        continue;
      }
      seqs.insert(static_cast<uint64_t>(s));
    }
    uint64_t k = seqs.empty() ? 0 : *seqs.rbegin();
    r.last_committed = k;
    uint64_t lowest = k > kMarkerWindow ? k - kMarkerWindow + 1 : 1;
    if (seqs.size() != k - lowest + 1 || (!seqs.empty() && *seqs.begin() != lowest)) {
      r.problems.push_back("markers are not exactly " + std::to_string(lowest) + ".." +
                           std::to_string(k) + ": " + std::to_string(seqs.size()) +
                           " markers from " + std::to_string(seqs.empty() ? 0 : *seqs.begin()));
    }
    if (k < expect.last_reported) {
      r.problems.push_back("transaction " + std::to_string(expect.last_reported) +
                           " was reported committed but the last marker is " + std::to_string(k));
    }
    if (k > expect.last_reported + 1) {
      r.problems.push_back("marker " + std::to_string(k) + " is beyond the in-flight transaction " +
                           std::to_string(expect.last_reported + 1));
    }

    // Scratch: exactly the pair of transaction K, one file under two names.
    AMINO_ASSIGN_OR_RETURN(std::vector<DirEntry> scratch, List(fs, t, "/scratch"));
    std::set<std::string> names;
    for (const DirEntry& e : scratch) names.insert(e.name);
    std::set<std::string> want;
    if (k > 0) want = {"t" + std::to_string(k), "h" + std::to_string(k)};
    if (names != want) {
      std::string got;
      for (const std::string& n : names) got += " " + n;
      r.problems.push_back("scratch holds {" + got + " } after transaction " + std::to_string(k));
    } else if (k > 0) {
      auto a = fs.GetStat(t, kRoot, ScratchPath('t', k));
      auto b = fs.GetStat(t, kRoot, ScratchPath('h', k));
      auto content = ReadWhole(fs, t, ScratchPath('h', k));
      if (!a.ok() || !b.ok() || a->ino != b->ino || a->attr.nlink != 2) {
        r.problems.push_back("scratch pair of transaction " + std::to_string(k) +
                             " is not one file with two names");
      } else if (!content.ok() || *content != ScratchContent(k)) {
        r.problems.push_back("scratch file of transaction " + std::to_string(k) +
                             " has the wrong content");
      }
    }
    return Status::Ok();
  });
  if (!st.ok()) r.problems.push_back("reading the state failed: " + st.message());
  return r;
}

}  // namespace amino::crash
