/*
 * test_picture.c - ts_schedule_picture and ts_schedule_svg: goldens of the
 * loop tree and tiling grid for a tiled GEMM, a fused axis, a stage
 * computed at another and a split that does not divide, and checks that
 * drawing changes neither the schedule nor what it computes.
 */
#include "testutil.h"

#include <string.h>

typedef tu_mm gemm;

/* C[i, j] = sum_k A[i, k] * B[k, j]. */
static gemm make_gemm(int64_t m, int64_t n, int64_t k)
{
	return tu_matmul(m, n, k);
}

static void check_gemm(gemm *g)
{
	ts_func *f = ts_lower(g->s, "gemm", 3, (ts_tensor *[]){g->A, g->B, g->C});
	tu_nonnull(g->ctx, f);
	tu_check_func_interp(g->ctx, f, 1e-4);
}

/* The tiled GEMM: 8 x 8 tiles of a 16 x 16 output, k split, the tile
 * loops' outer one parallel, the innermost vectorized. */
static void tile_gemm(gemm *g, int64_t f)
{
	ts_axis *io, *jo, *ii, *ji, *ko, *ki;
	tu_ok(g->ctx, ts_tile(g->sc, ts_axis_of(g->sc, 0), ts_axis_of(g->sc, 1), f, f, &io, &jo, &ii, &ji));
	tu_ok(g->ctx, ts_split(g->sc, ts_reduce_axis_of(g->sc, 0), 4, &ko, &ki));
	tu_ok(g->ctx, ts_reorder(g->sc, TS_AXES(io, jo, ko, ii, ki, ji)));
	tu_ok(g->ctx, ts_parallel(g->sc, io));
	tu_ok(g->ctx, ts_vectorize(g->sc, ji));
}

START_TEST(picture_tiled_gemm)
{
	gemm g = make_gemm(16, 16, 16);
	tile_gemm(&g, 8);
	const char *p = ts_schedule_picture(g.s, g.C);
	tu_nonnull(g.ctx, p);
	tu_assert_golden("picture_tiled_gemm.txt", p);
	ck_assert_int_eq(ts_last_status(g.ctx), TS_OK);
	check_gemm(&g);
	ts_ctx_free(g.ctx);
}
END_TEST

/* 10 x 13 by 4 x 4 tiles: the last tile row and column are partial and
 * the grid shows the guarded tails (the elements are written once). */
START_TEST(picture_nondividing_split)
{
	gemm g = make_gemm(10, 13, 5);
	tile_gemm(&g, 4);
	const char *p = ts_schedule_picture(g.s, g.C);
	tu_nonnull(g.ctx, p);
	tu_assert_golden("picture_nondividing.txt", p);
	ck_assert_ptr_nonnull(strstr(p, "i: 10 = 3 x 4 does not divide: the last i.inner runs 2 of 4, guarded"));
	ck_assert_ptr_null(strstr(p, "?"));
	check_gemm(&g);
	ts_ctx_free(g.ctx);
}
END_TEST

/* Two tile loops fused into one parallel loop. */
START_TEST(picture_fused_axis)
{
	gemm g = make_gemm(12, 8, 4);
	ts_axis *io, *jo, *ii, *ji, *f;
	tu_ok(g.ctx, ts_tile(g.sc, ts_axis_of(g.sc, 0), ts_axis_of(g.sc, 1), 4, 4, &io, &jo, &ii, &ji));
	tu_ok(g.ctx, ts_fuse(g.sc, io, jo, &f));
	tu_ok(g.ctx, ts_parallel(g.sc, f));
	const char *p = ts_schedule_picture(g.s, g.C);
	tu_nonnull(g.ctx, p);
	tu_assert_golden("picture_fused.txt", p);
	ck_assert_ptr_nonnull(strstr(p, "i.outer.j.outer.fused = (i / 4)*2 + (j / 4)"));
	check_gemm(&g);
	ts_ctx_free(g.ctx);
}
END_TEST

/* B = A + 1 computed at the tile loop of C = B * 2: B's loops appear under
 * it with the extents bound inference gives (a 4 x 4 region). */
START_TEST(picture_compute_at)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(8, 8), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(8, 8), TS_VARS(i, j),
				  ts_add(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 1)));
	ts_expr *x = ts_var(ctx, "x"), *y = ts_var(ctx, "y");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(8, 8), TS_VARS(x, y),
				  ts_mul(ctx, TS_READ(ctx, B, x, y), ts_float(ctx, 2)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_nonnull(ctx, s);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *xo, *yo, *xi, *yi;
	tu_ok(ctx, ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), 4, 4, &xo, &yo, &xi, &yi));
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, B), sc, yo));
	const char *p = ts_schedule_picture(s, C);
	tu_nonnull(ctx, p);
	tu_assert_golden("picture_compute_at.txt", p);
	ck_assert_ptr_nonnull(strstr(p, "stage B computed here (compute_at C.y.outer)"));
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
	tu_nonnull(ctx, f);
	tu_check_func_interp(ctx, f, 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

/* The SVG of the tiled GEMM: a golden, and a well-formed document. */
START_TEST(svg_tiled_gemm)
{
	gemm g = make_gemm(16, 16, 16);
	tile_gemm(&g, 8);
	const char *svg = ts_schedule_svg(g.s, g.C);
	tu_nonnull(g.ctx, svg);
	ck_assert(!strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39));
	ck_assert_ptr_nonnull(strstr(svg, "</svg>\n"));
	ck_assert_ptr_nonnull(strstr(svg, "one vector of the innermost loop each"));
	tu_assert_golden("picture_gemm.svg", svg);
	check_gemm(&g);
	ts_ctx_free(g.ctx);
}
END_TEST

