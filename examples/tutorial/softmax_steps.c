/*
 * softmax_steps.c - tessera-tutorial softmax: the rows of Y = softmax(X),
 * from the operator as the library builds it to ts_schedule_softmax_cpu.
 *
 * ts_op_softmax builds four stages: softmax_max (m = max of a row),
 * softmax_exp (e = exp(x - m)), softmax_sum (s = sum of e) and the output
 * (e / s).  The steps vectorize the exponentials (libmvec's vector exp,
 * codegen/vecmath.c), run rows in parallel, and finally compute the three
 * inner stages at the row loop of the output, reached with ts_op_stage,
 * so that a row's exponentials are still in cache when they are divided.
 * The last step factors the max and the sum with rfactor, so that their
 * partial results are vectors too; it must lower to exactly what
 * ts_schedule_softmax_cpu gives: it is checked, and a difference is an
 * error.
 */
#include <stdio.h>
#include <string.h>

#include "tutorial.h"

static bool make(tut_graph *g, int step)
{
	(void)step;
	int64_t n = g->n;
	ts_tensor *X = ts_placeholder(g->ctx, "X", TS_SHAPE(n, n), ts_float32);
	ts_tensor *Y = ts_op_softmax(g->ctx, X);
	if (!Y)
		return false;
	g->nargs = 2;
	g->args[0] = X;
	g->args[1] = Y;
	g->s = ts_create_schedule(g->ctx, 1, &Y);
	return g->s != NULL;
}

static ts_stage *inner(tut_graph *g, const char *name)
{
	return ts_stage_of(g->s, ts_op_stage(g->args[1], name));
}

/* The row axis of st parallel (when asked), its last axis in vectors of
 * lanes with the tail partitioned off: the order of ts_schedule_softmax_cpu. */
static ts_status rows(tut_graph *g, ts_stage *st, bool parallel, bool vector)
{
	ts_axis *xo, *xi;
	if (parallel)
		TS_TRY(ts_parallel(st, ts_axis_of(st, 0)));
	if (!vector)
		return TS_OK;
	ts_axis *x = ts_axis_of(st, 1);
	if (x->extent < g->lanes)
		return TS_OK;
	TS_TRY(ts_split_tail(st, x, g->lanes, TS_TAIL_PARTITION, &xo, &xi));
	return ts_vectorize(st, xi);
}

static ts_status unscheduled(tut_graph *g)
{
	(void)g;
	return TS_OK;
}

static ts_status vector_exp(tut_graph *g)
{
	TS_TRY(rows(g, ts_stage_of(g->s, g->args[1]), false, true));
	return rows(g, inner(g, "softmax_exp"), false, true);
}

static ts_status parallel_rows(tut_graph *g)
{
	g->parallel = true;
	TS_TRY(rows(g, ts_stage_of(g->s, g->args[1]), true, true));
	TS_TRY(rows(g, inner(g, "softmax_exp"), true, true));
	TS_TRY(rows(g, inner(g, "softmax_max"), true, false));
	return rows(g, inner(g, "softmax_sum"), true, false);
}

static ts_status at_row(tut_graph *g)
{
	ts_stage *sy = ts_stage_of(g->s, g->args[1]);
	g->parallel = true;
	TS_TRY(rows(g, sy, true, true));
	TS_TRY(rows(g, inner(g, "softmax_exp"), false, true));
	ts_axis *row = ts_axis_of(sy, 0);
	TS_TRY(ts_compute_at(inner(g, "softmax_max"), sy, row));
	TS_TRY(ts_compute_at(inner(g, "softmax_exp"), sy, row));
	return ts_compute_at(inner(g, "softmax_sum"), sy, row);
}

/* The row reduction name factored by lanes: its partial results, one per
 * lane, in a vectorized stage computed at the row of sy. */
