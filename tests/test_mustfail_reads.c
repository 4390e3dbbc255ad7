/*
 * test_mustfail_reads.c - programs lowering must refuse: reads outside a
 * tensor's shape (checked over each compute's whole domain) and unrolled
 * loop nests whose copies multiply past the limit.  Each refusal checks the
 * status and the message; each rule also has legal neighbours (padding,
 * convolutions, shifted windows and stencils that stay inside) that must
 * still lower and match the reference evaluator.
 */
#include "testutil.h"

#include <string.h>

#include "lower.h"
#include "ops.h"
#include "passes.h"
#include "schedule.h"

static ts_expr *I(ts_ctx *ctx, int64_t v)
{
	return ts_int(ctx, v);
}

/* Lowers C, whose only input is A, with the default schedule. */
static ts_func *lower_1d(ts_ctx *ctx, ts_tensor *A, ts_tensor *C)
{
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_nonnull(ctx, s);
	return ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
}

/* Asserts that lowering failed with TS_ERR_INVALID and message `part`. */
static void assert_refused(ts_ctx *ctx, const ts_func *f, const char *part)
{
	ck_assert_ptr_null(f);
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_INVALID);
	tu_assert_error(ctx, part);
}

/* ---- out-of-bounds reads ------------------------------------------------------ */

START_TEST(test_shifted_read_past_the_end)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(16), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(16), TS_VARS(i),
				  TS_READ(ctx, A, ts_add(ctx, i, I(ctx, 8))));
	assert_refused(ctx, lower_1d(ctx, A, C),
		       "lower: C reads A[i + 8] over [8, 24) in dimension 0, but A has extent 16");
	ts_ctx_free(ctx);
}
END_TEST

/* A gather: an index read from tensor data (an int32 tensor of positions,
 * A[i, int(A[i, j])]) is bounded by nothing, so it is refused unless the
 * expression clamps it into the shape; clamped, it lowers and runs as the
 * reference does on random positions. */
START_TEST(test_gather_unclamped)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *P = ts_placeholder(ctx, "P", TS_SHAPE(9), ts_int32);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(7), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *G = ts_compute(ctx, "G", TS_SHAPE(9), TS_VARS(i), TS_READ(ctx, A, TS_READ(ctx, P, i)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &G);
	assert_refused(ctx, ts_lower(s, "g", 3, (ts_tensor *[]){P, A, G}),
		       "lower: G reads A[P[i]]: index 0 is computed from tensor data, which nothing bounds, so "
		       "compiled code could read past A; clamp it into [0, 7)");
	ts_expr *clamped = ts_max(ctx, ts_min(ctx, TS_READ(ctx, P, i), ts_int(ctx, 6)), ts_int(ctx, 0));
	ts_tensor *H = ts_compute(ctx, "H", TS_SHAPE(9), TS_VARS(i), TS_READ(ctx, A, clamped));
	s = ts_create_schedule(ctx, 1, &H);
	ts_func *f = ts_lower(s, "h", 3, (ts_tensor *[]){P, A, H});
	tu_nonnull(ctx, f);
	tu_check_func_llvm(ctx, f, NULL, 0);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_shifted_read_before_the_start)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(16), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(16), TS_VARS(i),
				  TS_READ(ctx, A, ts_sub(ctx, i, I(ctx, 1))));
	assert_refused(ctx, lower_1d(ctx, A, C),
		       "C reads A[i - 1] over [-1, 15) in dimension 0, but A has extent 16");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_read_in_second_dimension)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(8, 8), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(8, 8), TS_VARS(i, j),
				  TS_READ(ctx, A, i, ts_add(ctx, j, I(ctx, 1))));
	assert_refused(ctx, lower_1d(ctx, A, C),
		       "C reads A[i, j + 1] over [1, 9) in dimension 1, but A has extent 8");
	ts_ctx_free(ctx);
}
END_TEST

