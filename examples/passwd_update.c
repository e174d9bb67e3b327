/* passwd_update: changes two files that must agree, like /etc/passwd and /etc/shadow, as one.
 *
 *   passwd_update DIR add USER   adds USER (next free uid from 1000) to DIR/passwd and DIR/shadow
 *   passwd_update DIR del USER   removes USER from both
 *   passwd_update DIR check      checks that both list the same users, in the same order
 *
 * An update writes new versions (DIR/passwd+, DIR/shadow+) and renames them over the old files,
 * all in one transaction. The renames alone make each file change atomically; the transaction
 * makes the PAIR change atomically: no reader ever finds a user in one file and not in the other,
 * and a crash or kill between the two renames leaves both old files. Readers that read both files
 * in a transaction (as `check` does) see one consistent version of the pair. Concurrent updates
 * serialise; one the system aborts to resolve a conflict is done again.
 *
 *   amino mkfs /tmp/db
 *   amino run --mount /mnt/a=/tmp/db -- sh -c \
 *       'passwd_update /mnt/a add ann & passwd_update /mnt/a add bob & wait
 *        passwd_update /mnt/a del ann; passwd_update /mnt/a check; cat /mnt/a/passwd'
 *
 * Exit status: 0 done (check: consistent, prints the number of users); 1 add: USER exists, del:
 * no such user; 2 usage; 3 the two files disagree or are malformed; 4 I/O error; 75 temporary
 * failure (conflicts persisted) or not under `amino run` (without transactions the pair could be
 * left half-updated, so it does not update at all).
 */
#include <amino/amino.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kDone = 0, kUser = 1, kUsage = 2, kDisagree = 3, kIo = 4, kTempFail = 75 };

struct text {
  char* data;
  size_t len;
};

/* Reads all of `path` into t (a missing file reads as empty): 0, or -1 with errno set. */
static int slurp(const char* path, struct text* t) {
  t->len = 0;
  int fd = open(path, O_RDONLY);
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  size_t cap = 0;
  for (;;) {
    if (t->len == cap) {
      char* d = realloc(t->data, cap = cap * 2 + 4096);
      if (!d) break;
      t->data = d;
    }
    ssize_t r = read(fd, t->data + t->len, cap - t->len);
    if (r <= 0) {
      int saved = errno;
      close(fd);
      errno = saved;
      return r == 0 ? 0 : -1;
    }
    t->len += (size_t)r;
  }
  close(fd);
  errno = ENOMEM;
  return -1;
}

/* The line after `*pos` in t (NULL at the end), its length with the '\n' in *len. */
static const char* next_line(const struct text* t, size_t* pos, size_t* len) {
  if (*pos >= t->len) return NULL;
  const char* line = t->data + *pos;
  const char* nl = memchr(line, '\n', t->len - *pos);
  *len = nl ? (size_t)(nl - line) + 1 : t->len - *pos;
  *pos += *len;
  return line;
}

static size_t count(const char* s, size_t n, char c) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += s[i] == c;
  return k;
}

/* Both files well formed (7 and 9 fields, whole lines) and naming the same users in the same
 * order: the number of users, or -1. */
static long agree(const struct text* pw, const struct text* sh) {
  size_t p = 0, s = 0, plen, slen;
  const char *pl, *sl;
  long users = 0;
  while ((pl = next_line(pw, &p, &plen)) != NULL) {
    if ((sl = next_line(sh, &s, &slen)) == NULL) return -1;
    if (count(pl, plen, ':') != 6 || count(sl, slen, ':') != 8 || pl[plen - 1] != '\n' ||
        sl[slen - 1] != '\n') {
      return -1;
    }
    size_t name = (size_t)((const char*)memchr(pl, ':', plen) - pl);
    if (memcmp(pl, sl, name + 1) != 0) return -1;
    users++;
  }
  return next_line(sh, &s, &slen) ? -1 : users;
}

/* USER's line in t (NULL if absent) and its length in *len; the highest uid (third field) in
 * *max_uid unless that is NULL. t has passed agree(). */
static const char* find(const struct text* t, const char* user, size_t* len, long* max_uid) {
  size_t pos = 0, n = strlen(user), line_len;
  const char *line, *found = NULL;
  while ((line = next_line(t, &pos, &line_len)) != NULL) {
    if (!found && line_len > n && memcmp(line, user, n) == 0 && line[n] == ':') {
      found = line;
      *len = line_len;
    }
    const char* uid = strchr(strchr(line, ':') + 1, ':') + 1;
    if (max_uid && atol(uid) > *max_uid) *max_uid = atol(uid);
  }
  return found;
}

