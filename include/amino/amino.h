/* libamino: file-system transactions for programs run under `amino run`.
 *
 * Between amino_begin() and amino_commit() every file call the calling thread makes on an Amino
 * mount (open, read, write, rename, unlink, mkdir, ...) belongs to one transaction: other
 * processes see none of its effects until the commit, and amino_abort() undoes all of them, as
 * if they had never happened. Calls on paths outside Amino mounts are not part of it.
 *
 * Functions return 0 on success (amino_available: 1 or 0) and -1 with errno set on failure.
 * Outside `amino run` (or under `amino run --emulate=none|host`) every call fails with ENOSYS
 * and amino_available() returns 0.
 *
 * THE CURRENT TRANSACTION is per thread. A new thread starts with none; a process created by
 * fork() or vfork() starts attached to its parent thread's current transaction, and exec keeps
 * it, so that a shell's transaction covers the commands it runs. Exit detaches.
 *
 * NESTING. amino_begin() while a transaction is current starts a child of it. Committing a child
 * hands its effects to the parent (still invisible to others); aborting a child undoes only the
 * child's effects. Aborting a parent undoes its committed children too. A transaction cannot be
 * committed while a child of it (current in another thread) is still open: EBUSY.
 *
 * SHARING. Several threads and processes may be attached to one transaction: each sees the
 * others' changes. amino_attach(id) makes transaction `id` current for the calling thread (it
 * must have none current; the caller must have the effective uid of the transaction's creator,
 * or be root). amino_suspend() puts the current transaction aside without ending it (the thread
 * stays attached); amino_attach() with its id resumes it. amino_detach() drops the thread's
 * current transaction and its parents. A transaction that no thread is attached to any more is
 * aborted. When a thread commits or aborts a transaction it ends for every thread attached to it:
 * their current transaction becomes its parent (or none).
 *
 * ONE MOUNT PER TRANSACTION. A transaction belongs to the mount of its first file call; a call
 * on another mount inside it fails with EXDEV.
 *
 * CONFLICTS. Transactions are serialisable (two-phase locking). A call that needs a lock another
 * transaction holds waits until that transaction ends. Locks are taken on database pages, and
 * opening a file in a transaction takes its record for writing (as a write would): transactions
 * that touch different files whose records share a page wait for each other too, and a
 * suspended transaction keeps its locks. When transactions wait for
 * each other (a deadlock), or a call has waited longer than the lock timeout of `amino run`
 * (--lock-timeout), the system aborts one of the transactions involved: the call that was waiting,
 * every later file call on an Amino mount in that transaction, and its amino_commit() fail with
 * AMINO_EABORTED; amino_commit() or amino_abort() then ends it for the thread.
 *
 * DURABILITY follows `amino run --durability`: `sync` and `commit` flush the log at every
 * top-level amino_commit() (a transaction reported committed survives a machine crash), `async`
 * writes it to the operating system (it survives a crash of the program or of the monitor).
 *
 * RVM. When librvm is linked into the program, amino_begin/commit/abort also begin, commit and
 * abort the thread's RVM transactions (include/amino/rvm.h): aborting a file-system transaction
 * rewinds the program's registered memory in the same call.
 *
 * THE SYSTEM-CALL INTERFACE. libamino is a thin wrapper: each function is one pseudo-system call
 * that `amino run` intercepts. The numbers (AMINO_SYS_BASE + n) lie far above any number a Linux
 * kernel uses or will use (they grow by about ten a year from 0), so without a monitor the kernel
 * answers ENOSYS. Results come back in the return value, never through memory.
 */
#ifndef AMINO_AMINO_H_
#define AMINO_AMINO_H_

#include <errno.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define AMINO_API __attribute__((visibility("default")))
#else
#define AMINO_API
#endif

/* A transaction's id: never 0, unique for the lifetime of one `amino run`. */
typedef uint64_t amino_txn_t;

/* statfs(2)'s f_type for a path on an Amino mount (under `amino run`): how a program tells
 * whether its files are transactional. */
#define AMINO_FS_MAGIC 0x414d494eL /* "AMIN" */

/* The errno of calls in a transaction the system aborted (deadlock victim, lock timeout). */
#define AMINO_EABORTED EDEADLK

/* 1 when running under a monitor that provides transactions, else 0 (errno untouched). */
AMINO_API int amino_available(void);

/* Begins a transaction (a child of the current one, if any) and makes it current. */
AMINO_API int amino_begin(amino_txn_t* id);
/* Commits the current transaction; its parent (or none) becomes current. */
AMINO_API int amino_commit(void);
/* Aborts the current transaction; its parent (or none) becomes current. */
AMINO_API int amino_abort(void);
/* Makes transaction `id` current (shared with the threads already attached to it). */
AMINO_API int amino_attach(amino_txn_t id);
/* Drops the current transaction; aborted if no thread remains attached to it. */
AMINO_API int amino_detach(void);
/* Puts the current transaction aside (still attached); *id says which, to amino_attach later. */
AMINO_API int amino_suspend(amino_txn_t* id);
/* The current transaction's id, or 0 when there is none. */
AMINO_API int amino_current(amino_txn_t* id);
/* Nesting depth of the current transaction: 1 for a top-level one, 0 when there is none. */
AMINO_API int amino_depth(void);

/* Pseudo-system calls. Arguments: see each. Return: >= 0 on success, -errno on failure. */
#define AMINO_SYS_BASE 0x414d00L               /* "AM" */
#define AMINO_SYS_PROBE (AMINO_SYS_BASE + 0)   /* () -> AMINO_PROBE_ANSWER */
#define AMINO_SYS_BEGIN (AMINO_SYS_BASE + 1)   /* (target) -> id */
#define AMINO_SYS_COMMIT (AMINO_SYS_BASE + 2)  /* (target) -> depth it had */
#define AMINO_SYS_ABORT (AMINO_SYS_BASE + 3)   /* (target) -> depth it had */
#define AMINO_SYS_ATTACH (AMINO_SYS_BASE + 4)  /* (id) -> 0 */
#define AMINO_SYS_DETACH (AMINO_SYS_BASE + 5)  /* () -> 0 */
#define AMINO_SYS_SUSPEND (AMINO_SYS_BASE + 6) /* () -> id */
#define AMINO_SYS_CURRENT (AMINO_SYS_BASE + 7) /* (target) -> id or 0 */
#define AMINO_SYS_DEPTH (AMINO_SYS_BASE + 8)   /* (target) -> depth */
#define AMINO_SYS_COUNT 9
/* `target` of BEGIN, COMMIT, ABORT, CURRENT and DEPTH: the calling thread, or the main thread
 * of the calling process's parent (for `amino txn`, which acts for the shell that runs it). */
#define AMINO_TARGET_SELF 0
#define AMINO_TARGET_PARENT 1
#define AMINO_PROBE_ANSWER 0x616d696eL /* "amin" */

#ifdef __cplusplus
}
#endif

#endif /* AMINO_AMINO_H_ */
