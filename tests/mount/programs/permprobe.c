// permprobe: what a process may do with files of other owners, for a differential comparison of
// an Amino mount with a host directory holding the same files, owners and modes.
//
//   permprobe setup ROOT   (as root) the files below, owned by root
//   permprobe probe ROOT   (as anyone) one line per operation: "op path: ok [detail]" or the
//                          errno name; later operations see the effects of earlier ones
//   permprobe tree ROOT    (as root) every file under ROOT: type, mode, owner, size, content hash
//
// ROOT/priv 0700 (secret 0600, sub 0755 with f 0644); pub 0755 (file 0644, secret 0600, open
// 0666, exec 0755); xonly 0711 (searchable, not listable); ronly 0744 (listable, not
// searchable); sticky 1777 (rootfile 0666); shared 0777.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static const char* root;

static int by_name(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

static const char* full(const char* rel) {
  static char bufs[2][4096];
  static int which;
  which ^= 1;
  snprintf(bufs[which], sizeof bufs[which], "%s/%s", root, rel);
  return bufs[which];
}

static void must(int ok, const char* what, const char* path) {
  if (!ok) {
    fprintf(stderr, "permprobe setup: %s %s: %s\n", what, path, strerrorname_np(errno));
    exit(1);
  }
}

static void mkdir_mode(const char* rel, mode_t mode) {
  must(mkdir(full(rel), 0700) == 0, "mkdir", rel);
  must(chmod(full(rel), mode) == 0, "chmod", rel);  // past the umask, with the sticky bit
}

static void file_mode(const char* rel, mode_t mode, const char* text) {
  int fd = open(full(rel), O_WRONLY | O_CREAT | O_EXCL, 0600);
  must(fd >= 0, "open", rel);
  must(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write", rel);
  must(close(fd) == 0, "close", rel);
  must(chmod(full(rel), mode) == 0, "chmod", rel);
}

static int setup(void) {
  mkdir_mode("priv", 0700);
  file_mode("priv/secret", 0600, "secret\n");
  mkdir_mode("priv/sub", 0755);
  file_mode("priv/sub/f", 0644, "f\n");
  mkdir_mode("pub", 0755);
  file_mode("pub/file", 0644, "public\n");
  file_mode("pub/secret", 0600, "hidden\n");
  file_mode("pub/open", 0666, "open\n");
  file_mode("pub/exec", 0755, "#!/bin/sh\n");
  mkdir_mode("xonly", 0711);
  file_mode("xonly/file", 0644, "x\n");
  mkdir_mode("ronly", 0744);
  file_mode("ronly/file", 0644, "r\n");
  mkdir_mode("sticky", 01777);
  file_mode("sticky/rootfile", 0666, "root\n");
  mkdir_mode("shared", 0777);
  return 0;
}

static void report(const char* op, const char* rel, int r, const char* detail) {
  if (r < 0) {
    printf("%s %s: %s\n", op, rel, strerrorname_np(errno));
  } else {
    printf("%s %s: ok%s%s\n", op, rel, detail && *detail ? " " : "", detail ? detail : "");
  }
}

static void do_stat(const char* rel) {
  struct stat st;
  char d[128] = "";
  int r = lstat(full(rel), &st);
  if (r == 0) {
    // A directory's size is the file system's own business (ext4 4096, Amino 0).
    snprintf(d, sizeof d, "mode=%o uid=%u gid=%u size=%lld", st.st_mode, st.st_uid, st.st_gid,
             S_ISDIR(st.st_mode) ? 0 : (long long)st.st_size);
  }
  report("stat", rel, r, d);
}

static void do_open(const char* op, const char* rel, int flags, const char* text) {
  int fd = open(full(rel), flags, 0644);
  char d[256] = "";
  int r = fd;
  if (fd >= 0) {
    if ((flags & O_ACCMODE) != O_WRONLY) {
      ssize_t n = read(fd, d + 1, sizeof d - 3);
      if (n < 0) r = -1, snprintf(d, sizeof d, "read failed");
      if (n >= 0) d[0] = '"', d[n + 1] = '"', d[n + 2] = 0;
      for (char* p = d; *p; ++p) {
        if (*p == '\n') *p = '|';
      }
    }
    if (r >= 0 && text && write(fd, text, strlen(text)) != (ssize_t)strlen(text)) r = -1;
    int e = errno;
    close(fd);
    errno = e;
  }
  report(op, rel, r, d);
}

static void do_list(const char* rel) {
  DIR* dir = opendir(full(rel));
  char names[1024] = "";
  if (dir) {
    char* list[64];
    int n = 0;
    for (struct dirent* e; n < 64 && (e = readdir(dir));) {
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) list[n++] = strdup(e->d_name);
    }
    closedir(dir);
    qsort(list, (size_t)n, sizeof *list, by_name);
    for (int i = 0; i < n; ++i) {
      strncat(names, list[i], sizeof names - strlen(names) - 2);
      strcat(names, ",");
      free(list[i]);
    }
  }
  report("list", rel, dir ? 0 : -1, names);
}

static void do_access(const char* rel, int mode, const char* name) {
  char op[32];
  snprintf(op, sizeof op, "access-%s", name);
  report(op, rel, access(full(rel), mode), NULL);
}

static int probe(void) {
  // Directories the caller may not search or read.
  do_stat("priv");
  do_stat("priv/secret");
  do_stat("priv/sub/f");
  do_open("open-r", "priv/secret", O_RDONLY, NULL);
  do_list("priv");
  do_open("create", "priv/new", O_WRONLY | O_CREAT | O_EXCL, NULL);
  report("mkdir", "priv/d", mkdir(full("priv/d"), 0755), NULL);
  report("unlink", "priv/secret", unlink(full("priv/secret")), NULL);
  report("rename", "priv/secret", rename(full("priv/secret"), full("shared/stolen")), NULL);
  report("chdir", "priv", chdir(full("priv")), NULL);
  // Files of another owner in a directory the caller may search but not write.
  do_open("open-r", "pub/file", O_RDONLY, NULL);
  do_open("open-w", "pub/file", O_WRONLY, NULL);
  do_open("open-r", "pub/secret", O_RDONLY, NULL);
  do_open("open-rw", "pub/open", O_RDWR | O_APPEND, "more\n");
  do_open("create", "pub/new", O_WRONLY | O_CREAT | O_EXCL, NULL);
  report("unlink", "pub/file", unlink(full("pub/file")), NULL);
  report("rename", "pub/file", rename(full("pub/file"), full("pub/f2")), NULL);
  report("mkdir", "pub/d", mkdir(full("pub/d"), 0755), NULL);
  report("rmdir", "shared", rmdir(full("shared")), NULL);
  report("chmod", "pub/file", chmod(full("pub/file"), 0777), NULL);
  report("chown", "pub/open", chown(full("pub/open"), 65534, 65534), NULL);
  report("truncate", "pub/file", truncate(full("pub/file"), 1), NULL);
  report("truncate", "pub/open", truncate(full("pub/open"), 2), NULL);
  report("utimes-now", "pub/file", utimes(full("pub/file"), NULL), NULL);
  report("utimes-now", "pub/open", utimes(full("pub/open"), NULL), NULL);
  struct timeval tv[2] = {{1000000000, 0}, {1000000000, 0}};
  report("utimes-set", "pub/open", utimes(full("pub/open"), tv), NULL);
  do_access("pub/file", R_OK, "r");
  do_access("pub/file", W_OK, "w");
  do_access("pub/file", X_OK, "x");
  do_access("pub/exec", X_OK, "x");
  do_access("pub/secret", R_OK, "r");
  do_list("pub");
  do_stat("pub/open");
  // Searchable but not listable, listable but not searchable.
  do_list("xonly");
  do_stat("xonly/file");
  do_open("open-r", "xonly/file", O_RDONLY, NULL);
  do_list("ronly");
  do_stat("ronly/file");
  do_open("open-r", "ronly/file", O_RDONLY, NULL);
  // The sticky directory: others' files stay, one's own may go.
  report("unlink", "sticky/rootfile", unlink(full("sticky/rootfile")), NULL);
  report("rename", "sticky/rootfile", rename(full("sticky/rootfile"), full("sticky/x")), NULL);
  do_open("open-w", "sticky/rootfile", O_WRONLY | O_APPEND, "nobody\n");
  do_open("create", "sticky/mine", O_WRONLY | O_CREAT | O_EXCL, "mine\n");
  report("rename", "sticky/mine", rename(full("sticky/mine"), full("sticky/mine2")), NULL);
  report("unlink", "sticky/mine2", unlink(full("sticky/mine2")), NULL);
  // A world-writable directory: new files are the caller's.
  report("mkdir", "shared/d", mkdir(full("shared/d"), 0755), NULL);
  do_open("create", "shared/d/f", O_WRONLY | O_CREAT | O_EXCL, "data\n");
  report("chmod", "shared/d/f", chmod(full("shared/d/f"), 0600), NULL);
  report("chown", "shared/d/f", chown(full("shared/d/f"), 0, 0), NULL);
  report("symlink", "shared/sl", symlink("../priv/secret", full("shared/sl")), NULL);
  do_open("open-r", "shared/sl", O_RDONLY, NULL);
  report("rename", "shared/d", rename(full("shared/d"), full("shared/e")), NULL);
  do_stat("shared/e/f");
  do_stat("shared/e");
  report("chmod", "shared/e", chmod(full("shared/e"), 0500), NULL);
  do_open("create", "shared/e/g", O_WRONLY | O_CREAT | O_EXCL, NULL);
  report("unlink", "shared/e/f", unlink(full("shared/e/f")), NULL);
  return 0;
}

static unsigned long long hash_file(const char* path) {
  unsigned long long h = 1469598103934665603ull;
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  unsigned char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) {
    for (ssize_t i = 0; i < n; ++i) h = (h ^ buf[i]) * 1099511628211ull;
  }
  close(fd);
  return h;
}

