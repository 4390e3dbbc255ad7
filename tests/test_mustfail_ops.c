/*
 * test_mustfail_ops.c - misuse of ts_op_stage, of the blocked depthwise
 * operator and of the softmax and depthwise schedules:
 * each returns NULL or an error status and names the call, the tensor and
 * what exists instead.
 */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "eval.h"
#include "op_schedules.h"
#include "ops.h"

typedef struct sm {
	ts_ctx *ctx;
	ts_tensor *X, *Y;
} sm;

static sm softmax(void)
{
	sm g = {.ctx = ts_ctx_new()};
	g.X = ts_placeholder(g.ctx, "X", TS_SHAPE(4, 6), ts_float32);
	g.Y = ts_op_softmax(g.ctx, g.X);
	tu_nonnull(g.ctx, g.Y);
	return g;
}

START_TEST(op_stage_unknown_name)
{
	sm g = softmax();
	ck_assert_ptr_null(ts_op_stage(g.Y, "softmax_mx"));
	tu_assert_error(g.ctx, "op_stage(softmax): no compute stage named 'softmax_mx'");
	tu_assert_error(g.ctx, "(softmax, softmax_exp, softmax_sum, softmax_max)");
	ts_ctx_free(g.ctx);
}
END_TEST

/* A placeholder is an input, not a stage of the operator. */
START_TEST(op_stage_placeholder_name)
{
	sm g = softmax();
	ck_assert_ptr_null(ts_op_stage(g.Y, "X"));
	tu_assert_error(g.ctx, "no compute stage named 'X'");
	ts_ctx_free(g.ctx);
}
END_TEST

/* The stages an error lists are cut short in a long graph (the list was
 * rebuilt once per stage: 10000 stages took 430 MB). */
START_TEST(op_stage_long_graph)
{
	ts_ctx *c = ts_ctx_new();
	ts_tensor *t = ts_placeholder(c, "A", TS_SHAPE(1), ts_float32);
	ts_expr *i = ts_var(c, "i");
	for (int k = 0; k < 5000; k++)
		t = ts_compute(c, "stage", TS_SHAPE(1), TS_VARS(i), ts_add(c, TS_READ(c, t, i), ts_float(c, 1)));
	tu_nonnull(c, t);
	ck_assert_ptr_null(ts_op_stage(t, "nope"));
	tu_assert_error(c, "op_stage(stage): no compute stage named 'nope' among those stage depends on "
			   "(stage, stage, stage");
	tu_assert_error(c, ", ...)");
	ck_assert_int_lt((int)strlen(ts_last_error(c)), 1024);
	ts_ctx_free(c);
}
END_TEST

/* A stage the output does not depend on is not found. */
START_TEST(op_stage_not_a_dependency)
{
	sm g = softmax();
	ts_tensor *M = ts_op_stage(g.Y, "softmax_max");
	tu_nonnull(g.ctx, M);
	ck_assert_ptr_null(ts_op_stage(M, "softmax_sum"));
	tu_assert_error(g.ctx, "op_stage(softmax_max): no compute stage named 'softmax_sum' among those softmax_max depends on (softmax_max)");
	ts_ctx_free(g.ctx);
}
END_TEST

START_TEST(op_stage_null_arguments)
{
	sm g = softmax();
	ck_assert_ptr_null(ts_op_stage(g.Y, NULL));
	tu_assert_error(g.ctx, "op_stage(softmax): stage name is NULL");
	ck_assert_ptr_null(ts_op_stage(NULL, "softmax_max"));
	ts_ctx_free(g.ctx);
}
END_TEST

