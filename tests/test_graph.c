/*
 * test_graph.c - the graph layer: every operator, the passes (folding,
 * fusion, layouts, memory) and random graphs, each compiled and run on
 * random data against the plain-loop reference of graph_ref.c, with and
 * without fusion and layout planning, on shapes that the kernels' blocks
 * do not divide.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph_ref.h"
#include "tune.h"
#include "threadpool.h"

#define TOL 1e-4

static ts_gattrs conv_attrs(int stride, int pt, int pl, int pb, int pr)
{
	ts_gattrs a = ts_gattrs_default();
	a.stride[0] = a.stride[1] = stride;
	a.pad[0] = pt, a.pad[1] = pl, a.pad[2] = pb, a.pad[3] = pr;
	return a;
}

/* Checks t under the default options, no fusion and no layouts; returns
 * the executable of the default run. */
static ts_graph_exec *check_all(ts_ctx *ctx, tg *t)
{
	ts_graph_exec *e = NULL, *e2 = NULL, *e3 = NULL;
	double err = tg_check(t, NULL, &e);
	ck_assert_msg(err >= 0, "%s", ts_last_error(ctx));
	ck_assert_msg(err <= TOL, "error %g", err);
	ts_graph_opts plain = {.no_fuse = true, .no_layout = true};
	err = tg_check(t, &plain, &e2);
	ck_assert_msg(err >= 0 && err <= TOL, "unfused: error %g: %s", err, ts_last_error(ctx));
	ck_assert_int_ge(ts_graph_exec_stats(e2).kernels, ts_graph_exec_stats(e).kernels);
	ts_set_num_threads(3);
	err = tg_check(t, NULL, &e3);
	ts_set_num_threads(1);
	ck_assert_msg(err >= 0 && err <= TOL, "3 threads: error %g: %s", err, ts_last_error(ctx));
	ts_graph_exec_free(e2);
	ts_graph_exec_free(e3);
	return e;
}

/* conv -> (bias) -> relu, many shapes, strides and (asymmetric) pads. */
START_TEST(test_conv_relu)
{
	static const int64_t cases[][9] = {
		/* C, H, W, O, K, stride, pad t/l, pad b/r, group */
		{3, 13, 11, 16, 3, 1, 1, 1, 1},
		{12, 7, 7, 48, 3, 1, 1, 1, 1},
		{16, 9, 10, 32, 1, 2, 0, 0, 1},
		{5, 8, 8, 7, 3, 2, 0, 1, 1},
		{8, 11, 6, 24, 5, 1, 2, 1, 1},
		{8, 6, 6, 8, 3, 1, 1, 1, 8},
		{6, 7, 5, 9, 3, 1, 1, 1, 3},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const int64_t *c = cases[i];
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, i);
		int x = tg_input(t, "x", TS_SHAPE(1, c[0], c[1], c[2]));
		int w = tg_const(t, "w", TS_SHAPE(c[3], c[0] / c[8], c[4], c[4]), -0.5, 0.5);
		int b = tg_const(t, "b", TS_SHAPE(c[3]), -0.5, 0.5);
		ts_gattrs a = conv_attrs((int)c[5], (int)c[6], (int)c[6], (int)c[7], (int)c[7]);
		a.group = c[8];
		int y = tg_node(t, "conv", TS_GOP_CONV, 3, (int[]){x, w, b}, &a);
		int r = tg_node(t, "relu", TS_GOP_RELU, 1, &y, NULL);
		ck_assert_msg(r >= 0, "case %zu: %s", i, ts_last_error(ctx));
		tg_output(t, r);
		ts_graph_exec *e = check_all(ctx, t);
		ck_assert_int_eq(ts_graph_exec_stats(e).kernels - ts_graph_exec_stats(e).conversions, 1);
		ts_graph_exec_free(e);
		tg_free(t);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* Convolutions the blocked kernel cannot take stay on NCHW: weights that
 * are an input (not blocked at compile time), and a constant image, also
 * one seen through a view (Identity, Reshape; unfused, such an image once
 * reached the blocked kernel unblocked, which divided by its block 0). */
START_TEST(test_conv_unblocked)
{
	for (int view = 0; view < 2; view++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 80 + view);
		int c = view ? tg_const(t, "c", TS_SHAPE(1, 2, 48), -1, 1) : tg_const(t, "c", TS_SHAPE(1, 2, 12, 4), -1, 1);
		ts_gattrs r = ts_gattrs_default();
		r.nshape = 4;
		memcpy(r.shape, (int64_t[]){1, 2, 12, 4}, sizeof(int64_t[4]));
		int x = tg_node(t, "x", view ? TS_GOP_RESHAPE : TS_GOP_IDENTITY, 1, &c, view ? &r : NULL);
		int w = tg_const(t, "w", TS_SHAPE(8, 2, 3, 3), -1, 1);
		ts_gattrs a = conv_attrs(2, 0, 2, 1, 1);
		int y = tg_node(t, "conv", TS_GOP_CONV, 2, (int[]){x, w}, &a);
		ck_assert_msg(y >= 0, "%s", ts_last_error(ctx));
		tg_output(t, y);
		ts_graph_exec_free(check_all(ctx, t));
		ts_graph_opts unfused = {.no_fuse = true};
		ts_graph_exec *e = NULL;
		double err = tg_check(t, &unfused, &e);
		ck_assert_msg(err >= 0 && err <= TOL, "unfused: error %g: %s", err, ts_last_error(ctx));
		ts_graph_exec_free(e);
		tg_free(t);
		ts_ctx_free(ctx);
	}
	for (int variant = 0; variant < 2; variant++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 90 + variant);
		int x = variant ? tg_const(t, "x", TS_SHAPE(1, 3, 6, 5), -1, 1) : tg_input(t, "x", TS_SHAPE(1, 3, 6, 5));
		int w = variant ? tg_input(t, "w", TS_SHAPE(4, 3, 3, 3)) : tg_const(t, "w", TS_SHAPE(4, 3, 3, 3), -1, 1);
		ts_gattrs a = conv_attrs(1, 1, 0, 1, 2);
		int y = tg_node(t, "conv", TS_GOP_CONV, 2, (int[]){x, w}, &a);
		y = tg_node(t, "relu", TS_GOP_RELU, 1, &y, NULL);
		ck_assert_msg(y >= 0, "%s", ts_last_error(ctx));
		tg_output(t, y);
		ts_graph_exec_free(check_all(ctx, t));
		tg_free(t);
		ts_ctx_free(ctx);
	}
	/* weights computed by the graph */
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 95);
	int x = tg_input(t, "x", TS_SHAPE(1, 2, 5, 5));
	int w = tg_input(t, "w", TS_SHAPE(3, 2, 3, 3));
	int wn = tg_node(t, "wneg", TS_GOP_NEG, 1, &w, NULL);
	ts_gattrs a = conv_attrs(2, 1, 1, 1, 1);
	int y = tg_node(t, "conv", TS_GOP_CONV, 2, (int[]){x, wn}, &a);
	tg_output(t, y);
	ts_graph_exec_free(check_all(ctx, t));
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* A network's stem: input x[1, 16, h, w], a 3x3 convolution to 32
 * channels (padding 1, named "stem") and a relu named `out`. */
/* t checked under the default options with its passes traced, then its
 * kernels listed (ts_graph_exec_print): the text (malloc'd); *e the
 * executable. */
static char *traced_check(ts_ctx *ctx, tg *t, ts_graph_exec **e)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	ts_graph_opts o = {.trace = f};
	double err = tg_check(t, &o, e);
	ck_assert_msg(err >= 0 && err <= TOL, "error %g: %s", err, ts_last_error(ctx));
	ts_graph_exec_print(f, *e);
	fclose(f);
	return buf;
}

/* The end of a traced test: its text and executable freed, then t
 * checked without fusion and without layouts too (check_all), and freed
 * with ctx. */
static void traced_done(ts_ctx *ctx, tg *t, ts_graph_exec *e, char *buf)
{
	free(buf);
	ts_graph_exec_free(e);
	ts_graph_exec_free(check_all(ctx, t));
	tg_free(t);
	ts_ctx_free(ctx);
}

