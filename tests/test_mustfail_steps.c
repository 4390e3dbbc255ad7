/*
 * test_mustfail_steps.c - with step printing on, a primitive that fails
 * prints nothing (the schedule did not change) and reports its error as
 * usual; ts_schedule_step_str refuses a NULL schedule.
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "stderr_capture.h"

typedef struct mm {
	ts_ctx *ctx;
	ts_tensor *C;
	ts_schedule *s;
	ts_stage *sc;
} mm;

static mm matmul(void)
{
	mm m = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = m.ctx;
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(5, 7), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(7, 3), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 7);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	m.C = ts_compute(ctx, "C", TS_SHAPE(5, 3), TS_VARS(i, j),
			 TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, A, i, k->var), TS_READ(ctx, B, k->var, j)), k));
	m.s = ts_create_schedule(ctx, 1, &m.C);
	tu_nonnull(ctx, m.s);
	m.sc = ts_stage_of(m.s, m.C);
	ts_ctx_set_print_steps(ctx, TS_PRINT_STEPS_NEST);
	return m;
}

/* Runs a failing primitive with printing on: nothing on stderr, and the
 * primitive's own error pending. */
#define ASSERT_SILENT_FAILURE(m, call, part)                                   \
	do {                                                                   \
		tu_capture cap_;                                               \
		tu_capture_begin(&cap_);                                       \
		ts_status st_ = (call);                                        \
		char *text_ = tu_capture_end(&cap_);                           \
		ck_assert_int_eq(st_, TS_ERR_INVALID);                         \
		tu_assert_error((m).ctx, part);                                \
		ck_assert_msg(text_[0] == '\0', "a failed %s printed '%s'", #call, text_); \
		free(text_);                                                   \
	} while (0)

START_TEST(failed_split_prints_nothing)
{
	mm m = matmul();
	ts_axis *o, *in;
	ASSERT_SILENT_FAILURE(m, ts_split(m.sc, ts_axis_of(m.sc, 0), 0, &o, &in),
			      "split(C): factor must be positive, got 0");
	ts_ctx_free(m.ctx);
}
END_TEST

START_TEST(failed_reorder_prints_nothing)
{
	mm m = matmul();
	ts_axis *i = ts_axis_of(m.sc, 0);
	ASSERT_SILENT_FAILURE(m, ts_reorder(m.sc, TS_AXES(i, i)), "reorder(C): axis 'i' appears twice");
	ts_ctx_free(m.ctx);
}
END_TEST

START_TEST(failed_vectorize_prints_nothing)
{
	mm m = matmul();
	ASSERT_SILENT_FAILURE(m, ts_vectorize(m.sc, ts_reduce_axis_of(m.sc, 0)),
			      "vectorize(C): axis 'k' is a reduction axis");
	ts_ctx_free(m.ctx);
}
END_TEST

/* tile fails in its second split: neither that nor its first split prints. */
START_TEST(failed_tile_prints_nothing)
{
	mm m = matmul();
	ts_axis *a, *b, *c, *d;
	ASSERT_SILENT_FAILURE(m, ts_tile(m.sc, ts_axis_of(m.sc, 0), ts_axis_of(m.sc, 0), 2, 2, &a, &b, &c, &d),
			      "tile(C): axis 'i' given twice");
	ts_ctx_free(m.ctx);
}
END_TEST

START_TEST(step_str_of_null)
{
	ck_assert_ptr_null(ts_schedule_step_str(NULL));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_steps");
	TCase *tc = tcase_create("mustfail_steps");
	tcase_add_test(tc, failed_split_prints_nothing);
	tcase_add_test(tc, failed_reorder_prints_nothing);
	tcase_add_test(tc, failed_vectorize_prints_nothing);
	tcase_add_test(tc, failed_tile_prints_nothing);
	tcase_add_test(tc, step_str_of_null);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
