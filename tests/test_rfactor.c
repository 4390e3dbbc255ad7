/* test_rfactor.c - rfactor: reductions factored over a leaf reduction axis,
 * checked against the reference evaluator through the interpreter and the
 * LLVM JIT, on extents the split factors do not divide. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* C[i] = op_k A[i, k] over M x K. */
static ts_tensor *row_reduce(ts_ctx *ctx, ts_reduce_op op, int64_t M, int64_t K, ts_tensor **A)
{
	*A = ts_placeholder(ctx, "A", TS_SHAPE(M, K), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, K);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *src = TS_READ(ctx, *A, i, k->var);
	return ts_compute(ctx, "C", TS_SHAPE(M), TS_VARS(i), ts_reduce(ctx, op, src, 1, &k, NULL));
}

static ts_func *lower2(ts_ctx *ctx, ts_schedule *s, ts_tensor *A, ts_tensor *C)
{
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
	tu_nonnull(ctx, f);
	return f;
}

/* A split factor past the reduction's extent (8): rfactor over either
 * part reduces over the 8 values the inner axis takes, not the factor
 * (INT64_MAX made a loop that never ended; 2^31 - 1 a buffer of that many
 * partial sums per row); right through every backend. */
START_TEST(test_factor_past_extent)
{
	static const int64_t factors[] = {9, 64, 2147483647, INT64_MAX};
	for (size_t n = 0; n < TS_COUNT_OF(factors); n++)
		for (int over_inner = 0; over_inner < 2; over_inner++) {
			ts_ctx *ctx = ts_ctx_new();
			ts_tensor *A, *C = row_reduce(ctx, TS_REDUCE_SUM, 5, 8, &A);
			ts_schedule *s = ts_create_schedule(ctx, 1, &C);
			ts_stage *sc = ts_stage_of(s, C);
			ts_axis *ko, *ki;
			tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), factors[n], &ko, &ki));
			ts_tensor *rf = ts_rfactor(s, C, over_inner ? ki : ko, 0);
			tu_nonnull(ctx, rf);
			ck_assert_int_eq(rf->shape[0], over_inner ? 8 : 1);
			ts_func *f = ts_lower(s, "rf_wide", 2, (ts_tensor *[]){A, C});
			tu_nonnull(ctx, f);
			tu_check_func(ctx, f, 1e-5);
			ts_ctx_free(ctx);
		}
}
END_TEST

/* Row sum, K = 37 split by 8: rf over k.inner (innermost data axis). */
START_TEST(test_row_sum_inner)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_reduce(ctx, TS_REDUCE_SUM, 5, 37, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 8, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, C, ki, 1);
	tu_nonnull(ctx, rf);
	ck_assert_str_eq(rf->name, "C.rf");
	ck_assert_int_eq(rf->ndim, 2);
	ck_assert_int_eq(rf->shape[0], 5);
	ck_assert_int_eq(rf->shape[1], 8);
	ts_stage *sr = ts_stage_of(s, rf);
	tu_nonnull(ctx, sr);
	ck_assert_int_eq(sr->nleaf, 3); /* i, k.inner, k.outer */
	ck_assert_int_eq(sc->nleaf, 2); /* i, k.inner.v */
	ck_assert_int_eq(sc->leaf[1]->extent, 8);
	const char *text = ts_schedule_str(s);
	ck_assert_msg(strstr(text, "stage C.rf: root\n  rfactor of C over k.inner (factor_axis 1)") != NULL,
		      "%s", text);
	ck_assert_msg(strstr(text, "loops: i[5] k.inner.v[8]") != NULL, "%s", text);
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* An error an earlier, unrelated call left does not fail rfactor. */
START_TEST(test_stale_error)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_reduce(ctx, TS_REDUCE_SUM, 3, 20, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 4, &ko, &ki));
	ck_assert_ptr_null(ts_stage_of(s, A)); /* a placeholder has no stage */
	ck_assert_int_ne(ts_last_status(ctx), TS_OK);
	tu_nonnull(ctx, ts_rfactor(s, C, ki, 1));
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* 1-D sum to a shape [1]: 1000 elements, split by 16 (1000 % 16 = 8). */
START_TEST(test_full_sum)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(1000), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 1000);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(1), TS_VARS(i),
				  TS_SUM(ctx, TS_READ(ctx, A, k->var), k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 16, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, C, ki, 0);
	tu_nonnull(ctx, rf);
	ck_assert_int_eq(rf->shape[0], 16);
	ck_assert_int_eq(rf->shape[1], 1);
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* The outer part of a split: rf[i, k.outer] sums k.inner. */
START_TEST(test_row_sum_outer)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_reduce(ctx, TS_REDUCE_SUM, 3, 50, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 7, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, C, ko, 1);
	tu_nonnull(ctx, rf);
	ck_assert_int_eq(rf->shape[1], 8); /* ceil(50 / 7) */
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* max and min: the identity fills the tail, values are all negative (max)
 * or all positive (min) so a zero would show. */
