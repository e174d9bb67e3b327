// bank: transfers between accounts in concurrent transactions, an auditor that checks the total
// while they run, and the check that no update was lost.
//
//   bank setup DIR K P INITIAL   K accounts DIR/acct<i> holding INITIAL (4 KiB files: see
//                                setup()), P empty ledgers
//   bank run DIR K P R INITIAL SEED txn|plain audit|noaudit
//       P workers do R rounds each: begin; read two random accounts; move a random amount from
//       one to the other (write both); append "FROM TO AMOUNT" to DIR/ledger<p>; commit. A call
//       or commit failing with AMINO_EABORTED ends the transaction (amino_abort after a call,
//       the failed commit itself) and the round is retried. The auditor (audit) reads every
//       account in a transaction until the workers are done and fails if the total is not
//       K*INITIAL. `plain` does the same without transactions (a negative control: updates
//       get lost, the auditor sees transfers half done).
//       Prints "worker <p>: <rounds> rounds, <retries> retries", "auditor: <audits> audits,
//       <retries> retries", and "bank: <rounds> rounds in <s> s, <rounds/s> rounds/s".
//   bank verify DIR K P R INITIAL
//       the total is K*INITIAL, every ledger has R well-formed lines, and every account equals
//       INITIAL plus what the ledgers moved into it minus what they moved out of it.
//
// Exit status 0 when every check passed.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amino/amino.h"
#include "txnutil.h"

enum { kMaxAccounts = 1024, kMaxWorkers = 64 };

static const char* dir;
static int use_txn;

static const char* account(int i) {
  static char bufs[2][4096];
  static int which;
  which ^= 1;
  snprintf(bufs[which], sizeof bufs[which], "%s/acct%d", dir, i);
  return bufs[which];
}

static const char* ledger(int p) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/ledger%d", dir, p);
  return buf;
}

// A call's result (>= 0 or -errno): 0 on success, 1 when the transaction was aborted by the
// system (the round is retried); any other failure ends the process.
static int aborted(long r, const char* call, const char* path) {
  if (r >= 0) return 0;
  int err = (int)-r;
  if (use_txn && err == AMINO_EABORTED) return 1;
  fail("%s %s: %s", call, path, err_name(err));
}

static void begin(void) {
  if (use_txn) must(amino_begin(NULL), "amino_begin", "");
}

// Ends a round the system aborted: after a failed call the transaction is still current.
static void give_up(void) { must(amino_abort(), "amino_abort", "an aborted transaction"); }

// 0 when committed, 1 when the commit failed with AMINO_EABORTED (which ends the transaction).
static int commit(void) {
  return use_txn ? aborted(amino_commit() == 0 ? 0 : -errno, "amino_commit", "") : 0;
}

// Balances are written in place with a fixed width, in one write(2) without truncating first:
// a reader outside any transaction sees the old or the new number, never a torn one, so that
// the `plain` control fails by losing updates rather than by tripping over partial writes.
static long put(int i, long value) {
  char text[32];
  int len = snprintf(text, sizeof text, "%+020ld\n", value);
  int fd = open(account(i), O_WRONLY | O_CREAT, 0644);
  if (fd < 0) return -errno;
  int err = pwrite(fd, text, (size_t)len, 0) == len ? 0 : errno ? errno : EIO;
  if (close(fd) != 0 && !err) err = errno;
  return -err;
}

static long get(int i, long* value) {
  return read_number(account(i), value, use_txn ? AMINO_EABORTED : 0);
}

static int worker(int p, int k, int rounds, unsigned seed) {
  set_who("bank worker %d", p);
  long retries = 0;
  for (int r = 0; r < rounds;) {
    int from = (int)(rand_r(&seed) % (unsigned)k);
    int to = (int)(rand_r(&seed) % (unsigned)(k - 1));
    if (to >= from) to++;
    long amount = 1 + (long)(rand_r(&seed) % 100), a, b;
    char line[64];
    snprintf(line, sizeof line, "%d %d %ld\n", from, to, amount);
    begin();
    if (aborted(get(from, &a), "read", account(from)) ||
        aborted(get(to, &b), "read", account(to)) ||
        aborted(put(from, a - amount), "write", account(from)) ||
        aborted(put(to, b + amount), "write", account(to)) ||
        aborted(append_file(ledger(p), line), "append", ledger(p))) {
      give_up();
      retries++;
      continue;
    }
    if (commit()) {
      retries++;
      continue;
    }
    r++;
  }
  printf("worker %d: %d rounds, %ld retries\n", p, rounds, retries);
  return 0;
}

// Audits until `done` (a pipe whose writers all closed) reads end of file.
static int auditor(int k, int done, long initial) {
  set_who("bank auditor");
  long audits = 0, retries = 0;
  for (int last = 0; !last;) {
    struct pollfd pfd = {done, POLLIN, 0};
    last = poll(&pfd, 1, 0) == 1;  // the workers are done: one more audit, then stop
    begin();
    long total = 0, v = 0;
    int gave_up = 0;
    for (int i = 0; i < k && !gave_up; i++) {
      gave_up = aborted(get(i, &v), "read", account(i));
      total += v;
    }
    if (gave_up) give_up();
    if (gave_up || commit()) {
      retries++;
      last = 0;
      continue;
    }
    if (total != k * initial) {
      fail("audit %ld saw a total of %ld; expected %ld", audits + 1, total, k * initial);
    }
    audits++;
  }
  printf("auditor: %ld audits, %ld retries\n", audits, retries);
  return 0;
}