static ts_status rfactor_row(tut_graph *g, ts_stage *sy, const char *name)
{
	ts_tensor *t = ts_op_stage(g->args[1], name);
	ts_stage *st = ts_stage_of(g->s, t);
	ts_axis *ko, *ki;
	TS_TRY(ts_split(st, ts_reduce_axis_of(st, 0), g->lanes, &ko, &ki));
	ts_tensor *rf = ts_rfactor(g->s, t, ki, 1);
	if (!rf)
		return ts_last_status(g->ctx);
	ts_stage *sr = ts_stage_of(g->s, rf);
	ts_axis *row = ts_axis_of(sr, 0), *lane = ts_axis_of(sr, 1);
	TS_TRY(ts_reorder(sr, TS_AXES(row, ts_reduce_axis_of(sr, 0), lane)));
	TS_TRY(ts_vectorize(sr, lane));
	return ts_compute_at(sr, sy, ts_axis_of(sy, 0));
}

/* Step 3, then max and sum in vectors (rows narrower than a vector keep
 * their scalar reductions, as the library's schedule does). */
static ts_status rfactor_rows(tut_graph *g)
{
	ts_stage *sy = ts_stage_of(g->s, g->args[1]);
	TS_TRY(at_row(g));
	if (g->lanes < 2 || g->n < g->lanes)
		return TS_OK;
	TS_TRY(rfactor_row(g, sy, "softmax_max"));
	return rfactor_row(g, sy, "softmax_sum");
}

/* Step 4 against the library: the same loop IR, or an error. */
static int verify(tut_graph *g, int step, const ts_func *f)
{
	if (step != 4)
		return 0;
	tut_graph lib = {.ctx = g->ctx, .n = g->n, .lanes = g->lanes};
	ts_func *h = NULL;
	if (make(&lib, step) && ts_schedule_softmax_cpu(lib.s, lib.args[1], lib.lanes) == TS_OK)
		h = ts_lower(lib.s, "softmax", 2, lib.args);
	if (!h)
		return fprintf(stderr, "step %d: %s\n", step, ts_last_error(g->ctx)), 1;
	bool same = strcmp(ir_func_str(g->ctx, f), ir_func_str(g->ctx, h)) == 0;
	printf("\nts_schedule_softmax_cpu(s, Y, lanes) lowers to the same loop IR: %s\n",
	       same ? "yes" : "no");
	if (!same)
		fprintf(stderr, "step %d: the loop IR differs from ts_schedule_softmax_cpu's\n", step);
	return !same;
}

static void describe(const tut_graph *g)
{
	printf("Y[%lld, %lld] = softmax of each row of X, float32", (long long)g->n, (long long)g->n);
}

/* Bytes a perfect cache would move: X read once, Y written once. */
static double work(const tut_graph *g)
{
	return 8.0 * (double)g->n * (double)g->n;
}

/* Each step's code: C statements that compile with s, Y, its stage sy and
 * lanes in scope (docs/TUTORIAL_SOFTMAX.md). */
