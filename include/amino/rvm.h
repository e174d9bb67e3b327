/* librvm: recoverable virtual memory.
 *
 * A recoverable region is a range of memory whose contents rewind when a transaction aborts, with
 * no logging calls in the program: the region's pages are write-protected, the first write to a
 * page inside a transaction faults, and the fault handler saves the page's before-image and lets
 * the write proceed. Commit discards the before-images (a nested commit hands them to the parent
 * level), abort copies them back in reverse order. Memory obtained with rvm_alloc lives in the
 * region too, so allocations and frees roll back with everything else.
 *
 * A region is either volatile (anonymous memory, gone with the process) or persistent: kept in a
 * Berkeley DB database, its committed contents survive a crash (the next open runs recovery and
 * sees the last committed state). A persistent region may live in the same Berkeley DB
 * environment as a file system, so that one Berkeley DB transaction commits both.
 *
 * Functions returning int return 0 on success or a positive errno value; functions returning a
 * pointer return NULL and set errno on failure.
 *
 * THREADS. Transactions are per thread: each thread has its own stack of nested transactions,
 * and rvm_begin/rvm_commit/rvm_abort act on the calling thread's innermost one. A region belongs
 * to one thread's transaction from that transaction's first write, rvm_alloc, rvm_free or
 * rvm_set_root in it until its top-level commit or abort; then it is free for any thread again.
 * This is enforced:
 *   - a first write to a page of a region that belongs to another thread's transaction, and any
 *     write to a region outside a transaction, is refused: the write does not happen, librvm
 *     prints one line on standard error, and the fault goes to the application's SIGSEGV handler
 *     (or, without one, the process dies of SIGSEGV as it would writing read-only memory);
 *   - rvm_alloc, rvm_free and rvm_set_root on such a region fail with EBUSY, rvm_unmap with
 *     EBUSY while the region belongs to any transaction.
 * The hardware cannot catch one case, so it is the program's to avoid: while thread A's
 * transaction has made a page writable, another thread's write to that same page goes
 * unnoticed and becomes part of A's transaction. A thread that exits with transactions open
 * has them aborted. After fork() the child continues the forking thread's transactions on its
 * copy of the regions; regions held by other threads' transactions stay held in the child.
 *
 * SIGNALS. librvm installs a SIGSEGV handler when the first region is mapped. Faults that are not
 * first writes inside the faulting thread's transaction go to the application's handler: the one
 * installed before librvm's, or one installed later with sigaction() or signal(), which librvm
 * intercepts for SIGSEGV so its own handler stays first (sigaction() then reports the
 * application's handler, not librvm's). Handlers installed with a raw rt_sigaction system call
 * are not seen. Regions must not be written from a signal handler that interrupted an rvm_* call
 * of the same thread.
 *
 * SYSTEM CALLS. The kernel does not fault on a write-protected page: a system call that writes
 * into a region page not yet written in the current transaction fails with EFAULT. Call
 * rvm_set_range on the buffer first.
 *
 * SIZE. Regions may be many GiB: the mapping reserves no memory (MAP_NORESERVE) and librvm keeps
 * state only for pages written in the current transaction. A page written inside a transaction
 * costs one 4 KiB before-image until the transaction ends. Each writable page between read-only
 * ones is a separate kernel mapping, so one transaction can keep about vm.max_map_count / 2
 * scattered pages writable (about 32,000 by default); beyond that the write cannot be
 * recorded and is refused like a write outside a transaction.
 *
 * LIBAMINO. libamino keeps the thread's RVM nesting in step with its file-system transactions
 * (DESIGN.md §4–5), so that one call rewinds both. It finds librvm through weak references: a
 * program that links librvm gets this, one that does not pays nothing.
 *   amino_begin():  begin the file-system transaction; then rvm_begin() (if that fails, the
 *                   file-system transaction is aborted again and amino_begin fails, ENOMEM).
 *   amino_commit(): commit the file-system transaction; if it committed, rvm_commit(); if the
 *                   system had aborted it (AMINO_EABORTED), rvm_abort_to(depth - 1); any other
 *                   failure (EBUSY: a child still open) leaves both open. Under `amino run` the
 *                   monitor owns the file-system transactions, so a persistent region commits in
 *                   its own store right after the file system: atomic with it only when the
 *                   program holds the file system's transaction itself, through
 *                   rvm_prepare_in(fs_txn) before the commit.
 *   amino_abort():  abort the file-system transaction, then rvm_abort_to(depth - 1), where depth
 *                   is the aborted transaction's nesting level (1 for a top-level one), which
 *                   also aborts RVM levels the application left open inside it.
 * rvm_depth() tells libamino where the thread's RVM nesting stands.
 */