static int stem(tg *t, int64_t h, int64_t w, const char *out)
{
	int x = tg_input(t, "x", TS_SHAPE(1, 16, h, w));
	ts_gattrs a = conv_attrs(1, 1, 1, 1, 1);
	int w0 = tg_const(t, "w0", TS_SHAPE(32, 16, 3, 3), -0.3, 0.3);
	int c0 = tg_node(t, "stem", TS_GOP_CONV, 2, (int[]){x, w0}, &a);
	return tg_node(t, out, TS_GOP_RELU, 1, &c0, NULL);
}

/* A residual block: conv-bn-relu, conv-bn, add the input, relu; the
 * batch norms fold into the convolutions and the add and relu fuse into
 * the second one, which reads the block's input in its own layout. */
START_TEST(test_residual_block)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 7);
	ts_gattrs a = conv_attrs(1, 1, 1, 1, 1);
	int s0 = stem(t, 9, 9, "stem_relu");
	int w2 = tg_const(t, "w2", TS_SHAPE(32, 32, 3, 3), -0.2, 0.2);
	int c1 = tg_node(t, "conv1", TS_GOP_CONV, 2, (int[]){s0, w2}, &a);
	int bn[4];
	for (int k = 0; k < 4; k++)
		bn[k] = tg_const(t, "bn", TS_SHAPE(32), k == 3 ? 0.5 : -0.5, k == 3 ? 1.5 : 0.5);
	int b1 = tg_node(t, "bn1", TS_GOP_BATCHNORM, 5, (int[]){c1, bn[0], bn[1], bn[2], bn[3]}, NULL);
	int r1 = tg_node(t, "relu1", TS_GOP_RELU, 1, &b1, NULL);
	int w3 = tg_const(t, "w3", TS_SHAPE(32, 32, 3, 3), -0.2, 0.2);
	int c2 = tg_node(t, "conv2", TS_GOP_CONV, 2, (int[]){r1, w3}, &a);
	int b2 = tg_node(t, "bn2", TS_GOP_BATCHNORM, 5, (int[]){c2, bn[0], bn[1], bn[2], bn[3]}, NULL);
	int add = tg_node(t, "add", TS_GOP_ADD, 2, (int[]){b2, s0}, NULL);
	int out = tg_node(t, "relu2", TS_GOP_RELU, 1, &add, NULL);
	tg_output(t, out);
	ts_graph_exec *e = check_all(ctx, t);
	ts_graph_stats st = ts_graph_exec_stats(e);
	ck_assert_int_eq(st.folded_nodes, 2);
	/* 3 convolutions, the input to NCHW16c and the output back to NCHW:
	 * the convolutions pass their blocked outputs on as they are */
	ck_assert_int_eq(st.kernels, 5);
	ck_assert_int_eq(st.conversions, 2);
	ck_assert_int_eq(st.fused_nodes, 4);
	ck_assert_int_lt(st.arena_bytes, st.unplanned_bytes);
	ts_graph_exec_free(e);
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* A MobileNet-v2 block: pointwise expansion, depthwise 3x3, pointwise
 * projection, each with its batch norm folded and relu6 (Clip) fused; the
 * depthwise convolution runs on the blocks the expansion wrote. */
START_TEST(test_mobilenet_block)
{
	for (int stride = 1; stride <= 2; stride++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 80 + stride);
		/* 13 columns: wide enough for AVX2's blocks of four vectors,
		 * which the expansion leaves for the depthwise convolution's */
		int x = tg_input(t, "x", TS_SHAPE(1, 16, 11, 13));
		ts_gattrs clip = ts_gattrs_default();
		clip.alpha = 0, clip.beta = 6;
		ts_gattrs pw = conv_attrs(1, 0, 0, 0, 0), dw = conv_attrs(stride, 1, 1, 1, 1);
		dw.group = 96;
		int w1 = tg_const(t, "w1", TS_SHAPE(96, 16, 1, 1), -0.4, 0.4);
		int w2 = tg_const(t, "w2", TS_SHAPE(96, 1, 3, 3), -0.5, 0.5);
		int w3 = tg_const(t, "w3", TS_SHAPE(16, 96, 1, 1), -0.2, 0.2);
		int bn[2][4];
		for (int i = 0; i < 2; i++)
			for (int k = 0; k < 4; k++)
				bn[i][k] = tg_const(t, "bn", TS_SHAPE(96), k == 3 ? 0.5 : -0.5, k == 3 ? 1.5 : 0.5);
		int v = tg_node(t, "expand", TS_GOP_CONV, 2, (int[]){x, w1}, &pw);
		v = tg_node(t, "bn1", TS_GOP_BATCHNORM, 5, (int[]){v, bn[0][0], bn[0][1], bn[0][2], bn[0][3]}, NULL);
		v = tg_node(t, "relu6_1", TS_GOP_CLIP, 1, &v, &clip);
		v = tg_node(t, "depthwise", TS_GOP_CONV, 2, (int[]){v, w2}, &dw);
		v = tg_node(t, "bn2", TS_GOP_BATCHNORM, 5, (int[]){v, bn[1][0], bn[1][1], bn[1][2], bn[1][3]}, NULL);
		v = tg_node(t, "relu6_2", TS_GOP_CLIP, 1, &v, &clip);
		v = tg_node(t, "project", TS_GOP_CONV, 2, (int[]){v, w3}, &pw);
		if (stride == 1)
			v = tg_node(t, "residual", TS_GOP_ADD, 2, (int[]){v, x}, NULL);
		ck_assert_msg(v >= 0, "%s", ts_last_error(ctx));
		tg_output(t, v);
		ts_graph_exec *e = check_all(ctx, t);
		ts_graph_stats st = ts_graph_exec_stats(e);
		ck_assert_int_eq(st.folded_nodes, 2);
		/* the input to NCHW16c, three convolutions, the output back */
		ck_assert_int_eq(st.conversions, 2);
		ck_assert_int_eq(st.kernels, 5);
		ts_graph_exec_free(e);
		tg_free(t);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* c3(c2(relu(c1(x) + bias + res + map))): c1 and c2 1x1 convolutions of
 * stride 1 (C -> O -> O2 channels), map a constant over the H rows and W
 * columns, c3 a 3x3 one to 32 channels; the last node's value. */
static int pointwise_chain(tg *t, int x, int res, int64_t C, int64_t O, int64_t O2, int64_t H, int64_t W)
{
	ts_gattrs pw = conv_attrs(1, 0, 0, 0, 0), k3 = conv_attrs(1, 1, 1, 1, 1);
	int w1 = tg_const(t, "w1", TS_SHAPE(O, C, 1, 1), -0.2, 0.2);
	int b1 = tg_const(t, "b1", TS_SHAPE(O), -0.5, 0.5);
	int w2 = tg_const(t, "w2", TS_SHAPE(O2, O, 1, 1), -0.2, 0.2);
	int w3 = tg_const(t, "w3", TS_SHAPE(32, O2, 3, 3), -0.1, 0.1);
	int map = tg_const(t, "map", TS_SHAPE(1, 1, H, W), -1, 1);
	int v = tg_node(t, "c1", TS_GOP_CONV, 3, (int[]){x, w1, b1}, &pw);
	v = tg_node(t, "res", TS_GOP_ADD, 2, (int[]){v, res}, NULL);
	v = tg_node(t, "map_add", TS_GOP_ADD, 2, (int[]){v, map}, NULL);
	v = tg_node(t, "r1", TS_GOP_RELU, 1, &v, NULL);
	v = tg_node(t, "c2", TS_GOP_CONV, 2, (int[]){v, w2}, &pw);
	return tg_node(t, "c3", TS_GOP_CONV, 2, (int[]){v, w3}, &k3);
}

/* 1x1 convolutions of stride 1 on rows of 7: with AVX2 their rows are
 * viewed as one of 49 (ts_conv2d_cpu_row_width), which takes blocks of four
 * vectors; fused with a bias, a residual add, a constant that varies over
 * the rows and columns (read at the logical row and column of the one
 * long row) and relu, then a second such convolution on the first's
 * blocks, and a 3x3 one after; results against the reference. */
START_TEST(test_pointwise_rows_as_one)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 90);
	int x = tg_input(t, "x", TS_SHAPE(1, 64, 7, 7));
	int v = pointwise_chain(t, x, x, 64, 64, 96, 7, 7);
	ck_assert_msg(v >= 0, "%s", ts_last_error(ctx));
	tg_output(t, v);
	ts_graph_exec *e = NULL;
	char *buf = traced_check(ctx, t, &e);
	int64_t row = ts_conv2d_cpu_row_width(1, 1, 1, 1, 0, 0, 7, 7);
	ck_assert_int_eq(row, ts_cpu_vector_lanes() == 8 ? 49 : 7);
	long long yb = (long long)ts_conv2d_cpu_out_block_for(64, row);
	ck_assert_msg(strstr(buf, ts_sprintf(ctx, "c1 + res + map_add + r1 -> [1, 64, 7, 7] NCHW%lldc", yb)),
		      "%s", buf);
	traced_done(ctx, t, e, buf);
}
END_TEST

