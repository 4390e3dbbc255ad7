/*
 * test_depthwise_nchwc.c - ts_op_depthwise_conv2d_nchwc and its CPU
 * schedule ts_schedule_depthwise_nchwc_cpu: the operator computes what the
 * NCHW depthwise operator computes on the same data; the schedule, with
 * and without an epilogue (a bias over the channels and relu6's clip),
 * gives the reference evaluator's result through the LLVM JIT (on the
 * small planes at 1, 2 and 4 threads, and through the interpreter) for
 * strides 1 and 2, paddings 0 to 2, dilation 2, 3x3 and 5x5 kernels,
 * planes of 7x7, 13x11 and 112x112, channel blocks of 8 and 16, and
 * register blocks that do not divide the plane; under an epilogue the
 * convolution has no global buffer.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "lower.h"
#include "op_schedules.h"
#include "printer.h"

/* One layer: C channels in blocks of x, an H x W plane, a k x k kernel. */
typedef struct layer {
	int64_t n, c, h, w, k;
	int x, stride, pad, dil;
} layer;

typedef struct built {
	ts_tensor *params[4];
	int np;
	ts_tensor *C, *Y;
} built;

/* Y = depthwise_nchwc(Xc, Wc), or clip(Y + bias, 0, 6) with `epilogue`. */
static built build(ts_ctx *ctx, const layer *g, bool epilogue)
{
	built b = {.np = 0};
	ts_tensor *X = ts_placeholder(ctx, "Xc", TS_SHAPE(g->n, g->c / g->x, g->h, g->w, g->x),
				      ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "Wc", TS_SHAPE(g->c / g->x, g->k, g->k, g->x), ts_float32);
	b.C = ts_op_depthwise_conv2d_nchwc(ctx, X, W, g->stride, g->stride, g->pad, g->pad, g->dil,
					   g->dil);
	tu_nonnull(ctx, b.C);
	b.params[b.np++] = X, b.params[b.np++] = W;
	b.Y = b.C;
	if (epilogue) {
		ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(g->c), ts_float32);
		b.Y = ts_op_clip(ctx, tu_bias_nchwc(ctx, b.C, bias), 0, 6);
		tu_nonnull(ctx, b.Y);
		b.params[b.np++] = bias;
	}
	b.params[b.np++] = b.Y;
	return b;
}

/* Schedules g with p (NULL: the defaults) and checks it against ts_eval:
 * through the interpreter and the JIT at 1, 2 and 4 threads, or, for big
 * planes (`jit_only`), through the JIT alone. */
static void check(const layer *g, bool epilogue, const ts_depthwise_cpu_params *p, bool jit_only)
{
	char what[200];
	snprintf(what, sizeof what,
		 "%s, N %lld, C %lld / %d, %lldx%lld, k %lld, s %d, p %d, d %d, blocks %lldx%lld",
		 epilogue ? "bias + clip" : "no epilogue", (long long)g->n, (long long)g->c, g->x,
		 (long long)g->h, (long long)g->w, (long long)g->k, g->stride, g->pad, g->dil,
		 p ? (long long)p->oh_block : 0LL, p ? (long long)p->ow_block : 0LL);
	tu_set_context(what);
	ts_ctx *ctx = ts_ctx_new();
	built b = build(ctx, g, epilogue);
	ts_schedule *s = ts_create_schedule(ctx, 1, &b.Y);
	tu_nonnull(ctx, s);
	tu_ok(ctx, ts_schedule_depthwise_nchwc_cpu(s, b.Y, p));
	ts_func *f = ts_lower(s, "dw_nchwc", b.np, b.params);
	tu_nonnull(ctx, f);
	/* the block is accumulated in registers: under an epilogue only Y is
	 * stored, the convolution never */
	const char *text = ir_func_str(ctx, f);
	ck_assert_msg(strstr(text, " in local") != NULL, "no local accumulator:\n%s", text);
	ck_assert_msg(!epilogue || !tu_allocates_global(text, b.C->name),
		      "the convolution has a global buffer:\n%s", text);
	if (jit_only)
		tu_check_func_llvm(ctx, f, NULL, 1e-4);
	else
		tu_check_func(ctx, f, 1e-4);
	ts_ctx_free(ctx);
	tu_set_context(NULL);
}

