/*
 * Exercise 5: make a softmax faster than unscheduled.
 *
 * Y = softmax(X) over the rows of a 512 x 1024 float32 X, in four stages:
 * Max[i] = max_j X[i, j], Exp[i, j] = exp(X[i, j] - Max[i]),
 * Sum[i] = sum_j Exp[i, j], Y[i, j] = Exp[i, j] / Sum[i]
 * (t->Max, t->Exp, t->Sum and t->Y; the picture calls the first three
 * softmax_max, softmax_exp and softmax_sum, the names ts_op_softmax gives).
 * Unscheduled, each stage runs over the whole matrix before the next, so
 * Exp (2 MB) goes to memory and back twice.
 *
 * Goal: at least 2x faster than unscheduled.  Ideas:
 *   - compute Max, Exp and Sum of a row inside Y's row loop
 *     (ts_compute_at(stage, Y's stage, Y's axis 0)): a row of Exp (4 KB)
 *     then stays in cache from the exponentials to the division;
 *   - parallelize Y's row loop;
 *   - vectorize the column loops of Exp and Y (split them by 8 and
 *     vectorize the inner part; ts_split_tail with TS_TAIL_PARTITION keeps
 *     the main loop free of guards).
 */
#include "exercise.h"

ts_status ex5_schedule(ts_schedule *s, const ex5_softmax *t)
{
	ts_stage *mx = ts_stage_of(s, t->Max), *ex = ts_stage_of(s, t->Exp);
	ts_stage *sm = ts_stage_of(s, t->Sum), *y = ts_stage_of(s, t->Y);
	(void)mx, (void)ex, (void)sm, (void)y;
	/* TODO: schedule the softmax.  Unscheduled: four nests at root. */
	return TS_OK;
}
