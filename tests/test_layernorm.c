/*
 * test_layernorm.c - ts_op_layer_norm and its CPU schedule
 * (ts_schedule_layer_norm_cpu) against the reference evaluator, through
 * the interpreter and the LLVM JIT, on rows of 1 to 768 elements (vector widths that do and do
 * not divide them) and ranks 1 to 3, with and without beta; and what each
 * refuses, with its message.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower.h"
#include "op_schedules.h"
#include "ops.h"

/* Y = layer_norm(X) over X's last axis, scheduled with `lanes`, checked
 * against ts_eval on random X, gamma and beta. */
static void check_layer_norm(int ndim, const int64_t *shape, bool beta, int lanes)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", ndim, shape, ts_float32);
	ts_tensor *G = ts_placeholder(ctx, "gamma", 1, &shape[ndim - 1], ts_float32);
	ts_tensor *B = beta ? ts_placeholder(ctx, "beta", 1, &shape[ndim - 1], ts_float32) : NULL;
	ts_tensor *Y = ts_op_layer_norm(ctx, X, G, B, 1e-5);
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_nonnull(ctx, s);
	tu_ok(ctx, ts_schedule_layer_norm_cpu(s, Y, lanes));
	ts_tensor *params[4] = {X, G};
	int np = 2;
	if (B)
		params[np++] = B;
	params[np++] = Y;
	ts_func *f = ts_lower(s, "layer_norm", np, params);
	tu_nonnull(ctx, f);
	char what[96];
	snprintf(what, sizeof what, "rank %d, row %lld, %s beta, %d lanes", ndim,
		 (long long)shape[ndim - 1], beta ? "with" : "without", lanes);
	tu_set_context(what);
	tu_check_func(ctx, f, 1e-4);
	tu_set_context(NULL);
	ts_ctx_free(ctx);
}

static const int64_t rows[] = {1, 7, 16, 64, 768};

START_TEST(layer_norm_rank1)
{
	for (int i = 0; i < 5; i++) {
		check_layer_norm(1, &rows[i], true, 8);
		check_layer_norm(1, &rows[i], false, 16);
	}
}
END_TEST

START_TEST(layer_norm_rank2)
{
	for (int i = 0; i < 5; i++) {
		check_layer_norm(2, (int64_t[]){5, rows[i]}, true, 8);
		check_layer_norm(2, (int64_t[]){3, rows[i]}, false, 16);
	}
	check_layer_norm(2, (int64_t[]){4, 37}, true, 1); /* no vectors, no rfactor */
	check_layer_norm(2, (int64_t[]){4, 3}, true, 4);  /* rows narrower than a vector */
}
END_TEST

START_TEST(layer_norm_rank3)
{
	for (int i = 0; i < 5; i++) {
		check_layer_norm(3, (int64_t[]){2, 3, rows[i]}, true, 8);
		check_layer_norm(3, (int64_t[]){3, 2, rows[i]}, false, 4);
	}
}
END_TEST

/* The operator itself, evaluated by ts_eval, against a hand-written loop
 * in double precision. */
/* The mean and 1 / sqrt(variance + eps) of row x[0..n), in double. */
static void row_stats(const float *x, int64_t n, double eps, double *mean, double *inv_sd)
{
	double m = 0, var = 0;
	for (int64_t j = 0; j < n; j++)
		m += x[j];
	m /= (double)n;
	for (int64_t j = 0; j < n; j++)
		var += (x[j] - m) * (x[j] - m);
	*mean = m;
	*inv_sd = 1 / sqrt(var / (double)n + eps);
}

static void check_values(int64_t rows_, int64_t n, bool beta)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(rows_, n), ts_float32);
	ts_tensor *G = ts_placeholder(ctx, "gamma", TS_SHAPE(n), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "beta", TS_SHAPE(n), ts_float32);
	ts_tensor *Y = ts_op_layer_norm(ctx, X, G, beta ? B : NULL, 1e-3);
	tu_nonnull(ctx, Y);
	ts_array *a[4] = {ts_array_for(ctx, X), ts_array_for(ctx, G), ts_array_for(ctx, B),
			  ts_array_for(ctx, Y)};
	for (int i = 0; i < 3; i++)
		ts_array_fill_random(a[i], 5 + (uint64_t)i, -2, 2);
	tu_ok(ctx, ts_eval(ctx, 4, (ts_tensor *[]){X, G, B, Y},
			   (void *[]){a[0]->data, a[1]->data, a[2]->data, a[3]->data}));
	const float *x = a[0]->data, *g = a[1]->data, *b = a[2]->data, *y = a[3]->data;
	for (int64_t r = 0; r < rows_; r++) {
		double mean, inv_sd;
		row_stats(x + r * n, n, 1e-3, &mean, &inv_sd);
		for (int64_t j = 0; j < n; j++) {
			double want = (x[r * n + j] - mean) * inv_sd * g[j] + (beta ? b[j] : 0);
			ck_assert_msg(fabs(y[r * n + j] - want) <= 1e-5 + 1e-5 * fabs(want),
				      "row %lld of %lld: y[%lld] = %g, want %g", (long long)r,
				      (long long)n, (long long)j, y[r * n + j], want);
		}
	}
	for (int i = 0; i < 4; i++)
		ts_array_free(a[i]);
	ts_ctx_free(ctx);
}