static void check_minmax(ts_reduce_op op, int factor_axis)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_reduce(ctx, op, 4, 29, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 4, &ko, &ki));
	tu_nonnull(ctx, ts_rfactor(s, C, ki, factor_axis));
	tu_check_func(ctx, lower2(ctx, s, A, C), 0);
	ts_ctx_free(ctx);
}

START_TEST(test_max)
{
	check_minmax(TS_REDUCE_MAX, 0);
	check_minmax(TS_REDUCE_MAX, 1);
}
END_TEST

START_TEST(test_min)
{
	check_minmax(TS_REDUCE_MIN, 0);
	check_minmax(TS_REDUCE_MIN, 1);
}
END_TEST

/* The source shifted below or above zero, so that an identity of 0 where
 * -inf/+inf belongs changes the result. */
static void check_signed_minmax(ts_reduce_op op, double shift)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 29), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 29);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *src = ts_add(ctx, TS_READ(ctx, A, i, k->var), ts_float(ctx, shift));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i),
				  ts_reduce(ctx, op, src, 1, &k, NULL));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 8, &ko, &ki));
	tu_nonnull(ctx, ts_rfactor(s, C, ko, 1));
	tu_check_func(ctx, lower2(ctx, s, A, C), 0);
	ts_ctx_free(ctx);
}

START_TEST(test_minmax_identity)
{
	check_signed_minmax(TS_REDUCE_MAX, -100);
	check_signed_minmax(TS_REDUCE_MIN, 100);
}
END_TEST

/* Matmul: split k by 4 (K = 19), rfactor k.inner at axis 0 and at the end. */
static void check_matmul(int factor_axis)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(6, 19), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(19, 5), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 19);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(6, 5), TS_VARS(i, j),
		TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, A, i, k->var), TS_READ(ctx, B, k->var, j)), k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 4, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, C, ki, factor_axis);
	tu_nonnull(ctx, rf);
	ck_assert_int_eq(rf->shape[factor_axis], 4);
	ts_func *f = ts_lower(s, "mm", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	tu_check_func(ctx, f, 1e-4);
	ts_ctx_free(ctx);
}

START_TEST(test_matmul)
{
	check_matmul(0);
	check_matmul(1);
	check_matmul(2);
}
END_TEST

/* TVM's classic: split k by 16, rfactor k.inner, the rf stage vectorized
 * over it and parallel over rows; the final stage reduces k.inner.v. */
