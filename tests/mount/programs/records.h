// Records the mount tests write and check: 64 bytes each, written with one write(2), carrying
// who wrote them, a sequence number, the file they were meant for and a checksum over the rest,
// so that a reader can tell a whole record from a torn, misplaced or invented one.
#pragma once

#include <stddef.h>
#include <stdint.h>

enum { kRecordSize = 64, kPayloadSize = 40 };

struct Record {
  uint32_t magic;
  uint32_t writer;
  uint32_t seq;
  uint32_t file;
  uint8_t payload[kPayloadSize];
  uint64_t sum;
};

_Static_assert(sizeof(struct Record) == kRecordSize, "a record is 64 bytes");

// The record `writer` writes as its `seq`-th into file `file`.
void record_make(struct Record* r, uint32_t writer, uint32_t seq, uint32_t file);
// 1 when `r` is a record record_make could have produced (magic, payload and checksum agree).
int record_valid(const struct Record* r);

// The names in directory `dir` as one getdents64 call returns them (without "." and ".."),
// newline-separated in `buf`; *complete is 1 when a second call returned nothing more. Returns
// the number of names, or -errno.
int list_dir(const char* dir, char* buf, size_t size, int* complete);

// Reads the whole file at `path` into a malloc'd buffer in 4 KiB read(2) calls. Returns the
// length, or -errno (of open or read); *out is set only on success.
long read_whole(const char* path, uint8_t** out);

// Writes `len` bytes of `text` to `fd` with one write(2); exits the process if that fails, since a
// test's own log must never be incomplete.
void log_line(int fd, const char* text, size_t len);

// Monotonic time in seconds.
double now_seconds(void);
