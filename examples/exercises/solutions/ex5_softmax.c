/*
 * Exercise 5, a solution: Y's row loop parallel; Max, Exp and Sum
 * computed at it, one row at a time; the column loops of Exp and Y
 * vectorized by 8 with the tail partitioned off.
 */
#include "exercise.h"

/* The column loop of a row-shaped stage, vectorized by 8. */
static ts_status vectorize_columns(ts_stage *st)
{
	ts_axis *jo, *ji;
	TS_TRY(ts_split_tail(st, ts_axis_of(st, 1), 8, TS_TAIL_PARTITION, &jo, &ji));
	return ts_vectorize(st, ji);
}

ts_status ex5_solution(ts_schedule *s, const ex5_softmax *t)
{
	ts_stage *mx = ts_stage_of(s, t->Max), *ex = ts_stage_of(s, t->Exp);
	ts_stage *sm = ts_stage_of(s, t->Sum), *y = ts_stage_of(s, t->Y);
	ts_axis *row = ts_axis_of(y, 0);
	TS_TRY(ts_parallel(y, row));
	TS_TRY(vectorize_columns(y));
	TS_TRY(vectorize_columns(ex));
	TS_TRY(ts_compute_at(mx, y, row));
	TS_TRY(ts_compute_at(ex, y, row));
	return ts_compute_at(sm, y, row);
}
