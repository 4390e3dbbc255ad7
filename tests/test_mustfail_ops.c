/*
 * test_mustfail_ops.c - misuse of ts_op_stage: NULL with an error naming
 * the call, the tensor and the stages that exist instead.
 */
#include "testutil.h"

#include <string.h>

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

int main(void)
{
	Suite *s = suite_create("mustfail_ops");
	TCase *tc = tcase_create("mustfail_ops");
	tcase_add_test(tc, op_stage_unknown_name);
	tcase_add_test(tc, op_stage_placeholder_name);
	tcase_add_test(tc, op_stage_not_a_dependency);
	tcase_add_test(tc, op_stage_null_arguments);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
