// ProfileHandler: running the rules of an event, and the transactions they begin and end.
#include <fnmatch.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "amino/amino.h"
#include "monitor/profiles/profile_handler.h"

namespace amino::monitor::profiles {

std::vector<uint64_t> ProfileHandler::Fire(Thread& t, const Happening& h) {
  std::vector<uint64_t> began;
  for (size_t p = 0; p < profiles_.size(); ++p) {
    if (h.only_profile != SIZE_MAX && p != h.only_profile) continue;
    const std::vector<Rule>& rules = profiles_[p].rules;
    for (size_t i = 0; i < rules.size(); ++i) {
      // An open or close is seen by each rule with the count of that rule's files.
      Happening seen = h;
      const size_t key = rule_keys_[p][i];
      if (key != SIZE_MAX) {
        auto count = h.counts.find(key);
        if (count == h.counts.end()) continue;
        seen.values.count = count->second;
      }
      if (!Matches(rules[i], seen)) continue;
      for (const Action& a : rules[i].actions) Act(t, p, rules[i], a, seen, &began);
      break;
    }
  }
  return began;
}

bool ProfileHandler::Matches(const Rule& r, const Happening& h) const {
  if (r.event.kind != h.kind) return false;
  if (!MatchesPath(r.event.program, h.program)) return false;
  switch (h.kind) {
    case EventKind::kExec:
      if (!MatchesPath(r.event.pattern, h.subject)) return false;
      break;
    case EventKind::kOpen:
    case EventKind::kClose:
      break;  // the rule's files were matched by Fire
    case EventKind::kSignal:
      if (r.event.signal != h.signal) return false;
      break;
    case EventKind::kExit:
    case EventKind::kConflict:
      break;
    case EventKind::kCall:
    case EventKind::kReturn:
      if (fnmatch(r.event.pattern.c_str(), h.subject.c_str(), 0) != 0 ||
          !MatchesPath(r.event.object, h.object)) {
        return false;
      }
      break;
  }
  return Holds(r.when, h.values);
}

void ProfileHandler::Act(Thread& t, size_t profile, const Rule& r, const Action& a,
                         const Happening& h, std::vector<uint64_t>* began) {
  bool commit = false;
  switch (a.kind) {
    case Action::Kind::kBegin:
      Begin(t, profile, r, a, h, began);
      return;
    case Action::Kind::kCommit:
      commit = true;
      break;
    case Action::Kind::kAbort:
      commit = false;
      break;
    case Action::Kind::kCommitIf:
      commit = Holds(a.condition, h.values);
      break;
    case Action::Kind::kAbortIf:
      commit = !Holds(a.condition, h.values);
      break;
    case Action::Kind::kKill:
      // The process must not go on (a program that cannot be run again from the middle):
      // it dies as if killed by anyone, and its exit rules end its transactions.
      Trace(t, "profile " + profiles_[profile].name + ": kill process " +
                   std::to_string(t.proc->tgid) + " at " + Describe(h) + " (" + r.where.ToString() +
                   ")");
      kill(t.proc->tgid, SIGKILL);
      return;
  }
  if (h.txn) {
    // A conflict's rules act on the transaction the system aborted.
    for (std::vector<Owned>* owned : OwnedLists(t)) {
      for (size_t i = 0; i < owned->size(); ++i) {
        if ((*owned)[i].id != h.txn) continue;
        EndOwned(t, *owned, i, commit, Describe(h) + " (" + r.where.ToString() + ")");
        return;
      }
    }
    return;
  }
  // A return's rules end what that call began; the others what the process owns.
  std::vector<Owned>& owned =
      h.frame && h.kind == EventKind::kReturn ? h.frame->owned : StateOf(t).owned;
  for (size_t i = owned.size(); i-- > 0;) {
    if (owned[i].profile != profile) continue;
    EndOwned(t, owned, i, commit, Describe(h) + " (" + r.where.ToString() + ")");
    return;
  }
  // Nothing to end: the process owns no transaction of this profile (a child of the owner).
}

void ProfileHandler::Begin(Thread& t, size_t profile, const Rule& r, const Action& a,
                           const Happening& h, std::vector<uint64_t>* began) {
  const std::string& name = profiles_[profile].name;
  const std::string cause = Describe(h) + " (" + r.where.ToString() + ")";
  if (!a.nested) {
    for (const auto& [id, live] : live_) {
      if (live.profile == profile && txns_.Within(t.tid, id)) {
        counts_[profile].inside++;
        Trace(t, "profile " + name + ": already in transaction " + std::to_string(id) + " at " +
                     cause);
        return;
      }
    }
  }
  const uint64_t before = txns_.CurrentOf(t.tid);
  const long r_id = txns_.BeginFor(t);
  if (r_id < 0) {
    std::fprintf(stderr, "amino: profile %s: cannot begin a transaction for process %d at %s: %s\n",
                 name.c_str(), static_cast<int>(t.proc->tgid), cause.c_str(),
                 r_id == -AMINO_EABORTED ? "the transaction it is in was aborted by the system"
                                         : std::strerror(static_cast<int>(-r_id)));
    return;
  }
  const uint64_t id = static_cast<uint64_t>(r_id);
  live_[id] = {profile, t.tid};
  began->push_back(id);
  counts_[profile].begins++;
  if (h.frame) {
    // A call's transaction is its thread's alone.
    h.frame->owned.push_back({profile, id, a.private_});
  } else {
    ProcState& s = StateOf(t);
    s.owned.push_back({profile, id, a.private_});
    // The process's other threads that were where this one was go in with it.
    for (pid_t other : s.threads) {
      if (other != t.tid && txns_.CurrentOf(other) == before) txns_.Join(other, id);
    }
  }
  Trace(t, "profile " + name + ": begin transaction " + std::to_string(id) + " at " + cause);
}

void ProfileHandler::EndOwned(Thread& t, std::vector<Owned>& owned, size_t index, bool commit,
                              const std::string& cause) {
  const Owned o = owned[index];
  owned.erase(owned.begin() + static_cast<std::ptrdiff_t>(index));
  const ProcState& s = StateOf(t);
  live_.erase(o.id);
  const std::string& name = profiles_[o.profile].name;
  const long r = txns_.End(o.id, commit);
  if (r == -ENOENT) {
    // Ended already: with the transaction around it (a profile's of another scope), or by
    // the program's own libamino calls. What a commit here was meant to keep is gone.
    if (commit) {
      counts_[o.profile].lost++;
      std::fprintf(stderr,
                   "amino: profile %s: transaction %llu of process %d (%s) had already ended "
                   "(with the transaction it was nested in, or by the program) when %s: "
                   "nothing it did remains\n",
                   name.c_str(), static_cast<unsigned long long>(o.id),
                   static_cast<int>(t.proc->tgid), s.program.c_str(), cause.c_str());
    }
    return;
  }
  const bool counted = doomed_seen_.erase(o.id) > 0;  // by HandleDoomed already
  if (r < 0 && !(r == -AMINO_EABORTED && !commit)) {
    if (!counted) counts_[o.profile].refused++;
    std::fprintf(
        stderr,
        "amino: profile %s: the transaction of process %d (%s) %s: nothing it did "
        "remains\n",
        name.c_str(), static_cast<int>(t.proc->tgid), s.program.c_str(),
        r == -AMINO_EABORTED
            ? "was aborted by the system (a deadlock or a lock timeout)"
            : (std::string("could not commit: ") + std::strerror(static_cast<int>(-r))).c_str());
    Trace(t, "profile " + name + ": transaction " + std::to_string(o.id) + " could not commit at " +
                 cause);
    return;
  }
  (commit ? counts_[o.profile].commits : counts_[o.profile].aborts)++;
  Trace(t, "profile " + name + ": " + (commit ? "commit" : "abort") + " transaction " +
               std::to_string(o.id) + " at " + cause);
}

void ProfileHandler::Undo(Thread& t, const std::vector<uint64_t>& began) {
  ProcState& s = StateOf(t);
  for (auto id = began.rbegin(); id != began.rend(); ++id) {
    for (size_t i = 0; i < s.owned.size(); ++i) {
      if (s.owned[i].id != *id) continue;
      const size_t profile = s.owned[i].profile;
      s.owned.erase(s.owned.begin() + static_cast<std::ptrdiff_t>(i));
      live_.erase(*id);
      (void)txns_.End(*id, false);
      counts_[profile].begins--;
      Trace(t, "profile " + profiles_[profile].name + ": transaction " + std::to_string(*id) +
                   " withdrawn: its open did not happen");
      break;
    }
  }
}

}  // namespace amino::monitor::profiles