START_TEST(test_vectorized_parallel)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_reduce(ctx, TS_REDUCE_SUM, 9, 203, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 16, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, C, ki, 1);
	ts_stage *sr = ts_stage_of(s, rf);
	tu_nonnull(ctx, sr);
	ts_axis *ri = ts_axis_of(sr, 0), *rk = ts_axis_of(sr, 1), *rko = ts_reduce_axis_of(sr, 0);
	tu_ok(ctx, ts_reorder(sr, TS_AXES(ri, rko, rk)));
	tu_ok(ctx, ts_vectorize(sr, rk));
	tu_ok(ctx, ts_parallel(sr, ri));
	tu_ok(ctx, ts_parallel(sc, ts_axis_of(sc, 0)));
	ts_func *f = lower2(ctx, s, A, C);
	ck_assert_str_eq(ts_lower_warnings(f), "");
	tu_check_func(ctx, f, 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* The full sum parallel over the factored axis: each k.outer chunk is one
 * task, the final stage adds the chunks. */
START_TEST(test_parallel_over_kf)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4099), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 4099);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(1), TS_VARS(i),
				  TS_SUM(ctx, TS_READ(ctx, A, k->var), k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split_nparts(sc, ts_reduce_axis_of(sc, 0), 8, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, C, ko, 0);
	ts_stage *sr = ts_stage_of(s, rf);
	tu_nonnull(ctx, sr);
	tu_ok(ctx, ts_parallel(sr, ts_axis_of(sr, 0)));
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* Two reduction axes, one split and the other fused with a part: the rf
 * compute rebuilds both root values from the leaves. */
START_TEST(test_two_axes_fused)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(3, 7, 10), ts_float32);
	ts_iter *r = ts_reduce_axis(ctx, "r", 0, 7), *q = ts_reduce_axis(ctx, "q", 0, 10);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(3), TS_VARS(i),
				  TS_SUM(ctx, TS_READ(ctx, A, i, r->var, q->var), r, q));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *qo, *qi, *f;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 1), 4, &qo, &qi));
	tu_ok(ctx, ts_fuse(sc, ts_reduce_axis_of(sc, 0), qo, &f));
	ts_tensor *rf = ts_rfactor(s, C, qi, 0);
	tu_nonnull(ctx, rf);
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	/* and the fused axis factored instead, in a schedule of its own */
	s = ts_create_schedule(ctx, 1, &C);
	sc = ts_stage_of(s, C);
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 1), 4, &qo, &qi));
	tu_ok(ctx, ts_fuse(sc, ts_reduce_axis_of(sc, 0), qo, &f));
	rf = ts_rfactor(s, C, f, 1);
	tu_nonnull(ctx, rf);
	ck_assert_int_eq(rf->shape[1], 21); /* 7 x ceil(10 / 4) */
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* A reduction with a min, data axes already split and parallel: they stay;
 * a reduction axis that is not split (kf = k itself) leaves no reduction
 * in the rf stage. */
START_TEST(test_keeps_data_schedule)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(10, 6), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 2, 4);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(10), TS_VARS(i),
				  TS_SUM(ctx, TS_READ(ctx, A, i, k->var), k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *io, *ii;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 3, &io, &ii));
	tu_ok(ctx, ts_parallel(sc, io));
	tu_nonnull(ctx, ts_rfactor(s, C, ts_reduce_axis_of(sc, 0), 1));
	ck_assert_int_eq(sc->nleaf, 3);
	ck_assert_ptr_eq(sc->leaf[0], io);
	ck_assert_ptr_eq(sc->leaf[1], ii);
	ck_assert_int_eq(io->loop, TS_FOR_PARALLEL);
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

/* rfactor of C twice: first over k.inner, then over a split of k.inner.v. */
START_TEST(test_twice)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_reduce(ctx, TS_REDUCE_SUM, 3, 100, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki, *vo, *vi;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 12, &ko, &ki));
	tu_nonnull(ctx, ts_rfactor(s, C, ki, 1));
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 5, &vo, &vi));
	ts_tensor *rf2 = ts_rfactor(s, C, vo, 0);
	tu_nonnull(ctx, rf2);
	ck_assert_str_eq(rf2->name, "C.rf2");
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* The rf stage computed at the final stage's row loop. */
START_TEST(test_rf_compute_at)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_reduce(ctx, TS_REDUCE_SUM, 7, 45, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 8, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, C, ki, 1);
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, rf), sc, ts_axis_of(sc, 0)));
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* C computed at its consumer's row loop before rfactor: C stays there,
 * C.rf is computed at root. */
