// mstress: concurrent appends, renames and reads in one directory, and the check of what they
// left. The directory holds K files named "f<j>.<generation>"; appenders add records to them
// with O_APPEND and now and then rename one to a new generation, readers list the directory and
// read the files while that happens.
//
//   mstress setup DIR K                      make DIR and its K empty files
//   mstress stress DIR K APPENDERS READERS N BASE RENAME_EVERY [racy]
//       APPENDERS processes (writers BASE, BASE+1, ...) append N records each to random files;
//       READERS processes check every listing and every record they see until the appenders
//       are done. `racy` appends with fstat + pwrite instead of O_APPEND (a lost-update bug on
//       purpose: the checks must catch it).
//   mstress verify DIR K BASE WRITERS N      every record of writers BASE.. is present once
//   mstress handshake DIR ME OTHER SECONDS   create DIR/hello.ME, wait for DIR/hello.OTHER
//
// Exit status 0 when every check passed; otherwise the first failure is printed as
// "FAIL <who>: <call> <path>: <errno>" or "FAIL <who>: <what was wrong>".
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "records.h"

enum { kMaxFiles = 64, kMaxWriters = 256, kNameMax = 256, kRetries = 100000 };

static char who[64] = "mstress";

static void fail(const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "FAIL %s: %s\n", who, msg);
  exit(1);
}

static void fail_call(const char* call, const char* path, int err) {
  fail("%s %s: %s", call, path, strerrorname_np(err));
}

// `dir`/`name` into `out`; names longer than the tests make are an error, not a truncation.
static void join(char* out, size_t size, const char* dir, const char* name) {
  size_t a = strlen(dir), b = strlen(name);
  if (a + b + 2 > size) fail("path %s/%s too long", dir, name);
  memcpy(out, dir, a);
  out[a] = '/';
  memcpy(out + a + 1, name, b + 1);
}

// The names of files 0..k-1 in one listing of `dir`; fails unless the listing shows each exactly
// once and nothing else. Returns 0, or 1 when the listing was not complete in one call (then
// names[] is not set).
static int current_names(const char* dir, int k, char names[][kNameMax]) {
  static char buf[1 << 16];
  int complete = 0;
  int n = list_dir(dir, buf, sizeof buf, &complete);
  if (n < 0) fail_call("getdents64", dir, -n);
  if (!complete) return 1;
  int seen[kMaxFiles] = {0};
  for (char* line = buf; *line;) {
    char* end = strchr(line, '\n');
    *end = 0;
    char* dot = strchr(line, '.');
    int j = -1;
    if (line[0] == 'f' && dot && sscanf(line + 1, "%d", &j) == 1 && j >= 0 && j < k) {
      if (seen[j]++) fail("listing of %s shows file %d twice (%s and %s)", dir, j, names[j], line);
      if (strlen(line) >= kNameMax) fail("name %s too long", line);
      memcpy(names[j], line, strlen(line) + 1);
    } else {
      fail("listing of %s shows an unexpected name '%s'", dir, line);
    }
    line = end + 1;
  }
  for (int j = 0; j < k; ++j) {
    if (!seen[j]) fail("listing of %s (%d names) misses file %d", dir, n, j);
  }
  return 0;
}

static void name_of(const char* dir, int k, int j, char* path, size_t size) {
  char names[kMaxFiles][kNameMax];
  for (int attempt = 0; current_names(dir, k, names); ++attempt) {
    if (attempt > kRetries) fail("no complete listing of %s", dir);
  }
  join(path, size, dir, names[j]);
}

static unsigned next_random(unsigned* state) {
  *state ^= *state << 13;
  *state ^= *state >> 17;
  *state ^= *state << 5;
  return *state;
}

static void append_one(const char* dir, int k, int j, const struct Record* r, int racy) {
  char path[2 * kNameMax];
  for (int attempt = 0;; ++attempt) {
    name_of(dir, k, j, path, sizeof path);
    int fd = open(path, racy ? O_WRONLY : O_WRONLY | O_APPEND);
    if (fd < 0 && errno == ENOENT && attempt < kRetries) continue;  // renamed meanwhile
    if (fd < 0) fail_call("open", path, errno);
    ssize_t w;
    if (racy) {
      struct stat st;
      if (fstat(fd, &st) < 0) fail_call("fstat", path, errno);
      w = pwrite(fd, r, sizeof *r, st.st_size);
    } else {
      w = write(fd, r, sizeof *r);
    }
    if (w < 0) fail_call("write", path, errno);
    if (w != (ssize_t)sizeof *r) fail("write %s: %zd of %zu bytes", path, w, sizeof *r);
    if (close(fd) < 0) fail_call("close", path, errno);
    return;
  }
}

static int rename_one(const char* dir, int k, int j, unsigned writer, unsigned seq) {
  char from[2 * kNameMax], to[2 * kNameMax];
  snprintf(to, sizeof to, "%s/f%d.w%us%u", dir, j, writer, seq);
  for (int attempt = 0;; ++attempt) {
    name_of(dir, k, j, from, sizeof from);
    if (rename(from, to) == 0) return 1;
    if (errno == ENOENT && attempt < kRetries) continue;  // another appender renamed it first
    fail_call("rename", from, errno);
  }
}

