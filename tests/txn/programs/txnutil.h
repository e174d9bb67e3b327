// Helpers the transaction test programs share: failing with a message the drivers can show,
// whole-file reads and writes that report errno instead of exiting, pipe handshakes between
// processes, and monotonic time.
#pragma once

#include <stddef.h>
#include <stdint.h>

// The name failures are reported under ("FAIL <who>: ...").
void set_who(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
const char* who(void);

// Paths inside the directory a program works in: at("a/%d", i) is "<dir>/a/<i>". The result
// stays valid until eight more calls.
void set_dir(const char* dir);
const char* at(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Prints "FAIL <who>: <message>" on stderr and exits with status 1.
void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
// `r` must be 0 (or >= 0): otherwise fails naming the call, the path and errno.
void must(long r, const char* call, const char* path);
// A call that must fail with `want`: fails when it succeeded or set another errno.
void must_fail(long r, int want, const char* call, const char* path);

// The errno's name ("ENOENT"), or "OK" for 0.
const char* err_name(int err);

// Creates or truncates `path` and writes `text` with one write(2); 0 or -errno.
int write_file(const char* path, const char* text);
// Appends `text` with one write(2) (O_APPEND); 0 or -errno.
int append_file(const char* path, const char* text);
// Reads at most size-1 bytes of `path` into `buf`, NUL-terminated; the length or -errno.
long read_file(const char* path, char* buf, size_t size);
// The file's content must be exactly `want` (NULL: the file must not exist).
void expect_content(const char* path, const char* want);
// The decimal integer stored in `path`; fails the process on any error but `err_ok`, which is
// returned as -errno (0 disables).
long read_number(const char* path, long* value, int err_ok);
// Writes `value` in decimal (with a newline); 0 or -errno.
int write_number(const char* path, long value);

// Pipe handshakes: one 64-bit word per message; a closed or broken pipe fails the process.
void send_word(int fd, uint64_t word);
uint64_t recv_word(int fd);

// Monotonic time in seconds.
double now_seconds(void);

// Forks; the child runs fn(arg) and exits with its result. Returns the child's pid.
int spawn(int (*fn)(void*), void* arg);

// One side's ends of the two pipes between a parent and a child.
struct Link {
  int send, recv;
};
// Like spawn, with two pipes: the child runs fn(arg, its ends), *parent gets the parent's.
// Each side closes the other's ends, so that when one dies the other reads end of file (and
// fails) instead of waiting for ever.
int spawn_linked(int (*fn)(void*, struct Link), void* arg, struct Link* parent);
// Waits for `pid`; returns its exit status, or 128+signal when a signal ended it.
int reap(int pid);