static int run(int k, int workers, int rounds, long initial, unsigned seed, int audit) {
  set_who("bank run");
  int done[2];
  must(pipe(done), "pipe", "");
  fflush(stdout);
  double t0 = now_seconds();
  int pids[kMaxWorkers + 1];
  for (int p = 0; p < workers; p++) {
    pids[p] = fork();
    must(pids[p], "fork", "worker");
    if (pids[p] == 0) {
      close(done[0]);
      int status = worker(p, k, rounds, seed + 7919u * (unsigned)p);
      fflush(stdout);
      _exit(status);
    }
  }
  close(done[1]);  // the workers hold the write end: end of file when they are all gone
  if (audit) {
    pids[workers] = fork();
    must(pids[workers], "fork", "auditor");
    if (pids[workers] == 0) {
      int status = auditor(k, done[0], initial);
      fflush(stdout);
      _exit(status);
    }
  }
  int failed = 0;
  for (int p = 0; p < workers + audit; p++) failed |= reap(pids[p]) != 0;
  double seconds = now_seconds() - t0;
  int total = workers * rounds;
  printf("bank: %d rounds in %.2f s, %.1f rounds/s\n", total, seconds, total / seconds);
  return failed;
}

// Each account is a 4 KiB file (the balance, then padding): Berkeley DB locks pages, and data
// pages this size spread the accounts over several of them, so that transactions on different
// accounts can run concurrently, and deadlock.
static int setup(int k, int workers, long initial) {
  set_who("bank setup");
  static char padding[4096];
  memset(padding, ' ', sizeof padding - 1);
  for (int i = 0; i < k; i++) {
    must(write_file(account(i), padding), "write", account(i));
    must(put(i, initial), "write", account(i));
  }
  for (int p = 0; p < workers; p++) must(write_file(ledger(p), ""), "write", ledger(p));
  return 0;
}

static int verify(int k, int workers, int rounds, long initial) {
  set_who("bank verify");
  static long delta[kMaxAccounts];
  for (int p = 0; p < workers; p++) {
    FILE* f = fopen(ledger(p), "r");
    if (!f) fail("open %s: %s", ledger(p), err_name(errno));
    int lines = 0, from, to;
    long amount;
    char line[128];
    while (fgets(line, sizeof line, f)) {
      if (sscanf(line, "%d %d %ld", &from, &to, &amount) != 3 || from < 0 || from >= k || to < 0 ||
          to >= k || amount < 1 || amount > 100) {
        fail("%s line %d is malformed: %s", ledger(p), lines + 1, line);
      }
      delta[from] -= amount;
      delta[to] += amount;
      lines++;
    }
    fclose(f);
    if (lines != rounds)
      fail("%s has %d transfers; its worker committed %d", ledger(p), lines, rounds);
  }
  long total = 0;
  int wrong = 0;
  for (int i = 0; i < k; i++) {
    long v;
    read_number(account(i), &v, 0);
    total += v;
    if (v != initial + delta[i]) {
      fprintf(stderr, "bank verify: %s holds %ld; the ledgers say %ld (a lost update)\n",
              account(i), v, initial + delta[i]);
      wrong++;
    }
  }
  if (total != k * initial) fail("the total is %ld; expected %ld", total, k * initial);
  if (wrong) fail("%d of %d accounts disagree with the ledgers", wrong, k);
  printf("verify: total %ld, %d accounts match %d transfers\n", total, k, workers * rounds);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 3) dir = argv[2];
  const int k = argc >= 4 ? atoi(argv[3]) : 0, workers = argc >= 5 ? atoi(argv[4]) : 0;
  if (k < 2 || k > kMaxAccounts || workers < 1 || workers > kMaxWorkers) {
    fprintf(stderr,
            "usage: bank setup DIR K P INITIAL | bank run DIR K P R INITIAL SEED txn|plain "
            "audit|noaudit | bank verify DIR K P R INITIAL (2 <= K <= %d, P <= %d)\n",
            kMaxAccounts, kMaxWorkers);
    return 2;
  }
  if (argc == 6 && strcmp(argv[1], "setup") == 0) return setup(k, workers, atol(argv[5]));
  if (argc == 10 && strcmp(argv[1], "run") == 0) {
    use_txn = strcmp(argv[8], "txn") == 0;
    return run(k, workers, atoi(argv[5]), atol(argv[6]), (unsigned)atol(argv[7]),
               strcmp(argv[9], "audit") == 0);
  }
  if (argc == 7 && strcmp(argv[1], "verify") == 0) {
    return verify(k, workers, atoi(argv[5]), atol(argv[6]));
  }
  fprintf(stderr, "bank: unknown command or wrong arguments\n");
  return 2;
}