START_TEST(layer_norm_values)
{
	check_values(3, 37, true);
	check_values(2, 1, true);
	check_values(4, 16, false);
}
END_TEST

/* X[rows, n], gamma[n], beta[n] and their layer norm, over constants or
 * size variables; p[] in argument order. */
static void build_rows(ts_ctx *ctx, int64_t rows_, int64_t n, ts_tensor **p)
{
	p[0] = ts_placeholder(ctx, "X", TS_SHAPE(rows_, n), ts_float32);
	p[1] = ts_placeholder(ctx, "gamma", TS_SHAPE(n), ts_float32);
	p[2] = ts_placeholder(ctx, "beta", TS_SHAPE(n), ts_float32);
	p[3] = ts_op_layer_norm(ctx, p[0], p[1], p[2], 1e-5);
	tu_nonnull(ctx, p[3]);
}

/* Symbolic rows and row length: one compiled function for every extent,
 * 1/n computed at run time; against ts_eval on the constant twin. */
START_TEST(layer_norm_symbolic)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *p[4];
	build_rows(ctx, ts_size_var(ctx, "m", 16), ts_size_var(ctx, "n", 800), p);
	ts_schedule *s = ts_create_schedule(ctx, 1, &p[3]);
	tu_ok(ctx, ts_schedule_layer_norm_cpu(s, p[3], 8));
	ts_func *f = ts_lower(s, "layer_norm", 4, p);
	tu_nonnull(ctx, f);
	ts_module *m = ts_build(ctx, f, "llvm");
	tu_nonnull(ctx, m);
	static const int64_t cases[][2] = {{1, 1}, {3, 7}, {5, 64}, {16, 768}, {2, 799}};
	for (int c = 0; c < 5; c++) {
		ts_ctx *ref = ts_ctx_new();
		ts_tensor *q[4];
		build_rows(ref, cases[c][0], cases[c][1], q);
		ts_array *got[4], *want = ts_array_for(ref, q[3]);
		void *data[4];
		for (int i = 0; i < 4; i++) {
			got[i] = ts_array_for(ref, q[i]);
			ts_array_fill_random(got[i], 11 + (uint64_t)i, -1, 1);
			data[i] = i < 3 ? got[i]->data : want->data;
		}
		tu_ok(ref, ts_eval(ref, 4, q, data));
		tu_ok(ctx, ts_module_run(m, 4, got));
		char what[64];
		snprintf(what, sizeof what, "rows %lld, row %lld", (long long)cases[c][0],
			 (long long)cases[c][1]);
		tu_set_context(what);
		tu_assert_close(got[3], want, 1e-4, 1e-4);
		tu_set_context(NULL);
		for (int i = 0; i < 4; i++)
			ts_array_free(got[i]);
		ts_array_free(want);
		ts_ctx_free(ref);
	}
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* The stages are reachable by name and the output is the layer_norm stage:
 * the mean, then the variance about it. */
START_TEST(layer_norm_stages)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(4, 6), ts_float32);
	ts_tensor *G = ts_placeholder(ctx, "gamma", TS_SHAPE(6), ts_float32);
	ts_tensor *Y = ts_op_layer_norm(ctx, X, G, NULL, 1e-5);
	tu_nonnull(ctx, Y);
	ck_assert_str_eq(Y->name, "layer_norm");
	ts_tensor *M = ts_op_stage(Y, "layer_norm_mean"), *V = ts_op_stage(Y, "layer_norm_var");
	tu_nonnull(ctx, M);
	tu_nonnull(ctx, V);
	ck_assert_int_eq(M->ndim, 1);
	ck_assert_int_eq(M->shape[0], 4);
	ck_assert_ptr_eq(ts_op_stage(V, "layer_norm_mean"), M);
	ts_ctx_free(ctx);
}
END_TEST

/* layer_norm(X[rows, n], gamma, beta) scheduled with `lanes`, built by
 * LLVM, with its four arrays (X, gamma, beta, Y) filled at random in
 * [-1, 1). */
