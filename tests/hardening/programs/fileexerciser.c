// A random exerciser of one file's bytes and size, each read checked against an in-memory model
// (issue 15: "nothing is lost"). It changes the file F (and a second file G) in DIR through
// every path that changes bytes or size — pwrite, O_APPEND writes, ftruncate, truncate, the
// fallocate modes (plain, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE, COLLAPSE_RANGE, INSERT_RANGE),
// copy_file_range within F and between F and G, sendfile, splice through a pipe, and stores
// through MAP_SHARED mappings (a long-lived one over F's first 64 KiB and short-lived ones over
// the whole file), and holes punched through a mapping (MADV_REMOVE) — and reads back through
// pread, mappings and a reopened descriptor.
//
// Usage: fileexerciser DIR SEED OPS [--plant-loss]
// Prints "ok ops=N seed=S ..." and the count of each operation (and of those the file system
// refused with EOPNOTSUPP), exit status 0; on the first difference from the model, the
// operation, the offset and the last operations made, exit status 1. --plant-loss forgets one
// pwrite in the model (a negative control: the run must then fail).
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
  kMax = 256 * 1024,    // the largest size an operation makes
  kWindow = 64 * 1024,  // the long-lived mapping
  kBlock = 4096,        // COLLAPSE_RANGE and INSERT_RANGE work in blocks
  kHistory = 12,
};

enum Op {
  kPwrite,
  kPread,
  kAppend,
  kFtruncate,
  kTruncate,
  kFallocate,
  kCollapse,
  kInsert,
  kCopyWithin,
  kCopyIn,
  kCopyOut,
  kSendfile,
  kSplice,
  kMapWrite,
  kMapRead,
  kWindowWrite,
  kWindowRead,
  kWriteG,
  kReopen,
  kMapRemove,
  kOps
};

static const char* const kNames[kOps] = {
    "pwrite",   "pread",        "append",      "ftruncate", "truncate", "fallocate", "collapse",
    "insert",   "copy-within",  "copy-in",     "copy-out",  "sendfile", "splice",    "map-write",
    "map-read", "window-write", "window-read", "write-g",   "reopen",   "map-remove"};

// Relative frequencies: reads and writes most, whole-file checks less.
static const int kWeight[kOps] = {8, 8, 2, 3, 1, 4, 2, 2, 3, 3, 2, 2, 2, 3, 1, 4, 4, 3, 1, 2};

struct File {
  const char* path;
  int fd;
  unsigned char* model;
  size_t size;
};

static uint64_t rng_state, seed;
static unsigned long long op_index;
static char history[kHistory][160];
static unsigned long long done[kOps], unsupported[kOps];
static struct File f, g;
static int append_fd = -1;
static unsigned char* window = MAP_FAILED;
static unsigned char scratch[kMax * 2];
static int plant_loss;

static uint64_t Next(void) {  // xorshift64*
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1DULL;
}

static size_t Below(size_t n) { return n ? (size_t)(Next() % n) : 0; }

static void Note(const char* fmt, ...) {
  char* line = history[op_index % kHistory];
  int used = snprintf(line, sizeof history[0], "op %llu: ", op_index);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + used, sizeof history[0] - (size_t)used, fmt, ap);
  va_end(ap);
}

static void Fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL seed=%" PRIu64 " at op %llu: ", seed, op_index);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\nlast operations:\n");
  for (unsigned long long i = op_index >= kHistory ? op_index - kHistory + 1 : 0; i <= op_index;
       ++i) {
    printf("  %s\n", history[i % kHistory]);
  }
  fflush(stdout);
  exit(1);
}

static void Check(long r, const char* what) {
  if (r < 0) Fail("%s: %s", what, strerror(errno));
}

static void Fill(unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(Next() >> 32);
}

// The model's bytes [at, at + n) against `got`.
static void Compare(const struct File* file, size_t at, const unsigned char* got, size_t n,
                    const char* how) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != file->model[at + i]) {
      Fail("%s of %s: byte %zu is 0x%02x, the model says 0x%02x (size %zu)", how, file->path,
           at + i, got[i], file->model[at + i], file->size);
    }
  }
}