static void check_both(const layer *g, const ts_depthwise_cpu_params *p, bool jit_only)
{
	check(g, false, p, jit_only);
	check(g, true, p, jit_only);
}

/* Register blocks neither 7 nor 13 nor 11 divides, serial; and blocks
 * wider and taller than the plane (clamped to it). */
static const ts_depthwise_cpu_params odd = {.ow_block = 4, .oh_block = 3, .parallel = false};
static const ts_depthwise_cpu_params wide = {.ow_block = 5, .oh_block = 2, .parallel = true};
static const ts_depthwise_cpu_params huge = {.ow_block = 64, .oh_block = 40, .parallel = true};

/* MobileNet-v2's 3x3 layers in small: stride 1 and 2, pad 1. */
START_TEST(test_3x3_pad1)
{
	layer l7 = {.n = 1, .c = 32, .h = 7, .w = 7, .k = 3, .x = 16, .stride = 1, .pad = 1, .dil = 1};
	layer l13 = {.n = 2, .c = 16, .h = 13, .w = 11, .k = 3, .x = 8, .stride = 2, .pad = 1, .dil = 1};
	check_both(&l7, NULL, false);
	check_both(&l7, &odd, false);
	check_both(&l13, NULL, false);
	check_both(&l13, &wide, false);
	check_both(&l13, &huge, false);
}
END_TEST

/* No padding stage (pad 0), and pad 2 around a 5x5 kernel. */
START_TEST(test_5x5_pads)
{
	layer l0 = {.n = 1, .c = 16, .h = 13, .w = 11, .k = 5, .x = 8, .stride = 1, .pad = 0, .dil = 1};
	layer l2 = {.n = 1, .c = 16, .h = 7, .w = 7, .k = 5, .x = 16, .stride = 2, .pad = 2, .dil = 1};
	check_both(&l0, NULL, false);
	check_both(&l0, &odd, false);
	check_both(&l2, NULL, false);
	check_both(&l2, &wide, false);
}
END_TEST

/* A dilated window reads every other row and column. */
START_TEST(test_dilation)
{
	layer d = {.n = 1, .c = 8, .h = 13, .w = 11, .k = 3, .x = 8, .stride = 1, .pad = 2, .dil = 2};
	layer d2 = {.n = 1, .c = 16, .h = 13, .w = 11, .k = 3, .x = 16, .stride = 2, .pad = 1, .dil = 2};
	check_both(&d, NULL, false);
	check_both(&d, &odd, false);
	check_both(&d2, NULL, false);
}
END_TEST

/* A MobileNet-v2 plane at full size, one channel block. */
START_TEST(test_large_plane)
{
	layer s1 = {.n = 1, .c = 16, .h = 112, .w = 112, .k = 3, .x = 16, .stride = 1, .pad = 1, .dil = 1};
	layer s2 = {.n = 1, .c = 8, .h = 112, .w = 112, .k = 3, .x = 8, .stride = 2, .pad = 1, .dil = 1};
	const ts_depthwise_cpu_params cols9 = {.ow_block = 9, .oh_block = 1, .parallel = true};
	check_both(&s1, NULL, true);
	check_both(&s1, &cols9, true);
	check_both(&s2, NULL, true);
}
END_TEST

/* Wc[cb, r, s, ci] = W[cb*x + ci, 0, r, s]. */
static ts_tensor *blocked_weights(ts_ctx *ctx, ts_tensor *W, int64_t x)
{
	static const char *const names[] = {"cb", "r", "s", "ci"};
	ts_expr *v[4];
	for (int d = 0; d < 4; d++)
		v[d] = ts_var(ctx, names[d]);
	ts_expr *ch = ts_add(ctx, ts_mul(ctx, v[0], ts_make_const(ctx, ts_int32, (double)x)), v[3]);
	ts_expr *zero = ts_make_const(ctx, ts_int32, 0);
	return ts_compute(ctx, "Wc", TS_SHAPE(W->shape[0] / x, W->shape[2], W->shape[3], x), v,
			  TS_READ(ctx, W, ch, zero, v[1], v[2]));
}

