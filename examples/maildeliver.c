/* maildeliver: a mail delivery agent that appends to an mbox in one transaction.
 *
 *   maildeliver [-f SENDER] MBOX < message
 *
 * The message read on standard input is appended to MBOX (created if missing) as one mbox entry:
 * a "From SENDER DATE" line, the message with each line that starts with "From " (after any
 * number of '>') quoted by one more '>' (the reversible "mboxrd" convention), and a blank line.
 * All of it is written in one transaction: a delivery killed half-way, or a write that fails,
 * leaves the mailbox exactly as it was, and other readers and deliverers never see a partial
 * message. No lock file, no fcntl lock: concurrent deliveries to one mailbox are serialised by
 * the transactions, and one that the system aborts (a conflict) is done again from scratch.
 *
 * MBOX must be on an Amino mount: files elsewhere are not part of transactions. Without
 * transactions (not under `amino run`) it refuses to deliver: it exits with EX_TEMPFAIL, so that
 * the mail system keeps the message queued, rather than risk a corrupt mailbox.
 *
 *   amino mkfs /tmp/db
 *   printf 'Subject: hi\n\nFrom here on, hello.\n' > /tmp/msg
 *   amino run --mount /var/mail=/tmp/db -- maildeliver -f ann@example.org /var/mail/bob < /tmp/msg
 *
 * Exit status (sysexits.h, as mail systems expect): 0 delivered and on disk; 64 usage; 73 the
 * mailbox cannot be created or opened; 74 read or write error; 71 out of memory or no
 * transaction; 75 temporary failure, try again later: still conflicting after several attempts,
 * disk full, or not under `amino run`.
 */
#include <amino/amino.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

enum { kAttempts = 10 }; /* deliveries aborted by conflicts before giving up for now */

struct buf {
  char* data;
  size_t len, cap;
};

static int append(struct buf* b, const char* s, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->len + n) cap *= 2;
    char* d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  return 0;
}

/* The whole mbox entry for the message in `msg`: From_ line, quoted lines, blank line. */
static int make_entry(struct buf* out, const char* sender, const struct buf* msg) {
  char from[512];
  time_t now = time(NULL);
  struct tm tm;
  size_t n = (size_t)snprintf(from, sizeof from, "From %s ", sender);
  n += strftime(from + n, sizeof from - n, "%a %b %e %H:%M:%S %Y\n", localtime_r(&now, &tm));
  if (append(out, from, n) != 0) return -1;
  for (size_t i = 0; i < msg->len;) {
    const char* line = msg->data + i;
    const char* nl = memchr(line, '\n', msg->len - i);
    size_t len = nl ? (size_t)(nl - line) + 1 : msg->len - i;
    size_t gt = 0;
    while (gt < len && line[gt] == '>') gt++;
    if (len - gt >= 5 && memcmp(line + gt, "From ", 5) == 0 && append(out, ">", 1) != 0) return -1;
    if (append(out, line, len) != 0) return -1;
    i += len;
  }
  if (msg->len > 0 && msg->data[msg->len - 1] != '\n' && append(out, "\n", 1) != 0) return -1;
  return append(out, "\n", 1);
}

static int write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The delivery proper, inside the caller's transaction: 0, or an exit status with errno set.
 * On success *fd is the open mailbox. */
static int deliver(const char* mbox, const struct buf* entry, int* fd) {
  *fd = open(mbox, O_RDWR | O_APPEND | O_CREAT, 0600);
  if (*fd < 0) return errno == AMINO_EABORTED ? EX_TEMPFAIL : EX_CANTCREAT;
  /* A mailbox that does not end with a blank line (another program wrote it) gets one first, so
   * that the From_ line starts an entry of its own. */
  struct stat st;
  char tail[2] = {'\n', '\n'}; /* an empty mailbox needs nothing */
  if (fstat(*fd, &st) != 0) return EX_IOERR;
  size_t n = st.st_size < 2 ? (size_t)st.st_size : 2;
  if (pread(*fd, tail + 2 - n, n, st.st_size - (off_t)n) != (ssize_t)n) return EX_IOERR;
  const char* pad = tail[1] != '\n' ? "\n\n" : tail[0] != '\n' ? "\n" : "";
  if (write_all(*fd, pad, strlen(pad)) != 0 || write_all(*fd, entry->data, entry->len) != 0) {
    return errno == ENOSPC || errno == EDQUOT || errno == AMINO_EABORTED ? EX_TEMPFAIL : EX_IOERR;
  }
  return EX_OK;
}

static int fail(int status, const char* what, int err) {
  fprintf(stderr, "maildeliver: %s: %s\n", what, strerror(err));
  return status;
}

int main(int argc, char** argv) {
  const char* sender = "MAILER-DAEMON";
  int opt;
  while ((opt = getopt(argc, argv, "f:")) != -1) {
    if (opt != 'f' || optarg[0] == '\0' || strlen(optarg) > 256 || strpbrk(optarg, " \t\r\n")) {
      fprintf(stderr, "usage: maildeliver [-f SENDER] MBOX < message\n");
      return EX_USAGE;
    }
    sender = optarg;
  }
  if (optind != argc - 1) {
    fprintf(stderr, "usage: maildeliver [-f SENDER] MBOX < message\n");
    return EX_USAGE;
  }
  const char* mbox = argv[optind];
  if (!amino_available()) {
    fprintf(stderr,
            "maildeliver: not running under `amino run` (no transactions): not delivering, "
            "the message stays queued\n");
    return EX_TEMPFAIL;
  }

  struct buf msg = {0}, entry = {0};
  char chunk[65536];
  ssize_t r;
  while ((r = read(0, chunk, sizeof chunk)) != 0) {
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return fail(EX_IOERR, "standard input", errno);
    if (append(&msg, chunk, (size_t)r) != 0) return fail(EX_OSERR, "reading", ENOMEM);
  }
  if (make_entry(&entry, sender, &msg) != 0) return fail(EX_OSERR, "reading", ENOMEM);

  srand((unsigned)getpid());
  for (int attempt = 1;; attempt++) {
    if (amino_begin(NULL) != 0) return fail(EX_OSERR, "amino_begin", errno);
    int fd;
    int status = deliver(mbox, &entry, &fd);
    int err = errno;
    if (status == EX_OK) {
      status = amino_commit() == 0 ? EX_OK : errno == AMINO_EABORTED ? EX_TEMPFAIL : EX_IOERR;
      err = errno;
    } else {
      amino_abort(); /* undoes whatever part was written */
    }
    if (status == EX_OK) {
      /* Committed. The mail system deletes its copy when we exit 0: make sure the mailbox's
       * copy is on disk whatever --durability `amino run` was given. If that fails the message
       * may be delivered twice when the mail system tries again, but it is never lost. */
      if (fsync(fd) != 0) return fail(EX_TEMPFAIL, mbox, errno);
      close(fd);
      return EX_OK;
    }
    if (fd >= 0) close(fd);
    if (err != AMINO_EABORTED) return fail(status, mbox, err);
    if (attempt == kAttempts) return fail(EX_TEMPFAIL, mbox, err);
    /* Aborted to resolve a conflict with another delivery: nothing of ours is left in the
     * mailbox. Wait a random while (up to ~2^attempt ms) so as not to collide again at once. */
    struct timespec t = {0, (rand() % (1000L << attempt)) * 1000L};
    nanosleep(&t, NULL);
  }
}
