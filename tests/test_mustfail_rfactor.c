/*
 * test_mustfail_rfactor.c - every misuse of ts_rfactor returns NULL with
 * TS_ERR_INVALID and a message "rfactor(C): ..." naming the rule, and
 * leaves the schedule as it was.
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "stderr_capture.h"

/* P[i, k] = A[i, k] + 1; C[i] = sum_k P[i, k] over 6 x 10. */
typedef struct fx {
	ts_ctx *ctx;
	ts_tensor *A, *P, *C;
	ts_schedule *s;
	ts_stage *sp, *sc;
	ts_axis *ko, *ki;
	const char *before;
} fx;

static fx make(void)
{
	fx f = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = f.ctx;
	f.A = ts_placeholder(ctx, "A", TS_SHAPE(6, 10), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	f.P = ts_compute(ctx, "P", TS_SHAPE(6, 10), TS_VARS(i, j),
			 ts_add(ctx, TS_READ(ctx, f.A, i, j), ts_float(ctx, 1)));
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 10);
	ts_expr *i2 = ts_var(ctx, "i");
	f.C = ts_compute(ctx, "C", TS_SHAPE(6), TS_VARS(i2),
			 TS_SUM(ctx, TS_READ(ctx, f.P, i2, k->var), k));
	f.s = ts_create_schedule(ctx, 1, &f.C);
	f.sc = ts_stage_of(f.s, f.C);
	f.sp = ts_stage_of(f.s, f.P);
	tu_ok(ctx, ts_split(f.sc, ts_reduce_axis_of(f.sc, 0), 4, &f.ko, &f.ki));
	return f;
}

/* The call fails with `part` in its message and changes nothing. */
#define ASSERT_REFUSED(f, call, part)                                          \
	do {                                                                   \
		const char *before_ = ts_schedule_str((f).s);                  \
		int nstages_ = (f).s->nstages;                                 \
		ts_tensor *r_ = (call);                                        \
		ck_assert_ptr_null(r_);                                        \
		ck_assert_int_eq(ts_last_status((f).ctx), TS_ERR_INVALID);     \
		tu_assert_error((f).ctx, part);                                \
		ts_clear_error((f).ctx);                                       \
		ck_assert_int_eq((f).s->nstages, nstages_);                    \
		ck_assert_str_eq(ts_schedule_str((f).s), before_);             \
	} while (0)

START_TEST(null_args)
{
	fx f = make();
	ck_assert_ptr_null(ts_rfactor(NULL, f.C, f.ki, 0));
	ASSERT_REFUSED(f, ts_rfactor(f.s, NULL, f.ki, 0), "rfactor: tensor is NULL");
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, NULL, 0), "rfactor(C): axis is NULL");
	ts_ctx_free(f.ctx);
}
END_TEST

START_TEST(no_stage)
{
	fx f = make();
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.A, f.ki, 0),
		       "rfactor(A): A has no stage in this schedule (a placeholder");
	ts_ctx_free(f.ctx);
}
END_TEST

START_TEST(data_axis)
{
	fx f = make();
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, ts_axis_of(f.sc, 0), 0),
		       "rfactor(C): axis 'i' is a data-parallel axis; rfactor factors a reduction axis");
	ts_ctx_free(f.ctx);
}
END_TEST

START_TEST(axis_of_another_stage)
{
	fx f = make();
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, ts_axis_of(f.sp, 1), 0),
		       "rfactor(C): axis 'j' does not belong to stage C");
	/* and a reduction axis of another schedule's stage */
	ts_schedule *s2 = ts_create_schedule(f.ctx, 1, &f.C);
	ts_axis *k2 = ts_reduce_axis_of(ts_stage_of(s2, f.C), 0);
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, k2, 0), "rfactor(C): axis 'k' does not belong to stage C");
	ts_ctx_free(f.ctx);
}
END_TEST