/* 1x1 convolutions of stride 1 on rows of 13 (AVX2: 4 blocks of 3 columns
 * and one of 1) are viewed as rows of 3 x 13 = 13 blocks
 * (ts_conv2d_cpu_row_width_for), two images, fused with a bias, a
 * residual, a constant that varies over the rows and columns (read at the
 * logical row and column of each long row) and relu, then a second one
 * on the first's blocks and a 3x3 one after; one with 1024 input channels
 * reduces in chunks and keeps its rows.  Results against the reference. */
START_TEST(test_pointwise_rows_merged)
{
	bool avx2 = ts_cpu_vector_lanes() == 8;
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 91);
	int x = tg_input(t, "x", TS_SHAPE(2, 32, 6, 13)), r = tg_input(t, "r", TS_SHAPE(2, 64, 6, 13));
	int v = pointwise_chain(t, x, r, 32, 64, 64, 6, 13);
	ck_assert_msg(v >= 0, "%s", ts_last_error(ctx));
	tg_output(t, v);
	ts_graph_exec *e = NULL;
	char *buf = traced_check(ctx, t, &e);
	const char *merged = avx2 ? ", 3 rows as one" : "";
	ck_assert_msg(strstr(buf, ts_sprintf(ctx, "c1 + res + map_add + r1 -> [2, 64, 6, 13] NCHW%dc%s\n",
					     avx2 ? 32 : (int)ts_conv2d_cpu_out_block(64), merged)), "%s", buf);
	ck_assert_msg(strstr(buf, ts_sprintf(ctx, "c2 -> [2, 64, 6, 13] NCHW%dc%s\n",
					     avx2 ? 32 : (int)ts_conv2d_cpu_out_block(64), merged)), "%s", buf);
	ck_assert_msg(strstr(buf, "c3 -> [2, 32, 6, 13]") && !strstr(strstr(buf, "c3 ->"), "rows as one"),
		      "%s", buf);
	traced_done(ctx, t, e, buf);

	ctx = ts_ctx_new();
	t = tg_new(ctx, 92);
	x = tg_input(t, "x", TS_SHAPE(1, 1024, 6, 13));
	int w = tg_const(t, "w", TS_SHAPE(32, 1024, 1, 1), -0.05, 0.05);
	ts_gattrs pw = conv_attrs(1, 0, 0, 0, 0);
	v = tg_node(t, "deep", TS_GOP_CONV, 2, (int[]){x, w}, &pw);
	ck_assert_msg(v >= 0, "%s", ts_last_error(ctx));
	tg_output(t, v);
	buf = traced_check(ctx, t, &e);
	ck_assert_msg(strstr(buf, "deep -> [1, 32, 6, 13]") && !strstr(buf, "rows as one"), "%s", buf);
	traced_done(ctx, t, e, buf);
}
END_TEST

/* Batch norm on a value that is not a convolution's: a fused multiply-add. */
START_TEST(test_batchnorm_affine)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 8);
	int x = tg_input(t, "x", TS_SHAPE(2, 5, 3, 4));
	int p[4];
	for (int k = 0; k < 4; k++)
		p[k] = tg_const(t, "p", TS_SHAPE(5), k == 3 ? 0.5 : -1, k == 3 ? 2 : 1);
	int b = tg_node(t, "bn", TS_GOP_BATCHNORM, 5, (int[]){x, p[0], p[1], p[2], p[3]}, NULL);
	int s = tg_node(t, "sig", TS_GOP_SIGMOID, 1, &b, NULL);
	tg_output(t, s);
	ts_graph_exec *e = check_all(ctx, t);
	ck_assert_int_eq(ts_graph_exec_stats(e).kernels, 1);
	ts_graph_exec_free(e);
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* conv -> bn1 -> bn2, and bn2 - bn1: bn1 folds into the conv, which makes
 * the conv's output read twice, so bn2 must not fold into it as well (it
 * did, and the difference came out 0). */
