/*
 * test_softmax.c - softmax's inner stages reached with ts_op_stage, and the
 * CPU softmax schedule (ts_schedule_softmax_cpu) against the reference
 * evaluator on shapes the vector width does and does not divide.
 */
#include "testutil.h"

#include <string.h>

#include "lower.h"
#include "op_schedules.h"
#include "ops.h"

START_TEST(op_stage_finds_inner_stages)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(4, 6), ts_float32);
	ts_tensor *Y = ts_op_softmax(ctx, X);
	tu_nonnull(ctx, Y);
	const char *names[] = {"softmax", "softmax_max", "softmax_exp", "softmax_sum"};
	for (int i = 0; i < 4; i++) {
		ts_tensor *t = ts_op_stage(Y, names[i]);
		tu_nonnull(ctx, t);
		ck_assert_str_eq(t->name, names[i]);
		ck_assert_int_eq(t->op, TS_OP_COMPUTE);
	}
	ck_assert_ptr_eq(ts_op_stage(Y, "softmax"), Y);
	/* the sum reads the exponentials, which read the max */
	ts_tensor *S = ts_op_stage(Y, "softmax_sum"), *E = ts_op_stage(Y, "softmax_exp");
	ck_assert_ptr_eq(S->inputs[0], E);
	ck_assert_ptr_eq(ts_op_stage(S, "softmax_max"), ts_op_stage(Y, "softmax_max"));
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ts_ctx_free(ctx);
}
END_TEST

/* A user's own softmax schedule through ts_op_stage: the reductions in
 * the output's row loop, the exponentials inlined. */
START_TEST(op_stage_user_schedule)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(6, 11), ts_float32);
	ts_tensor *Y = ts_op_softmax(ctx, X);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_nonnull(ctx, s);
	ts_stage *sy = ts_stage_of(s, Y);
	ts_axis *row = ts_axis_of(sy, 0);
	tu_ok(ctx, ts_compute_inline(ts_stage_of(s, ts_op_stage(Y, "softmax_exp"))));
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, ts_op_stage(Y, "softmax_max")), sy, row));
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, ts_op_stage(Y, "softmax_sum")), sy, row));
	tu_check_func(ctx, ts_lower(s, "softmax_user", 2, (ts_tensor *[]){X, Y}), 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

static void check_schedule(int ndim, const int64_t *shape, int lanes)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", ndim, shape, ts_float32);
	ts_tensor *Y = ts_op_softmax(ctx, X);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_nonnull(ctx, s);
	tu_ok(ctx, ts_schedule_softmax_cpu(s, Y, lanes));
	tu_check_func(ctx, ts_lower(s, "softmax", 2, (ts_tensor *[]){X, Y}), 1e-5);
	ts_ctx_free(ctx);
}

START_TEST(schedule_softmax_cpu_rows)
{
	check_schedule(2, (int64_t[]){5, 13}, 8);   /* 13 = 8 + a tail of 5 */
	check_schedule(2, (int64_t[]){12, 128}, 8); /* BERT attention rows */
	check_schedule(2, (int64_t[]){7, 37}, 16);
	check_schedule(2, (int64_t[]){3, 5}, 8);    /* rows narrower than a vector */
	check_schedule(2, (int64_t[]){4, 9}, 1);
	check_schedule(3, (int64_t[]){2, 3, 19}, 8); /* leading axes fused into rows */
	check_schedule(4, (int64_t[]){2, 2, 3, 17}, 4);
}
END_TEST

START_TEST(schedule_softmax_cpu_1d)
{
	check_schedule(1, (int64_t[]){29}, 8);
	check_schedule(1, (int64_t[]){3}, 8);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("softmax");
	TCase *tc = tcase_create("softmax");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, op_stage_finds_inner_stages);
	tcase_add_test(tc, op_stage_user_schedule);
	tcase_add_test(tc, schedule_softmax_cpu_rows);
	tcase_add_test(tc, schedule_softmax_cpu_1d);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
