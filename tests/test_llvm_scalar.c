/*
 * test_llvm_scalar.c - the LLVM backend vectorizes what the schedule
 * vectorizes: a loop the schedule left serial stays scalar after LLVM's
 * O3 pipeline, so a schedule's vectorize step is where vector code appears
 * (and what the GEMM tutorial measures).
 */
#include "testutil.h"

#include <string.h>

typedef struct axpy {
	ts_ctx *ctx;
	ts_tensor *A, *B, *C;
	ts_schedule *s;
	ts_stage *sc;
} axpy;

/* C[i, j] = A[i, j] * 2 + B[i, j] over 8 x 1000 (1000 = 16 * 62 + 8). */
static axpy make(void)
{
	axpy x = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = x.ctx;
	x.A = ts_placeholder(ctx, "A", TS_SHAPE(8, 1000), ts_float32);
	x.B = ts_placeholder(ctx, "B", TS_SHAPE(8, 1000), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	x.C = ts_compute(ctx, "C", TS_SHAPE(8, 1000), TS_VARS(i, j),
			 ts_add(ctx, ts_mul(ctx, TS_READ(ctx, x.A, i, j), ts_float(ctx, 2)),
				TS_READ(ctx, x.B, i, j)));
	x.s = ts_create_schedule(ctx, 1, &x.C);
	x.sc = ts_stage_of(x.s, x.C);
	return x;
}

/* The optimized LLVM IR of the schedule, after checking its results. */
static const char *optimized(axpy *x)
{
	ts_func *f = ts_lower(x->s, "axpy", 3, (ts_tensor *[]){x->A, x->B, x->C});
	tu_nonnull(x->ctx, f);
	tu_check_func_llvm(x->ctx, f, NULL, 1e-6);
	ts_module *m = ts_build(x->ctx, f, "llvm");
	tu_nonnull(x->ctx, m);
	const char *ir = ts_module_source(m, "llvm-opt");
	tu_nonnull(x->ctx, ir);
	const char *copy = ts_strdup(x->ctx, ir);
	ts_module_free(m);
	return copy;
}

/* The first vector type in ir ("" if none), for the failure messages. */
static const char *first_vector(const char *ir)
{
	const char *v = strstr(ir, " x float>");
	return v ? v - (v - ir < 40 ? v - ir : 40) : "";
}

START_TEST(unscheduled_stays_scalar)
{
	axpy x = make();
	const char *ir = optimized(&x);
	ck_assert_msg(strstr(ir, " x float>") == NULL, "LLVM vectorized an unscheduled loop: ...%.80s", first_vector(ir));
	ck_assert_msg(strstr(ir, "llvm.loop.vectorize.enable\", i1 false") != NULL,
		      "no loop is marked scalar");
	ts_ctx_free(x.ctx);
}
END_TEST

/* Split but not vectorized: still scalar (the tutorial's blocking step). */
START_TEST(split_stays_scalar)
{
	axpy x = make();
	ts_axis *jo, *ji;
	tu_ok(x.ctx, ts_split(x.sc, ts_axis_of(x.sc, 1), 16, &jo, &ji));
	const char *ir = optimized(&x);
	ck_assert_msg(strstr(ir, " x float>") == NULL, "LLVM vectorized a serial loop: ...%.80s", first_vector(ir));
	ts_ctx_free(x.ctx);
}
END_TEST

/* The vectorize step is where vector code appears.  (Here the split leaves
 * a guarded tail, which tessera's own vectorizer leaves a loop; in a
 * function that vectorizes, such a loop is not marked scalar, and LLVM
 * vectorizes it as the schedule asked, at the width the host prefers:
 * <16 x float> on some AVX-512 CPUs, <8 x float> where LLVM prefers
 * 256-bit vectors, so any vector width counts.) */
START_TEST(vectorized_is_vector)
{
	axpy x = make();
	ts_axis *jo, *ji;
	tu_ok(x.ctx, ts_split(x.sc, ts_axis_of(x.sc, 1), 16, &jo, &ji));
	tu_ok(x.ctx, ts_vectorize(x.sc, ji));
	const char *ir = optimized(&x);
	ck_assert_msg(strstr(ir, " x float>") != NULL, "the vectorized loop is scalar");
	ts_ctx_free(x.ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("llvm_scalar");
	TCase *tc = tcase_create("llvm_scalar");
	tcase_add_test(tc, unscheduled_stays_scalar);
	tcase_add_test(tc, split_stays_scalar);
	tcase_add_test(tc, vectorized_is_vector);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