START_TEST(test_batchnorm_chain_folds_once)
{
	for (int variant = 0; variant < 2; variant++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 9);
		int x = tg_input(t, "x", TS_SHAPE(1, 8, 6, 6));
		int w = tg_const(t, "w", TS_SHAPE(8, 8, 3, 3), -0.5, 0.5);
		ts_gattrs a = ts_gattrs_default();
		a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
		int c = tg_node(t, "c", TS_GOP_CONV, 2, (int[]){x, w}, &a);
		int bn[2];
		for (int j = 0; j < 2; j++) {
			int p[4];
			for (int k = 0; k < 4; k++)
				p[k] = tg_const(t, "p", TS_SHAPE(8), k == 3 ? 0.5 : -1, k == 3 ? 2 : 1);
			bn[j] = tg_node(t, j ? "bn2" : "bn1", TS_GOP_BATCHNORM, 5,
					(int[]){j ? bn[0] : c, p[0], p[1], p[2], p[3]}, NULL);
		}
		int y = tg_node(t, "y", variant ? TS_GOP_ADD : TS_GOP_SUB, 2, (int[]){bn[1], bn[0]}, NULL);
		tg_output(t, y);
		ts_graph_exec_free(check_all(ctx, t));
		tg_free(t);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* Pooling on NCHW and on a convolution's blocked output, then the global
 * average, flatten and a classifier Gemm. */
START_TEST(test_pool_head)
{
	for (int variant = 0; variant < 4; variant++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 20 + variant);
		int x = tg_input(t, "x", TS_SHAPE(1, 8, 13, 12));
		int v = x;
		if (variant & 1) {
			ts_gattrs a = conv_attrs(1, 1, 1, 1, 1);
			int w = tg_const(t, "w", TS_SHAPE(32, 8, 3, 3), -0.3, 0.3);
			v = tg_node(t, "conv", TS_GOP_CONV, 2, (int[]){x, w}, &a);
		}
		ts_gattrs pa = conv_attrs(2, 1, 1, variant & 2 ? 0 : 1, 1);
		pa.kernel[0] = pa.kernel[1] = 3;
		pa.count_include_pad = variant == 2;
		v = tg_node(t, "pool", variant & 2 ? TS_GOP_AVGPOOL : TS_GOP_MAXPOOL, 1, &v, &pa);
		v = tg_node(t, "gap", TS_GOP_GLOBALAVGPOOL, 1, &v, NULL);
		ts_gattrs fa = ts_gattrs_default();
		fa.axis = 1;
		v = tg_node(t, "flatten", TS_GOP_FLATTEN, 1, &v, &fa);
		int64_t ch = variant & 1 ? 32 : 8;
		int w = tg_const(t, "fc_w", TS_SHAPE(10, ch), -0.5, 0.5);
		int b = tg_const(t, "fc_b", TS_SHAPE(10), -0.5, 0.5);
		ts_gattrs ga = ts_gattrs_default();
		ga.trans_b = true;
		ga.alpha = 0.5;
		ga.beta = 2;
		v = tg_node(t, "fc", TS_GOP_GEMM, 3, (int[]){v, w, b}, &ga);
		ck_assert_msg(v >= 0, "%s", ts_last_error(ctx));
		tg_output(t, v);
		ts_graph_exec *e = check_all(ctx, t);
		/* the input to NCHW8c for the convolution; pooling keeps the
		 * layout and the global average reads it */
		ck_assert_int_eq(ts_graph_exec_stats(e).conversions, variant & 1);
		ts_graph_exec_free(e);
		tg_free(t);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* An attention block the way BERT's ONNX export has it. */
START_TEST(test_attention)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 30);
	int64_t S = 7, D = 12, H = 3, HD = 4;
	int x = tg_input(t, "x", TS_SHAPE(1, S, D));
	int qkv[3];
	for (int k = 0; k < 3; k++) {
		int w = tg_const(t, "w", TS_SHAPE(D, D), -0.5, 0.5);
		int b = tg_const(t, "b", TS_SHAPE(D), -0.5, 0.5);
		int m = tg_node(t, "mm", TS_GOP_MATMUL, 2, (int[]){x, w}, NULL);
		int a = tg_node(t, "bias", TS_GOP_ADD, 2, (int[]){m, b}, NULL);
		ts_gattrs ra = ts_gattrs_default();
		ra.nshape = 4;
		memcpy(ra.shape, (int64_t[]){0, 0, H, HD}, sizeof(int64_t) * 4);
		int r = tg_node(t, "reshape", TS_GOP_RESHAPE, 1, &a, &ra);
		ts_gattrs ta = ts_gattrs_default();
		ta.nperm = 4;
		memcpy(ta.perm, k == 1 ? (int64_t[]){0, 2, 3, 1} : (int64_t[]){0, 2, 1, 3}, sizeof(int64_t) * 4);
		qkv[k] = tg_node(t, "transpose", TS_GOP_TRANSPOSE, 1, &r, &ta);
	}
	float scale = 2.0f;
	int sc = tg_const_data(t, "scale", 0, NULL, &scale);
	int s = tg_node(t, "scores", TS_GOP_MATMUL, 2, (int[]){qkv[0], qkv[1]}, NULL);
	s = tg_node(t, "scale", TS_GOP_DIV, 2, (int[]){s, sc}, NULL);
	s = tg_node(t, "softmax", TS_GOP_SOFTMAX, 1, &s, NULL);
	int c = tg_node(t, "context", TS_GOP_MATMUL, 2, (int[]){s, qkv[2]}, NULL);
	ts_gattrs ta = ts_gattrs_default();
	ta.nperm = 4;
	memcpy(ta.perm, (int64_t[]){0, 2, 1, 3}, sizeof(int64_t) * 4);
	c = tg_node(t, "back", TS_GOP_TRANSPOSE, 1, &c, &ta);
	ts_gattrs ra = ts_gattrs_default();
	ra.nshape = 3;
	memcpy(ra.shape, (int64_t[]){1, S, -1}, sizeof(int64_t) * 3);
	c = tg_node(t, "merge", TS_GOP_RESHAPE, 1, &c, &ra);
	c = tg_node(t, "residual", TS_GOP_ADD, 2, (int[]){c, x}, NULL);
	int g = tg_const(t, "gamma", TS_SHAPE(D), 0.5, 1.5), be = tg_const(t, "beta", TS_SHAPE(D), -1, 1);
	ts_gattrs la = ts_gattrs_default();
	la.epsilon = 1e-12;
	int y = tg_node(t, "norm", TS_GOP_LAYERNORM, 3, (int[]){c, g, be}, &la);
	ck_assert_msg(y >= 0, "%s", ts_last_error(ctx));
	tg_output(t, y);
	ts_graph_exec_free(check_all(ctx, t));
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* GELU as exported (x * 0.5 * (1 + erf(x / sqrt 2))): x is read twice, yet
 * the whole region fuses into the matmul's output tile. */
START_TEST(test_gelu_region)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 40);
	int x = tg_input(t, "x", TS_SHAPE(2, 5, 9));
	int w = tg_const(t, "w", TS_SHAPE(9, 33), -0.5, 0.5), b = tg_const(t, "b", TS_SHAPE(33), -1, 1);
	float k[3] = {1.41421356f, 1.0f, 0.5f};
	int c[3];
	for (int i = 0; i < 3; i++)
		c[i] = tg_const_data(t, "k", 0, NULL, &k[i]);
	int m = tg_node(t, "up", TS_GOP_MATMUL, 2, (int[]){x, w}, NULL);
	int h = tg_node(t, "bias", TS_GOP_ADD, 2, (int[]){m, b}, NULL);
	int d = tg_node(t, "div", TS_GOP_DIV, 2, (int[]){h, c[0]}, NULL);
	int e1 = tg_node(t, "erf", TS_GOP_ERF, 1, &d, NULL);
	int a = tg_node(t, "add", TS_GOP_ADD, 2, (int[]){e1, c[1]}, NULL);
	int mu = tg_node(t, "mul", TS_GOP_MUL, 2, (int[]){h, a}, NULL);
	int y = tg_node(t, "half", TS_GOP_MUL, 2, (int[]){mu, c[2]}, NULL);
	tg_output(t, y);
	ts_graph_exec *e = check_all(ctx, t);
	ck_assert_int_eq(ts_graph_exec_stats(e).kernels, 1);
	ck_assert_int_eq(ts_graph_exec_stats(e).fused_nodes, 6);
	ts_graph_exec_free(e);
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* A value read outside the region (an output, or a later consumer) is not
 * fused away. */
START_TEST(test_region_escape)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 41);
	int x = tg_input(t, "x", TS_SHAPE(3, 4));
	int r = tg_node(t, "relu", TS_GOP_RELU, 1, &x, NULL);
	int e1 = tg_node(t, "exp", TS_GOP_EXP, 1, &r, NULL);
	int s = tg_node(t, "sum", TS_GOP_ADD, 2, (int[]){e1, r}, NULL);
	int tr = tg_node(t, "t", TS_GOP_TRANSPOSE, 1, &r, NULL);
	tg_output(t, s);
	tg_output(t, tr);
	tg_output(t, e1);
	ts_graph_exec_free(check_all(ctx, t));
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* Every elementwise operator with numpy broadcasting. */
START_TEST(test_elementwise_broadcast)
{
	static const ts_gop ops[] = {TS_GOP_ADD,  TS_GOP_SUB,  TS_GOP_MUL, TS_GOP_DIV,  TS_GOP_POW,
				     TS_GOP_RELU, TS_GOP_SIGMOID, TS_GOP_TANH, TS_GOP_ERF, TS_GOP_SQRT,
				     TS_GOP_EXP,  TS_GOP_NEG,  TS_GOP_GELU, TS_GOP_CLIP};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 50 + i);
		int x = tg_input(t, "x", TS_SHAPE(2, 3, 1, 5));
		int y = tg_input(t, "y", TS_SHAPE(4, 1));
		/* positive operands where the operator needs them */
		int xs = tg_node(t, "xs", TS_GOP_SIGMOID, 1, &x, NULL);
		ts_gattrs a = ts_gattrs_default();
		a.approximate = i % 2;
		a.alpha = -0.3, a.beta = 0.4;
		bool binary = ops[i] <= TS_GOP_POW;
		int v = tg_node(t, ts_gop_name(ops[i]), ops[i], binary ? 2 : 1,
				binary ? (int[]){xs, y} : (int[]){ops[i] == TS_GOP_SQRT ? xs : x}, &a);
		ck_assert_msg(v >= 0, "%s: %s", ts_gop_name(ops[i]), ts_last_error(ctx));
		tg_output(t, v);
		ts_graph_exec_free(check_all(ctx, t));
		tg_free(t);
		ts_ctx_free(ctx);
	}
}
END_TEST

START_TEST(test_concat_matmul_batched)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 60);
	int a = tg_input(t, "a", TS_SHAPE(2, 3, 5, 4));
	int b = tg_input(t, "b", TS_SHAPE(2, 3, 4, 6));
	int m = tg_node(t, "mm", TS_GOP_MATMUL, 2, (int[]){a, b}, NULL);
	int c = tg_input(t, "c", TS_SHAPE(2, 3, 5, 2));
	ts_gattrs ca = ts_gattrs_default();
	ca.axis = -1;
	int k = tg_node(t, "cat", TS_GOP_CONCAT, 3, (int[]){m, c, m}, &ca);
	int r = tg_node(t, "relu", TS_GOP_RELU, 1, &k, NULL);
	ck_assert_msg(r >= 0, "%s", ts_last_error(ctx));
	tg_output(t, r);
	ts_graph_exec_free(check_all(ctx, t));
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* MatMul with numpy broadcasting of the batch dimensions: an extent of 1
 * against a larger one, fewer batch dimensions on either side, a 2-D
 * operand against a batched one, a constant operand; then a fused
 * epilogue (add, relu). */