static void Resize(struct File* file, size_t size) {
  if (size > file->size) memset(file->model + file->size, 0, size - file->size);
  file->size = size;
}

static void ModelWrite(struct File* file, size_t at, const unsigned char* data, size_t n) {
  if (n == 0) return;  // a write of nothing changes no size
  if (at + n > file->size) Resize(file, at + n);
  memmove(file->model + at, data, n);
}

static void CheckSize(const struct File* file) {
  struct stat st;
  Check(fstat(file->fd, &st), "fstat");
  if ((size_t)st.st_size != file->size) {
    Fail("fstat of %s: size %lld, the model says %zu", file->path, (long long)st.st_size,
         file->size);
  }
}

static void CheckAll(const struct File* file, const char* how) {
  CheckSize(file);
  ssize_t n = pread(file->fd, scratch, file->size + 1, 0);
  Check(n, "pread");
  if ((size_t)n != file->size) Fail("%s: read %zd bytes of %zu", how, n, file->size);
  Compare(file, 0, scratch, file->size, how);
}

static void Pwrite(struct File* file, size_t at, size_t n) {
  Fill(scratch, n);
  Note("pwrite %s [%zu, +%zu)", file->path, at, n);
  ssize_t r = pwrite(file->fd, scratch, n, (off_t)at);
  Check(r, "pwrite");
  if ((size_t)r != n) Fail("pwrite wrote %zd of %zu", r, n);
  if (plant_loss && op_index >= 20) {
    plant_loss = 0;  // the negative control: one write the model never learns of
    return;
  }
  ModelWrite(file, at, scratch, n);
}

static void Pread(void) {
  size_t at = Below(f.size + 4096), n = 1 + Below(16384);
  Note("pread [%zu, +%zu) of size %zu", at, n, f.size);
  ssize_t r = pread(f.fd, scratch, n, (off_t)at);
  Check(r, "pread");
  size_t want = at >= f.size ? 0 : (f.size - at < n ? f.size - at : n);
  if ((size_t)r != want) Fail("pread returned %zd, the model says %zu", r, want);
  Compare(&f, at, scratch, want, "pread");
}

static void Append(void) {
  size_t n = 1 + Below(4096);
  if (f.size + n > kMax) return;
  Fill(scratch, n);
  Note("append +%zu at size %zu", n, f.size);
  ssize_t r = write(append_fd, scratch, n);
  Check(r, "write O_APPEND");
  if ((size_t)r != n) Fail("append wrote %zd of %zu", r, n);
  ModelWrite(&f, f.size, scratch, n);
}

static void Truncate(int by_path) {
  size_t size = Below(kMax);
  Note("%s to %zu from %zu", by_path ? "truncate" : "ftruncate", size, f.size);
  Check(by_path ? truncate(f.path, (off_t)size) : ftruncate(f.fd, (off_t)size), "truncate");
  Resize(&f, size);
}

// The file system said EOPNOTSUPP: counted, the model unchanged.
static int Unsupported(long r, enum Op op) {
  if (r < 0 && errno == EOPNOTSUPP) {
    ++unsupported[op];
    return 1;
  }
  return 0;
}

static void Fallocate(void) {
  static const int modes[] = {0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                              FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE};
  int mode = modes[Below(sizeof modes / sizeof modes[0])];
  size_t at = Below(kMax - 1), n = 1 + Below(kMax - at - 1);
  if (n > 65536) n = 1 + Below(65536);
  Note("fallocate mode %#x [%zu, +%zu) of size %zu", mode, at, n, f.size);
  long r = fallocate(f.fd, mode, (off_t)at, (off_t)n);
  if (Unsupported(r, kFallocate)) return;
  Check(r, "fallocate");
  size_t end = at + n;
  if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
    size_t zero_end = end < f.size ? end : f.size;
    if (at < zero_end) memset(f.model + at, 0, zero_end - at);
  }
  if (!(mode & FALLOC_FL_KEEP_SIZE) && end > f.size) Resize(&f, end);
}

