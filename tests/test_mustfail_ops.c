/*
 * test_mustfail_ops.c - misuse of ts_op_stage and of the softmax and
 * depthwise schedules:
 * each returns NULL or an error status and names the call, the tensor and
 * what exists instead.
 */
#include "testutil.h"

#include <string.h>

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

int main(void)
{
	Suite *s = suite_create("mustfail_ops");
	TCase *tc = tcase_create("mustfail_ops");
	tcase_add_test(tc, op_stage_unknown_name);
	tcase_add_test(tc, op_stage_placeholder_name);
	tcase_add_test(tc, op_stage_not_a_dependency);
	tcase_add_test(tc, op_stage_null_arguments);
	tcase_add_test(tc, schedule_softmax_not_softmax);
	tcase_add_test(tc, schedule_softmax_bad_arguments);
	tcase_add_test(tc, schedule_depthwise_not_a_window);
	tcase_add_test(tc, schedule_depthwise_bad_arguments);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
