/*
 * test_window_cpu.c - ts_schedule_depthwise_cpu on depthwise convolutions
 * and poolings of every stride, padding, dilation and multiplier, on
 * shapes its blocks do not divide, against the reference evaluator (the
 * interpreter, then the LLVM JIT at 1, 2 and 4 threads); and the two
 * vector loads the LLVM backend emits for such windows instead of a
 * gather: a stride-2..4 read as one masked load and a shuffle, a padding
 * stage's clamped read as one masked load and its two end elements.
 */
#include "testutil.h"

#include <string.h>

#include "build.h"
#include "lower.h"
#include "op_schedules.h"

typedef struct window {
	int64_t C, H, W, R, S;
	int stride, pad, dil, mult;
	bool pool;
} window;

/* Y = depthwise(X, W) or max_pool(X) of w, scheduled with p. */
static ts_func *window_func(ts_ctx *ctx, window w, const ts_depthwise_cpu_params *p)
{
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(2, w.C, w.H, w.W), ts_float32);
	ts_tensor *K = ts_placeholder(ctx, "K", TS_SHAPE(w.C, w.mult, w.R, w.S), ts_float32);
	ts_tensor *Y = w.pool ? ts_op_max_pool2d(ctx, X, (int)w.R, (int)w.S, w.stride, w.stride, w.pad, w.pad)
			      : ts_op_depthwise_conv2d_nchw(ctx, X, K, w.stride, w.stride, w.pad, w.pad, w.dil,
							    w.dil);
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_depthwise_cpu(s, Y, p));
	return w.pool ? ts_lower(s, "pool", 2, (ts_tensor *[]){X, Y}) : ts_lower(s, "dw", 3, (ts_tensor *[]){X, K, Y});
}

static void check_window(window w, const ts_depthwise_cpu_params *p)
{
	char what[160];
	snprintf(what, sizeof what, "%s C%lld %lldx%lld k%lldx%lld s%d p%d d%d m%d", w.pool ? "pool" : "depthwise",
		 (long long)w.C, (long long)w.H, (long long)w.W, (long long)w.R, (long long)w.S, w.stride, w.pad,
		 w.dil, w.mult);
	tu_set_context(what);
	ts_ctx *ctx = ts_ctx_new();
	tu_check_func(ctx, window_func(ctx, w, p), 1e-4);
	ts_ctx_free(ctx);
	tu_set_context(NULL);
}

START_TEST(depthwise_defaults)
{
	/* MobileNet-like: wide rows (two vectors), a row of one vector, rows
	 * narrower than a vector, strides 1 and 2 */
	check_window((window){.C = 3, .H = 40, .W = 37, .R = 3, .S = 3, .stride = 1, .pad = 1, .dil = 1, .mult = 1}, NULL);
	check_window((window){.C = 2, .H = 33, .W = 35, .R = 3, .S = 3, .stride = 2, .pad = 1, .dil = 1, .mult = 1}, NULL);
	check_window((window){.C = 5, .H = 7, .W = 7, .R = 3, .S = 3, .stride = 1, .pad = 1, .dil = 1, .mult = 1}, NULL);
	check_window((window){.C = 4, .H = 14, .W = 17, .R = 3, .S = 3, .stride = 1, .pad = 1, .dil = 1, .mult = 1}, NULL);
}
END_TEST

START_TEST(depthwise_odd_windows)
{
	/* no padding; stride 3; dilation 2; a 5x3 kernel with padding 2; a
	 * channel multiplier of 2; a 1x1 image padded to 3x3 */
	check_window((window){.C = 3, .H = 11, .W = 29, .R = 3, .S = 3, .stride = 1, .pad = 0, .dil = 1, .mult = 1}, NULL);
	check_window((window){.C = 2, .H = 20, .W = 41, .R = 3, .S = 3, .stride = 3, .pad = 1, .dil = 1, .mult = 1}, NULL);
	check_window((window){.C = 2, .H = 12, .W = 23, .R = 3, .S = 3, .stride = 1, .pad = 2, .dil = 2, .mult = 1}, NULL);
	check_window((window){.C = 3, .H = 9, .W = 19, .R = 5, .S = 3, .stride = 1, .pad = 2, .dil = 1, .mult = 1}, NULL);
	check_window((window){.C = 3, .H = 10, .W = 18, .R = 3, .S = 3, .stride = 2, .pad = 1, .dil = 1, .mult = 2}, NULL);
	check_window((window){.C = 2, .H = 1, .W = 1, .R = 3, .S = 3, .stride = 1, .pad = 1, .dil = 1, .mult = 1}, NULL);
}
END_TEST

/* Blocks given by the caller: larger than the image, not dividing it, a
 * big kernel that is not unrolled, no parallel loop. */
