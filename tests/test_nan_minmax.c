/*
 * test_nan_minmax.c - float min and max ignore a NaN operand (ir.h: C's
 * fmin and fmax) in every path: the constant folder, the reference
 * evaluator, the loop-IR interpreter and the LLVM JIT, scalar and
 * vectorized, elementwise and as reductions with the NaN at any position
 * (a running max that compared with `>` once kept or dropped the NaN
 * depending on where it fell, and disagreed with the evaluator).
 */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "arith.h"
#include "build.h"
#include "interp.h"
#include "lower.h"

#define ROWS 6
#define COLS 21

/* Row r of A: 1..COLS scaled, with NaN at column (r * 5) % COLS, none in
 * the last row, all NaN in the row before it. */
static void fill(float *a)
{
	for (int r = 0; r < ROWS; r++)
		for (int c = 0; c < COLS; c++) {
			float v = (float)((c * 7 + r * 3) % COLS) - 10.0f;
			if (r == ROWS - 2 || (r < ROWS - 2 && c == (r * 5) % COLS))
				v = NAN;
			a[r * COLS + c] = v;
		}
}

/* What fmax / fmin over a row give from the reduction's identity: the
 * NaNs skipped, the identity (-inf for max) if all are NaN. */
static float expect(const float *row, bool max)
{
	float acc = max ? -INFINITY : INFINITY;
	for (int c = 0; c < COLS; c++)
		acc = max ? fmaxf(acc, row[c]) : fminf(acc, row[c]);
	return acc;
}

