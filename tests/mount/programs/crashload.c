// crashload: a busy workload whose every acknowledged operation is logged outside the mount,
// and the check that after a crash everything acknowledged is there.
//
//   crashload run DIR LOG BASE WRITERS [early]
//       WRITERS processes (writers BASE, BASE+1, ...) loop until killed. Writer w appends its
//       records 0, 1, 2, ... to DIR/log.<w> (one write each); every 4th record it also creates
//       DIR/n.<w>.<seq>.tmp, writes the record, renames it to DIR/n.<w>.<seq>, and unlinks
//       DIR/n.<w>.<seq-8>. After each call succeeds it appends a line to the host file LOG:
//       "A w seq" (appended), "N w seq" (renamed into place), "U w seq" (unlinked). `early`
//       logs the append before making it, and pauses in between as a slow call would: a broken
//       workload the check must catch.
//   crashload check DIR LOG
//       Everything LOG says happened is in DIR, and nothing else: log.<w> holds records 0..M-1
//       whole and in order, with M the number logged or one more (the call in flight when the
//       crash came); every logged N file is present with its record unless logged U; no U file
//       is present; a .tmp file is empty or holds its record.
//
// The log line is written after the call returns, so a call can succeed and be lost from the log
// by the crash; the check therefore asks only that the log be contained in the file system (plus
// at most one unlogged call per writer).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "records.h"

enum { kMaxWriters = 4096, kPathMax = 512 };

static void die_call(const char* call, const char* path, int err) {
  fprintf(stderr, "FAIL writer: %s %s: %s\n", call, path, strerrorname_np(err));
  exit(1);
}

static void say(int log, char kind, unsigned w, unsigned seq) {
  char line[64];
  int n = snprintf(line, sizeof line, "%c %u %u\n", kind, w, seq);
  log_line(log, line, (size_t)n);
}

static void writer(const char* dir, int log, unsigned w, int early) {
  char path[kPathMax], tmp[kPathMax], final[kPathMax];
  snprintf(path, sizeof path, "%s/log.%u", dir, w);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) die_call("open", path, errno);
  for (unsigned seq = 0;; ++seq) {
    struct Record r;
    record_make(&r, w, seq, 0);
    if (early) {
      say(log, 'A', w, seq);
      usleep(5000);  // a slow call: a crash lands between the log line and the write often
    }
    ssize_t n = write(fd, &r, sizeof r);
    if (n != (ssize_t)sizeof r) die_call("write", path, n < 0 ? errno : EIO);
    if (!early) say(log, 'A', w, seq);
    if (seq % 4) continue;
    snprintf(tmp, sizeof tmp, "%s/n.%u.%u.tmp", dir, w, seq);
    snprintf(final, sizeof final, "%s/n.%u.%u", dir, w, seq);
    int t = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (t < 0) die_call("open", tmp, errno);
    record_make(&r, w, seq, 1);
    n = write(t, &r, sizeof r);
    if (n != (ssize_t)sizeof r) die_call("write", tmp, n < 0 ? errno : EIO);
    if (close(t) < 0) die_call("close", tmp, errno);
    if (rename(tmp, final) < 0) die_call("rename", tmp, errno);
    say(log, 'N', w, seq);
    if (seq >= 8) {
      snprintf(final, sizeof final, "%s/n.%u.%u", dir, w, seq - 8);
      if (unlink(final) < 0) die_call("unlink", final, errno);
      say(log, 'U', w, seq - 8);
    }
  }
}