static void Collapse(void) {
  size_t blocks = f.size / kBlock;
  if (blocks < 2) return;
  size_t first = Below(blocks - 1), count = 1 + Below(blocks - 1 - first);
  size_t at = first * kBlock, n = count * kBlock;  // at + n < size, as the kernel requires
  Note("collapse [%zu, +%zu) of size %zu", at, n, f.size);
  long r = fallocate(f.fd, FALLOC_FL_COLLAPSE_RANGE, (off_t)at, (off_t)n);
  if (Unsupported(r, kCollapse)) return;
  Check(r, "fallocate COLLAPSE_RANGE");
  memmove(f.model + at, f.model + at + n, f.size - at - n);
  f.size -= n;
}

static void Insert(void) {
  size_t blocks = f.size / kBlock;
  if (blocks < 1 || f.size + kBlock > kMax) return;
  size_t at = Below(blocks) * kBlock;  // at < size, as the kernel requires
  size_t n = (1 + Below((kMax - f.size) / kBlock)) * kBlock;
  if (n > 16 * kBlock) n = 16 * kBlock;
  Note("insert [%zu, +%zu) of size %zu", at, n, f.size);
  long r = fallocate(f.fd, FALLOC_FL_INSERT_RANGE, (off_t)at, (off_t)n);
  if (Unsupported(r, kInsert)) return;
  Check(r, "fallocate INSERT_RANGE");
  memmove(f.model + at + n, f.model + at, f.size - at);
  memset(f.model + at, 0, n);
  f.size += n;
}

// copy_file_range from `in` [in_at, +n) to `out` at out_at, explicit offsets; may be short.
static void Copy(struct File* in, size_t in_at, struct File* out, size_t out_at, size_t n,
                 enum Op op) {
  Note("%s %s [%zu, +%zu) to %s at %zu (sizes %zu, %zu)", kNames[op], in->path, in_at, n, out->path,
       out_at, in->size, out->size);
  loff_t pin = (loff_t)in_at, pout = (loff_t)out_at;
  ssize_t r = copy_file_range(in->fd, &pin, out->fd, &pout, n, 0);
  Check(r, "copy_file_range");
  size_t want = in_at >= in->size ? 0 : (in->size - in_at < n ? in->size - in_at : n);
  if ((size_t)r > want || (want > 0 && r == 0)) {
    Fail("copy_file_range returned %zd, the model allows up to %zu", r, want);
  }
  if (pin != (loff_t)(in_at + (size_t)r) || pout != (loff_t)(out_at + (size_t)r)) {
    Fail("copy_file_range left offsets %lld and %lld", (long long)pin, (long long)pout);
  }
  memcpy(scratch, in->model + in_at, (size_t)r);
  ModelWrite(out, out_at, scratch, (size_t)r);
}

static void CopyWithin(void) {
  size_t n = 1 + Below(16384);
  size_t in_at = Below(f.size + 1024), out_at = Below(kMax - n);
  if (out_at + n > in_at && out_at < in_at + n) return;  // overlapping ranges are refused
  Copy(&f, in_at, &f, out_at, n, kCopyWithin);
}

static void Sendfile(void) {
  size_t n = 1 + Below(16384), out_at = Below(kMax - n);
  off_t in_at = (off_t)Below(g.size + 1024);
  Note("sendfile %s [%lld, +%zu) to %s at %zu", g.path, (long long)in_at, n, f.path, out_at);
  Check(lseek(f.fd, (off_t)out_at, SEEK_SET), "lseek");
  off_t start = in_at;
  ssize_t r = sendfile(f.fd, g.fd, &in_at, n);
  Check(r, "sendfile");
  size_t want =
      (size_t)start >= g.size ? 0 : (g.size - (size_t)start < n ? g.size - (size_t)start : n);
  if ((size_t)r > want || (want > 0 && r == 0)) Fail("sendfile returned %zd, up to %zu", r, want);
  off_t now = lseek(f.fd, 0, SEEK_CUR);
  if (now != (off_t)(out_at + (size_t)r)) Fail("sendfile left the output at %lld", (long long)now);
  memcpy(scratch, g.model + start, (size_t)r);
  ModelWrite(&f, out_at, scratch, (size_t)r);
}

