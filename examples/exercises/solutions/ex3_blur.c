/*
 * Exercise 3, a solution: By in tiles of 32 rows x 256 columns, the row
 * tiles in parallel; Bx computed at By's column-tile loop (a 34 x 256
 * tile); the innermost loops of both vectorized by 8.
 */
#include "exercise.h"

ts_status ex3_solution(ts_schedule *s, const ex3_blur *t)
{
	ts_stage *bx = ts_stage_of(s, t->Bx), *by = ts_stage_of(s, t->By);
	ts_axis *io, *jo, *ii, *ji, *jio, *jii, *xo, *xi;
	TS_TRY(ts_tile(by, ts_axis_of(by, 0), ts_axis_of(by, 1), 32, 256, &io, &jo, &ii, &ji));
	TS_TRY(ts_split(by, ji, 8, &jio, &jii));
	TS_TRY(ts_vectorize(by, jii));
	TS_TRY(ts_parallel(by, io));
	TS_TRY(ts_compute_at(bx, by, jo));
	TS_TRY(ts_split(bx, ts_axis_of(bx, 1), 8, &xo, &xi));
	return ts_vectorize(bx, xi);
}