static int run(char** a, int early) {
  const char* dir = a[0];
  unsigned base = (unsigned)atoi(a[2]), writers = (unsigned)atoi(a[3]);
  int log = open(a[1], O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (log < 0) die_call("open", a[1], errno);
  if (mkdir(dir, 0755) < 0 && errno != EEXIST) die_call("mkdir", dir, errno);
  for (unsigned i = 0; i < writers; ++i) {
    pid_t p = fork();
    if (p < 0) die_call("fork", "-", errno);
    if (p == 0) writer(dir, log, base + i, early);
  }
  // Writers run until killed; a writer that stops on an error ends the run.
  int status;
  pid_t p = wait(&status);
  fprintf(stderr, "FAIL run: writer process %d ended (status 0x%x) before the crash\n", (int)p,
          status);
  return 1;
}

// What the log says about one writer.
struct Logged {
  long max_append;         // highest appended seq logged, -1 if none
  unsigned char* renamed;  // per seq: 1 logged N, 2 logged U too
  unsigned cap;
  long max_renamed;  // highest seq logged N, -1 if none
};

static struct Logged logged[kMaxWriters];
static long failures;

__attribute__((format(printf, 1, 2))) static void bad(const char* fmt, ...) {
  if (failures++ >= 10) return;  // the first few say enough
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL check: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

static void mark(unsigned w, unsigned seq, unsigned char v) {
  struct Logged* l = &logged[w];
  if (seq >= l->cap) {
    unsigned cap = seq * 2 + 64;
    l->renamed = realloc(l->renamed, cap);
    memset(l->renamed + l->cap, 0, cap - l->cap);
    l->cap = cap;
  }
  if (v > l->renamed[seq]) l->renamed[seq] = v;
}

static long read_log(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) die_call("fopen", path, errno);
  for (int w = 0; w < kMaxWriters; ++w) logged[w].max_append = logged[w].max_renamed = -1;
  char kind;
  unsigned w, seq;
  long lines = 0;
  while (fscanf(f, " %c %u %u", &kind, &w, &seq) == 3) {
    if (w >= kMaxWriters) {
      bad("%s: writer %u out of range", path, w);
      continue;
    }
    if (kind == 'A' && (long)seq > logged[w].max_append) logged[w].max_append = seq;
    if (kind == 'N') mark(w, seq, 1);
    if (kind == 'N' && (long)seq > logged[w].max_renamed) logged[w].max_renamed = seq;
    if (kind == 'U') mark(w, seq, 2);
    ++lines;
  }
  fclose(f);
  return lines;
}

static void check_log_file(const char* path, const char* name, unsigned w) {
  uint8_t* data = NULL;
  long len = read_whole(path, &data);
  if (len < 0) die_call("read", path, (int)-len);
  if (len % kRecordSize) bad("%s: %ld bytes: a torn record at the end", name, len);
  long m = len / kRecordSize;
  for (long i = 0; i < m; ++i) {
    struct Record r;
    memcpy(&r, data + i * kRecordSize, sizeof r);
    if (!record_valid(&r) || r.writer != w || r.seq != (uint32_t)i || r.file != 0) {
      bad("%s: record %ld is not the writer's record %ld", name, i, i);
      break;
    }
  }
  long acked = logged[w].max_append + 1;
  if (m < acked) bad("%s: %ld records, but %ld were acknowledged (lost)", name, m, acked);
  if (m > acked + 1) bad("%s: %ld records, only %ld acknowledged (+1 in flight)", name, m, acked);
  free(data);
}

static void check_renamed(const char* path, const char* name, unsigned w, unsigned seq, int tmp) {
  uint8_t* data = NULL;
  long len = read_whole(path, &data);
  if (len < 0) die_call("read", path, (int)-len);
  struct Record r;
  if (len == kRecordSize) memcpy(&r, data, sizeof r);
  if (!(tmp && len == 0) &&
      (len != kRecordSize || !record_valid(&r) || r.writer != w || r.seq != seq || r.file != 1)) {
    bad("%s: %ld bytes, not the record it was written with", name, len);
  }
  if (!tmp && seq < logged[w].cap && logged[w].renamed[seq] == 2) {
    bad("%s: present although its unlink was acknowledged", name);
  }
  if (!tmp && seq < logged[w].cap && logged[w].renamed[seq]) logged[w].renamed[seq] |= 4;
  free(data);
}

static int check(char** a) {
  const char* dir = a[0];
  long lines = read_log(a[1]);
  static unsigned char has_log[kMaxWriters];
  DIR* d = opendir(dir);
  if (!d) die_call("opendir", dir, errno);
  long files = 0;
  for (struct dirent* e; (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char path[kPathMax];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unsigned w, seq;
    int end = 0;
    ++files;
    if (sscanf(e->d_name, "log.%u%n", &w, &end) == 1 && !e->d_name[end] && w < kMaxWriters) {
      has_log[w] = 1;
      check_log_file(path, e->d_name, w);
    } else if (sscanf(e->d_name, "n.%u.%u%n", &w, &seq, &end) == 2 && w < kMaxWriters &&
               (!e->d_name[end] || !strcmp(e->d_name + end, ".tmp"))) {
      check_renamed(path, e->d_name, w, seq, e->d_name[end] != 0);
    } else {
      bad("%s: a name no writer makes", e->d_name);
    }
  }
  closedir(d);
  long acked = 0;
  for (unsigned w = 0; w < kMaxWriters; ++w) {
    char name[64];
    acked += logged[w].max_append + 1;
    if (logged[w].max_append >= 0 && !has_log[w]) {
      snprintf(name, sizeof name, "log.%u", w);
      bad("%s: missing, %ld appends to it were acknowledged", name, logged[w].max_append + 1);
    }
    for (unsigned s = 0; s < logged[w].cap; ++s) {
      // The unlink of s follows the logged rename of s + 8: it may have been the call in flight.
      int in_flight = (long)s + 8 == logged[w].max_renamed;
      if (logged[w].renamed[s] == 1 && !in_flight) {
        snprintf(name, sizeof name, "n.%u.%u", w, s);
        bad("%s: missing, its rename into place was acknowledged", name);
      }
    }
  }
  if (failures) {
    fprintf(stderr, "FAIL check: %ld problem(s)\n", failures);
    return 1;
  }
  printf("check: ok: %ld log lines (%ld acknowledged appends), %ld files\n", lines, acked, files);
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* cmd = argc > 1 ? argv[1] : "";
  if (!strcmp(cmd, "run") && (argc == 6 || argc == 7)) {
    return run(argv + 2, argc == 7 && !strcmp(argv[6], "early"));
  }
  if (!strcmp(cmd, "check") && argc == 4) return check(argv + 2);
  fprintf(stderr, "usage: see the comment at the top of crashload.c\n");
  return 2;
}