START_TEST(test_matmul_broadcast)
{
	static const struct {
		int an, bn;
		int64_t as[4], bs[4];
		bool b_const;
	} cases[] = {
		{4, 4, {2, 1, 5, 4}, {1, 3, 4, 6}, false},
		{4, 3, {2, 3, 5, 4}, {3, 4, 6}, false},
		{3, 4, {3, 5, 4}, {2, 3, 4, 6}, false},
		{2, 3, {5, 4}, {3, 4, 6}, false},
		{3, 3, {1, 7, 4}, {3, 4, 9}, true},
		{4, 3, {2, 3, 5, 4}, {1, 4, 6}, true},
	};
	for (size_t c = 0; c < TS_COUNT_OF(cases); c++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 70 + (uint64_t)c);
		int a = tg_input(t, "a", cases[c].an, cases[c].as);
		int b = cases[c].b_const ? tg_const(t, "b", cases[c].bn, cases[c].bs, -1, 1)
					 : tg_input(t, "b", cases[c].bn, cases[c].bs);
		int m = tg_node(t, "mm", TS_GOP_MATMUL, 2, (int[]){a, b}, NULL);
		ck_assert_msg(m >= 0, "case %zu: %s", c, ts_last_error(ctx));
		int y = m;
		if (c % 2) {
			int64_t one = 1;
			int bias = tg_const(t, "bias", 1, &one, -1, 1);
			int s = tg_node(t, "add", TS_GOP_ADD, 2, (int[]){m, bias}, NULL);
			y = tg_node(t, "relu", TS_GOP_RELU, 1, &s, NULL);
		}
		ck_assert_msg(y >= 0, "case %zu: %s", c, ts_last_error(ctx));
		tg_output(t, y);
		ts_graph_exec_free(check_all(ctx, t));
		tg_free(t);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* MatMul with one 1-D operand, as numpy: a vector on the left is a row,
 * on the right a column, and the product loses that dimension. */
START_TEST(test_matmul_vector)
{
	static const struct {
		int an, bn;
		int64_t as[3], bs[3];
		int yn;
		int64_t ys[2];
	} cases[] = {
		{1, 2, {5}, {5, 7}, 1, {7}},
		{2, 1, {6, 5}, {5}, 1, {6}},
		{3, 1, {2, 6, 5}, {5}, 2, {2, 6}},
		{1, 3, {5}, {3, 5, 4}, 2, {3, 4}},
	};
	for (size_t c = 0; c < TS_COUNT_OF(cases); c++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 90 + (uint64_t)c);
		int a = tg_input(t, "a", cases[c].an, cases[c].as);
		int b = c == 1 ? tg_const(t, "b", cases[c].bn, cases[c].bs, -1, 1)
			       : tg_input(t, "b", cases[c].bn, cases[c].bs);
		int m = tg_node(t, "mm", TS_GOP_MATMUL, 2, (int[]){a, b}, NULL);
		ck_assert_msg(m >= 0, "case %zu: %s", c, ts_last_error(ctx));
		int r = tg_node(t, "relu", TS_GOP_RELU, 1, &m, NULL);
		ck_assert_msg(r >= 0, "case %zu: %s", c, ts_last_error(ctx));
		tg_output(t, r);
		ts_graph_exec *e = check_all(ctx, t);
		int nd = 0;
		int64_t ys[TS_GRAPH_MAX_DIMS];
		ck_assert(ts_graph_value_shape(tg_graph(t), m, &nd, ys));
		ck_assert_int_eq(nd, cases[c].yn);
		for (int d = 0; d < nd; d++)
			ck_assert_int_eq(ys[d], cases[c].ys[d]);
		ts_graph_exec_free(e);
		tg_free(t);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* A product of a value with itself (x @ x, Gemm(x, x)): one tensor read
 * twice, which the matmul schedules take as a product like any other. */
START_TEST(test_matmul_self)
{
	static const ts_gop ops[] = {TS_GOP_MATMUL, TS_GOP_GEMM};
	for (size_t c = 0; c < TS_COUNT_OF(ops); c++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 95 + (uint64_t)c);
		int x = tg_input(t, "x", 2, (int64_t[]){7, 7});
		int m = tg_node(t, "mm", ops[c], 2, (int[]){x, x}, NULL);
		ck_assert_msg(m >= 0, "case %zu: %s", c, ts_last_error(ctx));
		int r = tg_node(t, "relu", TS_GOP_RELU, 1, &m, NULL);
		ck_assert_msg(r >= 0, "case %zu: %s", c, ts_last_error(ctx));
		tg_output(t, r);
		ts_graph_exec_free(check_all(ctx, t));
		tg_free(t);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* Random chains of convolutions, pooling and elementwise nodes. */
START_TEST(test_random_graphs)
{
	for (int seed = 0; seed < 24; seed++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 1000 + seed);
		uint64_t s = (uint64_t)seed * 7919 + 13;
#define PICK(n) ((int)((s = s * 6364136223846793005ULL + 1442695040888963407ULL) >> 33) % (n))
		int64_t C = 1 + PICK(20), H = 4 + PICK(9), W = 4 + PICK(9);
		int x = tg_input(t, "x", TS_SHAPE(1, C, H, W));
		int v = x, skip = -1;
		int64_t skipC = 0, skipH = 0, skipW = 0;
		for (int step = 0; step < 5; step++) {
			int kind = PICK(5);
			if (kind <= 1) {
				int64_t O = 1 + PICK(40), K = 1 + 2 * PICK(2);
				int st = 1 + (H > 6 && W > 6 ? PICK(2) : 0), p = (int)(K / 2);
				ts_gattrs a = conv_attrs(st, p, p, p, p);
				int w = tg_const(t, "w", TS_SHAPE(O, C, K, K), -0.3, 0.3);
				int b = tg_const(t, "b", TS_SHAPE(O), -0.3, 0.3);
				v = tg_node(t, "conv", TS_GOP_CONV, 3, (int[]){v, w, b}, &a);
				C = O, H = (H - 1) / st + 1, W = (W - 1) / st + 1;
			} else if (kind == 2 && H > 3 && W > 3) {
				ts_gattrs a = conv_attrs(2, 1, 1, 1, 1);
				a.kernel[0] = a.kernel[1] = 3;
				v = tg_node(t, "pool", PICK(2) ? TS_GOP_MAXPOOL : TS_GOP_AVGPOOL, 1, &v, &a);
				H = (H - 1) / 2 + 1, W = (W - 1) / 2 + 1;
			} else if (kind == 3) {
				v = tg_node(t, "relu", TS_GOP_RELU, 1, &v, NULL);
				skip = v, skipC = C, skipH = H, skipW = W;
			} else if (skip >= 0 && skipC == C && skipH == H && skipW == W && skip != v) {
				v = tg_node(t, "add", TS_GOP_ADD, 2, (int[]){v, skip}, NULL);
			} else {
				int sc = tg_const(t, "scale", TS_SHAPE(C, 1, 1), 0.5, 1.5);
				v = tg_node(t, "mul", TS_GOP_MUL, 2, (int[]){v, sc}, NULL);
			}
			ck_assert_msg(v >= 0, "seed %d: %s", seed, ts_last_error(ctx));
		}
#undef PICK
		tg_output(t, v);
		ts_graph_exec_free(check_all(ctx, t));
		tg_free(t);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* Views of constants (a reshaped weight, a flattened bias, an identity of
 * a one-element constant) are constants on the same data. */
START_TEST(test_constant_views)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 72);
	int x = tg_input(t, "x", TS_SHAPE(3, 12));
	int w = tg_const(t, "w", TS_SHAPE(2, 12, 5), -1, 1);
	ts_gattrs ra = ts_gattrs_default();
	ra.nshape = 2;
	memcpy(ra.shape, (int64_t[]){12, 10}, sizeof(int64_t) * 2);
	int wr = tg_node(t, "wr", TS_GOP_RESHAPE, 1, &w, &ra);
	int b = tg_const(t, "b", TS_SHAPE(1, 10, 1), -1, 1);
	ts_gattrs fa = ts_gattrs_default();
	fa.axis = 0;
	int bf = tg_node(t, "bf", TS_GOP_FLATTEN, 1, &b, &fa);
	float two = 2.0f;
	int k = tg_const_data(t, "k", TS_SHAPE(1), &two);
	int ki = tg_node(t, "ki", TS_GOP_IDENTITY, 1, &k, NULL);
	int m = tg_node(t, "mm", TS_GOP_MATMUL, 2, (int[]){x, wr}, NULL);
	m = tg_node(t, "bias", TS_GOP_ADD, 2, (int[]){m, bf}, NULL);
	m = tg_node(t, "scale", TS_GOP_MUL, 2, (int[]){m, ki}, NULL);
	ck_assert_msg(m >= 0, "%s", ts_last_error(ctx));
	tg_output(t, m);
	tg_output(t, wr);
	ts_graph_exec *e = check_all(ctx, t);
	ck_assert_int_eq(ts_graph_exec_stats(e).kernels, 1);
	ts_graph_exec_free(e);
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* An error an earlier call left neither fails the compile nor the run. */
START_TEST(test_stale_error)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 71);
	int x = tg_input(t, "x", TS_SHAPE(2, 3));
	int r = tg_node(t, "r", TS_GOP_RELU, 1, &x, NULL);
	tg_output(t, r);
	ck_assert_int_lt(ts_graph_node(tg_graph(t), "bad", TS_GOP_ADD, 1, &x, NULL), 0);
	ck_assert_int_ne(ts_last_status(ctx), TS_OK);
	ts_graph_exec *e = NULL;
	double err = tg_check(t, NULL, &e);
	ck_assert_msg(err >= 0 && err <= TOL, "%g: %s", err, ts_last_error(ctx));
	ts_graph_exec_free(e);
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* Random sequence models: products with constant and computed operands,
 * Gemm, transposes, reshapes, softmax, layer norm, concat and broadcast
 * elementwise nodes on 2-D to 4-D values. */
START_TEST(test_random_sequence_graphs)
{
	int seeds = getenv("TG_SEEDS") ? atoi(getenv("TG_SEEDS")) : 24;
	for (int seed = 0; seed < seeds; seed++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 5000 + seed);
		uint64_t s = (uint64_t)seed * 104729 + 7;
#define PICK(n) ((int)((s = s * 6364136223846793005ULL + 1442695040888963407ULL) >> 33) % (n))
		int64_t B = 1 + PICK(3), S = 1 + PICK(9), D = 1 + PICK(20);
		int x = tg_input(t, "x", TS_SHAPE(B, S, D));
		int v = x;
		int nd = 3;
		int64_t sh[4] = {B, S, D, 0};
		for (int step = 0; step < 6 && v >= 0; step++) {
			int kind = PICK(8);
			if (kind == 0) { /* product by a constant matrix, then a bias */
				int64_t N = 1 + PICK(40);
				int w = tg_const(t, "w", TS_SHAPE(sh[nd - 1], N), -0.5, 0.5);
				v = tg_node(t, "mm", TS_GOP_MATMUL, 2, (int[]){v, w}, NULL);
				int b = tg_const(t, "b", TS_SHAPE(N), -0.5, 0.5);
				v = v < 0 ? v : tg_node(t, "bias", TS_GOP_ADD, 2, (int[]){v, b}, NULL);
				sh[nd - 1] = N;
			} else if (kind == 1 && nd >= 3) { /* a computed product: v x v^T */
				ts_gattrs ta = ts_gattrs_default();
				ta.nperm = nd;
				for (int d = 0; d < nd; d++)
					ta.perm[d] = d;
				ta.perm[nd - 2] = nd - 1, ta.perm[nd - 1] = nd - 2;
				int vt = tg_node(t, "t", TS_GOP_TRANSPOSE, 1, &v, &ta);
				v = vt < 0 ? vt : tg_node(t, "bmm", TS_GOP_MATMUL, 2, (int[]){v, vt}, NULL);
				sh[nd - 1] = sh[nd - 2];
			} else if (kind == 2) {
				v = tg_node(t, "softmax", TS_GOP_SOFTMAX, 1, &v, NULL);
			} else if (kind == 3) {
				int g = tg_const(t, "g", TS_SHAPE(sh[nd - 1]), 0.5, 1.5);
				int b = tg_const(t, "b", TS_SHAPE(sh[nd - 1]), -1, 1);
				v = tg_node(t, "ln", TS_GOP_LAYERNORM, 3, (int[]){v, g, b}, NULL);
			} else if (kind == 4 && nd == 3) { /* split the last axis in two and swap */
				int64_t f = sh[2] % 2 == 0 ? 2 : 1;
				ts_gattrs ra = ts_gattrs_default();
				ra.nshape = 4;
				memcpy(ra.shape, (int64_t[]){0, 0, f, -1}, sizeof(int64_t) * 4);
				v = tg_node(t, "reshape", TS_GOP_RESHAPE, 1, &v, &ra);
				ts_gattrs ta = ts_gattrs_default();
				ta.nperm = 4;
				memcpy(ta.perm, (int64_t[]){0, 2, 1, 3}, sizeof(int64_t) * 4);
				v = v < 0 ? v : tg_node(t, "swap", TS_GOP_TRANSPOSE, 1, &v, &ta);
				sh[3] = sh[2] / f, sh[2] = sh[1], sh[1] = f, nd = 4;
			} else if (kind == 5) { /* concat with itself along a random axis */
				ts_gattrs ca = ts_gattrs_default();
				ca.axis = PICK(nd) - nd;
				int ax = (int)(ca.axis + nd);
				v = tg_node(t, "cat", TS_GOP_CONCAT, 2, (int[]){v, v}, &ca);
				sh[ax] *= 2;
			} else if (kind == 6) { /* broadcast operand of a random broadcastable shape */
				int64_t bs[4];
				for (int d = 0; d < nd; d++)
					bs[d] = PICK(2) ? sh[d] : 1;
				int c = tg_const(t, "c", nd, bs, 0.5, 1.5);
				static const ts_gop ops[] = {TS_GOP_ADD, TS_GOP_MUL, TS_GOP_DIV, TS_GOP_SUB};
				ts_gop op = ops[PICK(4)];
				bool first = PICK(2);
				v = tg_node(t, "bin", op, 2, first ? (int[]){v, c} : (int[]){c, v}, NULL);
			} else {
				static const ts_gop ops[] = {TS_GOP_RELU, TS_GOP_TANH, TS_GOP_GELU, TS_GOP_SIGMOID};
				v = tg_node(t, "un", ops[PICK(4)], 1, &v, NULL);
			}
		}
#undef PICK
		ck_assert_msg(v >= 0, "seed %d: %s", seed, ts_last_error(ctx));
		tg_output(t, v);
		ts_graph_exec_free(check_all(ctx, t));
		tg_free(t);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* The trace names what each pass did; printing works. */
START_TEST(test_trace_and_print)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 70);
	int x = tg_input(t, "x", TS_SHAPE(1, 4, 5, 5));
	int w = tg_const(t, "w", TS_SHAPE(16, 4, 3, 3), -1, 1);
	ts_gattrs a = conv_attrs(1, 1, 1, 1, 1);
	int c = tg_node(t, "c", TS_GOP_CONV, 2, (int[]){x, w}, &a);
	int p[4];
	for (int k = 0; k < 4; k++)
		p[k] = tg_const(t, "p", TS_SHAPE(16), 0.5, 1);
	int b = tg_node(t, "bn", TS_GOP_BATCHNORM, 5, (int[]){c, p[0], p[1], p[2], p[3]}, NULL);
	int r = tg_node(t, "r", TS_GOP_RELU, 1, &b, NULL);
	tg_output(t, r);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ts_graph_print(f, tg_graph(t));
	ts_graph_opts o = {.trace = f};
	ts_graph_exec *e = NULL;
	ck_assert(tg_check(t, &o, &e) <= TOL);
	ts_graph_exec_print(f, e);
	fclose(f);
	ck_assert_msg(strstr(buf, "= Conv(%0, %1) stride=1x1 pad=1,1,1,1 -> [1, 16, 5, 5]  # c"), "%s", buf);
	ck_assert_msg(strstr(buf, "fold: BatchNormalization 'bn' folded into the weights and bias of Conv 'c'"), "%s", buf);
	ck_assert_msg(strstr(buf, "fuse: c + r\n"), "%s", buf);
	/* the output block is the machine's: 16 channels with AVX-512, 8 with AVX2 */
	int64_t yb = ts_conv2d_cpu_out_block_for(16, 5);
	ck_assert_msg(strstr(buf, ts_sprintf(ctx, "layout: r is NCHW%lldc", (long long)yb)), "%s", buf);
	ck_assert_msg(strstr(buf, "memory: "), "%s", buf);
	ck_assert_msg(strstr(buf, "layout: x converted to NCHW4c for its consumer"), "%s", buf);
	ck_assert_msg(strstr(buf, ts_sprintf(ctx, "kernel   1: c + r -> [1, 16, 5, 5] NCHW%lldc", (long long)yb)),
		      "%s", buf);
	free(buf);
	ts_graph_exec_free(e);
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* Elementwise chains longer than one kernel holds: 100 nodes (a kernel
 * fuses at most 64) and 40 adds of 40 constants (a kernel reads at most
 * 31 values) are split into several kernels, each correct; before, the
 * first wrote past the group's node list and the second refused the
 * model. */
START_TEST(test_long_chains)
{
	for (int variant = 0; variant < 2; variant++) {
		ts_ctx *ctx = ts_ctx_new();
		tg *t = tg_new(ctx, 80 + variant);
		int v = tg_input(t, "x", TS_SHAPE(4, 16));
		int n = variant ? 40 : 100;
		for (int i = 0; i < n; i++) {
			char name[16];
			snprintf(name, sizeof name, "n%d", i);
			if (variant) {
				int c = tg_const(t, "c", TS_SHAPE(4, 16), -0.1, 0.1);
				v = tg_node(t, name, TS_GOP_ADD, 2, (int[]){v, c}, NULL);
			} else {
				v = tg_node(t, name, i % 3 ? TS_GOP_NEG : TS_GOP_RELU, 1, &v, NULL);
			}
			ck_assert_msg(v >= 0, "%s", ts_last_error(ctx));
		}
		tg_output(t, v);
		ts_graph_exec *e = check_all(ctx, t);
		ts_graph_stats st = ts_graph_exec_stats(e);
		ck_assert_int_ge(st.kernels, 2);
		ck_assert_int_le(st.kernels, variant ? 3 : 2);
		ts_graph_exec_free(e);
		tg_free(t);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* A conv followed by 12 SiLUs, v * sigmoid(v): each reads its operand
 * twice, so the fused epilogue as a tree doubles per SiLU; it failed to
 * compile (TS_MAX_EXPR_DEPTH) after seconds and gigabytes.  The chain is
 * now cut into kernels of bounded size, and computes what the reference
 * does. */
START_TEST(test_silu_chain_compiles)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 95);
	int x = tg_input(t, "x", TS_SHAPE(1, 16, 8, 8));
	int w = tg_const(t, "w", TS_SHAPE(16, 16, 3, 3), -0.2, 0.2);
	ts_gattrs a = ts_gattrs_default();
	a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
	int v = tg_node(t, "conv", TS_GOP_CONV, 2, (int[]){x, w}, &a);
	for (int i = 0; i < 12; i++) {
		int sg = tg_node(t, "sig", TS_GOP_SIGMOID, 1, &v, NULL);
		v = tg_node(t, "silu", TS_GOP_MUL, 2, (int[]){v, sg}, NULL);
		ck_assert_msg(v >= 0, "%s", ts_last_error(ctx));
	}
	tg_output(t, v);
	ts_graph_exec *e = check_all(ctx, t);
	ck_assert_int_ge(ts_graph_exec_stats(e).kernels, 2);
	ts_graph_exec_free(e);
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* Kernels that differ only in how an operand broadcasts do not share
 * code: [4, 1, 1] and [4] are both a plain argument of 4 elements, read
 * per channel in one kernel and per column in the other; and one operand
 * [1, 2, 1, 1] under two products that both run as [12, 5] rows (of
 * logical [3, 2, 2, 5] and [2, 2, 3, 5]) is read at another row of each. */
START_TEST(test_broadcast_kernels_distinct)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 90);
	int x = tg_input(t, "x", TS_SHAPE(1, 4, 4, 4));
	int c1 = tg_const(t, "c1", TS_SHAPE(4, 1, 1), -1, 1);
	int c2 = tg_const(t, "c2", TS_SHAPE(4), -1, 1);
	tg_output(t, tg_node(t, "per_channel", TS_GOP_ADD, 2, (int[]){x, c1}, NULL));
	tg_output(t, tg_node(t, "per_column", TS_GOP_ADD, 2, (int[]){x, c2}, NULL));
	int a1 = tg_input(t, "a1", TS_SHAPE(3, 2, 2, 7));
	int a2 = tg_input(t, "a2", TS_SHAPE(2, 2, 3, 7));
	int w = tg_const(t, "w", TS_SHAPE(7, 5), -1, 1);
	int c = tg_const(t, "c", TS_SHAPE(1, 2, 1, 1), -1, 1);
	int m1 = tg_node(t, "mm1", TS_GOP_MATMUL, 2, (int[]){a1, w}, NULL);
	int m2 = tg_node(t, "mm2", TS_GOP_MATMUL, 2, (int[]){a2, w}, NULL);
	tg_output(t, tg_node(t, "add1", TS_GOP_ADD, 2, (int[]){m1, c}, NULL));
	int add2 = tg_node(t, "add2", TS_GOP_ADD, 2, (int[]){m2, c}, NULL);
	ck_assert_msg(add2 >= 0, "%s", ts_last_error(ctx));
	tg_output(t, add2);
	ts_graph_exec_free(check_all(ctx, t));
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

/* Residual sums written over their residual: a chain of three blocks
 * passes one buffer on (each sum over the one before), while a residual
 * read again later (by the last node) and one the convolution itself
 * reads keep their own; every result is the reference's, at 1 and 3
 * threads, with and without fusion. */
START_TEST(test_inplace_residuals)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 72);
	ts_gattrs a = conv_attrs(1, 1, 1, 1, 1);
	int r = stem(t, 5, 13, "r0"); /* rows of 13: one block everywhere */
	for (int k = 1; k <= 3; k++) {
		char n[16];
		int w1 = tg_const(t, "w", TS_SHAPE(32, 32, 3, 3), -0.2, 0.2);
		int w2 = tg_const(t, "w", TS_SHAPE(32, 32, 1, 1), -0.2, 0.2);
		snprintf(n, sizeof n, "b%d.c1", k);
		int c1 = tg_node(t, n, TS_GOP_CONV, 2, (int[]){r, w1}, &a);
		snprintf(n, sizeof n, "b%d.relu", k);
		c1 = tg_node(t, n, TS_GOP_RELU, 1, &c1, NULL);
		snprintf(n, sizeof n, "b%d.c2", k);
		int c2 = tg_node(t, n, TS_GOP_CONV, 2, (int[]){c1, w2}, NULL);
		snprintf(n, sizeof n, "b%d.add", k);
		int s2 = tg_node(t, n, TS_GOP_ADD, 2, (int[]){c2, r}, NULL);
		snprintf(n, sizeof n, "b%d.out", k);
		r = tg_node(t, n, TS_GOP_RELU, 1, &s2, NULL);
	}
	/* the convolution reads its own residual: not in place */
	int w3 = tg_const(t, "w3", TS_SHAPE(32, 32, 1, 1), -0.2, 0.2);
	int c3 = tg_node(t, "self.c", TS_GOP_CONV, 2, (int[]){r, w3}, NULL);
	int self = tg_node(t, "self.add", TS_GOP_ADD, 2, (int[]){c3, r}, NULL);
	/* a residual read again later: not in place */
	int w4 = tg_const(t, "w4", TS_SHAPE(32, 32, 1, 1), -0.2, 0.2);
	int c4 = tg_node(t, "late.c", TS_GOP_CONV, 2, (int[]){self, w4}, NULL);
	int late = tg_node(t, "late.add", TS_GOP_ADD, 2, (int[]){c4, self}, NULL);
	int last = tg_node(t, "last", TS_GOP_MUL, 2, (int[]){late, self}, NULL);
	ck_assert_msg(last >= 0, "%s", ts_last_error(ctx));
	tg_output(t, last);
	ts_graph_exec *e = NULL;
	char *buf = traced_check(ctx, t, &e);
	ck_assert_msg(strstr(buf, "memory: b1.out written over r0, which nothing reads after it\n") &&
			      strstr(buf, "memory: b2.out written over b1.out,") &&
			      strstr(buf, "memory: b3.out written over b2.out,") &&
			      !strstr(buf, "self.add written over") && !strstr(buf, "late.add written over"),
		      "%s", buf);
	traced_done(ctx, t, e, buf);
}
END_TEST

