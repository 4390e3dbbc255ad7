/*
 * Exercise 2, a solution: the bias add inlined into the relu; R tiled by
 * 32 x 32 with its row-tile loop parallel; M computed at R's column-tile
 * loop, one 32 x 32 tile at a time, its k loop outside its inner loops
 * and its columns vectorized; R's columns vectorized too.
 */
#include "exercise.h"

ts_status ex2_solution(ts_schedule *s, const ex2_epilogue *t)
{
	ts_stage *m = ts_stage_of(s, t->M), *y = ts_stage_of(s, t->Y), *r = ts_stage_of(s, t->R);
	ts_axis *io, *jo, *ii, *ji;
	TS_TRY(ts_compute_inline(y));
	TS_TRY(ts_tile(r, ts_axis_of(r, 0), ts_axis_of(r, 1), 32, 32, &io, &jo, &ii, &ji));
	TS_TRY(ts_parallel(r, io));
	TS_TRY(ts_vectorize(r, ji));
	TS_TRY(ts_compute_at(m, r, jo));
	ts_axis *mi = ts_axis_of(m, 0), *mj = ts_axis_of(m, 1), *mk = ts_reduce_axis_of(m, 0);
	TS_TRY(ts_reorder(m, TS_AXES(mk, mi, mj)));
	return ts_vectorize(m, mj);
}
