/*
 * Exercise 1, a solution: 32 x 32 tiles of C, k outside the inner tile
 * loops and split so a 32 x 8 block of B stays close, j.inner vectorized,
 * the row-tile loop parallel.  Many other schedules reach the goal.
 */
#include "exercise.h"

ts_status ex1_solution(ts_schedule *s, const ex1_gemm *t)
{
	ts_stage *c = ts_stage_of(s, t->C);
	ts_axis *io, *jo, *ii, *ji, *ko, *ki;
	TS_TRY(ts_tile(c, ts_axis_of(c, 0), ts_axis_of(c, 1), 32, 32, &io, &jo, &ii, &ji));
	TS_TRY(ts_split(c, ts_reduce_axis_of(c, 0), 8, &ko, &ki));
	TS_TRY(ts_reorder(c, TS_AXES(io, jo, ko, ii, ki, ji)));
	TS_TRY(ts_vectorize(c, ji));
	return ts_parallel(c, io);
}