/* The reduction axes are part of the domain. */
START_TEST(test_reduction_axis_past_the_end)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(16, 16), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 20);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(16), TS_VARS(i),
				  TS_SUM(ctx, TS_READ(ctx, A, i, k->var), k));
	assert_refused(ctx, lower_1d(ctx, A, C),
		       "C reads A[i, k] over [0, 20) in dimension 1, but A has extent 16");
	ts_ctx_free(ctx);
}
END_TEST

/* An intermediate tensor is checked like a placeholder, and so is the
 * stage that reads it even when that stage is inlined. */
START_TEST(test_read_of_intermediate)
{
	for (int inl = 0; inl < 2; inl++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(16), ts_float32);
		ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
		ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(16), TS_VARS(i),
					  ts_mul(ctx, TS_READ(ctx, A, i), ts_float(ctx, 2)));
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(16), TS_VARS(j),
					  TS_READ(ctx, B, ts_add(ctx, j, I(ctx, 1))));
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		if (inl)
			tu_ok(ctx, ts_compute_inline(ts_stage_of(s, B)));
		assert_refused(ctx, ts_lower(s, "f", 2, (ts_tensor *[]){A, C}),
			       "lower: C reads B[j + 1] over [1, 17) in dimension 0, but B has extent 16");
		ts_ctx_free(ctx);
	}
}
END_TEST

/* max(i, 8) - min(i, 8) over [0, 16) is over-approximated as [0, 15] (i
 * occurs twice); shifted by 16 it is certainly past the end all the same. */
START_TEST(test_certain_read_past_the_end)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(16), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *d = ts_sub(ctx, ts_max(ctx, i, I(ctx, 8)), ts_min(ctx, i, I(ctx, 8)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(16), TS_VARS(i),
				  TS_READ(ctx, A, ts_add(ctx, d, I(ctx, 16))));
	assert_refused(ctx, lower_1d(ctx, A, C), "in dimension 0, but A has extent 16");
	ts_ctx_free(ctx);
}
END_TEST

/* i*2 - i uses i twice, so its plain interval is not exact; simplified to
 * i it is, and the read is refused with the exact range. */
START_TEST(test_repeated_variable_simplified)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(16), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *idx = ts_add(ctx, ts_sub(ctx, ts_mul(ctx, i, I(ctx, 2)), i), I(ctx, 8));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(16), TS_VARS(i), TS_READ(ctx, A, idx));
	assert_refused(ctx, lower_1d(ctx, A, C),
		       "C reads A[i*2 - i + 8] over [8, 24) in dimension 0, but A has extent 16");
	ts_ctx_free(ctx);
}
END_TEST

/* Both arms of a select are evaluated (ir.h), so a guard does not make an
 * out-of-bounds index safe: the reference evaluator refuses the program at
 * run time and lowering refuses it, pointing at the clamp that pad uses. */
START_TEST(test_select_does_not_guard_a_read)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(16), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *body = ts_select(ctx, ts_ge(ctx, i, I(ctx, 1)),
				  TS_READ(ctx, A, ts_sub(ctx, i, I(ctx, 1))), ts_float(ctx, 0));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(16), TS_VARS(i), body);
	ts_array *a = ts_array_for(ctx, A), *c = ts_array_for(ctx, C);
	ts_array_fill_random(a, 1, -1, 1);
	ck_assert_int_ne(ts_eval(ctx, 2, (ts_tensor *[]){A, C}, (void *[]){a->data, c->data}), TS_OK);
	tu_assert_error(ctx, "out of bounds");
	ts_clear_error(ctx);
	assert_refused(ctx, lower_1d(ctx, A, C),
		       "C reads A[i - 1] over [-1, 15) in dimension 0, but A has extent 16 "
		       "(both arms of a select are evaluated: clamp the index, as pad does)");
	ts_array_free(a);
	ts_array_free(c);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- legal neighbours ------------------------------------------------------------ */