static bool same(float a, float b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

typedef struct graph {
	ts_ctx *ctx;
	ts_tensor *A, *R, *E; /* R[r] = max or min over row r; E = min(max(A, A^T-ish), ...) */
} graph;

/* R[r] = max_c A[r, c] (or min); E[r, c] = max(A[r, c], A[r, COLS-1-c]). */
static graph make(bool max)
{
	graph g = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = g.ctx;
	g.A = ts_placeholder(ctx, "A", TS_SHAPE(ROWS, COLS), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, COLS);
	ts_expr *r = ts_var(ctx, "r"), *c = ts_var(ctx, "c");
	ts_expr *x = TS_READ(ctx, g.A, r, k->var);
	g.R = ts_compute(ctx, "R", TS_SHAPE(ROWS), TS_VARS(r), max ? TS_MAX(ctx, x, k) : TS_MIN(ctx, x, k));
	ts_expr *a = TS_READ(ctx, g.A, r, c), *b = TS_READ(ctx, g.A, r, ts_sub(ctx, ts_int(ctx, COLS - 1), c));
	g.E = ts_compute(ctx, "E", TS_SHAPE(ROWS, COLS), TS_VARS(r, c), max ? ts_max(ctx, a, b) : ts_min(ctx, a, b));
	tu_nonnull(ctx, g.R);
	tu_nonnull(ctx, g.E);
	return g;
}

/* Runs f (params A, R, E) with `run` and checks R and E. */
static void check(graph *g, const ts_func *f, bool max, const char *path, bool interp)
{
	_Alignas(64) float a[ROWS * COLS];
	_Alignas(64) float r[ROWS];
	_Alignas(64) float e[ROWS * COLS];
	fill(a);
	for (int i = 0; i < ROWS; i++)
		r[i] = 12345.0f;
	void *args[3] = {a, r, e};
	if (interp) {
		tu_ok(g->ctx, cg_interp_run(g->ctx, f, args));
	} else {
		ts_module *m = ts_build(g->ctx, f, "llvm");
		tu_nonnull(g->ctx, m);
		ts_array *arr[3];
		int64_t rs[1] = {ROWS}, as[2] = {ROWS, COLS};
		arr[0] = ts_array_wrap(g->ctx, a, ts_float32, 2, as);
		arr[1] = ts_array_wrap(g->ctx, r, ts_float32, 1, rs);
		arr[2] = ts_array_wrap(g->ctx, e, ts_float32, 2, as);
		tu_ok(g->ctx, ts_module_run(m, 3, arr));
		for (int i = 0; i < 3; i++)
			ts_array_free(arr[i]);
		ts_module_free(m);
	}
	for (int i = 0; i < ROWS; i++) {
		float want = expect(a + i * COLS, max);
		ck_assert_msg(same(r[i], want), "%s %s: row %d gives %g, fmax/fmin give %g", path,
			      max ? "max" : "min", i, r[i], want);
		for (int c = 0; c < COLS; c++) {
			float x = a[i * COLS + c], y = a[i * COLS + COLS - 1 - c];
			float w = max ? fmaxf(x, y) : fminf(x, y);
			ck_assert_msg(same(e[i * COLS + c], w), "%s %s(%g, %g) gives %g", path, max ? "max" : "min",
				      x, y, e[i * COLS + c]);
		}
	}
}

/* The reference evaluator on the same data. */
static void check_eval(graph *g, bool max)
{
	_Alignas(64) float a[ROWS * COLS];
	_Alignas(64) float r[ROWS];
	_Alignas(64) float e[ROWS * COLS];
	fill(a);
	tu_ok(g->ctx, ts_eval(g->ctx, 3, (ts_tensor *[]){g->A, g->R, g->E}, (void *[]){a, r, e}));
	for (int i = 0; i < ROWS; i++)
		ck_assert(same(r[i], expect(a + i * COLS, max)));
}

static void every_path(bool max, bool vectorize)
{
	graph g = make(max);
	ts_tensor *outs[2] = {g.R, g.E};
	ts_schedule *s = ts_create_schedule(g.ctx, 2, outs);
	if (vectorize) {
		/* the row reduction factored into 8 vector lanes, E by 8 lanes */
		ts_stage *sr = ts_stage_of(s, g.R), *se = ts_stage_of(s, g.E);
		ts_axis *ko, *ki, *co, *ci;
		tu_ok(g.ctx, ts_split(sr, ts_reduce_axis_of(sr, 0), 8, &ko, &ki));
		ts_tensor *rf = ts_rfactor(s, g.R, ki, 1);
		tu_nonnull(g.ctx, rf);
		ts_stage *srf = ts_stage_of(s, rf);
		tu_ok(g.ctx, ts_reorder(srf, TS_AXES(ts_axis_of(srf, 0), ts_reduce_axis_of(srf, 0), ts_axis_of(srf, 1))));
		tu_ok(g.ctx, ts_vectorize(srf, ts_axis_of(srf, 1)));
		tu_ok(g.ctx, ts_split_tail(se, ts_axis_of(se, 1), 8, TS_TAIL_PARTITION, &co, &ci));
		tu_ok(g.ctx, ts_vectorize(se, ci));
	}
	ts_func *f = ts_lower(s, "f", 3, (ts_tensor *[]){g.A, g.R, g.E});
	tu_nonnull(g.ctx, f);
	const char *what = vectorize ? "vectorized" : "scalar";
	check(&g, f, max, what, true);
	check(&g, f, max, what, false);
	check_eval(&g, max);
	ts_ctx_free(g.ctx);
}

START_TEST(max_every_path)
{
	every_path(true, false);
	every_path(true, true);
}
END_TEST

START_TEST(min_every_path)
{
	every_path(false, false);
	every_path(false, true);
}
END_TEST

/* The folder gives the same: max(NaN, 1) = 1, min(2, NaN) = 2. */
START_TEST(folds)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *nan = ts_float(ctx, NAN), *one = ts_float(ctx, 1), *two = ts_float(ctx, 2);
	ts_expr *e = ir_simplify(ctx, ts_max(ctx, nan, one), 0, NULL);
	double v;
	tu_nonnull(ctx, e);
	ck_assert(e->kind == IR_FLOAT_IMM && (v = e->u.float_imm) == 1.0);
	e = ir_simplify(ctx, ts_min(ctx, two, nan), 0, NULL);
	tu_nonnull(ctx, e);
	ck_assert(e->kind == IR_FLOAT_IMM && e->u.float_imm == 2.0);
	(void)v;
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nan_minmax");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, max_every_path);
	tcase_add_test(tc, min_every_path);
	tcase_add_test(tc, folds);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