/* An unscheduled stage: no tile loops, the order is row-major. */
START_TEST(picture_unscheduled)
{
	gemm g = make_gemm(3, 5, 2);
	const char *p = ts_schedule_picture(g.s, g.C);
	tu_nonnull(g.ctx, p);
	ck_assert_ptr_nonnull(strstr(p, "no tile loops"));
	ck_assert_ptr_nonnull(strstr(p, "     0    1    2    3    4 \n"));
	ck_assert_ptr_nonnull(strstr(p, "    10   11   12   13   14 \n"));
	ts_ctx_free(g.ctx);
}
END_TEST

/* A max reduction computed at a row loop says which reduction it is, and
 * element orders past 9999 get wider cells (a row of 1024 elements). */
START_TEST(picture_max_reduction_wide_grid)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(16, 1024), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 1024);
	ts_expr *i = ts_var(ctx, "i"), *r = ts_var(ctx, "r"), *c = ts_var(ctx, "c");
	ts_tensor *M = ts_compute(ctx, "M", TS_SHAPE(16), TS_VARS(i),
				  ts_reduce_max(ctx, TS_READ(ctx, X, i, k->var), 1, &k));
	ts_tensor *W = ts_compute(ctx, "W", TS_SHAPE(16, 1024), TS_VARS(r, c),
				  ts_sub(ctx, TS_READ(ctx, X, r, c), TS_READ(ctx, M, r)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &W);
	tu_nonnull(ctx, s);
	ts_stage *sw = ts_stage_of(s, W);
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, M), sw, ts_axis_of(sw, 0)));
	const char *p = ts_schedule_picture(s, W);
	tu_nonnull(ctx, p);
	ck_assert_msg(strstr(p, "M[i] = max(itself, ...)") != NULL, "%s", p);
	ck_assert_msg(strstr(p, "   15360  15361") != NULL, "%s", p);
	ts_ctx_free(ctx);
}
END_TEST

/* A huge output (nothing is allocated for it) with splits whose parts
 * exceed the extent: the grid shows the window without overflowing. */
START_TEST(picture_huge_shape)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t n = (int64_t)1 << 31;
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(n, n), ts_int8); /* 2^62 bytes */
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(n, n), TS_VARS(i, j), TS_READ(ctx, A, i, j));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_nonnull(ctx, s);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *io, *ii, *jo, *ji;
	tu_ok(ctx, ts_split_nparts(sc, ts_axis_of(sc, 0), n / 2, &io, &ii));
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 1), n / 4, &jo, &ji));
	tu_ok(ctx, ts_reorder(sc, TS_AXES(io, jo, ii, ji)));
	tu_ok(ctx, ts_parallel(sc, io));
	const char *p = ts_schedule_picture(s, C);
	tu_nonnull(ctx, p);
	ck_assert_msg(strstr(p, "C[0..15, 0..15] (of 2147483648 x 2147483648)") != NULL, "%s", p);
	/* row 1 is not reached in the iterations drawn: no tile line above it */
	ck_assert_msg(strstr(p, "----") == NULL, "%s", p);
	ck_assert_ptr_null(ts_schedule_svg(s, C));
	tu_assert_error(ctx, "more than 1048576 to draw");
	ts_ctx_free(ctx);
}
END_TEST

/* A stage split many times over a long row: the drawing's work is
 * bounded whatever the relations (31 splits by 1 drew for 40 s, each step
 * looking up every relation's axes), and the grid says how far it got. */
START_TEST(picture_many_splits)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t n = (int64_t)1 << 40;
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(16, n), ts_int8);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(16, n), TS_VARS(i, j), TS_READ(ctx, A, i, j));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *a = ts_axis_of(sc, 1), *o, *in;
	for (int k = 0; k < 31; k++) {
		tu_ok(ctx, ts_split(sc, a, 1, &o, &in));
		a = o;
	}
	const char *p = ts_schedule_picture(s, C);
	tu_nonnull(ctx, p);
	/* 2^26 updates of 33 leaves, 31 relations and the step's own */
	const char *tail = strstr(p, "(? elements");
	ck_assert_ptr_nonnull(tail);
	ck_assert_str_eq(tail, "(? elements: not written in the first 1032444 iterations)\n");
	ck_assert_ptr_nonnull(strstr(p, "\n     0    1    2"));
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("picture");
	TCase *tc = tcase_create("picture");
	tcase_add_test(tc, picture_tiled_gemm);
	tcase_add_test(tc, picture_nondividing_split);
	tcase_add_test(tc, picture_fused_axis);
	tcase_add_test(tc, picture_compute_at);
	tcase_add_test(tc, svg_tiled_gemm);
	tcase_add_test(tc, picture_unscheduled);
	tcase_add_test(tc, picture_max_reduction_wide_grid);
	tcase_add_test(tc, picture_huge_shape);
	tcase_add_test(tc, picture_many_splits);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
