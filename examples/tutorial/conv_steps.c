/*
 * conv_steps.c - tessera-tutorial conv: a 3x3 convolution, stride 1,
 * padding 1, of an N x N image with 32 input and 32 output channels, from
 * the naive NCHW loop nest to the library's NCHW[x]c schedule.
 *
 * Steps 0-2 compute Y = conv2d_nchw(X, W): the zero padding as a stage of
 * its own, then inlined (a select in the innermost loop), then vectorized
 * along the output row.  Steps 3-4 compute the same convolution in the
 * blocked layout: Xc = X in NCHW[x]c (x = the vector lanes: channel blocks
 * of x channels, the x channels of a pixel next to each other), Wc = W in
 * OIHW[x]i[x]o, Yc = conv2d_nchwc(Xc, Wc) in NCHW[x]c.  There the x output
 * channels of a pixel are one vector: each multiply-add broadcasts one
 * input value and multiplies it by x weights that are contiguous, which is
 * why NCHWc vectorizes without gathers or transposes.  The layout changes
 * are stages of the same function (X and W in, Yc out), so every step does
 * the same work from the same inputs; a network would keep its activations
 * in NCHWc from layer to layer and convert the weights once.
 */
#include <stdio.h>

#include "tutorial.h"

#define CHANNELS 32

static bool make(tut_graph *g, int step)
{
	ts_ctx *ctx = g->ctx;
	int64_t n = g->n;
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, CHANNELS, n, n), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(CHANNELS, CHANNELS, 3, 3), ts_float32);
	ts_tensor *Y;
	if (step < 3) {
		Y = ts_op_conv2d_nchw(ctx, X, W, 1, 1, 1, 1, 1, 1, 1);
	} else {
		int x = g->lanes;
		ts_tensor *Xc = ts_op_layout_nchw_to_nchwc(ctx, X, x);
		ts_tensor *Wc = ts_op_weight_oihw_to_blocked(ctx, W, x, x);
		Y = ts_op_conv2d_nchwc(ctx, Xc, Wc, 1, 1, 1, 1, 1, 1);
	}
	if (!Y)
		return false;
	g->nargs = 3;
	g->args[0] = X;
	g->args[1] = W;
	g->args[2] = Y;
	g->s = ts_create_schedule(ctx, 1, &Y);
	return g->s != NULL;
}

static ts_stage *pad_stage(tut_graph *g)
{
	return ts_stage_of(g->s, ts_op_stage(g->args[2], "pad"));
}

static ts_status naive(tut_graph *g)
{
	(void)g;
	return TS_OK;
}

static ts_status pad_inline(tut_graph *g)
{
	return ts_compute_inline(pad_stage(g));
}

/* NCHW: the output row innermost and vectorized, the reduction outside it,
 * output channels in parallel. */
static ts_status nchw_vector(tut_graph *g)
{
	ts_stage *sy = ts_stage_of(g->s, g->args[2]);
	ts_axis *n = ts_axis_of(sy, 0), *o = ts_axis_of(sy, 1), *y = ts_axis_of(sy, 2),
		*x = ts_axis_of(sy, 3), *rc = ts_reduce_axis_of(sy, 0), *ry = ts_reduce_axis_of(sy, 1),
		*rx = ts_reduce_axis_of(sy, 2), *xo, *xi;
	g->parallel = true;
	TS_TRY(ts_split_tail(sy, x, g->lanes, TS_TAIL_PARTITION, &xo, &xi));
	TS_TRY(ts_reorder(sy, TS_AXES(n, o, y, rc, ry, rx, xo, xi)));
	TS_TRY(ts_vectorize(sy, xi));
	return ts_parallel(sy, o);
}

/* NCHWc: the output-channel lanes innermost and vectorized. */
static ts_status nchwc_vector(tut_graph *g)
{
	ts_stage *sy = ts_stage_of(g->s, g->args[2]);
	ts_axis *n = ts_axis_of(sy, 0), *co = ts_axis_of(sy, 1), *h = ts_axis_of(sy, 2),
		*w = ts_axis_of(sy, 3), *oc = ts_axis_of(sy, 4);
	ts_axis *rco = ts_reduce_axis_of(sy, 0), *kh = ts_reduce_axis_of(sy, 1),
		*kw = ts_reduce_axis_of(sy, 2), *rci = ts_reduce_axis_of(sy, 3);
	g->parallel = true;
	TS_TRY(ts_reorder(sy, TS_AXES(n, co, h, w, rco, kh, kw, rci, oc)));
	TS_TRY(ts_vectorize(sy, oc));
	return ts_parallel(sy, co);
}

static ts_status nchwc_library(tut_graph *g)
{
	g->parallel = true;
	ts_conv2d_cpu_params p = ts_conv2d_cpu_default();
	return ts_schedule_conv2d_nchwc_cpu(g->s, g->args[2], &p);
}

static void describe(const tut_graph *g)
{
	printf("Y = conv2d(X[1, %d, %lld, %lld], W[%d, %d, 3, 3]), stride 1, padding 1, float32",
	       CHANNELS, (long long)g->n, (long long)g->n, CHANNELS, CHANNELS);
}