typedef struct compiled {
	ts_ctx *ctx;
	ts_module *m;
	ts_array *a[4];
} compiled;

static compiled build_compiled(int64_t rows_, int64_t n, double eps, int lanes)
{
	compiled c = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = c.ctx;
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(rows_, n), ts_float32);
	ts_tensor *G = ts_placeholder(ctx, "gamma", TS_SHAPE(n), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "beta", TS_SHAPE(n), ts_float32);
	ts_tensor *Y = ts_op_layer_norm(ctx, X, G, B, eps);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_layer_norm_cpu(s, Y, lanes));
	ts_func *f = ts_lower(s, "layer_norm", 4, (ts_tensor *[]){X, G, B, Y});
	tu_nonnull(ctx, f);
	c.m = ts_build(ctx, f, "llvm");
	tu_nonnull(ctx, c.m);
	for (int i = 0; i < 4; i++) {
		c.a[i] = ts_array_for(ctx, f->param_tensors[i]);
		ck_assert_ptr_nonnull(c.a[i]);
		ts_array_fill_random(c.a[i], 77 + (uint64_t)i, -1, 1);
	}
	return c;
}

static void free_compiled(compiled *c)
{
	for (int i = 0; i < 4; i++)
		ts_array_free(c->a[i]);
	ts_module_free(c->m);
	ts_ctx_free(c->ctx);
}

/* A row of a constant: variance 0, so y = beta exactly (epsilon keeps the
 * division finite). */
START_TEST(layer_norm_constant_row)
{
	compiled c = build_compiled(2, 19, 1e-3, 8);
	float *x = c.a[0]->data;
	for (int i = 0; i < 38; i++)
		x[i] = 0.25f;
	tu_ok(c.ctx, ts_module_run(c.m, 4, c.a));
	const float *y = c.a[3]->data, *beta = c.a[2]->data;
	for (int i = 0; i < 38; i++)
		ck_assert_msg(fabsf(y[i] - beta[i % 19]) <= 1e-6f, "y[%d] = %g, beta %g", i, y[i],
			      beta[i % 19]);
	free_compiled(&c);
}
END_TEST

/* Rows far from zero (300 + [-1, 1)), compiled with float accumulation:
 * the mean is taken of each element less its row's first, so the spread
 * is not lost to rounding a sum near 300 * n (under 1e-6 of the output's
 * magnitude off a double reference; unshifted, 2.5e-5). */
START_TEST(layer_norm_offset_rows)
{
	int64_t rows_ = 6, n = 100;
	compiled c = build_compiled(rows_, n, 1e-5, 16);
	ts_array_fill_random(c.a[0], 31, 299, 301);
	ts_array_fill_random(c.a[1], 32, 0.5, 1.5);
	tu_ok(c.ctx, ts_module_run(c.m, 4, c.a));
	const float *x = c.a[0]->data, *g = c.a[1]->data, *b = c.a[2]->data, *y = c.a[3]->data;
	double maxerr = 0, maxref = 0;
	for (int64_t r = 0; r < rows_; r++) {
		double mean, inv_sd;
		row_stats(x + r * n, n, 1e-5, &mean, &inv_sd);
		for (int64_t j = 0; j < n; j++) {
			double want = (x[r * n + j] - mean) * inv_sd * g[j] + b[j];
			maxerr = fmax(maxerr, fabs(y[r * n + j] - want));
			maxref = fmax(maxref, fabs(want));
		}
	}
	ck_assert_msg(maxerr <= 2e-6 * maxref, "max error %g of max %g", maxerr, maxref);
	free_compiled(&c);
}
END_TEST

/* ---- refusals ---------------------------------------------------------------------- */