START_TEST(no_reduction)
{
	fx f = make();
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.P, ts_axis_of(f.sp, 1), 0),
		       "rfactor(P): P is not a reduction (its body has no sum, max or min)");
	ts_ctx_free(f.ctx);
}
END_TEST

/* After cache_write, C's stage only copies the cache: factor the cache. */
START_TEST(after_cache_write)
{
	fx g = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = g.ctx;
	g.A = ts_placeholder(ctx, "A", TS_SHAPE(6, 10), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 10);
	ts_expr *i = ts_var(ctx, "i");
	g.C = ts_compute(ctx, "C", TS_SHAPE(6), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, g.A, i, k->var), k));
	g.s = ts_create_schedule(ctx, 1, &g.C);
	g.sc = ts_stage_of(g.s, g.C);
	ts_axis *k0 = ts_reduce_axis_of(g.sc, 0);
	tu_nonnull(ctx, ts_cache_write(g.s, g.C, TS_SCOPE_LOCAL));
	ASSERT_REFUSED(g, ts_rfactor(g.s, g.C, k0, 0), "rfactor(C): C is not a reduction");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(not_a_leaf)
{
	fx f = make();
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, ts_reduce_axis_of(f.sc, 0), 0),
		       "rfactor(C): axis 'k' is no longer a leaf (it was split or fused); pass one of its parts");
	ts_ctx_free(f.ctx);
}
END_TEST

START_TEST(factor_axis_out_of_range)
{
	fx f = make();
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, f.ki, -1),
		       "rfactor(C): factor_axis -1 is out of range (0 to 1:");
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, f.ki, 2),
		       "rfactor(C): factor_axis 2 is out of range (0 to 1: the position of 'k.inner' among the 2 data axes");
	ts_ctx_free(f.ctx);
}
END_TEST

START_TEST(inlined)
{
	fx f = make();
	tu_ok(f.ctx, ts_compute_inline(f.sp));
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.P, ts_axis_of(f.sp, 1), 0),
		       "rfactor(P): P is inlined (compute_inline); only a computed reduction can be factored");
	ts_ctx_free(f.ctx);
}
END_TEST

START_TEST(twice_on_one_axis)
{
	fx f = make();
	tu_nonnull(f.ctx, ts_rfactor(f.s, f.C, f.ki, 1));
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, f.ki, 1),
		       "rfactor(C): axis 'k.inner' was already factored out into C.rf");
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, f.ko, 1),
		       "rfactor(C): axis 'k.outer' does not belong to stage C");
	ts_ctx_free(f.ctx);
}
END_TEST

/* A producer computed at a reduction loop of C: that loop goes away. */
START_TEST(producer_at_reduction_axis)
{
	fx f = make();
	tu_ok(f.ctx, ts_compute_at(f.sp, f.sc, f.ko));
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, f.ki, 1),
		       "rfactor(C): stage P is computed at reduction axis 'k.outer', which rfactor replaces; "
		       "call rfactor first, then compute_at");
	ts_ctx_free(f.ctx);
}
END_TEST

/* A producer computed at a data loop of C: its reader moves to C.rf. */
START_TEST(producer_at_data_axis)
{
	fx f = make();
	tu_ok(f.ctx, ts_compute_at(f.sp, f.sc, ts_axis_of(f.sc, 0)));
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, f.ki, 1),
		       "rfactor(C): stage P is computed inside it (compute_at) and read by the reduction "
		       "that moves to the new stage; call rfactor first, then compute_at P into it");
	/* the order the message asks for works */
	tu_ok(f.ctx, ts_compute_root(f.sp));
	ts_tensor *rf = ts_rfactor(f.s, f.C, f.ki, 1);
	tu_nonnull(f.ctx, rf);
	ts_stage *sr = ts_stage_of(f.s, rf);
	tu_ok(f.ctx, ts_compute_at(f.sp, sr, ts_axis_of(sr, 0)));
	ts_func *fn = ts_lower(f.s, "f", 2, (ts_tensor *[]){f.A, f.C});
	tu_nonnull(f.ctx, fn);
	tu_check_func(f.ctx, fn, 1e-4);
	ts_ctx_free(f.ctx);
}
END_TEST