static int write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Writes t without `cut` (cut_len bytes at it), with `add` appended, to `path`. */
static int write_file(const char* path, const struct text* t, const char* cut, size_t cut_len,
                      const char* add, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (fd < 0) return -1;
  size_t head = cut ? (size_t)(cut - t->data) : t->len;
  int ok = write_all(fd, t->data, head) == 0 &&
           (!cut || write_all(fd, cut + cut_len, t->len - head - cut_len) == 0) &&
           (!add || write_all(fd, add, strlen(add)) == 0);
  int saved = errno;
  if (close(fd) != 0 && ok) return -1;
  errno = saved;
  return ok ? 0 : -1;
}

static int io_error(const char* path) {
  int err = errno;
  if (err != AMINO_EABORTED) fprintf(stderr, "passwd_update: %s: %s\n", path, strerror(err));
  errno = err;
  return err == AMINO_EABORTED ? kTempFail : kIo;
}

/* One add, del or check, inside the caller's transaction: an exit status (errno set when it is
 * kTempFail); *users is the number of users found. */
static int update(const char* dir, const char* verb, const char* user, long* users) {
  static struct text pw, sh; /* reused by the next attempt */
  char pw_path[PATH_MAX], sh_path[PATH_MAX], pw_new[PATH_MAX], sh_new[PATH_MAX];
  snprintf(pw_path, sizeof pw_path, "%s/passwd", dir);
  snprintf(sh_path, sizeof sh_path, "%s/shadow", dir);
  snprintf(pw_new, sizeof pw_new, "%s/passwd+", dir);
  snprintf(sh_new, sizeof sh_new, "%s/shadow+", dir);
  if (slurp(pw_path, &pw) != 0) return io_error(pw_path);
  if (slurp(sh_path, &sh) != 0) return io_error(sh_path);
  if ((*users = agree(&pw, &sh)) < 0) {
    fprintf(stderr, "passwd_update: %s and %s disagree or are malformed\n", pw_path, sh_path);
    return kDisagree;
  }
  if (strcmp(verb, "check") == 0) return kDone;
  long max_uid = 999;
  size_t pw_len = 0, sh_len = 0;
  const char* pw_line = find(&pw, user, &pw_len, &max_uid);
  const char* sh_line = find(&sh, user, &sh_len, NULL);
  const int add = strcmp(verb, "add") == 0;
  if (add == (pw_line != NULL)) {
    fprintf(stderr, "passwd_update: %s: %s\n", user, add ? "user exists" : "no such user");
    return kUser;
  }
  char pw_add[256], sh_add[256];
  snprintf(pw_add, sizeof pw_add, "%s:x:%ld:%ld::/home/%s:/bin/sh\n", user, max_uid + 1,
           max_uid + 1, user);
  snprintf(sh_add, sizeof sh_add, "%s:!:%ld:0:99999:7:::\n", user, (long)(time(NULL) / 86400));
  if (write_file(pw_new, &pw, pw_line, pw_len, add ? pw_add : NULL, 0644) != 0) {
    return io_error(pw_new);
  }
  if (write_file(sh_new, &sh, sh_line, sh_len, add ? sh_add : NULL, 0640) != 0) {
    return io_error(sh_new);
  }
  if (rename(pw_new, pw_path) != 0) return io_error(pw_path);
  if (rename(sh_new, sh_path) != 0) return io_error(sh_path);
  return kDone;
}

int main(int argc, char** argv) {
  const int check = argc == 3 && strcmp(argv[2], "check") == 0;
  const int change = argc == 4 && (strcmp(argv[2], "add") == 0 || strcmp(argv[2], "del") == 0) &&
                     argv[3][0] != '\0' && strlen(argv[3]) < 64 && strpbrk(argv[3], ":\n/") == NULL;
  if (!check && !change) {
    fprintf(stderr, "usage: passwd_update DIR add|del USER\n       passwd_update DIR check\n");
    return kUsage;
  }
  if (!amino_available()) {
    fprintf(stderr, "passwd_update: not running under `amino run` (no transactions)\n");
    return kTempFail;
  }
  srand((unsigned)getpid());
  for (int attempt = 1;; attempt++) {
    if (amino_begin(NULL) != 0) return io_error("amino_begin");
    long users;
    int status = update(argv[1], argv[2], change ? argv[3] : NULL, &users);
    if (status != kDone) {
      amino_abort(); /* nothing of this attempt remains */
    } else if (amino_commit() != 0) {
      status = io_error(argv[1]); /* a failed commit has ended the transaction */
    } else if (check) {
      printf("%ld users\n", users);
    }
    if (status != kTempFail) return status;
    if (attempt == 10) {
      fprintf(stderr, "passwd_update: %s: still conflicting, try again later\n", argv[1]);
      return status;
    }
    /* Aborted to resolve a conflict: try again after a random while (up to ~2^attempt ms). */
    struct timespec t = {0, (rand() % (1000L << attempt)) * 1000L};
    nanosleep(&t, NULL);
  }
}