/* C[i] = A[i + 8] over a domain of 8 stays inside A[16]. */
START_TEST(test_shifted_window_inside)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(16), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(8), TS_VARS(i),
				  TS_READ(ctx, A, ts_add(ctx, i, I(ctx, 8))));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_axis *o, *in;
	tu_ok(ctx, ts_split(ts_stage_of(s, C), ts_axis_of(ts_stage_of(s, C), 0), 3, &o, &in));
	tu_check_func(ctx, ts_lower(s, "f", 2, (ts_tensor *[]){A, C}), 1e-6);
	ts_ctx_free(ctx);
}
END_TEST

/* A 3x3 stencil over the interior (a smaller domain), with its producer
 * computed inside split tiles that 4 does not divide. */
START_TEST(test_stencil_inside)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(19, 23), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *y = ts_var(ctx, "y"),
		*x = ts_var(ctx, "x");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(19, 23), TS_VARS(i, j),
				  ts_mul(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 3)));
	ts_iter *ry = ts_reduce_axis(ctx, "ry", 0, 3), *rx = ts_reduce_axis(ctx, "rx", 0, 3);
	ts_expr *rd = TS_READ(ctx, B, ts_add(ctx, y, ry->var), ts_add(ctx, x, rx->var));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(17, 21), TS_VARS(y, x), TS_SUM(ctx, rd, ry, rx));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *yo, *xo, *yi, *xi;
	tu_ok(ctx, ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), 4, 4, &yo, &xo, &yi, &xi));
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, B), sc, xo));
	tu_check_func(ctx, ts_lower(s, "stencil", 2, (ts_tensor *[]){A, C}), 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

/* |i - 8| as max(i, 8) - min(i, 8): the bound [0, 15] is not exact and
 * reaches past A[9], but every read is inside, so it is accepted. */
START_TEST(test_inexact_bound_accepted)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(9), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *d = ts_sub(ctx, ts_max(ctx, i, I(ctx, 8)), ts_min(ctx, i, I(ctx, 8)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(16), TS_VARS(i), TS_READ(ctx, A, d));
	tu_check_func(ctx, lower_1d(ctx, A, C), 1e-6);
	ts_ctx_free(ctx);
}
END_TEST

/* Padding reads through a clamped index under a select. */
START_TEST(test_pad_and_conv2d_lower)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 3, 9, 7), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(4, 3, 3, 3), ts_float32);
	ts_tensor *P = ts_op_pad(ctx, X, (const int64_t[]){0, 1, 2, 0}, (const int64_t[]){1, 0, 3, 2},
				 0.5);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, 2, 1, 1, 2, 1, 2, 1);
	tu_nonnull(ctx, P);
	tu_nonnull(ctx, Y);
	ts_schedule *sp = ts_create_schedule(ctx, 1, &P);
	tu_check_func(ctx, ts_lower(sp, "pad", 2, (ts_tensor *[]){X, P}), 1e-6);
	ts_schedule *sy = ts_create_schedule(ctx, 1, &Y);
	tu_check_func(ctx, ts_lower(sy, "conv", 3, (ts_tensor *[]){X, W, Y}), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- unrolling ------------------------------------------------------------------- */

/* C[i, j] = A[i, j] + 1 over an n x m grid with i and j unrolled. */
static ts_schedule *grid(ts_ctx *ctx, int64_t n, int64_t m, ts_stage **sc, ts_tensor **args)
{
	ts_tensor *A = args[0] = ts_placeholder(ctx, "A", TS_SHAPE(n, m), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(n, m), TS_VARS(i, j),
				  ts_add(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 1)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	*sc = ts_stage_of(s, C);
	args[1] = C;
	return s;
}

START_TEST(test_unroll_product_refused_by_schedule)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_stage *sc;
	ts_tensor *args[2];
	grid(ctx, 1024, 1024, &sc, args);
	tu_ok(ctx, ts_unroll(sc, ts_axis_of(sc, 1)));
	ck_assert_int_eq(ts_unroll(sc, ts_axis_of(sc, 0)), TS_ERR_INVALID);
	tu_assert_error(ctx, "unroll(C): unrolling 'i' with 'j' would make 1048576 copies of the "
			     "body (limit 4096)");
	ts_ctx_free(ctx);
}
END_TEST

/* A stage computed at another gets its extents only at lowering, where the
 * unroll pass checks the product. */
START_TEST(test_unroll_product_refused_by_lowering)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(512, 512), ts_float32);
	ts_expr *i = ts_var(ctx, "bi"), *j = ts_var(ctx, "bj"), *y = ts_var(ctx, "y"),
		*x = ts_var(ctx, "x");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(512, 512), TS_VARS(i, j),
				  ts_mul(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 2)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(512, 512), TS_VARS(y, x),
				  ts_add(ctx, TS_READ(ctx, B, y, x), ts_float(ctx, 1)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sb = ts_stage_of(s, B), *sc = ts_stage_of(s, C);
	ts_axis *yo, *yi;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 256, &yo, &yi));
	tu_ok(ctx, ts_compute_at(sb, sc, yo));
	tu_ok(ctx, ts_unroll(sb, ts_axis_of(sb, 0)));
	tu_ok(ctx, ts_unroll(sb, ts_axis_of(sb, 1)));
	assert_refused(ctx, ts_lower(s, "f", 2, (ts_tensor *[]){A, C}),
		       "unroll: unrolling bj inside bi would make 131072 copies of the body "
		       "(limit 4096)");
	ts_ctx_free(ctx);
}
END_TEST