START_TEST(layer_norm_refusals)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(4, 6), ts_float32);
	ts_tensor *G = ts_placeholder(ctx, "gamma", TS_SHAPE(6), ts_float32);
	ts_tensor *G5 = ts_placeholder(ctx, "g5", TS_SHAPE(5), ts_float32);
	ts_tensor *G2 = ts_placeholder(ctx, "g2", TS_SHAPE(1, 6), ts_float32);
	ts_tensor *Gd = ts_placeholder(ctx, "gd", TS_SHAPE(6), ts_float64);
	ts_tensor *Xi = ts_placeholder(ctx, "Xi", TS_SHAPE(4, 6), ts_int32);
	ts_tensor *Gi = ts_placeholder(ctx, "gi", TS_SHAPE(6), ts_int32);
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, Xi, Gi, NULL, 1e-5),
		   "layer_norm: Xi[4, 6] has dtype int32; a float dtype is required");
	/* an epsilon X's dtype holds only as 0 (a constant row gave NaN) */
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, X, G, NULL, 1e-50),
		   "layer_norm: X[4, 6]: epsilon 1e-50 rounds to 0 in float32");
	ts_tensor *Xh = ts_placeholder(ctx, "Xh", TS_SHAPE(4, 6), ts_float16);
	ts_tensor *Gh = ts_placeholder(ctx, "gh", TS_SHAPE(6), ts_float16);
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, Xh, Gh, NULL, 1e-8),
		   "layer_norm: Xh[4, 6]: epsilon 1e-08 rounds to 0 in float16");
	/* one past the dtype's largest value is infinite: every output beta */
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, X, G, NULL, 1e39),
		   "layer_norm: X[4, 6]: epsilon 1e+39 rounds to infinity in float32");
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, Xh, Gh, NULL, 1e5),
		   "layer_norm: Xh[4, 6]: epsilon 100000 rounds to infinity in float16");
	ts_clear_error(ctx);
	tu_nonnull(ctx, ts_op_layer_norm(ctx, Xh, Gh, NULL, 65504)); /* float16's largest */
	tu_nonnull(ctx, ts_op_layer_norm(ctx, Xh, Gh, NULL, 1e-7)); /* a float16 subnormal */
	ts_tensor *Xd = ts_placeholder(ctx, "Xd", TS_SHAPE(4, 6), ts_float64);
	tu_nonnull(ctx, ts_op_layer_norm(ctx, Xd, Gd, NULL, 1e-50));
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, X, G5, NULL, 1e-5),
		   "layer_norm: gamma g5[5] does not match the last axis of X[4, 6]");
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, X, G2, NULL, 1e-5),
		   "layer_norm: gamma g2[1, 6] does not match the last axis of X[4, 6]");
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, X, G, G5, 1e-5),
		   "layer_norm: beta g5[5] does not match the last axis of X[4, 6]");
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, X, Gd, NULL, 1e-5),
		   "layer_norm: dtype mismatch: X[4, 6] is float32, gd[6] is float64");
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, X, G, NULL, 0),
		   "layer_norm: X[4, 6]: epsilon must be positive and finite, got 0");
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, X, G, NULL, -1e-5),
		   "layer_norm: X[4, 6]: epsilon must be positive and finite, got -1e-05");
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, X, G, NULL, NAN), "epsilon must be positive and finite");
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, X, G, NULL, INFINITY),
		   "epsilon must be positive and finite");
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, NULL, G, NULL, 1e-5), "layer_norm: input 0 is NULL");
	FAILS_NULL(ctx, ts_op_layer_norm(ctx, X, NULL, NULL, 1e-5), "layer_norm: input 1 is NULL");
	ck_assert_ptr_null(ts_op_layer_norm(NULL, X, G, NULL, 1e-5));
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(layer_norm_schedule_refusals)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(4, 6), ts_float32);
	ts_tensor *G = ts_placeholder(ctx, "gamma", TS_SHAPE(6), ts_float32);
	ts_tensor *Y = ts_op_layer_norm(ctx, X, G, NULL, 1e-5), *S = ts_op_softmax(ctx, X);
	ts_schedule *s = ts_create_schedule(ctx, 2, (ts_tensor *[]){Y, S});
	tu_nonnull(ctx, s);
	FAILS_ST(ctx, ts_schedule_layer_norm_cpu(s, S, 8),
		 "schedule_layer_norm_cpu: softmax is not a layer norm (ts_op_layer_norm): it has no stage layer_norm_mean");
	FAILS_ST(ctx, ts_schedule_layer_norm_cpu(s, Y, 0), "schedule_layer_norm_cpu: lanes must be 1..");
	FAILS_ST(ctx, ts_schedule_layer_norm_cpu(s, NULL, 8), "schedule_layer_norm_cpu: tensor is NULL");
	ck_assert_int_eq(ts_schedule_layer_norm_cpu(NULL, Y, 8), TS_ERR_INVALID);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("layernorm");
	TCase *tc = tcase_create("layernorm");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, layer_norm_rank1);
	tcase_add_test(tc, layer_norm_rank2);
	tcase_add_test(tc, layer_norm_rank3);
	tcase_add_test(tc, layer_norm_values);
	tcase_add_test(tc, layer_norm_symbolic);
	tcase_add_test(tc, layer_norm_stages);
	tcase_add_test(tc, layer_norm_constant_row);
	tcase_add_test(tc, layer_norm_offset_rows);
	tcase_add_test(tc, layer_norm_refusals);
	tcase_add_test(tc, layer_norm_schedule_refusals);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
