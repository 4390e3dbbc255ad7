/*
 * Exercise 4: parallelize a row reduction.
 *
 * S[i] = sum_j X[i, j], float32, X 1024 x 1024 when timed (4 MB, so it
 * stays in a shared cache).  Unscheduled, one thread sums the rows one
 * after the other.
 *
 * Goal: at least 1.5x faster than unscheduled -- reachable only with two
 * or more cores that are not busy with other work (TESSERA_NUM_THREADS
 * sets how many threads tessera uses).  Ideas:
 *   - the rows are independent: ts_parallel on the row axis i runs them
 *     on the thread pool (the reduction axis j cannot be parallel: every
 *     j of a row adds into the same S[i]);
 *   - a thread per row is a lot of small tasks: split i (ts_split) and
 *     make the outer part parallel, so each task sums a block of rows.
 */
#include "exercise.h"

ts_status ex4_schedule(ts_schedule *s, const ex4_rowsum *t)
{
	ts_stage *st = ts_stage_of(s, t->S);
	ts_axis *i = ts_axis_of(st, 0), *j = ts_reduce_axis_of(st, 0);
	(void)i, (void)j;
	/* TODO: schedule S.  Unscheduled: loops i, j. */
	return TS_OK;
}