/* The size of the body counts: 1024 copies of 100 statements. */
START_TEST(test_unroll_body_size_refused)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t shape[1] = {100};
	ts_buffer *b = ir_buffer_new(ctx, "b", ts_float32, 1, shape, TS_SCOPE_GLOBAL);
	ts_expr *i = ts_var(ctx, "i");
	ts_stmt *st[100];
	for (int k = 0; k < 100; k++)
		st[k] = ir_store(ctx, b, I(ctx, k), ts_cast(ctx, ts_float32, i));
	ts_stmt *loop = ir_for(ctx, i, I(ctx, 0), I(ctx, 1024), TS_FOR_UNROLLED, TS_THREAD_NONE,
			       ir_seq(ctx, 100, st));
	tu_nonnull(ctx, loop);
	ck_assert_ptr_null(pass_unroll(ctx, loop));
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_INVALID);
	tu_assert_error(ctx, "unroll: unrolling i would make 1024 copies of a body of 100 "
			     "statements (102400 statements, limit 4096)");
	ts_ctx_free(ctx);
}
END_TEST

/* Nested unrolled loops within the limit still lower and compute. */
START_TEST(test_unroll_nested_within_limit)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_stage *sc;
	ts_tensor *args[2];
	ts_schedule *s = grid(ctx, 13, 37, &sc, args);
	ts_axis *o, *in;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 1), 8, &o, &in));
	tu_ok(ctx, ts_unroll(sc, ts_axis_of(sc, 0)));
	tu_ok(ctx, ts_unroll(sc, in));
	tu_check_func(ctx, ts_lower(s, "f", 2, args), 1e-6);
	ts_ctx_free(ctx);
}
END_TEST

/* Each nest fits, but loop partitioning copies the unrolled body for the
 * tail, and the function as a whole would pass the limit: 64 x 60 unrolled
 * statements in the main part and 36 x 60 in the tail. */
START_TEST(test_unroll_total_refused)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_stage *sc;
	ts_tensor *args[2];
	ts_schedule *s = grid(ctx, 100, 60, &sc, args);
	ts_axis *o, *in;
	tu_ok(ctx, ts_split_tail(sc, ts_axis_of(sc, 0), 64, TS_TAIL_PARTITION, &o, &in));
	tu_ok(ctx, ts_unroll(sc, in));
	tu_ok(ctx, ts_unroll(sc, ts_axis_of(sc, 1)));
	assert_refused(ctx, ts_lower(s, "f", 2, args),
		       "unroll: the 2 unrolled loop nests of the function would expand to 6000 "
		       "statements in all (limit 4096)");
	ts_ctx_free(ctx);
}
END_TEST