/* The text of file path (NULL-terminated, malloc'd). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	char *buf = calloc(1, 1 << 16);
	ck_assert_ptr_nonnull(buf);
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Convolutions scheduled by a tuning log: the graph lists its tunable
 * convolutions (a square kernel with one stride and pad: not the
 * asymmetric one) with their channel blocks held, records with register
 * blocks that divide neither the rows nor the columns (and the padding
 * inlined, or copied) schedule them, and the results stay the
 * reference's; a record of another tessera version fails the compile with
 * the log's message, and the calls refuse bad arguments. */
START_TEST(test_tuned_convolutions)
{
	ts_ctx *ctx = ts_ctx_new();
	tg *t = tg_new(ctx, 71);
	int x = tg_input(t, "x", TS_SHAPE(1, 16, 9, 11));
	int w1 = tg_const(t, "w1", TS_SHAPE(32, 16, 3, 3), -0.3, 0.3);
	int w2 = tg_const(t, "w2", TS_SHAPE(32, 32, 1, 1), -0.3, 0.3);
	int w3 = tg_const(t, "w3", TS_SHAPE(16, 32, 3, 3), -0.3, 0.3);
	ts_gattrs a1 = conv_attrs(1, 1, 1, 1, 1), a2 = conv_attrs(2, 0, 0, 0, 0), a3 = conv_attrs(1, 1, 0, 1, 2);
	int c1 = tg_node(t, "c1", TS_GOP_CONV, 2, (int[]){x, w1}, &a1);
	int r1 = tg_node(t, "r1", TS_GOP_RELU, 1, &c1, NULL);
	int c2 = tg_node(t, "c2", TS_GOP_CONV, 2, (int[]){r1, w2}, &a2);
	int c3 = tg_node(t, "c3", TS_GOP_CONV, 2, (int[]){c2, w3}, &a3);
	ck_assert_msg(c3 >= 0, "%s", ts_last_error(ctx));
	tg_output(t, c3);
	ts_graph_exec *e0 = NULL;
	ck_assert(tg_check(t, NULL, &e0) <= TOL);
	ck_assert_int_eq(ts_graph_exec_tune_tasks(e0, NULL, 0), 2);
	ts_tune_task task[2];
	ck_assert_int_eq(ts_graph_exec_tune_tasks(e0, task, 2), 2);
	ck_assert_int_eq(ts_graph_exec_tune_tasks(NULL, task, 2), -1);
	ck_assert_int_eq(ts_graph_exec_tune_tasks(e0, NULL, 2), -1);
	ck_assert_int_eq(ts_graph_exec_tune_tasks(e0, task, -1), -1);
	ck_assert_int_eq(ts_graph_exec_stats(e0).tuned_kernels, 0);
	static const int64_t want[2][9] = {{1, 16, 9, 11, 32, 3, 3, 1, 1}, {1, 32, 9, 11, 32, 1, 1, 2, 0}};
	char path[] = "/tmp/tessera_graph_tune_XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	remove(path);
	for (int k = 0; k < 2; k++) {
		ck_assert_str_eq(task[k].op, "conv2d");
		ck_assert_int_eq(task[k].nshape, 9);
		ck_assert(!memcmp(task[k].shape, want[k], sizeof want[k]));
		ts_tune_result r = {.best = ts_tune_default(&task[k]), .best_ms = 1, .default_ms = 1, .trials = 1};
		r.def = r.best;
		for (int i = 0; i < task[k].space.nparams; i++) {
			const char *n = task[k].space.name[i];
			if (!strcmp(n, "ic_block") || !strcmp(n, "oc_block"))
				ck_assert_int_eq(task[k].space.nchoice[i], 1); /* the graph's */
			else if (!strcmp(n, "ow_block"))
				r.best.v[i] = 4;
			else if (!strcmp(n, "oh_block"))
				r.best.v[i] = 2;
			else if (!strcmp(n, "pad"))
				r.best.v[i] = k ? TS_PAD_COPY : TS_PAD_INLINE;
		}
		tu_ok(ctx, ts_tune_log_append(ctx, path, &task[k], &r));
	}
	ts_tune_log *log = ts_tune_log_load(ctx, path);
	tu_nonnull(ctx, log);
	ts_graph_opts o = {.tuned = log};
	ts_graph_exec *e1 = NULL;
	double err = tg_check(t, &o, &e1);
	ck_assert_msg(err >= 0 && err <= TOL, "tuned: error %g: %s", err, ts_last_error(ctx));
	ck_assert_int_eq(ts_graph_exec_stats(e1).tuned_kernels, 2);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ts_graph_exec_print(f, e1);
	fclose(f);
	int ntuned = 0;
	for (const char *q = buf; (q = strstr(q, ", tuned ")) != NULL; q++)
		ntuned++;
	/* 32 with AVX-512, 8 with AVX2 (rows narrower than 12 columns) */
	long long yb1 = (long long)ts_conv2d_cpu_out_block_for(32, 11),
		  yb2 = (long long)ts_conv2d_cpu_out_block_for(32, 6);
	ck_assert_msg(strstr(buf, ts_sprintf(ctx, "c1 + r1 -> [1, 32, 9, 11] NCHW%lldc, tuned %s:1\n", yb1, path)) &&
			      strstr(buf, ts_sprintf(ctx, "c2 -> [1, 32, 5, 6] NCHW%lldc, tuned %s:2\n", yb2, path)) &&
			      ntuned == 2,
		      "%s", buf);
	free(buf);
	/* a record of another version is refused, naming the line */
	char *text = slurp(path), *v = strstr(text, "\"tessera\": \"");
	ck_assert_ptr_nonnull(v);
	memcpy(v + 12, "0.1", 3);
	FILE *g = fopen(path, "wb");
	ck_assert_ptr_nonnull(g);
	fputs(text, g);
	fclose(g);
	free(text);
	ts_tune_log *old = ts_tune_log_load(ctx, path);
	tu_nonnull(ctx, old);
	o.tuned = old;
	ck_assert_ptr_null(ts_graph_compile(tg_graph(t), &o));
	tu_assert_error(ctx, ts_sprintf(ctx, "%s:1: the record for conv2d", path));
	tu_assert_error(ctx, "field tessera is '0.1'");
	remove(path);
	/* a record whose values the schedule refuses: the error names the
	 * node and the record */
	ts_tune_result bad = {.best = ts_tune_default(&task[0]), .best_ms = 1, .default_ms = 1, .trials = 1};
	for (int i = 0; i < task[0].space.nparams; i++)
		if (!strcmp(task[0].space.name[i], "pad"))
			bad.best.v[i] = 7;
	bad.def = bad.best;
	tu_ok(ctx, ts_tune_log_append(ctx, path, &task[0], &bad));
	ts_tune_log *zero = ts_tune_log_load(ctx, path);
	tu_nonnull(ctx, zero);
	o.tuned = zero;
	ck_assert_ptr_null(ts_graph_compile(tg_graph(t), &o));
	tu_assert_error(ctx, ts_sprintf(ctx, "graph_compile: node 'c1': the tuning record %s:1: "
				       "schedule_conv2d_nchwc_cpu: pad mode 7 is none of", path));
	remove(path);
	ts_graph_exec_free(e0);
	ts_graph_exec_free(e1);
	tg_free(t);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("graph");
	TCase *tc = tcase_create("graph");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_conv_relu);
	tcase_add_test(tc, test_conv_unblocked);
	tcase_add_test(tc, test_residual_block);
	tcase_add_test(tc, test_mobilenet_block);
	tcase_add_test(tc, test_pointwise_rows_as_one);
	tcase_add_test(tc, test_pointwise_rows_merged);
	tcase_add_test(tc, test_batchnorm_affine);
	tcase_add_test(tc, test_batchnorm_chain_folds_once);
	tcase_add_test(tc, test_pool_head);
	tcase_add_test(tc, test_attention);
	tcase_add_test(tc, test_gelu_region);
	tcase_add_test(tc, test_region_escape);
	tcase_add_test(tc, test_elementwise_broadcast);
	tcase_add_test(tc, test_concat_matmul_batched);
	tcase_add_test(tc, test_matmul_broadcast);
	tcase_add_test(tc, test_matmul_vector);
	tcase_add_test(tc, test_matmul_self);
	tcase_add_test(tc, test_random_graphs);
	tcase_add_test(tc, test_random_sequence_graphs);
	tcase_add_test(tc, test_constant_views);
	tcase_add_test(tc, test_stale_error);
	tcase_add_test(tc, test_trace_and_print);
	tcase_add_test(tc, test_tuned_convolutions);
	tcase_add_test(tc, test_long_chains);
	tcase_add_test(tc, test_silu_chain_compiles);
	tcase_add_test(tc, test_inplace_residuals);
	tcase_add_test(tc, test_broadcast_kernels_distinct);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
