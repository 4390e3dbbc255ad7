/*
 * test_mustfail_picture.c - ts_schedule_picture and ts_schedule_svg refuse
 * what they cannot draw, with a message naming the call and the stage, and
 * return NULL without touching a pending error.
 */
#include "testutil.h"

#include <string.h>

typedef struct chain {
	ts_ctx *ctx;
	ts_tensor *A, *B, *C, *V;
	ts_schedule *s;
} chain;

/* B = A + 1, C = B * 2 (8 x 8), and V, a 1-D output. */
static chain make(void)
{
	chain c = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = c.ctx;
	c.A = ts_placeholder(ctx, "A", TS_SHAPE(8, 8), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	c.B = ts_compute(ctx, "B", TS_SHAPE(8, 8), TS_VARS(i, j),
			 ts_add(ctx, TS_READ(ctx, c.A, i, j), ts_float(ctx, 1)));
	ts_expr *x = ts_var(ctx, "x"), *y = ts_var(ctx, "y");
	c.C = ts_compute(ctx, "C", TS_SHAPE(8, 8), TS_VARS(x, y),
			 ts_mul(ctx, TS_READ(ctx, c.B, x, y), ts_float(ctx, 2)));
	ts_expr *v = ts_var(ctx, "v");
	c.V = ts_compute(ctx, "V", TS_SHAPE(8), TS_VARS(v),
			 ts_add(ctx, TS_READ(ctx, c.A, v, v), ts_float(ctx, 1)));
	c.s = ts_create_schedule(ctx, 2, (ts_tensor *[]){c.C, c.V});
	tu_nonnull(ctx, c.s);
	return c;
}

START_TEST(null_schedule)
{
	ck_assert_ptr_null(ts_schedule_picture(NULL, NULL));
	ck_assert_ptr_null(ts_schedule_svg(NULL, NULL));
}
END_TEST

START_TEST(null_tensor)
{
	chain c = make();
	ck_assert_ptr_null(ts_schedule_picture(c.s, NULL));
	tu_assert_error(c.ctx, "picture: tensor is NULL");
	ts_clear_error(c.ctx);
	ck_assert_ptr_null(ts_schedule_svg(c.s, NULL));
	tu_assert_error(c.ctx, "svg: tensor is NULL");
	ts_ctx_free(c.ctx);
}
END_TEST

START_TEST(placeholder)
{
	chain c = make();
	ck_assert_ptr_null(ts_schedule_picture(c.s, c.A));
	tu_assert_error(c.ctx, "picture(A): tensor has no stage in this schedule");
	ts_clear_error(c.ctx);
	ck_assert_ptr_null(ts_schedule_svg(c.s, c.A));
	tu_assert_error(c.ctx, "svg(A): tensor has no stage in this schedule");
	ts_ctx_free(c.ctx);
}
END_TEST

START_TEST(other_schedule)
{
	chain c = make();
	ts_schedule *s2 = ts_create_schedule(c.ctx, 1, &c.V);
	tu_nonnull(c.ctx, s2);
	ck_assert_ptr_null(ts_schedule_picture(s2, c.C));
	tu_assert_error(c.ctx, "picture(C): tensor has no stage in this schedule");
	ts_ctx_free(c.ctx);
}
END_TEST

START_TEST(inlined_stage)
{
	chain c = make();
	tu_ok(c.ctx, ts_compute_inline(ts_stage_of(c.s, c.B)));
	ck_assert_ptr_null(ts_schedule_picture(c.s, c.B));
	tu_assert_error(c.ctx, "picture(B): stage is inlined into its readers and has no loops of its own");
	ts_ctx_free(c.ctx);
}
END_TEST

START_TEST(attached_stage)
{
	chain c = make();
	ts_stage *sc = ts_stage_of(c.s, c.C);
	tu_ok(c.ctx, ts_compute_at(ts_stage_of(c.s, c.B), sc, ts_axis_of(sc, 0)));
	ck_assert_ptr_null(ts_schedule_svg(c.s, c.B));
	tu_assert_error(c.ctx, "svg(B): stage is computed at C.x; draw C, whose picture shows it there");
	ts_clear_error(c.ctx);
	ck_assert_ptr_nonnull(ts_schedule_picture(c.s, c.C));
	ts_ctx_free(c.ctx);
}
END_TEST

START_TEST(svg_not_2d)
{
	chain c = make();
	ck_assert_ptr_nonnull(ts_schedule_picture(c.s, c.V));
	ck_assert_ptr_null(ts_schedule_svg(c.s, c.V));
	tu_assert_error(c.ctx, "svg(V): draws 2-D outputs only, V has 1 dimensions");
	ts_ctx_free(c.ctx);
}
END_TEST

START_TEST(svg_too_large)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(2048, 1024), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(2048, 1024), TS_VARS(i, j), TS_READ(ctx, A, i, j));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ck_assert_ptr_null(ts_schedule_svg(s, C));
	tu_assert_error(ctx, "svg(C): 2048 x 1024 elements are more than 1048576 to draw");
	ts_ctx_free(ctx);
}
END_TEST

/* An error left by an earlier, unrelated call does not stop the drawing
 * (as for ts_lower): it once made both return NULL with that old message. */
START_TEST(pending_error)
{
	chain c = make();
	ts_error(c.ctx, TS_ERR_INVALID, "earlier mistake");
	ck_assert_ptr_nonnull(ts_schedule_picture(c.s, c.C));
	ts_error(c.ctx, TS_ERR_INVALID, "earlier mistake");
	ck_assert_ptr_nonnull(ts_schedule_svg(c.s, c.C));
	ck_assert_int_eq(ts_last_status(c.ctx), TS_OK);
	ts_ctx_free(c.ctx);
}
END_TEST

/* A schedule that lowering refuses (B is computed inside C's loop, but D
 * reads it too) still draws: the picture says why the attached extents
 * are unknown, and no error is left behind. */
START_TEST(bounds_fail)
{
	chain c = make();
	ts_expr *x = ts_var(c.ctx, "x");
	ts_tensor *D = ts_compute(c.ctx, "D", TS_SHAPE(8), TS_VARS(x), TS_READ(c.ctx, c.B, x, x));
	ts_schedule *s = ts_create_schedule(c.ctx, 2, (ts_tensor *[]){c.C, D});
	tu_nonnull(c.ctx, s);
	ts_stage *sc = ts_stage_of(s, c.C);
	tu_ok(c.ctx, ts_compute_at(ts_stage_of(s, c.B), sc, ts_axis_of(sc, 1)));
	const char *p = ts_schedule_picture(s, c.C);
	tu_nonnull(c.ctx, p);
	ck_assert_int_eq(ts_last_status(c.ctx), TS_OK);
	ck_assert_msg(strstr(p, "(bound inference fails, so attached extents are ?: compute_at(B): stage D reads B") != NULL, "%s", p);
	ck_assert_msg(strstr(p, "for i [?]") != NULL, "%s", p);
	ts_ctx_free(c.ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_picture");
	TCase *tc = tcase_create("picture");
	tcase_add_test(tc, null_schedule);
	tcase_add_test(tc, null_tensor);
	tcase_add_test(tc, placeholder);
	tcase_add_test(tc, other_schedule);
	tcase_add_test(tc, inlined_stage);
	tcase_add_test(tc, attached_stage);
	tcase_add_test(tc, svg_not_2d);
	tcase_add_test(tc, svg_too_large);
	tcase_add_test(tc, pending_error);
	tcase_add_test(tc, bounds_fail);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
