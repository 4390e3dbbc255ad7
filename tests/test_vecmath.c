/*
 * test_vecmath.c - vectorized math intrinsics: exp, log, exp2, pow, tanh,
 * erf and sigmoid on vectors call libmvec's whole-register functions on
 * x86-64 (vecmath.h) and agree with the reference evaluator, for float32
 * and float64, at lane counts that are one register, several, fewer than
 * the widest (a narrower ISA variant) and none at all (a libm fallback).
 */
#include "testutil.h"

#include <string.h>

#include "build.h"
#include "lower.h"

typedef ts_expr *(*unary)(ts_ctx *ctx, ts_expr *x, ts_expr *y);

static ts_expr *f_exp(ts_ctx *c, ts_expr *x, ts_expr *y) { (void)y; return ts_exp(c, x); }
static ts_expr *f_exp2(ts_ctx *c, ts_expr *x, ts_expr *y) { (void)y; return ts_exp2(c, x); }
static ts_expr *f_tanh(ts_ctx *c, ts_expr *x, ts_expr *y) { (void)y; return ts_tanh(c, x); }
static ts_expr *f_erf(ts_ctx *c, ts_expr *x, ts_expr *y) { (void)y; return ts_erf(c, x); }
static ts_expr *f_sigmoid(ts_ctx *c, ts_expr *x, ts_expr *y) { (void)y; return ts_sigmoid(c, x); }

/* log and pow on positive arguments: |x| + 0.25 */
static ts_expr *positive(ts_ctx *c, ts_expr *x)
{
	return ts_add(c, ts_fabs(c, x), ts_make_const(c, x->dtype, 0.25));
}

static ts_expr *f_log(ts_ctx *c, ts_expr *x, ts_expr *y)
{
	(void)y;
	return ts_log(c, positive(c, x));
}

static ts_expr *f_pow(ts_ctx *c, ts_expr *x, ts_expr *y)
{
	return ts_pow(c, positive(c, x), y);
}

static const struct {
	const char *name;
	unary fn;
	bool libmvec; /* a libmvec function is called (sigmoid: its exp) */
} ops[] = {
	{"exp", f_exp, true},   {"log", f_log, true},  {"exp2", f_exp2, true},
	{"pow", f_pow, true},   {"tanh", f_tanh, true}, {"erf", f_erf, true},
	{"sigmoid", f_sigmoid, true},
};

/* C[i] = op(A[i], B[i]) over n elements, split by `lanes` (the tail in a
 * loop of its own) and vectorized. */
static void check_op(size_t o, ts_dtype t, int lanes, int64_t n)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(n), t);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(n), t);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(n), TS_VARS(i),
				  ops[o].fn(ctx, TS_READ(ctx, A, i), TS_READ(ctx, B, i)));
	tu_nonnull(ctx, C);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *xo, *xi;
	tu_ok(ctx, ts_split_tail(sc, ts_axis_of(sc, 0), lanes, TS_TAIL_PARTITION, &xo, &xi));
	tu_ok(ctx, ts_vectorize(sc, xi));
	ts_func *f = ts_lower(s, "vmath", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	char what[96];
	snprintf(what, sizeof(what), "%s on %d x %s", ops[o].name, lanes,
		 t.bits == 32 ? "float32" : "float64");
	tu_set_context(what);
	tu_check_func_llvm(ctx, f, NULL, t.bits == 32 ? 2e-6 : 1e-12);
	tu_set_context(NULL);
	ts_module *m = ts_build(ctx, f, "llvm");
	tu_nonnull(ctx, m);
	const char *ir = ts_module_source(m, "llvm");
	ck_assert_ptr_nonnull(ir);
	/* x86-64 always has SSE: every lane count of at least its width calls
	 * libmvec (one that is not a power of two is vectorized as loops of
	 * power-of-two lanes, 5 as 4 + 1); fewer lanes fall back to per-lane
	 * libm */
	int per128 = 128 / t.bits;
	bool vec = strstr(ts_module_target(m), "x86_64") && lanes >= per128;
	ck_assert_msg((strstr(ir, "@_ZGV") != NULL) == (vec && ops[o].libmvec),
		      "%s: libmvec call %s expected", what, vec ? "" : "not");
	ts_module_free(m);
	ts_ctx_free(ctx);
}

START_TEST(test_float32)
{
	static const int lanes[] = {16, 8, 4, 32, 5};
	for (size_t o = 0; o < TS_COUNT_OF(ops); o++)
		for (size_t l = 0; l < TS_COUNT_OF(lanes); l++)
			check_op(o, ts_float32, lanes[l], 203); /* tails of 11, 3 or none */
}
END_TEST

START_TEST(test_float64)
{
	static const int lanes[] = {8, 4, 2, 16, 3};
	for (size_t o = 0; o < TS_COUNT_OF(ops); o++)
		for (size_t l = 0; l < TS_COUNT_OF(lanes); l++)
			check_op(o, ts_float64, lanes[l], 99); /* every tail is odd */
}
END_TEST

/* NaN and infinities go through libmvec as through libm. */
START_TEST(test_special_values)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(16), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(16), TS_VARS(i), ts_exp(ctx, TS_READ(ctx, A, i)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	tu_ok(ctx, ts_vectorize(sc, ts_axis_of(sc, 0)));
	ts_module *m = ts_build(ctx, ts_lower(s, "vexp", 2, (ts_tensor *[]){A, C}), "llvm");
	tu_nonnull(ctx, m);
	ts_array *a = ts_array_for(ctx, A), *c = ts_array_for(ctx, C);
	float *pa = a->data, *pc = c->data;
	const float in[4] = {NAN, INFINITY, -INFINITY, 1000.0f};
	for (int e = 0; e < 16; e++)
		pa[e] = e < 4 ? in[e] : (float)e / 4;
	tu_ok(ctx, ts_module_run(m, 2, (ts_array *[]){a, c}));
	ck_assert(isnan(pc[0]));
	ck_assert(isinf(pc[1]) && pc[1] > 0);
	ck_assert_float_eq(pc[2], 0.0f);
	ck_assert(isinf(pc[3]));
	for (int e = 4; e < 16; e++)
		ck_assert_float_eq_tol(pc[e], expf((float)e / 4), 1e-6f * expf((float)e / 4));
	ts_array_free(a);
	ts_array_free(c);
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vecmath");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_float32);
	tcase_add_test(tc, test_float64);
	tcase_add_test(tc, test_special_values);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
