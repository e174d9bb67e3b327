// Paths after a chroot (issue 15, item 7), one line per step, to compare natively with a
// mount (tests/hardening/chroot_test.py):
//   rootprobe DIR NAME   chroot to DIR (NAME's parent), then work in /NAME from inside it:
//                        create, read through "/..", mkdir and chdir, getcwd, a relative open
//                        from there, an absolute symbolic link in the mount and one in DIR
//                        into the mount (created and followed), then chroot to /NAME itself
//                        and create and list from the new root.
//   rootprobe handle PATH  name_to_handle_at of PATH: "handle=OK" or the errno's name.
//   rootprobe into PATH    chroot to PATH: "into=OK" and "root=" the names in the new root, or
//                          "into=" the errno's name.
// A failed step prints the errno's name in place of its result and the probe goes on.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char* Err(void) { return strerrorname_np(errno); }

static void Create(const char* step, const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
    printf("%s=%s\n", step, Err());
  } else {
    printf("%s=OK\n", step);
  }
  if (fd >= 0) close(fd);
}

static void Read(const char* step, const char* path) {
  char buf[256];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (n < 0) {
    printf("%s=%s\n", step, Err());
  } else {
    buf[n] = 0;
    printf("%s=%s\n", step, buf);
  }
  if (fd >= 0) close(fd);
}

static int ByName(const void* a, const void* b) {
  return strcmp(*(const char* const*)a, *(const char* const*)b);
}

static void List(const char* step, const char* path) {
  DIR* d = opendir(path);
  if (!d) {
    printf("%s=%s\n", step, Err());
    return;
  }
  char* names[64];
  size_t n = 0;
  for (struct dirent* e; (e = readdir(d)) && n < 64;) {
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof names[0], ByName);
  printf("%s=", step);
  for (size_t i = 0; i < n; ++i) printf("%s%s", i ? "," : "", names[i]), free(names[i]);
  printf("\n");
}

static int Handle(const char* path) {
  struct {
    struct file_handle h;
    unsigned char bytes[128];
  } fh;
  fh.h.handle_bytes = sizeof fh.bytes;
  int mount_id = 0;
  if (name_to_handle_at(AT_FDCWD, path, &fh.h, &mount_id, 0) != 0) {
    printf("handle=%s\n", Err());
  } else {
    printf("handle=OK\n");
  }
  return 0;
}

int main(int argc, char** argv) {
  char path[4096], cwd[4096];
  if (argc == 3 && strcmp(argv[1], "handle") == 0) return Handle(argv[2]);
  if (argc == 3 && strcmp(argv[1], "into") == 0) {
    const int ok = chroot(argv[2]) == 0;
    printf("into=%s\n", ok ? "OK" : Err());
    if (ok) List("root", "/");
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: rootprobe DIR NAME | handle PATH | into PATH\n");
    return 2;
  }
  const char* name = argv[2];
  if (chroot(argv[1]) != 0 || chdir("/") != 0) {
    printf("chroot=%s\n", Err());
    return 1;
  }
  snprintf(path, sizeof path, "/%s/f", name);
  Create("create", path, "in the mount");
  snprintf(path, sizeof path, "/../../%s/./f", name);
  Read("read-above-root", path);
  snprintf(path, sizeof path, "/%s/d", name);
  printf("mkdir=%s\n", mkdir(path, 0755) == 0 ? "OK" : Err());
  printf("chdir=%s\n", chdir(path) == 0 ? "OK" : Err());
  printf("getcwd=%s\n", getcwd(cwd, sizeof cwd) ? cwd : Err());
  Read("read-relative", "../f");
  snprintf(path, sizeof path, "/%s/f", name);
  printf("symlink=%s\n", symlink(path, "l") == 0 ? "OK" : Err());
  Read("read-link", "l");
  // A link on the host side (in DIR), absolute from the new root, into the mount.
  snprintf(path, sizeof path, "/%s/d", name);
  printf("host-symlink=%s\n", symlink(path, "/hl") == 0 ? "OK" : Err());
  Create("create-through-host-link", "/hl/h", "through a host link");
  snprintf(path, sizeof path, "/%s/d/h", name);
  Read("read-through-host-link", path);
  // ".." after that link: the directory above its target in the new root, /NAME.
  Read("read-host-link-dotdot", "/hl/../f");
  printf("chdir-slash=%s\n", chdir("/") == 0 ? "OK" : Err());
  Read("read-relative-link-dotdot", "hl/../d/h");
  snprintf(path, sizeof path, "/%s/d", name);
  printf("chdir-back=%s\n", chdir(path) == 0 ? "OK" : Err());
  // A host link whose absolute target is a host directory of the new root (which the
  // monitor's root lacks), and ".." from there back up into the mount.
  printf("mkdir-host=%s\n", mkdir("/x", 0755) == 0 && mkdir("/x/y", 0755) == 0 ? "OK" : Err());
  printf("host-symlink-out=%s\n", symlink("/x/y", "/hl2") == 0 ? "OK" : Err());
  snprintf(path, sizeof path, "/hl2/../../%s/f", name);
  Read("read-host-link-out-dotdot", path);
  snprintf(path, sizeof path, "/%s", name);
  printf("chroot-mount=%s\n", chroot(path) == 0 ? "OK" : Err());
  printf("chdir-root=%s\n", chdir("/") == 0 ? "OK" : Err());
  Create("create-at-root", "/g", "at the new root");
  Read("read-at-root", "/../g");
  List("list-root", "/");
  List("list-d", "/d");
  return 0;
}
