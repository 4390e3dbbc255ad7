/*
 * ctx.h - the tessera context: one arena and one error slot per compilation.
 *
 * Every IR node, name, tensor and schedule of a compilation is allocated from
 * the context's arena and freed together by ts_ctx_free(); nothing in the IR
 * is freed one node at a time.  Tensor data (runtime arrays) never lives in
 * the arena.
 *
 * Errors are values.  A function that fails on user input records a message
 * ("reorder(C): axis 'k.inner' appears twice") with ts_error() and returns
 * NULL or a non-zero ts_status.  Only the first error is kept until
 * ts_clear_error(), so that a chain of builder calls fed a NULL reports the
 * root cause.  ts_lower and ts_build start afresh once their arguments are
 * checked (a NULL schedule, function or tensor still reports the earlier
 * root cause): an error left by an earlier call never fails them, nor
 * stands in for their own.  Internal invariants use TS_ASSERT, which reports through the
 * same slot and never aborts the process.
 *
 * Threads: the error slot is per thread.  ts_last_error/ts_last_status/
 * ts_clear_error see only the calling thread's error, so concurrent calls
 * (ts_module_run from many threads on one module) never mix up or race on
 * messages; a thread made after another exited never sees that one's
 * error, and the slot of a thread that exited with an error pending is
 * reused by the next thread that needs one.  The arena is guarded too,
 * but building IR (compute, schedule, lower, build) in one context from
 * several threads at once is not supported: the builders read and edit
 * shared schedule state.
 *
 * fork(): a child may go on using tessera (the thread pool restarts in it),
 * but not a context or graph executable that another thread of the parent
 * was using at the fork, whose lock the child may inherit held.
 *
 * Lifetimes: a context is reference-counted.  ts_ctx_free() drops the
 * caller's reference; each module built in the context holds another, so a
 * module stays valid (its function, names and error slot) after the context
 * it was built in is "freed", and the memory goes with the last reference.
 *
 * A NULL context is never dereferenced: ts_error(NULL, ...) only returns its
 * status, ts_last_error(NULL) says that the context is NULL, and
 * ts_last_status(NULL) is TS_ERR_INVALID.
 */
#ifndef TESSERA_IR_CTX_H
#define TESSERA_IR_CTX_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ts_status {
	TS_OK = 0,
	TS_ERR_INVALID,     /* bad argument, schedule or expression */
	TS_ERR_NOMEM,       /* an allocation failed */
	TS_ERR_UNSUPPORTED, /* valid, but not handled by this backend */
	TS_ERR_RUNTIME,     /* a library or device call failed */
	TS_ERR_NO_DEVICE,   /* no driver or no GPU */
	TS_ERR_INTERNAL     /* a compiler bug (failed TS_ASSERT) */
} ts_status;

typedef struct ts_ctx ts_ctx;

/* Returns from the calling function (which returns ts_status) with the
 * status of a call that failed; the call's error stands.  For code that
 * chains primitives: TS_TRY(ts_split(st, ax, 8, &o, &i)); */
#define TS_TRY(call)                                                           \
	do {                                                                   \
		ts_status ts_try_st_ = (call);                                 \
		if (ts_try_st_ != TS_OK)                                       \
			return ts_try_st_;                                     \
	} while (0)

/* Creates a context holding one reference; NULL only if malloc fails. */
ts_ctx *ts_ctx_new(void);
/* Adds a reference (returns ctx); each needs a ts_ctx_free(). */
ts_ctx *ts_ctx_retain(ts_ctx *ctx);
/* Drops a reference; the last one frees the arena and everything in it. */
void ts_ctx_free(ts_ctx *ctx);

/* Arena allocation: zeroed, 16-byte aligned, lives until ts_ctx_free().
 * Returns NULL and records TS_ERR_NOMEM on failure, on size overflow and
 * for more than TS_ALLOC_MAX bytes. */