START_TEST(test_after_compute_at)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_reduce(ctx, TS_REDUCE_SUM, 6, 23, &A);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *D = ts_compute(ctx, "D", TS_SHAPE(6), TS_VARS(i),
				  ts_mul(ctx, TS_READ(ctx, C, i), ts_float(ctx, 2)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &D);
	ts_stage *sc = ts_stage_of(s, C), *sd = ts_stage_of(s, D);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_compute_at(sc, sd, ts_axis_of(sd, 0)));
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 4, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, C, ki, 1);
	tu_nonnull(ctx, rf);
	ck_assert_int_eq(ts_stage_of(s, rf)->attach, SCH_ATTACH_ROOT);
	ck_assert_int_eq(sc->attach, SCH_ATTACH_AT);
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, D});
	tu_nonnull(ctx, f);
	tu_check_func(ctx, f, 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* A reduction axis that starts at 3, split so the tail passes its end:
 * the clamp keeps the read inside A (lowering would refuse it). */
START_TEST(test_axis_with_min)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 32), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 3, 29);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i),
				  TS_SUM(ctx, TS_READ(ctx, A, i, k->var), k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 8, &ko, &ki));
	tu_nonnull(ctx, ts_rfactor(s, C, ko, 0));
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* An inlined producer: C.rf reads it, so it is inlined there. */
START_TEST(test_inlined_producer)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(5, 33), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(5, 33), TS_VARS(i, j),
				  ts_mul(ctx, TS_READ(ctx, A, i, j), TS_READ(ctx, A, i, j)));
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 33);
	ts_expr *i2 = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(5), TS_VARS(i2),
				  TS_SUM(ctx, TS_READ(ctx, P, i2, k->var), k));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_compute_inline(ts_stage_of(s, P)));
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 8, &ko, &ki));
	tu_nonnull(ctx, ts_rfactor(s, C, ki, 1));
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* A reduction with an init: it is added once, by the final stage. */
START_TEST(test_init_once)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 30), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 30);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i),
		ts_reduce(ctx, TS_REDUCE_SUM, TS_READ(ctx, A, i, k->var), 1, &k, ts_float(ctx, 10)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 8, &ko, &ki));
	tu_nonnull(ctx, ts_rfactor(s, C, ki, 0));
	tu_check_func(ctx, lower2(ctx, s, A, C), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* Plain C of a vectorized rfactor compiles with -Wall -Werror (when a C
 * compiler is present). */
START_TEST(test_c_emit)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_reduce(ctx, TS_REDUCE_MAX, 8, 70, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 16, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, C, ki, 1);
	ts_stage *sr = ts_stage_of(s, rf);
	tu_ok(ctx, ts_reorder(sr, TS_AXES(ts_reduce_axis_of(sr, 0), ts_axis_of(sr, 1))));
	tu_ok(ctx, ts_vectorize(sr, ts_axis_of(sr, 1)));
	ts_func *f = lower2(ctx, s, A, C);
	const char *src = cg_emit_c(ctx, f);
	tu_nonnull(ctx, src);
	if (system("cc --version >/dev/null 2>&1") != 0)
		return ts_ctx_free(ctx);
	char dir[] = "/tmp/tessera_rf_XXXXXX", cmd[256];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "%s/k.c", dir);
	FILE *fp = fopen(cmd, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(src, fp);
	fclose(fp);
	snprintf(cmd, sizeof(cmd), "cd %s && cc -std=c11 -Wall -Werror -fopenmp -c k.c -o k.o", dir);
	int rc = system(cmd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_msg(rc == 0, "generated C does not compile:\n%s", src);
	ts_ctx_free(ctx);
}
END_TEST

/* The step printer records the primitive. */
START_TEST(test_step)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_reduce(ctx, TS_REDUCE_SUM, 2, 10, &A);
	(void)A;
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 4, &ko, &ki));
	const char *before = ts_schedule_step_str(s);
	tu_nonnull(ctx, ts_rfactor(s, C, ki, 1));
	const char *after = ts_schedule_step_str(s);
	ck_assert_msg(strstr(before, "C.rf") == NULL, "%s", before);
	ck_assert_msg(strstr(after, "C.rf") != NULL, "%s", after);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rfactor");
	TCase *tc = tcase_create("rfactor");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_row_sum_inner);
	tcase_add_test(tc, test_stale_error);
	tcase_add_test(tc, test_full_sum);
	tcase_add_test(tc, test_row_sum_outer);
	tcase_add_test(tc, test_max);
	tcase_add_test(tc, test_min);
	tcase_add_test(tc, test_minmax_identity);
	tcase_add_test(tc, test_matmul);
	tcase_add_test(tc, test_vectorized_parallel);
	tcase_add_test(tc, test_parallel_over_kf);
	tcase_add_test(tc, test_two_axes_fused);
	tcase_add_test(tc, test_keeps_data_schedule);
	tcase_add_test(tc, test_twice);
	tcase_add_test(tc, test_rf_compute_at);
	tcase_add_test(tc, test_after_compute_at);
	tcase_add_test(tc, test_axis_with_min);
	tcase_add_test(tc, test_inlined_producer);
	tcase_add_test(tc, test_init_once);
	tcase_add_test(tc, test_c_emit);
	tcase_add_test(tc, test_step);
	tcase_add_test(tc, test_factor_past_extent);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