/* A reduction axis past int32 reading an 8-element tensor (the bound of
 * an int32 variable past int32 once looked unbounded, and the read was
 * let through to the JIT). */
START_TEST(test_reduction_past_int32_refused)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *P = ts_placeholder(ctx, "P", TS_SHAPE(8), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, (int64_t)1 << 31);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *R = ts_compute(ctx, "R", TS_SHAPE(1), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, P, k->var), k));
	assert_refused(ctx, lower_1d(ctx, P, R), "lower: R reads P[k] over [0, 2147483648) in dimension 0, "
						 "but P has extent 8");
	ts_ctx_free(ctx);
}
END_TEST

/* (i * 2^20) / 2^20 is i in mathematics, but int32 arithmetic wraps for
 * i >= 2048 (ir.h) and the compiled code read 8 KB before A. */
START_TEST(test_wrapping_index_refused)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4096), ts_int32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *idx = ts_floordiv(ctx, ts_mul(ctx, i, I(ctx, 1 << 20)), I(ctx, 1 << 20));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4096), TS_VARS(i), TS_READ(ctx, A, idx));
	assert_refused(ctx, lower_1d(ctx, A, C), "whose int32 arithmetic leaves int32 and would wrap (ir.h): "
						 "build the index in int64");
	ts_ctx_free(ctx);
	/* the same index built in int64 is exact and inside */
	ctx = ts_ctx_new();
	A = ts_placeholder(ctx, "A", TS_SHAPE(4096), ts_int32);
	i = ts_var(ctx, "i");
	ts_expr *wide = ts_cast(ctx, ts_int64, i);
	idx = ts_floordiv(ctx, ts_mul(ctx, wide, ts_const(ctx, ts_int64, 1 << 20)), ts_const(ctx, ts_int64, 1 << 20));
	C = ts_compute(ctx, "C", TS_SHAPE(4096), TS_VARS(i), TS_READ(ctx, A, idx));
	tu_check_func(ctx, lower_1d(ctx, A, C), 0);
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mustfail_reads");
	TCase *tc = tcase_create("reads");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_shifted_read_past_the_end);
	tcase_add_test(tc, test_shifted_read_before_the_start);
	tcase_add_test(tc, test_gather_unclamped);
	tcase_add_test(tc, test_read_in_second_dimension);
	tcase_add_test(tc, test_reduction_axis_past_the_end);
	tcase_add_test(tc, test_reduction_past_int32_refused);
	tcase_add_test(tc, test_wrapping_index_refused);
	tcase_add_test(tc, test_read_of_intermediate);
	tcase_add_test(tc, test_certain_read_past_the_end);
	tcase_add_test(tc, test_repeated_variable_simplified);
	tcase_add_test(tc, test_select_does_not_guard_a_read);
	tcase_add_test(tc, test_shifted_window_inside);
	tcase_add_test(tc, test_stencil_inside);
	tcase_add_test(tc, test_inexact_bound_accepted);
	tcase_add_test(tc, test_pad_and_conv2d_lower);
	suite_add_tcase(s, tc);
	TCase *tu = tcase_create("unroll");
	tcase_set_timeout(tu, 600);
	tcase_add_test(tu, test_unroll_product_refused_by_schedule);
	tcase_add_test(tu, test_unroll_product_refused_by_lowering);
	tcase_add_test(tu, test_unroll_body_size_refused);
	tcase_add_test(tu, test_unroll_nested_within_limit);
	tcase_add_test(tu, test_unroll_total_refused);
	suite_add_tcase(s, tu);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