static void Splice(void) {
  int p[2];
  Check(pipe(p), "pipe");
  size_t n = 1 + Below(16384), out_at = Below(kMax - n);
  loff_t in_at = (loff_t)Below(g.size + 1024), start = in_at;
  Note("splice %s [%lld, +%zu) to %s at %zu", g.path, (long long)in_at, n, f.path, out_at);
  ssize_t got = splice(g.fd, &in_at, p[1], NULL, n, 0);
  Check(got, "splice from the file");
  loff_t at = (loff_t)out_at;
  for (ssize_t moved = 0; moved < got;) {
    ssize_t r = splice(p[0], NULL, f.fd, &at, (size_t)(got - moved), 0);
    Check(r, "splice to the file");
    if (r == 0) Fail("splice to the file moved nothing");
    moved += r;
  }
  close(p[0]);
  close(p[1]);
  memcpy(scratch, g.model + start, (size_t)got);
  ModelWrite(&f, out_at, scratch, (size_t)got);
}

static void MapWrite(void) {
  if (f.size == 0) return;
  size_t at = Below(f.size), n = 1 + Below(f.size - at);
  Note("map-write [%zu, +%zu) of size %zu", at, n, f.size);
  unsigned char* p = mmap(NULL, f.size, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
  if (p == MAP_FAILED) Fail("mmap: %s", strerror(errno));
  Fill(scratch, n);
  memcpy(p + at, scratch, n);
  if (Below(2)) Check(msync(p, f.size, MS_SYNC), "msync");
  Check(munmap(p, f.size), "munmap");
  ModelWrite(&f, at, scratch, n);
}

static void MapRead(void) {
  if (f.size == 0) return;
  Note("map-read of size %zu", f.size);
  unsigned char* p = mmap(NULL, f.size, PROT_READ, MAP_SHARED, f.fd, 0);
  if (p == MAP_FAILED) Fail("mmap: %s", strerror(errno));
  Compare(&f, 0, p, f.size, "a new mapping");
  Check(munmap(p, f.size), "munmap");
}

// madvise(MADV_REMOVE) over whole pages of a mapping of the file: a hole punched in the file,
// as fallocate's PUNCH_HOLE | KEEP_SIZE makes (zeros inside the file, the size unchanged).
static void MapRemove(void) {
  if (f.size == 0) return;
  size_t pages = (f.size + kBlock - 1) / kBlock, first = Below(pages);
  size_t count = 1 + Below(pages - first < 16 ? pages - first : 16);
  size_t at = first * kBlock, n = count * kBlock;
  Note("map-remove [%zu, +%zu) of size %zu", at, n, f.size);
  unsigned char* p = mmap(NULL, f.size, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
  if (p == MAP_FAILED) Fail("mmap: %s", strerror(errno));
  long r = madvise(p + at, n, MADV_REMOVE);
  Check(munmap(p, f.size), "munmap");
  if (Unsupported(r, kMapRemove)) return;
  Check(r, "madvise MADV_REMOVE");
  size_t end = at + n < f.size ? at + n : f.size;
  memset(f.model + at, 0, end - at);
}

static size_t WindowLimit(void) { return f.size < kWindow ? f.size : kWindow; }

static void WindowWrite(void) {
  size_t limit = WindowLimit();
  if (limit == 0) return;
  size_t at = Below(limit), n = 1 + Below(limit - at);
  if (n > 8192) n = 1 + Below(8192);
  Note("window-write [%zu, +%zu) of size %zu", at, n, f.size);
  Fill(scratch, n);
  memcpy(window + at, scratch, n);
  ModelWrite(&f, at, scratch, n);
}

static void WindowRead(void) {
  Note("window-read of size %zu", f.size);
  Compare(&f, 0, window, WindowLimit(), "the long-lived mapping");
}

static void Reopen(void) {
  Note("reopen at size %zu", f.size);
  Check(close(f.fd), "close");
  f.fd = open(f.path, O_RDWR | O_CLOEXEC);
  Check(f.fd, "open");
  CheckAll(&f, "read after reopening");
}

static enum Op Pick(void) {
  int total = 0;
  for (int i = 0; i < kOps; ++i) total += kWeight[i];
  int x = (int)Below((size_t)total);
  for (int i = 0; i < kOps; ++i) {
    if (x < kWeight[i]) return (enum Op)i;
    x -= kWeight[i];
  }
  return kPread;
}

static void Open(struct File* file, const char* dir, const char* name) {
  char* path = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(path, "%s/%s", dir, name);
  file->path = path;
  file->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  Check(file->fd, "open");
  file->model = calloc(kMax * 2, 1);
  file->size = 0;
}

/* Long by design: the exerciser's loop is one switch over operation kinds, each checked against
 * the model at once; split, the model's state would have to travel through every piece. */
int main(int argc, char** argv) {
  if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "--plant-loss") != 0)) {
    fprintf(stderr, "usage: fileexerciser DIR SEED OPS [--plant-loss]\n");
    return 2;
  }
  seed = strtoull(argv[2], NULL, 0);
  const unsigned long long ops = strtoull(argv[3], NULL, 0);
  plant_loss = argc == 5;
  rng_state = seed * 2654435761u + 88172645463325252ULL;
  Open(&f, argv[1], "f");
  Open(&g, argv[1], "g");
  append_fd = open(f.path, O_WRONLY | O_APPEND | O_CLOEXEC);
  Check(append_fd, "open O_APPEND");
  window = mmap(NULL, kWindow, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
  if (window == MAP_FAILED) Fail("mmap of the window: %s", strerror(errno));
  Pwrite(&g, 0, 1 + Below(kMax / 2));

  for (op_index = 0; op_index < ops; ++op_index) {
    enum Op op = Pick();
    switch (op) {
      case kPwrite: {
        size_t n = 1 + Below(16384);
        Pwrite(&f, Below(kMax - n), n);
        break;
      }
      case kPread:
        Pread();
        break;
      case kAppend:
        Append();
        break;
      case kFtruncate:
        Truncate(0);
        break;
      case kTruncate:
        Truncate(1);
        break;
      case kFallocate:
        Fallocate();
        break;
      case kCollapse:
        Collapse();
        break;
      case kInsert:
        Insert();
        break;
      case kCopyWithin:
        CopyWithin();
        break;
      case kCopyIn: {
        size_t n = 1 + Below(16384);
        Copy(&g, Below(g.size + 1024), &f, Below(kMax - n), n, kCopyIn);
        break;
      }
      case kCopyOut: {
        size_t n = 1 + Below(16384);
        Copy(&f, Below(f.size + 1024), &g, Below(kMax - n), n, kCopyOut);
        break;
      }
      case kSendfile:
        Sendfile();
        break;
      case kSplice:
        Splice();
        break;
      case kMapWrite:
        MapWrite();
        break;
      case kMapRead:
        MapRead();
        break;
      case kWindowWrite:
        WindowWrite();
        break;
      case kWindowRead:
        WindowRead();
        break;
      case kWriteG: {
        size_t n = 1 + Below(16384);
        Pwrite(&g, Below(kMax - n), n);
        break;
      }
      case kReopen:
        Reopen();
        break;
      case kMapRemove:
        MapRemove();
        break;
      case kOps:
        break;
    }
    ++done[op];
    if (op_index % 64 == 63) CheckAll(&f, "the periodic whole-file check");
  }
  CheckAll(&f, "the final check");
  CheckAll(&g, "the final check");
  Check(munmap(window, kWindow), "munmap");
  close(append_fd);
  close(f.fd);
  close(g.fd);
  f.fd = open(f.path, O_RDONLY | O_CLOEXEC);
  Check(f.fd, "open");
  CheckAll(&f, "read after closing every descriptor");
  printf("ok ops=%llu seed=%" PRIu64 " size=%zu", ops, seed, f.size);
  for (int i = 0; i < kOps; ++i) printf(" %s=%llu", kNames[i], done[i]);
  int any = 0;
  for (int i = 0; i < kOps; ++i) {
    if (unsupported[i])
      printf("%s%s=%llu", any++ ? "," : " unsupported:", kNames[i], unsupported[i]);
  }
  printf("\n");
  return 0;
}