static double work(const tut_graph *g)
{
	return 2.0 * CHANNELS * CHANNELS * 9 * (double)g->n * (double)g->n;
}

/* Each step's code: C statements that compile with ctx, X, W, Y, s, sy
 * (Y's stage) and lanes in scope (docs/TUTORIAL_CONV.md). */
static const tut_step steps[] = {
	{"naive NCHW", "The operator as built: the zero-padded copy of X computed first (a stage "
		       "of its own), then the seven loops of the convolution, scalar.",
	 "/* no schedule calls: Y = ts_op_conv2d_nchw(ctx, X, W, 1, 1, 1, 1, 1, 1, 1) */", naive},
	{"padding inlined", "No padded copy: each read of the padded input becomes a select on "
			    "the border test; the loops are partitioned at the border (loop_partition), "
			    "so only border iterations keep the test (less memory, more code).",
	 "ts_compute_inline(ts_stage_of(s, ts_op_stage(Y, \"pad\")));", pad_inline},
	{"NCHW, vectorized along the row", "The padded copy again; output columns innermost "
					   "in vectors of `lanes`, the reduction outside them, "
					   "output channels on all cores.",
	 "ts_axis *xo, *xi;\n"
	 "ts_split_tail(sy, ts_axis_of(sy, 3), lanes, TS_TAIL_PARTITION, &xo, &xi);\n"
	 "ts_reorder(sy, TS_AXES(ts_axis_of(sy, 0), ts_axis_of(sy, 1), ts_axis_of(sy, 2),\n"
	 "                       ts_reduce_axis_of(sy, 0), ts_reduce_axis_of(sy, 1),\n"
	 "                       ts_reduce_axis_of(sy, 2), xo, xi));\n"
	 "ts_vectorize(sy, xi);\nts_parallel(sy, ts_axis_of(sy, 1));",
	 nchw_vector},
	{"NCHWc, vectorized over output channels",
	 "The blocked layout: the `lanes` output channels of a pixel are contiguous in Yc and in "
	 "Wc, so the innermost loop is one vector multiply-add of a broadcast input value.",
	 "/* Y = conv2d_nchwc(Xc, Wc) on the blocked layouts, instead of conv2d_nchw: */\n"
	 "ts_tensor *Xc = ts_op_layout_nchw_to_nchwc(ctx, X, lanes);\n"
	 "ts_tensor *Wc = ts_op_weight_oihw_to_blocked(ctx, W, lanes, lanes);\n"
	 "ts_tensor *Yc = ts_op_conv2d_nchwc(ctx, Xc, Wc, 1, 1, 1, 1, 1, 1);\n"
	 "ts_stage *sc = ts_stage_of(s, Yc);  /* s made for Yc */\n"
	 "ts_reorder(sc, TS_AXES(ts_axis_of(sc, 0), ts_axis_of(sc, 1), ts_axis_of(sc, 2),\n"
	 "                       ts_axis_of(sc, 3), ts_reduce_axis_of(sc, 0),\n"
	 "                       ts_reduce_axis_of(sc, 1), ts_reduce_axis_of(sc, 2),\n"
	 "                       ts_reduce_axis_of(sc, 3), ts_axis_of(sc, 4)));\n"
	 "ts_vectorize(sc, ts_axis_of(sc, 4));\nts_parallel(sc, ts_axis_of(sc, 1));",
	 nchwc_vector},
	{"NCHWc, register blocked",
	 "The library schedule, ts_schedule_conv2d_nchwc_cpu: a block of 14 output columns x "
	 "`lanes` channels accumulated in registers (cache_write) over the whole reduction, its "
	 "loops unrolled, the padding inlined: the border blocks are split off, and their taps "
	 "that fall in the padding are left out of the sum.",
	 "ts_conv2d_cpu_params p = ts_conv2d_cpu_default();\n"
	 "ts_schedule_conv2d_nchwc_cpu(s, Y, &p);  /* Y = conv2d_nchwc(Xc, Wc) */",
	 nchwc_library},
};

static const int nsteps = (int)TS_COUNT_OF(steps);

static const tut_cpu conv = {
	.name = "conv",
	.steps = steps,
	.nsteps = (int)TS_COUNT_OF(steps),
	.make = make,
	.describe = describe,
	.work = work,
	.unit = "GFLOP/s",
};

static int run(const tut_opts *o, tut_report *rep)
{
	return tut_run_cpu(&conv, o, rep);
}

static const char *step_name(int i)
{
	return steps[i].name;
}

const tutorial tut_conv = {
	.name = "conv",
	.about = "A 3x3 convolution of an N x N image, 32 channels in and out: NCHW with\n"
		 "  the padding as a stage or inlined, then the NCHW[x]c layout and the\n"
		 "  library schedule.  N defaults to 56.",
	.default_size = 56,
	.max_size = 1024,
	.nsteps = &nsteps,
	.step_name = step_name,
	.run = run,
};
