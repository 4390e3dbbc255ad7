/*
 * Exercise 1: tile and vectorize a GEMM.
 *
 * C[i, j] = sum_k A[i, k] * B[k, j], float32, 256 x 256 x 256 when timed.
 * Unscheduled, the loops run i, j, k: the innermost loop walks B down a
 * column, one cache line per multiply, and nothing is vectorized.
 *
 * Goal: at least 10x faster than unscheduled.  Ideas, one at a time (check
 * after each with `tessera-exercise check 1`):
 *   - tile i and j (ts_tile) so a block of C and the rows of B it needs
 *     stay in cache;
 *   - move the reduction axis k outside the inner tile loops
 *     (ts_reorder), so the innermost loop walks j, along a row of B and C;
 *   - vectorize that innermost loop (ts_vectorize), and perhaps
 *     parallelize the outermost one (ts_parallel).
 * The checker also runs your schedule on shapes your factors do not
 * divide (37 x 53 x 29): tails are guarded, so any factor is correct.
 */
#include "exercise.h"

ts_status ex1_schedule(ts_schedule *s, const ex1_gemm *t)
{
	ts_stage *c = ts_stage_of(s, t->C);
	ts_axis *i = ts_axis_of(c, 0), *j = ts_axis_of(c, 1), *k = ts_reduce_axis_of(c, 0);
	(void)i, (void)j, (void)k;
	/* TODO: schedule C.  Unscheduled: loops i, j, k in that order. */
	return TS_OK;
}