#define TS_ALLOC_MAX ((size_t)1 << 40)
void *ts_alloc(ts_ctx *ctx, size_t size);
void *ts_alloc_array(ts_ctx *ctx, size_t n, size_t elem);
char *ts_strdup(ts_ctx *ctx, const char *s);
char *ts_sprintf(ts_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Test hook: make the n-th arena allocation from now fail (0 disables).
 * ts_ctx_fail_alloc_pending: the allocations still to come before that
 * failure, 0 once it has happened or when none is set (a sweep over n
 * ends where a call made fewer than n allocations). */
void ts_ctx_fail_alloc_after(ts_ctx *ctx, long n);
long ts_ctx_fail_alloc_pending(ts_ctx *ctx);
/* Diagnostic: the error slots the context holds (about 1 KB each), at
 * most one per live thread that has had an error in it; 0 for NULL. */
int ts_ctx_error_slots(const ts_ctx *ctx);

/* Records an error for the calling thread unless one is already pending
 * there; returns `status`.  A message longer than 1023 bytes keeps its
 * start and end, its middle replaced by " [...] " (ts_error_within's
 * prefixed message too). */
ts_status ts_error(ts_ctx *ctx, ts_status status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
ts_status ts_verror(ts_ctx *ctx, ts_status status, const char *fmt, va_list ap);
/* Puts "<fmt...>: " before the calling thread's pending error, keeping its
 * status (a caller naming what it was doing when a callee failed: the
 * callee names only its own step); with none pending, records the prefix
 * alone as `status`.  A NULL fmt leaves a pending error as it is, and
 * records "(no message)" otherwise.  Returns the error's status. */
ts_status ts_error_within(ts_ctx *ctx, ts_status status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* For calls made only to print something (a printer that lowers, say):
 * ts_error_stash takes the calling thread's pending error out of the
 * context, so the call neither fails on it nor has its own error hidden
 * behind it; ts_error_unstash drops whatever the call left and puts the
 * stashed error back. */
typedef struct ts_error_stashed {
	ts_status status;
	char msg[1024];
} ts_error_stashed;
void ts_error_stash(ts_ctx *ctx, ts_error_stashed *saved);
void ts_error_unstash(ts_ctx *ctx, const ts_error_stashed *saved);
/* The calling thread's pending error message ("" if none; valid until that
 * thread clears it) and status (TS_OK if none). */
const char *ts_last_error(const ts_ctx *ctx);
ts_status ts_last_status(const ts_ctx *ctx);
void ts_clear_error(ts_ctx *ctx);

/* A fresh integer for unique names and ids within this context. */
int ts_ctx_next_id(ts_ctx *ctx);

/* Debug switch: print the IR after every lowering pass (also set by the
 * environment variable TESSERA_PRINT_PASSES=1 when the context is made). */
void ts_ctx_set_print_passes(ts_ctx *ctx, int on);
int ts_ctx_print_passes(const ts_ctx *ctx);

/* Debug switch: after every successful schedule primitive, print to stderr
 * a header naming the call ("== split(C, i, factor=32) ==") and the loop
 * nest as it now stands (TS_PRINT_STEPS_NEST), or a line diff against the
 * previous step's nest (TS_PRINT_STEPS_DIFF).  The environment variable
 * TESSERA_PRINT_STEPS=1 (or =diff) sets it when the context is made.  Any
 * other non-zero mode means TS_PRINT_STEPS_NEST.  The lowering behind each
 * step prints no passes, even with print_passes on. */
enum { TS_PRINT_STEPS_OFF = 0, TS_PRINT_STEPS_NEST = 1, TS_PRINT_STEPS_DIFF = 2 };
void ts_ctx_set_print_steps(ts_ctx *ctx, int mode);
int ts_ctx_print_steps(const ts_ctx *ctx);

/* Size variables (te.h ts_size_var): extents known only when a compiled
 * function is called, each with an upper bound.  The context keeps them so
 * that every layer can tell one from an ordinary variable.  Registering
 * returns the variable's index, or -1 with an error when TS_MAX_SIZE_VARS
 * are taken, for an expression that is not a scalar integer variable of
 * ctx, for one registered already and for a bound outside
 * 1..TS_SIZE_VAR_MAX.  Lookups of an index out of range give NULL; of a variable
 * that is not one, -1.  A handle (te.h) encodes the index and a tag of the
 * context, so that another context's handle is told apart: handle_of gives
 * it (0 for a NULL ctx or an index outside 0..TS_MAX_SIZE_VARS - 1),
 * index_of reads it back (-1 for a value that is not a handle of this
 * context). */
#define TS_MAX_SIZE_VARS 64
/* The largest upper bound a size variable may have. */
#define TS_SIZE_VAR_MAX (INT64_C(1) << 40)
struct ts_expr;
int ts_ctx_add_size_var(ts_ctx *ctx, struct ts_expr *var, int64_t max);
int ts_ctx_size_var_count(const ts_ctx *ctx);
struct ts_expr *ts_ctx_size_var(const ts_ctx *ctx, int index, int64_t *max);
int ts_ctx_size_var_index(const ts_ctx *ctx, const struct ts_expr *var);
#define TS_SIZE_VAR_BASE (-(INT64_C(1) << 62))
/* Handles are TS_SIZE_VAR_STRIDE apart, so that arithmetic on one (n + 1)
 * lands on no handle and is refused, instead of naming the next variable. */
#define TS_SIZE_VAR_STRIDE (INT64_C(1) << 16)
#define TS_SIZE_VAR_SPAN (INT64_C(1) << 42) /* 2^20 context tags x 64 indices x the stride */
int64_t ts_ctx_size_handle(const ts_ctx *ctx, int index);
int ts_ctx_size_handle_index(const ts_ctx *ctx, int64_t handle);

/* Internal invariant: on failure records TS_ERR_INTERNAL with file and line.
 * Usable in any statement position; evaluates to nothing. */
#define TS_ASSERT(ctx, cond)                                                   \
	do {                                                                   \
		if (!(cond))                                                   \
			ts_error((ctx), TS_ERR_INTERNAL,                       \
				 "internal error: %s:%d: assertion '%s' failed", \
				 __FILE__, __LINE__, #cond);                   \
	} while (0)

#define TS_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

#ifdef __cplusplus
}
#endif

#endif