/* The default block of a 3x3 window over one vector of channels keeps its
 * accumulators, the 9 weight vectors and a few inputs in the CPU's vector
 * registers: 14 columns with AVX-512's 32, 4 with AVX2's 16 (14 spilled
 * and ran 1.5-2x slower there); still the reference's results. */
START_TEST(test_default_block_fits_registers)
{
	int64_t lanes = ts_cpu_vector_lanes(), regs = lanes == 16 ? 32 : 16;
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 1, 14, 112, lanes), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "Wc", TS_SHAPE(1, 3, 3, lanes), ts_float32);
	ts_tensor *Y = ts_op_depthwise_conv2d_nchwc(ctx, X, W, 1, 1, 1, 1, 1, 1);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_depthwise_nchwc_cpu(s, Y, NULL));
	const char *str = ts_schedule_str(s), *rows = strstr(str, "split y -> y.outer, y.inner (factor "),
		   *cols = strstr(str, "split x -> x.outer, x.inner (factor ");
	ck_assert_msg(rows && cols, "%s", str);
	long oh = strtol(rows + strlen("split y -> y.outer, y.inner (factor "), NULL, 10);
	long ow = strtol(cols + strlen("split x -> x.outer, x.inner (factor "), NULL, 10);
	ck_assert_msg(oh >= 1 && ow >= 4 && oh * ow + 9 + 3 <= regs, "a block of %ld x %ld with %lld registers:\n%s",
		      oh, ow, (long long)regs, str);
	ck_assert_int_eq(ow, lanes == 16 ? 14 : 4);
	tu_check_func_llvm(ctx, ts_lower(s, "dw", 3, (ts_tensor *[]){X, W, Y}), NULL, 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* The blocked operator on blocked copies of X and W, converted back, is the
 * NCHW depthwise operator (ts_eval of both). */
START_TEST(test_same_as_nchw)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(2, 16, 9, 10), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(16, 1, 3, 3), ts_float32);
	ts_tensor *Xc = ts_op_layout_nchw_to_nchwc(ctx, X, 8);
	ts_tensor *Yc = ts_op_depthwise_conv2d_nchwc(ctx, Xc, blocked_weights(ctx, W, 8), 2, 1, 1, 2,
						     1, 2);
	ts_tensor *Y = ts_op_layout_nchwc_to_nchw(ctx, Yc);
	ts_tensor *R = ts_op_depthwise_conv2d_nchw(ctx, X, W, 2, 1, 1, 2, 1, 2);
	tu_nonnull(ctx, Y);
	tu_nonnull(ctx, R);
	ck_assert_int_eq(Y->ndim, 4);
	for (int d = 0; d < 4; d++)
		ck_assert_int_eq(Y->shape[d], R->shape[d]);
	ts_array *x = ts_array_for(ctx, X), *w = ts_array_for(ctx, W);
	ts_array *y = ts_array_for(ctx, Y), *r = ts_array_for(ctx, R);
	ts_array_fill_random(x, 1, -1, 1);
	ts_array_fill_random(w, 2, -1, 1);
	tu_ok(ctx, ts_eval(ctx, 3, (ts_tensor *[]){X, W, Y}, (void *[]){x->data, w->data, y->data}));
	tu_ok(ctx, ts_eval(ctx, 3, (ts_tensor *[]){X, W, R}, (void *[]){x->data, w->data, r->data}));
	tu_assert_close(y, r, 1e-6, 1e-6);
	ts_array_free(x);
	ts_array_free(w);
	ts_array_free(y);
	ts_array_free(r);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("depthwise_nchwc");
	TCase *tc = tcase_create("depthwise_nchwc");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_same_as_nchw);
	tcase_add_test(tc, test_default_block_fits_registers);
	tcase_add_test(tc, test_3x3_pad1);
	tcase_add_test(tc, test_5x5_pads);
	tcase_add_test(tc, test_dilation);
	tcase_add_test(tc, test_large_plane);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