START_TEST(depthwise_explicit_blocks)
{
	window w = {.C = 3, .H = 13, .W = 21, .R = 3, .S = 3, .stride = 1, .pad = 1, .dil = 1, .mult = 1};
	check_window(w, &(ts_depthwise_cpu_params){.ow_block = 8, .oh_block = 3, .parallel = true});
	check_window(w, &(ts_depthwise_cpu_params){.ow_block = 32, .oh_block = 20, .parallel = false});
	check_window(w, &(ts_depthwise_cpu_params){.ow_block = 5, .oh_block = 1, .parallel = true});
	w.R = w.S = 11;
	w.pad = 5;
	check_window(w, &(ts_depthwise_cpu_params){.ow_block = 16, .oh_block = 4, .parallel = true});
}
END_TEST

START_TEST(pooling)
{
	check_window((window){.C = 3, .H = 19, .W = 37, .R = 3, .S = 3, .stride = 2, .pad = 1, .dil = 1, .mult = 1,
			      .pool = true}, NULL);
	check_window((window){.C = 2, .H = 8, .W = 8, .R = 2, .S = 2, .stride = 2, .pad = 0, .dil = 1, .mult = 1,
			      .pool = true}, NULL);
}
END_TEST

/* The optimized LLVM IR of f. */
static const char *llvm_ir(ts_ctx *ctx, const ts_func *f)
{
	tu_nonnull(ctx, f);
	ts_module *m = ts_build(ctx, f, "llvm");
	tu_nonnull(ctx, m);
	const char *ir = ts_strdup(ctx, ts_module_source(m, "llvm-opt"));
	ts_module_free(m);
	return ir;
}

/* C[i] = A[s*i + 1] + A[s*i] vectorized, s = 2, 3, 4, 5 over 37 outputs
 * (a partitioned tail): strides 2 to 4 read with masked loads, never past
 * the last element the scalar code reads (A has exactly s*36 + 2). */
START_TEST(strided_loads)
{
	for (int s = 2; s <= 5; s++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(s * 36 + 2), ts_float32);
		ts_expr *i = ts_var(ctx, "i");
		ts_expr *si = ts_mul(ctx, ts_int(ctx, s), i);
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(37), TS_VARS(i),
					  ts_add(ctx, TS_READ(ctx, A, ts_add(ctx, si, ts_int(ctx, 1))), TS_READ(ctx, A, si)));
		ts_schedule *sch = ts_create_schedule(ctx, 1, &C);
		ts_stage *sc = ts_stage_of(sch, C);
		ts_axis *o, *in;
		tu_ok(ctx, ts_split_tail(sc, ts_axis_of(sc, 0), 8, TS_TAIL_PARTITION, &o, &in));
		tu_ok(ctx, ts_vectorize(sc, in));
		ts_func *f = ts_lower(sch, "strided", 2, (ts_tensor *[]){A, C});
		tu_check_func(ctx, f, 1e-6);
		const char *ir = llvm_ir(ctx, f);
		if (s <= 4)
			ck_assert_msg(strstr(ir, "masked.load") && !strstr(ir, "masked.gather"),
				      "stride %d: expected masked loads, no gather", s);
		else
			ck_assert_msg(strstr(ir, "masked.gather"), "stride %d: expected a gather", s);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* A padding stage vectorized along its padded axis, for widths where the
 * vector starts before the image, ends after it, covers it whole, or lies
 * inside it: the clamped read is a masked load, and every lane is right. */
START_TEST(clamped_loads)
{
	static const int64_t widths[] = {1, 3, 16, 17, 40};
	for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(3, widths[k]), ts_float32);
		ts_tensor *P = ts_op_pad(ctx, X, (int64_t[]){1, 3}, (int64_t[]){2, 5}, 0.5);
		tu_nonnull(ctx, P);
		ts_schedule *s = ts_create_schedule(ctx, 1, &P);
		ts_stage *sp = ts_stage_of(s, P);
		ts_axis *o, *in;
		tu_ok(ctx, ts_split_tail(sp, ts_axis_of(sp, 1), 8, TS_TAIL_PARTITION, &o, &in));
		tu_ok(ctx, ts_vectorize(sp, in));
		ts_func *f = ts_lower(s, "pad", 2, (ts_tensor *[]){X, P});
		tu_check_func(ctx, f, 0);
		const char *ir = llvm_ir(ctx, f);
		/* (a width of 1 clamps every lane to column 0: one broadcast) */
		ck_assert_msg((widths[k] == 1 || strstr(ir, "masked.load")) && !strstr(ir, "masked.gather"),
			      "width %lld: expected a masked load, no gather", (long long)widths[k]);
		ts_ctx_free(ctx);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("window_cpu");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, depthwise_defaults);
	tcase_add_test(tc, depthwise_odd_windows);
	tcase_add_test(tc, depthwise_explicit_blocks);
	tcase_add_test(tc, pooling);
	tcase_add_test(tc, strided_loads);
	tcase_add_test(tc, clamped_loads);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