START_TEST(schedule_softmax_not_softmax)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(4, 6), ts_float32);
	ts_tensor *R = ts_op_relu(ctx, X);
	ts_schedule *s = ts_create_schedule(ctx, 1, &R);
	tu_nonnull(ctx, s);
	ck_assert_int_eq(ts_schedule_softmax_cpu(s, R, 8), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_softmax_cpu: relu is not a softmax (ts_op_softmax): it has no stage softmax_max");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(schedule_softmax_bad_arguments)
{
	sm g = softmax();
	ts_schedule *s = ts_create_schedule(g.ctx, 1, &g.Y);
	tu_nonnull(g.ctx, s);
	ck_assert_int_eq(ts_schedule_softmax_cpu(s, g.Y, 0), TS_ERR_INVALID);
	tu_assert_error(g.ctx, "schedule_softmax_cpu: lanes must be 1..");
	ts_clear_error(g.ctx);
	ck_assert_int_eq(ts_schedule_softmax_cpu(s, NULL, 8), TS_ERR_INVALID);
	tu_assert_error(g.ctx, "schedule_softmax_cpu: tensor is NULL");
	ck_assert_int_eq(ts_schedule_softmax_cpu(NULL, g.Y, 8), TS_ERR_INVALID);
	ts_ctx_free(g.ctx);
}
END_TEST

START_TEST(schedule_depthwise_not_a_window)
{
	sm g = softmax();
	ts_schedule *s = ts_create_schedule(g.ctx, 1, &g.Y);
	tu_nonnull(g.ctx, s);
	ck_assert_int_eq(ts_schedule_depthwise_cpu(s, g.Y, NULL), TS_ERR_INVALID);
	tu_assert_error(g.ctx, "schedule_depthwise_cpu: softmax is not a 2-D window over NCHW");
	ts_ctx_free(g.ctx);
}
END_TEST

START_TEST(schedule_depthwise_bad_arguments)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 4, 9, 9), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(4, 1, 3, 3), ts_float32);
	ts_tensor *Y = ts_op_depthwise_conv2d_nchw(ctx, X, W, 1, 1, 1, 1, 1, 1);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_nonnull(ctx, s);
	ts_depthwise_cpu_params p = {.ow_block = -1, .oh_block = 2, .parallel = true};
	ck_assert_int_eq(ts_schedule_depthwise_cpu(s, Y, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_depthwise_cpu: ow_block and oh_block must be >= 0");
	ts_clear_error(ctx);
	/* a block wider than the row is the row */
	p.ow_block = 200;
	tu_ok(ctx, ts_schedule_depthwise_cpu(s, Y, &p));
	tu_check_func(ctx, ts_lower(s, "dw", 3, (ts_tensor *[]){X, W, Y}), 1e-4);
	ck_assert_int_eq(ts_schedule_depthwise_cpu(s, NULL, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_depthwise_cpu: tensor is NULL");
	ck_assert_int_eq(ts_schedule_depthwise_cpu(NULL, Y, NULL), TS_ERR_INVALID);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- depthwise on NCHW[x]c -------------------------------------------------------- */

typedef struct dwc {
	ts_ctx *ctx;
	ts_tensor *X, *W, *Y;
} dwc;

/* Xc[1, 2, 9, 9, 8] * Wc[2, 3, 3, 8], stride 1, pad 1. */
static dwc depthwise_nchwc(void)
{
	dwc g = {.ctx = ts_ctx_new()};
	g.X = ts_placeholder(g.ctx, "Xc", TS_SHAPE(1, 2, 9, 9, 8), ts_float32);
	g.W = ts_placeholder(g.ctx, "Wc", TS_SHAPE(2, 3, 3, 8), ts_float32);
	g.Y = ts_op_depthwise_conv2d_nchwc(g.ctx, g.X, g.W, 1, 1, 1, 1, 1, 1);
	tu_nonnull(g.ctx, g.Y);
	return g;
}

/* The filter's channel blocks must be the input's: their count and width. */
START_TEST(depthwise_nchwc_blocks_differ)
{
	dwc g = depthwise_nchwc();
	ts_tensor *W16 = ts_placeholder(g.ctx, "W16", TS_SHAPE(1, 3, 3, 16), ts_float32);
	FAILS_NULL(g.ctx, ts_op_depthwise_conv2d_nchwc(g.ctx, g.X, W16, 1, 1, 1, 1, 1, 1),
		   "depthwise_conv2d_nchwc: channel blocks differ: Xc[1, 2, 9, 9, 8] has 2 x 8, "
		   "W16[1, 3, 3, 16] has 1 x 16");
	ts_tensor *W3 = ts_placeholder(g.ctx, "W3", TS_SHAPE(3, 3, 3, 8), ts_float32);
	FAILS_NULL(g.ctx, ts_op_depthwise_conv2d_nchwc(g.ctx, g.X, W3, 1, 1, 1, 1, 1, 1),
		   "W3[3, 3, 3, 8] has 3 x 8");
	ts_ctx_free(g.ctx);
}
END_TEST

START_TEST(depthwise_nchwc_bad_shapes)
{
	dwc g = depthwise_nchwc();
	ts_tensor *X4 = ts_placeholder(g.ctx, "X4", TS_SHAPE(1, 16, 9, 9), ts_float32);
	FAILS_NULL(g.ctx, ts_op_depthwise_conv2d_nchwc(g.ctx, X4, g.W, 1, 1, 1, 1, 1, 1),
		   "depthwise_conv2d_nchwc");
	tu_assert_error(g.ctx, "X4");
	ts_tensor *W6 = ts_placeholder(g.ctx, "W6", TS_SHAPE(2, 1, 3, 3, 8, 8), ts_float32);
	FAILS_NULL(g.ctx, ts_op_depthwise_conv2d_nchwc(g.ctx, g.X, W6, 1, 1, 1, 1, 1, 1),
		   "depthwise_conv2d_nchwc");
	tu_assert_error(g.ctx, "W6");
	/* a 3x3 window over a 9x9 plane without padding fits; 11x11 does not */
	ts_tensor *W11 = ts_placeholder(g.ctx, "W11", TS_SHAPE(2, 11, 11, 8), ts_float32);
	FAILS_NULL(g.ctx, ts_op_depthwise_conv2d_nchwc(g.ctx, g.X, W11, 1, 1, 0, 0, 1, 1),
		   "depthwise_conv2d_nchwc");
	FAILS_NULL(g.ctx, ts_op_depthwise_conv2d_nchwc(g.ctx, g.X, g.W, 0, 1, 1, 1, 1, 1),
		   "depthwise_conv2d_nchwc");
	ts_tensor *Wi = ts_placeholder(g.ctx, "Wi", TS_SHAPE(2, 3, 3, 8), ts_int32);
	FAILS_NULL(g.ctx, ts_op_depthwise_conv2d_nchwc(g.ctx, g.X, Wi, 1, 1, 1, 1, 1, 1),
		   "depthwise_conv2d_nchwc");
	FAILS_NULL(g.ctx, ts_op_depthwise_conv2d_nchwc(g.ctx, NULL, g.W, 1, 1, 1, 1, 1, 1),
		   "depthwise_conv2d_nchwc");
	FAILS_NULL(g.ctx, ts_op_depthwise_conv2d_nchwc(g.ctx, g.X, NULL, 1, 1, 1, 1, 1, 1),
		   "depthwise_conv2d_nchwc");
	ts_ctx_free(g.ctx);
}
END_TEST

START_TEST(schedule_depthwise_nchwc_bad_arguments)
{
	dwc g = depthwise_nchwc();
	ts_schedule *s = ts_create_schedule(g.ctx, 1, &g.Y);
	tu_nonnull(g.ctx, s);
	ts_depthwise_cpu_params p = {.ow_block = 4, .oh_block = -2, .parallel = true};
	FAILS_ST(g.ctx, ts_schedule_depthwise_nchwc_cpu(s, g.Y, &p),
		 "schedule_depthwise_nchwc_cpu: ow_block and oh_block must be >= 0 (0: chosen from "
		 "the shape), got 4 and -2");
	FAILS_ST(g.ctx, ts_schedule_depthwise_nchwc_cpu(s, NULL, NULL),
		 "schedule_depthwise_nchwc_cpu: tensor is NULL");
	ck_assert_int_eq(ts_schedule_depthwise_nchwc_cpu(NULL, g.Y, NULL), TS_ERR_INVALID);
	ts_ctx_free(g.ctx);
}
END_TEST

/* The NCHW depthwise operator and the NCHW[x]c convolution are other
 * reductions: the walk from Y finds no blocked depthwise convolution. */
START_TEST(schedule_depthwise_nchwc_not_one)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 4, 9, 9), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(4, 1, 3, 3), ts_float32);
	ts_tensor *Y = ts_op_depthwise_conv2d_nchw(ctx, X, W, 1, 1, 1, 1, 1, 1);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_nonnull(ctx, s);
	FAILS_ST(ctx, ts_schedule_depthwise_nchwc_cpu(s, Y, NULL),
		 "schedule_depthwise_nchwc_cpu(depthwise_conv2d_nchw): stage depthwise_conv2d_nchw "
		 "reduces (it is not an NCHW[x]c depthwise convolution)");
	ts_tensor *Xc = ts_placeholder(ctx, "Xc", TS_SHAPE(1, 1, 9, 9, 4), ts_float32);
	ts_tensor *Wc = ts_placeholder(ctx, "Wc", TS_SHAPE(1, 1, 3, 3, 4, 4), ts_float32);
	ts_tensor *C = ts_op_conv2d_nchwc(ctx, Xc, Wc, 1, 1, 1, 1, 1, 1);
	ts_schedule *s2 = ts_create_schedule(ctx, 1, &C);
	tu_nonnull(ctx, s2);
	FAILS_ST(ctx, ts_schedule_depthwise_nchwc_cpu(s2, C, NULL),
		 "stage conv2d_nchwc reduces (it is not an NCHW[x]c depthwise convolution)");
	ts_ctx_free(ctx);
}
END_TEST

/* An epilogue must be elementwise and read the chain once. */
START_TEST(schedule_depthwise_nchwc_bad_epilogue)
{
	dwc g = depthwise_nchwc();
	/* Y + Y reads two computed tensors (the same one twice is one) */
	ts_tensor *R = ts_op_relu(g.ctx, g.Y);
	ts_tensor *T = ts_op_add(g.ctx, R, ts_op_clip(g.ctx, g.Y, 0, 6));
	ts_schedule *s = ts_create_schedule(g.ctx, 1, &T);
	tu_nonnull(g.ctx, s);
	FAILS_ST(g.ctx, ts_schedule_depthwise_nchwc_cpu(s, T, NULL),
		 "epilogue stage add reads 2 computed tensors; it must read the depthwise "
		 "convolution's chain once");
	/* a reshape to NCHW changes the shape */
	ts_tensor *P = ts_op_layout_nchwc_to_nchw(g.ctx, g.Y);
	ts_schedule *s2 = ts_create_schedule(g.ctx, 1, &P);
	tu_nonnull(g.ctx, s2);
	FAILS_ST(g.ctx, ts_schedule_depthwise_nchwc_cpu(s2, P, NULL),
		 "schedule_depthwise_nchwc_cpu(nchwc_to_nchw)");
	ts_ctx_free(g.ctx);
}
END_TEST

/* A window over an extent near INT64_MAX: the padded extent in + 2*pad
 * overflowed (undefined behaviour) before the window was checked.  It is
 * refused by name; the same extent without padding still gives its exact
 * output extent, and a kernel whose span passes int64 is too large (int8:
 * a float32 tensor that long has more bytes than int64 counts). */
START_TEST(window_extent_near_int64)
{
	ts_ctx *c = ts_ctx_new();
	int64_t h = INT64_MAX - 2;
	ts_tensor *X = ts_placeholder(c, "X", TS_SHAPE(1, 1, h, 1), ts_int8);
	ts_tensor *W1 = ts_placeholder(c, "W1", TS_SHAPE(1, 1, 1, 1), ts_int8);
	ts_tensor *W = ts_placeholder(c, "W", TS_SHAPE(1, 1, 3, 1), ts_int8);
	FAILS_NULL(c, ts_op_conv2d_nchw(c, X, W1, 1, 1, 2, 0, 1, 1, 1),
		   "conv2d_nchw: height extent 9223372036854775805 + 2*2 padding overflows int64");
	FAILS_NULL(c, ts_op_conv2d_nchw(c, X, W, 2, 1, INT32_MAX, 0, 1, 1, 1),
		   "conv2d_nchw: height extent 9223372036854775805 + 2*2147483647 padding overflows int64");
	FAILS_NULL(c, ts_op_max_pool2d(c, X, 3, 1, 1, 1, 2, 0),
		   "pad: X[1, 1, 9223372036854775805, 1]: padding (2, 2) of dimension 2 overflows its extent");
	ts_clear_error(c);
	ts_tensor *Y = ts_op_conv2d_nchw(c, X, W, 1, 1, 0, 0, 1, 1, 1);
	tu_nonnull(c, Y);
	ck_assert_int_eq(Y->shape[2], h - 2);
	Y = ts_op_conv2d_nchw(c, X, W, 4, 1, 0, 0, 1, 1, 1);
	tu_nonnull(c, Y);
	ck_assert_int_eq(Y->shape[2], (h - 3) / 4 + 1);
	ts_tensor *K = ts_placeholder(c, "K", TS_SHAPE(1, 1, INT64_MAX / 2, 1), ts_int8);
	ts_tensor *X4 = ts_placeholder(c, "X4", TS_SHAPE(1, 1, 4, 1), ts_int8);
	FAILS_NULL(c, ts_op_conv2d_nchw(c, X4, K, 1, 1, 1, 0, 4, 1, 1),
		   "conv2d_nchw: height window 9223372036854775807 (kernel 4611686018427387903, "
		   "dilation 4) exceeds input 4 + 2*1 padding");
	ts_ctx_free(c);
}
END_TEST

/* float16 and bfloat16 are both 16 bits wide, but a bfloat16 past 65504
 * became infinity in a float16 accumulation (and float16 lost mantissa
 * bits the other way): neither is as wide as the other. */
START_TEST(matmul_acc_16_bit_across)
{
	ts_ctx *c = ts_ctx_new();
	ts_tensor *A = ts_placeholder(c, "A", TS_SHAPE(3, 4), ts_bfloat16);
	ts_tensor *B = ts_placeholder(c, "B", TS_SHAPE(4, 5), ts_bfloat16);
	FAILS_NULL(c, ts_op_matmul_acc(c, A, B, false, false, ts_float16),
		   "matmul_acc: out_dtype float16: give a scalar float type at least as wide as the "
		   "operands' (bfloat16)");
	ts_tensor *H = ts_placeholder(c, "H", TS_SHAPE(3, 4), ts_float16);
	ts_tensor *G = ts_placeholder(c, "G", TS_SHAPE(4, 5), ts_float16);
	FAILS_NULL(c, ts_op_matmul_acc(c, H, G, false, false, ts_bfloat16),
		   "matmul_acc: out_dtype bfloat16");
	ts_clear_error(c);
	ts_tensor *C = ts_op_matmul_acc(c, A, B, false, false, ts_bfloat16);
	tu_nonnull(c, C);
	ck_assert(ts_dtype_eq(C->dtype, ts_bfloat16));
	tu_nonnull(c, ts_op_matmul_acc(c, H, G, false, false, ts_float32));
	ts_ctx_free(c);
}
END_TEST

/* An elementwise operator on bool fails in the expression builder, whose
 * message names only its own operation (max, mul): the operator called and
 * its tensor come first. */
START_TEST(elementwise_on_bool_named)
{
	ts_ctx *c = ts_ctx_new();
	ts_tensor *X = ts_placeholder(c, "X", TS_SHAPE(2, 3), ts_bool);
	FAILS_NULL(c, ts_op_relu(c, X), "relu(X): max: arithmetic on bool");
	FAILS_NULL(c, ts_op_clip(c, X, 0, 1), "clip(X): ");
	ck_assert_int_eq(ts_last_status(c), TS_ERR_INVALID);
	ts_ctx_free(c);
}
END_TEST

/* Operators that multiply or compare on bool are refused at their own
 * name, before the expression builder's mul or max; matmul_acc into a
 * float dtype counts on bool and stays legal. */
START_TEST(reductions_on_bool_named)
{
	ts_ctx *c = ts_ctx_new();
	ts_tensor *A = ts_placeholder(c, "A", TS_SHAPE(4, 4), ts_bool);
	ts_tensor *B = ts_placeholder(c, "B", TS_SHAPE(4, 4), ts_bool);
	ts_tensor *X = ts_placeholder(c, "X", TS_SHAPE(1, 4, 8, 8), ts_bool);
	ts_tensor *W = ts_placeholder(c, "W", TS_SHAPE(4, 4, 3, 3), ts_bool);
	ts_tensor *Xc = ts_placeholder(c, "Xc", TS_SHAPE(1, 1, 8, 8, 4), ts_bool);
	ts_tensor *Wc = ts_placeholder(c, "Wc", TS_SHAPE(1, 1, 3, 3, 4, 4), ts_bool);
	FAILS_NULL(c, ts_op_matmul(c, A, B, false, false),
		   "matmul: A[4, 4] has dtype bool; matmul needs a numeric dtype");
	FAILS_NULL(c, ts_op_dense(c, A, B, NULL), "dense: A[4, 4] has dtype bool");
	FAILS_NULL(c, ts_op_matmul_packed(c, A, B, 4), "matmul_packed: A[4, 4] has dtype bool");
	FAILS_NULL(c, ts_op_conv2d_nchw(c, X, W, 1, 1, 1, 1, 1, 1, 1),
		   "conv2d_nchw: X[1, 4, 8, 8] has dtype bool");
	FAILS_NULL(c, ts_op_conv2d_nchwc(c, Xc, Wc, 1, 1, 1, 1, 1, 1),
		   "conv2d_nchwc: Xc[1, 1, 8, 8, 4] has dtype bool");
	FAILS_NULL(c, ts_op_max_pool2d(c, X, 2, 2, 2, 2, 0, 0),
		   "max_pool2d: X[1, 4, 8, 8] has dtype bool");
	ck_assert_int_eq(ts_last_status(c), TS_ERR_INVALID);
	ts_clear_error(c);
	ts_tensor *C = ts_op_matmul_acc(c, A, B, false, false, ts_float32);
	tu_nonnull(c, C);
	ck_assert(ts_dtype_eq(C->dtype, ts_float32));
	ts_ctx_free(c);
}
END_TEST

/* The n-th allocation of an operator failing, for every n until the
 * operator is built: it returns NULL with TS_ERR_NOMEM, never a tensor
 * built from what was left (a failed allocation in the padding's bounds
 * test once dropped the test, leaving a read of the clamped border). */
/* the operands: X[1, 3, 6, 5], W[4, 3, 3, 3], G[5] and B[5] */
typedef ts_tensor *(*op_builder)(ts_ctx *c, ts_tensor *const *in);

static ts_tensor *padded_conv(ts_ctx *c, ts_tensor *const *in)
{
	return ts_op_conv2d_nchw(c, in[0], in[1], 1, 1, 1, 2, 1, 1, 1);
}

static ts_tensor *padded(ts_ctx *c, ts_tensor *const *in)
{
	return ts_op_pad(c, in[0], (const int64_t[]){0, 1, 2, 0}, (const int64_t[]){0, 0, 1, 3}, -1.0);
}

static ts_tensor *build_softmax(ts_ctx *c, ts_tensor *const *in)
{
	return ts_op_softmax(c, in[0]);
}

static ts_tensor *build_layer_norm(ts_ctx *c, ts_tensor *const *in)
{
	return ts_op_layer_norm(c, in[0], in[2], in[3], 1e-5);
}

START_TEST(allocation_failures_fail_the_operator)
{
	const op_builder build[] = {padded_conv, padded, build_softmax, build_layer_norm};
	for (int b = 0; b < (int)TS_COUNT_OF(build); b++) {
		int failed = 0;
		for (long n = 1;; n++) {
			ts_ctx *c = ts_ctx_new();
			ts_tensor *in[] = {ts_placeholder(c, "X", TS_SHAPE(1, 3, 6, 5), ts_float32),
					   ts_placeholder(c, "W", TS_SHAPE(4, 3, 3, 3), ts_float32),
					   ts_placeholder(c, "G", TS_SHAPE(5), ts_float32),
					   ts_placeholder(c, "B", TS_SHAPE(5), ts_float32)};
			ts_ctx_fail_alloc_after(c, n);
			ts_tensor *T = build[b](c, in);
			bool past_end = ts_ctx_fail_alloc_pending(c) > 0;
			if (T)
				ck_assert_msg(past_end && ts_last_status(c) == TS_OK,
					      "operator %d: allocation %ld failed and it returned a tensor", b, n);
			else
				ck_assert_int_eq(ts_last_status(c), TS_ERR_NOMEM);
			failed += !T;
			ts_ctx_free(c);
			if (past_end)
				break;
		}
		ck_assert_int_gt(failed, 20);
	}
}
END_TEST

/* Integer clip bounds and pad values: clip keeps the integers inside
 * [lo, hi] and refuses a range holding none of the dtype's values; pad
 * refuses a value the dtype does not hold (converted, 1000 became 127 and
 * 0.5 became 0). */
START_TEST(integer_clip_and_pad_values)
{
	ts_ctx *c = ts_ctx_new();
	ts_tensor *X = ts_placeholder(c, "X", TS_SHAPE(6), ts_int8);
	FAILS_NULL(c, ts_op_clip(c, X, 0.5, 0.7), "clip: X[6]: no int8 value lies in [0.5, 0.7]");
	FAILS_NULL(c, ts_op_clip(c, X, 200, 300), "clip: X[6]: no int8 value lies in [200, 300]");
	FAILS_NULL(c, ts_op_clip(c, X, -300, -129), "no int8 value lies in [-300, -129]");
	const int64_t zero[1] = {0}, two[1] = {2};
	FAILS_NULL(c, ts_op_pad(c, X, two, zero, 1000), "pad: X[6]: the value 1000 is not a int8 value");
	FAILS_NULL(c, ts_op_pad(c, X, two, zero, 0.5), "pad: X[6]: the value 0.5 is not a int8 value");
	FAILS_NULL(c, ts_op_pad(c, X, two, zero, NAN), "pad: X[6]: the value nan is not a int8 value");
	ts_tensor *U = ts_placeholder(c, "U", TS_SHAPE(6), ts_uint8);
	FAILS_NULL(c, ts_op_pad(c, U, two, zero, -1), "pad: U[6]: the value -1 is not a uint8 value");
	/* a float dtype rounds the value, but not to infinity */
	ts_tensor *H = ts_placeholder(c, "H", TS_SHAPE(6), ts_float16);
	FAILS_NULL(c, ts_op_pad(c, H, two, zero, 1e10), "pad: H[6]: the value 1e+10 is not a float16 value");
	ts_tensor *F = ts_placeholder(c, "F", TS_SHAPE(6), ts_float32);
	FAILS_NULL(c, ts_op_pad(c, F, two, zero, -1e39), "pad: F[6]: the value -1e+39 is not a float32 value");
	tu_nonnull(c, ts_op_pad(c, H, two, zero, -INFINITY)); /* infinity itself is a float16 value */
	tu_nonnull(c, ts_op_pad(c, H, two, zero, 65504));
	tu_nonnull(c, ts_op_pad(c, F, two, zero, 0.1)); /* rounded */
	ts_tensor *L = ts_placeholder(c, "L", TS_SHAPE(6), ts_int64);
	tu_nonnull(c, ts_op_pad(c, L, two, zero, -0x1p63)); /* int64's minimum, as max pooling pads */
	ts_tensor *C = ts_op_clip(c, X, -2.5, 3.5), *W = ts_op_clip(c, X, -1000, 1000);
	ts_tensor *P = ts_op_pad(c, X, two, zero, -128);
	tu_nonnull(c, C);
	tu_nonnull(c, W);
	tu_nonnull(c, P);
	int8_t x[6] = {-100, -3, -2, 0, 3, 100}, y[6], w[6], p[8];
	tu_ok(c, ts_eval(c, 4, (ts_tensor *[]){X, C, W, P}, (void *[]){x, y, w, p}));
	static const int8_t want[6] = {-2, -2, -2, 0, 3, 3};
	ck_assert(!memcmp(y, want, sizeof y));
	ck_assert(!memcmp(w, x, sizeof w));
	ck_assert_int_eq(p[0], -128);
	ck_assert_int_eq(p[1], -128);
	ck_assert(!memcmp(p + 2, x, sizeof x));
	ts_ctx_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_ops");
	TCase *tc = tcase_create("mustfail_ops");
	tcase_add_test(tc, op_stage_unknown_name);
	tcase_add_test(tc, reductions_on_bool_named);
	tcase_add_test(tc, integer_clip_and_pad_values);
	tcase_add_test(tc, allocation_failures_fail_the_operator);
	tcase_add_test(tc, op_stage_placeholder_name);
	tcase_add_test(tc, op_stage_not_a_dependency);
	tcase_add_test(tc, op_stage_long_graph);
	tcase_add_test(tc, op_stage_null_arguments);
	tcase_add_test(tc, schedule_softmax_not_softmax);
	tcase_add_test(tc, schedule_softmax_bad_arguments);
	tcase_add_test(tc, schedule_depthwise_not_a_window);
	tcase_add_test(tc, schedule_depthwise_bad_arguments);
	tcase_add_test(tc, depthwise_nchwc_blocks_differ);
	tcase_add_test(tc, depthwise_nchwc_bad_shapes);
	tcase_add_test(tc, schedule_depthwise_nchwc_bad_arguments);
	tcase_add_test(tc, schedule_depthwise_nchwc_not_one);
	tcase_add_test(tc, schedule_depthwise_nchwc_bad_epilogue);
	tcase_add_test(tc, window_extent_near_int64);
	tcase_add_test(tc, matmul_acc_16_bit_across);
	tcase_add_test(tc, elementwise_on_bool_named);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