static int appender(const char* dir, int k, unsigned writer, unsigned n, unsigned rename_every,
                    int racy) {
  snprintf(who, sizeof who, "appender %u", writer);
  unsigned state = writer * 2654435761u + 1;
  unsigned renames = 0;
  for (unsigned seq = 0; seq < n; ++seq) {
    int j = (int)(next_random(&state) % (unsigned)k);
    struct Record r;
    record_make(&r, writer, seq, (uint32_t)j);
    append_one(dir, k, j, &r, racy);
    if (rename_every && seq % rename_every == rename_every - 1) {
      renames += rename_one(dir, k, (int)(next_random(&state) % (unsigned)k), writer, seq);
    }
  }
  printf("appender %u: %u appends, %u renames\n", writer, n, renames);
  return 0;
}

// Checks the records of one file as a reader or the final check sees them: whole, valid, meant
// for this file, and each writer's in increasing order (a writer appends one after another).
// Calls `each` for every record. Returns the number of records.
static long check_records(const char* path, int j, const uint8_t* data, long len,
                          void (*each)(const struct Record*, void*), void* arg) {
  if (len % kRecordSize) fail("%s: %ld bytes, not whole records (torn read)", path, len);
  static long last[kMaxWriters];
  for (int w = 0; w < kMaxWriters; ++w) last[w] = -1;
  for (long off = 0; off < len; off += kRecordSize) {
    struct Record r;
    memcpy(&r, data + off, sizeof r);
    if (!record_valid(&r))
      fail("%s: invalid record at offset %ld (torn or overwritten)", path, off);
    if (r.file != (uint32_t)j) fail("%s: record of file %u at offset %ld", path, r.file, off);
    if (r.writer >= kMaxWriters) fail("%s: writer %u out of range", path, r.writer);
    if ((long)r.seq <= last[r.writer]) {
      fail("%s: writer %u's record %u after its record %ld", path, r.writer, r.seq, last[r.writer]);
    }
    last[r.writer] = r.seq;
    if (each) each(&r, arg);
  }
  return len / kRecordSize;
}

static int reader(const char* dir, int k, int id, volatile int* stop) {
  snprintf(who, sizeof who, "reader %d", id);
  long size[kMaxFiles] = {0};
  long passes = 0, records = 0, vanished = 0, partial_listings = 0;
  for (int last_pass = 0; !last_pass;) {
    last_pass = *stop;  // one full pass after the appenders finished
    char names[kMaxFiles][kNameMax];
    if (current_names(dir, k, names)) {
      ++partial_listings;
      continue;
    }
    for (int j = 0; j < k; ++j) {
      char path[2 * kNameMax];
      join(path, sizeof path, dir, names[j]);
      uint8_t* data = NULL;
      long len = read_whole(path, &data);
      if (len == -ENOENT) {  // renamed since the listing
        ++vanished;
        continue;
      }
      if (len < 0) fail_call("read", path, (int)-len);
      if (len < size[j]) fail("%s: size went down from %ld to %ld", path, size[j], len);
      size[j] = len;
      records += check_records(path, j, data, len, NULL, NULL);
      free(data);
    }
    ++passes;
  }
  printf("reader %d: %ld passes, %ld records checked, %ld renamed under it, %ld partial listings\n",
         id, passes, records, vanished, partial_listings);
  return 0;
}

static int wait_all(int count) {
  int bad = 0;
  for (int i = 0; i < count; ++i) {
    int status;
    if (wait(&status) < 0) fail_call("wait", "-", errno);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++bad;
  }
  return bad;
}

static int stress(char** a, int racy) {
  const char* dir = a[0];
  int k = atoi(a[1]), appenders = atoi(a[2]), readers = atoi(a[3]);
  unsigned n = (unsigned)atoi(a[4]), base = (unsigned)atoi(a[5]);
  unsigned rename_every = (unsigned)atoi(a[6]);
  if (k < 1 || k > kMaxFiles || base + appenders > kMaxWriters) fail("bad arguments");
  // The stop flag lives in shared memory so that readers learn it with no system call.
  volatile int* stop = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (stop == MAP_FAILED) fail_call("mmap", "-", errno);
  fflush(stdout);
  for (int i = 0; i < readers; ++i) {
    pid_t p = fork();
    if (p < 0) fail_call("fork", "-", errno);
    if (p == 0) exit(reader(dir, k, i, stop));
  }
  double t0 = now_seconds();
  for (int i = 0; i < appenders; ++i) {
    pid_t p = fork();
    if (p < 0) fail_call("fork", "-", errno);
    if (p == 0) exit(appender(dir, k, base + (unsigned)i, n, rename_every, racy));
  }
  int bad = 0;
  for (int i = 0; i < appenders; ++i) {
    int status;
    pid_t p = wait(&status);
    if (p < 0) fail_call("wait", "-", errno);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++bad;
  }
  double t1 = now_seconds();
  *stop = 1;
  bad += wait_all(readers);
  printf("stress: %d appenders x %u records in %.2f s (%.0f appends/s); %d process(es) failed\n",
         appenders, n, t1 - t0, appenders * n / (t1 - t0), bad);
  return bad ? 1 : 0;
}