#ifndef AMINO_RVM_H_
#define AMINO_RVM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RVM_API __attribute__((visibility("default")))
#else
#define RVM_API
#endif

/* Berkeley DB's own types (<db.h>), declared so that this header does not need db.h. */
struct __db_env;
struct __db_txn;

typedef struct rvm_region rvm_region;
typedef struct rvm_store rvm_store;

/* ---- Regions ---------------------------------------------------------------------------- */

/* Maps a volatile region of `size` bytes (rounded up to whole pages), zero-filled. `flags` must
 * be 0. EINVAL for size 0, ENOMEM when the address space is exhausted. */
RVM_API int rvm_map(size_t size, unsigned flags, rvm_region** out);

/* Unmaps a region (volatile or persistent; a persistent region keeps its committed contents in
 * its store). EBUSY while the region belongs to a transaction. */
RVM_API int rvm_unmap(rvm_region* region);

RVM_API void* rvm_base(const rvm_region* region);
RVM_API size_t rvm_size(const rvm_region* region);
/* 1 for a region kept in a store, 0 for a volatile one. */
RVM_API int rvm_is_persistent(const rvm_region* region);

/* ---- Allocation inside a region ---------------------------------------------------------- */

/* The allocator keeps its state in the region, starting at offset 0, from the first rvm_alloc
 * or rvm_set_root on: such a region must not be written outside the blocks it handed out. Every
 * call must be made inside a transaction of the calling thread (EPERM otherwise) and rolls back
 * with it. Blocks are 16-byte aligned. */

/* A block of at least `size` bytes, or NULL with errno ENOMEM (region full), EPERM or EBUSY. */
RVM_API void* rvm_alloc(rvm_region* region, size_t size);
/* Frees a block from rvm_alloc; NULL is a no-op. EINVAL when `ptr` is not an allocated block
 * (including a second free). */
RVM_API int rvm_free(rvm_region* region, void* ptr);
/* One pointer-sized slot, kept as an offset so that it survives the region being mapped at
 * another address: the place to find a persistent region's data structures when it reopens.
 * `ptr` must point into the region or be NULL. */
RVM_API int rvm_set_root(rvm_region* region, void* ptr);
/* The root, or NULL when none was set. */
RVM_API void* rvm_get_root(const rvm_region* region);

/* ---- Transactions (per thread) ------------------------------------------------------------ */

/* Begins a transaction, nested in the thread's current one if any. */
RVM_API int rvm_begin(void);
/* Commits the innermost transaction. Nested: its changes become part of the parent. Top level:
 * the changes are final; those to persistent regions are written to their stores (one Berkeley
 * DB transaction per store). If that fails the whole transaction is aborted and the error
 * returned. EINVAL without a transaction. */
RVM_API int rvm_commit(void);
/* Aborts the innermost transaction: every region it wrote is back as it was at its rvm_begin,
 * allocations and frees included. EINVAL without a transaction. */
