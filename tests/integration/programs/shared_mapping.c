// Two processes share a file through MAP_SHARED mappings, as SQLite's WAL index or a shared
// counter do: a store by one is seen at once by the other's mapping and by read(); a write()
// is seen in both mappings; a truncation that extends the file shows zeros; msync and close
// leave the stores in the file; a store repeated over a write() wins again. Pipes order the
// steps. Prints what each side saw.
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kSize = 8192 };

static void step(int fd) {
  char c = 's';
  if (write(fd, &c, 1) != 1) _exit(90);
}

static void await(int fd) {
  char c;
  if (read(fd, &c, 1) != 1) _exit(91);
}

int main(void) {
  int fd = open("shared.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, kSize) != 0) return 100;
  if (pwrite(fd, "initial", 7, 0) != 7) return 101;
  char* map = mmap(NULL, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return 102;

  int to_child[2], to_parent[2];
  if (pipe(to_child) != 0 || pipe(to_parent) != 0) return 103;
  pid_t child = fork();
  if (child < 0) return 104;
  if (child == 0) {
    // The child maps the file itself (a descriptor of its own), as a second program would.
    int own = open("shared.bin", O_RDWR);
    char* mine =
        own < 0 ? MAP_FAILED : mmap(NULL, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
    if (mine == MAP_FAILED) _exit(80);
    printf("child sees at start: %.7s\n", mine);
    fflush(stdout);
    step(to_parent[1]);
    await(to_child[0]);  // the parent stored "parent" at 4096
    printf("child sees the parent's store in its mapping: %.6s\n", mine + 4096);
    char buf[7] = {0};
    if (pread(own, buf, 6, 4096) != 6) _exit(81);
    printf("child reads it with pread: %s\n", buf);
    memcpy(mine + 100, "child-store", 11);
    if (pwrite(own, "child-write", 11, 200) != 11) _exit(82);
    if (msync(mine, kSize, MS_SYNC) != 0) _exit(83);
    fflush(stdout);
    step(to_parent[1]);
    _exit(0);
  }
  await(to_parent[0]);
  memcpy(map + 4096, "parent", 6);
  step(to_child[1]);
  await(to_parent[0]);
  printf("parent sees the child's store: %.11s\n", map + 100);
  printf("parent sees the child's write: %.11s\n", map + 200);
  char buf[12] = {0};
  if (pread(fd, buf, 11, 100) != 11) return 105;
  printf("parent reads the child's store with pread: %s\n", buf);
  // A store that was written back, a write() over it, and the same store again: the file holds
  // the store (its page is back to bytes it once had, but not to what the file now holds).
  char again[5] = {0};
  memcpy(map + 300, "AAAA", 4);
  if (pread(fd, again, 4, 300) != 4 || pwrite(fd, "BBBB", 4, 300) != 4) return 111;
  memcpy(map + 300, "AAAA", 4);
  if (pread(fd, again, 4, 300) != 4) return 112;
  printf("the same store again over a write reads back: %s\n", again);
  int status;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf("child failed: %d\n", status);
    return 106;
  }
  // Extending the file: the new bytes read as zeros, through the mapping and read() alike.
  if (ftruncate(fd, 2 * kSize) != 0) return 107;
  char* longer = mmap(NULL, 2 * kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (longer == MAP_FAILED) return 108;
  int zeros = 1;
  for (int i = kSize; i < 2 * kSize; ++i) zeros &= longer[i] == 0;
  printf("extension reads as zeros: %s\n", zeros ? "yes" : "no");
  memcpy(longer + kSize, "tail-store", 10);
  if (munmap(longer, 2 * kSize) != 0 || munmap(map, kSize) != 0 || close(fd) != 0) return 109;
  // After close, a fresh descriptor reads every store.
  fd = open("shared.bin", O_RDONLY);
  char tail[11] = {0};
  if (fd < 0 || pread(fd, tail, 10, kSize) != 10) return 110;
  printf("after close the file holds: %s\n", tail);
  close(fd);
  return 0;
}