struct Tally {
  unsigned base, writers, n;
  unsigned char* seen;
  long foreign;
};

static void tally(const struct Record* r, void* arg) {
  struct Tally* t = arg;
  if (r->writer < t->base || r->writer >= t->base + t->writers || r->seq >= t->n) {
    ++t->foreign;
    return;
  }
  unsigned char* s = &t->seen[(size_t)(r->writer - t->base) * t->n + r->seq];
  if (*s) fail("record %u of writer %u is present twice", r->seq, r->writer);
  *s = 1;
}

static int verify(char** a) {
  snprintf(who, sizeof who, "verify");
  const char* dir = a[0];
  int k = atoi(a[1]);
  struct Tally t = {(unsigned)atoi(a[2]), (unsigned)atoi(a[3]), (unsigned)atoi(a[4]), NULL, 0};
  t.seen = calloc((size_t)t.writers * t.n, 1);
  char names[kMaxFiles][kNameMax];
  if (current_names(dir, k, names)) fail("listing of %s is not complete in one call", dir);
  long total = 0;
  for (int j = 0; j < k; ++j) {
    char path[2 * kNameMax];
    join(path, sizeof path, dir, names[j]);
    uint8_t* data = NULL;
    long len = read_whole(path, &data);
    if (len < 0) fail_call("read", path, (int)-len);
    total += check_records(path, j, data, len, tally, &t);
    free(data);
  }
  long missing = 0;
  for (unsigned w = 0; w < t.writers; ++w) {
    for (unsigned s = 0; s < t.n; ++s) {
      if (!t.seen[(size_t)w * t.n + s]) {
        if (missing++ < 5) fprintf(stderr, "missing: record %u of writer %u\n", s, w + t.base);
      }
    }
  }
  if (missing || t.foreign) {
    fail("%ld of %u records missing (lost updates), %ld records of unknown writers", missing,
         t.writers * t.n, t.foreign);
  }
  printf("verify: %ld records in %d files, each of %u writers x %u present exactly once\n", total,
         k, t.writers, t.n);
  return 0;
}

static int setup(char** a) {
  snprintf(who, sizeof who, "setup");
  const char* dir = a[0];
  int k = atoi(a[1]);
  if (mkdir(dir, 0755) < 0) fail_call("mkdir", dir, errno);
  for (int j = 0; j < k; ++j) {
    char path[2 * kNameMax];
    snprintf(path, sizeof path, "%s/f%d.init", dir, j);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) fail_call("open", path, errno);
    close(fd);
  }
  return 0;
}

static int handshake(char** a) {
  snprintf(who, sizeof who, "handshake %s", a[1]);
  char mine[2 * kNameMax], theirs[2 * kNameMax];
  snprintf(mine, sizeof mine, "%s/hello.%s", a[0], a[1]);
  snprintf(theirs, sizeof theirs, "%s/hello.%s", a[0], a[2]);
  // Written under a temporary name and renamed into place, so that the other side never sees
  // the file before its contents (open and write are two calls).
  char tmp[2 * kNameMax + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", mine);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) fail_call("open", tmp, errno);
  if (write(fd, a[1], strlen(a[1])) != (ssize_t)strlen(a[1])) fail_call("write", tmp, errno);
  if (close(fd) < 0) fail_call("close", tmp, errno);
  if (rename(tmp, mine) < 0) fail_call("rename", tmp, errno);
  double deadline = now_seconds() + atof(a[3]);
  for (;;) {
    uint8_t* data = NULL;
    long len = read_whole(theirs, &data);
    if (len >= 0) {
      int same = len == (long)strlen(a[2]) && !memcmp(data, a[2], (size_t)len);
      free(data);
      if (!same) fail("%s does not hold '%s'", theirs, a[2]);
      printf("handshake %s: saw %s\n", a[1], theirs);
      return 0;
    }
    if (len != -ENOENT) fail_call("read", theirs, (int)-len);
    if (now_seconds() > deadline) fail("%s did not appear within %s s", theirs, a[3]);
    usleep(10000);
  }
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* cmd = argc > 1 ? argv[1] : "";
  if (!strcmp(cmd, "setup") && argc == 4) return setup(argv + 2);
  if (!strcmp(cmd, "stress") && (argc == 9 || argc == 10)) {
    return stress(argv + 2, argc == 10 && !strcmp(argv[9], "racy"));
  }
  if (!strcmp(cmd, "verify") && argc == 7) return verify(argv + 2);
  if (!strcmp(cmd, "handshake") && argc == 6) return handshake(argv + 2);
  fprintf(stderr, "usage: see the comment at the top of mstress.c\n");
  return 2;
}
