/*
 * random_schedule.h - random computes under random schedules, shared by
 * test_schedule_random (driven by a seed) and fuzz/fuzz_schedule (driven by
 * the fuzzer's input bytes).
 *
 * A case is P = A + 1 and a consumer C of P: a matmul-like reduction
 * C = sum_k P[i, k] * B[k, j], or (with any_kind) an elementwise
 * C = P[i, j] * B[i, j] or a row reduction C = sum_k P[i, k].  The schedule
 * is a random sequence of splits (either tail strategy, factors that often do
 * not divide), tiles (with `tile`), fuses, reorders, vectorize/unroll/
 * parallel, sometimes a cache_write of C computed at a random loop of C, and
 * P inlined, computed at a random loop of its reader, or left at root;
 * with `rfactor`, sometimes C's reduction factored over a random reduction
 * leaf at a random factor axis, and the new stage scheduled at random too;
 * with `store_at`, P's buffer sometimes lives at an outer loop of its
 * reader or at root (the sliding window where the region moves); with
 * `prefetch`, the stage reading B (and A, when P is inlined) sometimes
 * prefetches it at a random leaf, ahead along that leaf or one outside it,
 * by a small offset of either sign.
 * Primitives that refuse leave the schedule as it was and are skipped.
 */
#ifndef TESSERA_TESTS_RANDOM_SCHEDULE_H
#define TESSERA_TESTS_RANDOM_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera.h"
#include "schedule.h"

/* The source of choices: an LCG from seed s when data is NULL, else the
 * bytes of data one per choice (0 once they run out). */
typedef struct rs_rng {
	uint64_t s;
	const uint8_t *data;
	size_t size, pos;
} rs_rng;

/* A choice in [0, n); n must be in [1, 256]. */
int rs_pick(rs_rng *r, int n);

typedef enum rs_kind { RS_MATMUL, RS_ELEMWISE, RS_ROWSUM } rs_kind;

typedef struct rs_options {
	int max_mn, max_k; /* M, N in [1, max_mn], K in [1, max_k] */
	bool any_kind;     /* pick the kind of C; otherwise RS_MATMUL */
	bool tile;         /* tile is among the primitives */
	bool rfactor;      /* sometimes rfactor C's reduction (then schedule C.rf) */
	bool store_at;     /* a P computed at its reader is sometimes stored further
			    * out (store_at one of the reader's outer loops, or
			    * store_root) */
	bool prefetch;     /* sometimes a prefetch of an input (ts_prefetch_ahead) */
	bool pad;          /* P is sometimes A zero-padded (ts_op_pad, 0 to 2 on
			    * each side of each dimension) instead of A + 1, so
			    * that an inlined P puts the padding's likely()
			    * tests into C's loops (loop_partition) */
	bool tensorize;    /* splits by 16 and ts_tensorize are among the
			    * primitives (a tensorized nest runs as its loops
			    * on the CPU: the passes must keep it so) */
	bool double_buffer; /* P sometimes double-buffered (ts_double_buffer) */
} rs_options;

typedef struct rs_case {
	rs_kind kind;
	int64_t M, N, K;
	ts_tensor *P;
	ts_schedule *s;
	int nargs;
	ts_tensor *args[3]; /* the placeholders, then C */
} rs_case;

/* Builds a random case in ctx.  Returns false only when the compute itself
 * could not be built (allocation failure), with the error in ctx. */
bool rs_build(ts_ctx *ctx, rs_rng *r, const rs_options *o, rs_case *c);

/* Whether a lowering error is one of the limits only lowering can check
 * (vector lanes, unrolled extent, a parallel or vector loop between a
 * buffer stored further out and its computation, a prefetch whose loops a
 * later primitive changed) rather than a lowering bug. */
bool rs_lower_refusal_ok(const char *msg);

#endif