RVM_API int rvm_abort(void);
/* Aborts transactions until rvm_depth() == depth. EINVAL unless 0 <= depth <= rvm_depth(). */
RVM_API int rvm_abort_to(int depth);
/* Nesting depth of the calling thread: 0 outside transactions, 1 in a top-level one. */
RVM_API int rvm_depth(void);

/* Saves the before-images of the pages of [addr, addr + len) now, as their first writes would;
 * the pages stay writable for the rest of the current level. Needed before the kernel writes
 * into a region (read(2) into a region buffer, say): a system call does not fault on a
 * write-protected page, it fails with EFAULT. EPERM outside a transaction, EINVAL unless the
 * range lies in one region, EBUSY when another thread's transaction holds it, ENOMEM. */
RVM_API int rvm_set_range(void* addr, size_t len);

/* Per-thread counters, for tests and measurements. */
struct rvm_stats {
  uint64_t faults;        /* write faults handled in transactions */
  uint64_t before_images; /* page before-images saved */
  uint64_t pages_logged;  /* pages with a before-image in the current transaction, all levels */
};
RVM_API void rvm_thread_stats(struct rvm_stats* out);

/* ---- Persistent regions ------------------------------------------------------------------- */

/* Store flags: how a top-level rvm_commit reaches stable storage (default: the log is written
 * to the operating system, which survives a crash of the process but not of the machine). */
#define RVM_STORE_SYNC 0x1u   /* flushed to disk: survives a machine crash */
#define RVM_STORE_NOSYNC 0x2u /* kept in memory: lost if the process dies */

/* Opens (creating it if missing) a store in directory `dir`: a Berkeley DB environment of its
 * own, recovered automatically when a previous user died. */
RVM_API int rvm_store_open(const char* dir, unsigned flags, rvm_store** out);
/* Opens a store inside the caller's environment (transactional, opened with DB_THREAD), for
 * example the file system's, so that region pages and the caller's data can commit in one
 * transaction (rvm_prepare_in). The environment must stay open until rvm_store_close. */
RVM_API int rvm_store_attach(struct __db_env* env, unsigned flags, rvm_store** out);
/* EBUSY while regions of the store are mapped. */
RVM_API int rvm_store_close(rvm_store* store);

/* Region flags for rvm_open. */
#define RVM_CREATE 0x1u /* create the region if it does not exist */

/* Maps the persistent region `name` of `store` in its last committed state. A new region (with
 * RVM_CREATE) is zero-filled and `size` bytes long; an existing one keeps its size, and `size`
 * must be 0 or that size (EINVAL otherwise). ENOENT if missing without RVM_CREATE; EBUSY if it is
 * mapped already, by this process or another. A new region is placed at an address chosen from
 * its name in a range that programs leave empty (32 to 80 TiB), and is mapped at that address
 * again, in any process, whenever the range is free: pointers stored in the region then stay
 * valid (rvm_base tells; offsets from it are the portable choice). Pages never written take no
 * room in the store. */
RVM_API int rvm_open(rvm_store* store, const char* name, size_t size, unsigned flags,
                     rvm_region** out);
/* Deletes a persistent region's contents from its store. EBUSY while it is mapped. */
RVM_API int rvm_remove(rvm_store* store, const char* name);

/* First half of a top-level commit inside a caller's Berkeley DB transaction: writes the pages
 * the thread's transaction changed in persistent regions into a child transaction of `parent`
 * and commits that child, so they become durable exactly when `parent` commits. Memory is not
 * touched and the RVM transaction stays open: the caller commits `parent` and then calls
 * rvm_commit() (which writes nothing more), or aborts `parent` and calls rvm_abort(). The
 * regions' stores must be attached to `parent`'s environment. A region written between this call
 * and rvm_commit is written by rvm_commit in a transaction of its own. EINVAL unless the thread
 * is in a top-level transaction. */
RVM_API int rvm_prepare_in(struct __db_txn* parent);

#ifdef __cplusplus
}
#endif

#endif /* AMINO_RVM_H_ */