static int tree(const char* rel) {
  const char* dirpath = *rel ? full(rel) : root;
  DIR* dir = opendir(dirpath);
  must(dir != NULL, "opendir", dirpath);
  char* list[256];
  int n = 0;
  for (struct dirent* e; n < 256 && (e = readdir(dir));) {
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) list[n++] = strdup(e->d_name);
  }
  closedir(dir);
  qsort(list, (size_t)n, sizeof *list, by_name);
  for (int i = 0; i < n; ++i) {
    char sub[2048];
    snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", list[i]);
    struct stat st;
    must(lstat(full(sub), &st) == 0, "lstat", sub);
    printf("%s mode=%o uid=%u gid=%u", sub, st.st_mode, st.st_uid, st.st_gid);
    if (S_ISREG(st.st_mode)) {
      printf(" size=%lld hash=%016llx", (long long)st.st_size, hash_file(full(sub)));
    } else if (S_ISLNK(st.st_mode)) {
      char target[1024];
      ssize_t len = readlink(full(sub), target, sizeof target - 1);
      target[len < 0 ? 0 : len] = 0;
      printf(" -> %s", target);
    }
    printf("\n");
    if (S_ISDIR(st.st_mode)) tree(sub);
    free(list[i]);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: permprobe setup|probe|tree ROOT\n");
    return 2;
  }
  root = argv[2];
  if (!strcmp(argv[1], "setup")) return setup();
  if (!strcmp(argv[1], "probe")) return probe();
  if (!strcmp(argv[1], "tree")) return tree("");
  fprintf(stderr, "permprobe: unknown command %s\n", argv[1]);
  return 2;
}