START_TEST(too_many_dims)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t shape[8] = {1, 1, 1, 1, 1, 1, 1, 2};
	ts_expr *v[8];
	for (int d = 0; d < 8; d++)
		v[d] = ts_var(ctx, "v");
	ts_tensor *A = ts_placeholder(ctx, "A", 8, shape, ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 3);
	ts_tensor *C = ts_compute(ctx, "C", 8, shape, v,
		TS_SUM(ctx, ts_add(ctx, ts_read(ctx, A, 8, v), ts_cast(ctx, ts_float32, k->var)), k));
	fx f = {.ctx = ctx, .C = C, .s = ts_create_schedule(ctx, 1, &C)};
	tu_nonnull(ctx, f.s);
	f.sc = ts_stage_of(f.s, C);
	ASSERT_REFUSED(f, ts_rfactor(f.s, C, ts_reduce_axis_of(f.sc, 0), 0),
		       "rfactor(C): C has 8 dimensions; the new stage would have 9 (limit 8)");
	ts_ctx_free(ctx);
}
END_TEST

/* Ten reduction leaves: nine would remain in C.rf, more than a reduction
 * may have. */
START_TEST(too_many_leaves)
{
	fx f = make();
	ts_axis *a = f.ko, *o, *in;
	for (int n = 0; n < 8; n++) {
		tu_ok(f.ctx, ts_split(f.sc, a, 1, &o, &in));
		a = o;
	}
	ASSERT_REFUSED(f, ts_rfactor(f.s, f.C, f.ki, 0),
		       "rfactor(C): more than 8 reduction leaves would remain in the new stage");
	ts_ctx_free(f.ctx);
}
END_TEST

/* With step printing on, a refused rfactor prints nothing; one that
 * succeeds prints its step. */
START_TEST(steps_print_only_success)
{
	fx f = make();
	ts_ctx_set_print_steps(f.ctx, TS_PRINT_STEPS_NEST);
	tu_capture cap;
	tu_capture_begin(&cap);
	ts_tensor *bad = ts_rfactor(f.s, f.C, ts_axis_of(f.sc, 0), 0);
	char *text = tu_capture_end(&cap);
	ck_assert_ptr_null(bad);
	tu_assert_error(f.ctx, "rfactor(C): axis 'i' is a data-parallel axis");
	ck_assert_msg(text[0] == '\0', "a refused rfactor printed '%s'", text);
	free(text);
	ts_clear_error(f.ctx);
	tu_capture_begin(&cap);
	ts_tensor *rf = ts_rfactor(f.s, f.C, f.ki, 1);
	text = tu_capture_end(&cap);
	tu_nonnull(f.ctx, rf);
	ck_assert_msg(strstr(text, "rfactor(C, k.inner, 1) -> C.rf") != NULL, "%s", text);
	free(text);
	ts_ctx_free(f.ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_rfactor");
	TCase *tc = tcase_create("rfactor");
	tcase_add_test(tc, null_args);
	tcase_add_test(tc, no_stage);
	tcase_add_test(tc, data_axis);
	tcase_add_test(tc, axis_of_another_stage);
	tcase_add_test(tc, no_reduction);
	tcase_add_test(tc, after_cache_write);
	tcase_add_test(tc, not_a_leaf);
	tcase_add_test(tc, factor_axis_out_of_range);
	tcase_add_test(tc, inlined);
	tcase_add_test(tc, twice_on_one_axis);
	tcase_add_test(tc, producer_at_reduction_axis);
	tcase_add_test(tc, producer_at_data_axis);
	tcase_add_test(tc, too_many_dims);
	tcase_add_test(tc, too_many_leaves);
	tcase_add_test(tc, steps_print_only_success);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