static const tut_step steps[] = {
	{"unscheduled", "The operator's four stages at root, one after the other, scalar: four "
			"passes over the matrix, and exp one element at a time.",
	 "/* no schedule calls */", unscheduled},
	{"vectorized exp", "The exponentials and the division in vectors of `lanes`: exp becomes "
			   "one call of libmvec's vector exp per vector.",
	 "ts_stage *se = ts_stage_of(s, ts_op_stage(Y, \"softmax_exp\"));\n"
	 "ts_axis *xo, *xi;\n"
	 "ts_split_tail(sy, ts_axis_of(sy, 1), lanes, TS_TAIL_PARTITION, &xo, &xi);\n"
	 "ts_vectorize(sy, xi);\n"
	 "ts_split_tail(se, ts_axis_of(se, 1), lanes, TS_TAIL_PARTITION, &xo, &xi);\n"
	 "ts_vectorize(se, xi);",
	 vector_exp},
	{"rows in parallel", "Rows are independent: each stage's row loop runs on the thread pool.",
	 "/* the vectorized exp calls, then, for each stage st of sy, se, sm, ss: */\n"
	 "ts_stage *sm = ts_stage_of(s, ts_op_stage(Y, \"softmax_max\"));\n"
	 "ts_stage *ss = ts_stage_of(s, ts_op_stage(Y, \"softmax_sum\"));\n"
	 "ts_parallel(sm, ts_axis_of(sm, 0));\n"
	 "ts_parallel(ss, ts_axis_of(ss, 0));  /* and sy, se */",
	 parallel_rows},
	{"compute_at the row",
	 "max, exp and sum computed inside the output's parallel row loop: one row at a time "
	 "goes through all four stages while it is in L1, and the intermediates shrink to a "
	 "row.",
	 "ts_stage *se = ts_stage_of(s, ts_op_stage(Y, \"softmax_exp\"));\n"
	 "ts_stage *sm = ts_stage_of(s, ts_op_stage(Y, \"softmax_max\"));\n"
	 "ts_stage *ss = ts_stage_of(s, ts_op_stage(Y, \"softmax_sum\"));\n"
	 "ts_axis *row = ts_axis_of(sy, 0), *xo, *xi;\n"
	 "ts_parallel(sy, row);\n"
	 "ts_split_tail(sy, ts_axis_of(sy, 1), lanes, TS_TAIL_PARTITION, &xo, &xi);\n"
	 "ts_vectorize(sy, xi);\n"
	 "ts_split_tail(se, ts_axis_of(se, 1), lanes, TS_TAIL_PARTITION, &xo, &xi);\n"
	 "ts_vectorize(se, xi);\n"
	 "ts_compute_at(sm, sy, row);\nts_compute_at(se, sy, row);\nts_compute_at(ss, sy, row);",
	 at_row},
	{"rfactor the row reductions",
	 "The library schedule's last part: max and sum in vectors too.  A float reduction is one "
	 "chain of dependent max or + operations, one per element, and LLVM does not turn it "
	 "into vectors by itself: that reassociates it (a sum's rounding changes), which "
	 "tessera does not allow LLVM, so those loops stayed scalar.  rfactor makes the "
	 "reassociation explicit: split k by `lanes`, and softmax_max.rf[ki] keeps `lanes` "
	 "partial maxima (over k = ki, ki + lanes, ...) in one vector, a select adding the "
	 "identity past the row's end; softmax_max then reduces the `lanes` lanes.  The "
	 "chains become `lanes` times shorter; it pays on long rows, where the vector loop "
	 "is most of the work.",
	 "/* step 3's calls, then for t = softmax_max and t = softmax_sum, st its stage: */\n"
	 "ts_tensor *t = ts_op_stage(Y, \"softmax_max\");\n"
	 "ts_stage *st = ts_stage_of(s, t);\n"
	 "ts_axis *ko, *ki;\n"
	 "ts_split(st, ts_reduce_axis_of(st, 0), lanes, &ko, &ki);\n"
	 "ts_tensor *rf = ts_rfactor(s, t, ki, 1);  /* t.rf[r, ki] = max over ko */\n"
	 "ts_stage *sr = ts_stage_of(s, rf);\n"
	 "ts_reorder(sr, TS_AXES(ts_axis_of(sr, 0), ts_reduce_axis_of(sr, 0), ts_axis_of(sr, 1)));\n"
	 "ts_vectorize(sr, ts_axis_of(sr, 1));\n"
	 "ts_compute_at(sr, sy, ts_axis_of(sy, 0));\n"
	 "/* or, instead of step 3's calls and these, in one: */\n"
	 "ts_schedule_softmax_cpu(s, Y, lanes);",
	 rfactor_rows},
};

static const int nsteps = (int)TS_COUNT_OF(steps);

static const tut_cpu softmax = {
	.name = "softmax",
	.steps = steps,
	.nsteps = (int)TS_COUNT_OF(steps),
	.make = make,
	.describe = describe,
	.work = work,
	.unit = "GB/s",
	.verify = verify,
};

static int run(const tut_opts *o, tut_report *rep)
{
	return tut_run_cpu(&softmax, o, rep);
}

static const char *step_name(int i)
{
	return steps[i].name;
}

const tutorial tut_softmax = {
	.name = "softmax",
	.about = "Softmax over the rows of an N x N float32 matrix: vector exp, parallel\n"
		 "  rows, the inner stages computed at the row, then max and sum in\n"
		 "  vectors with rfactor.  N defaults to 2048.",
	.default_size = 2048,
	.max_size = 32768,
	.nsteps = &nsteps,
	.step_name = step_name,
	.run = run,
};
