/* test_mustfail_index64.c - extents whose ranges or derived extents do not
 * fit int64 are refused with an error naming the primitive and the axis,
 * never computed with a wrapping product. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "lower.h"

START_TEST(test_reduce_axis_range_overflows)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(ts_reduce_axis(ctx, "k", INT64_MAX - 2, 5));
	tu_assert_error(ctx, "reduce_axis k: range");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_reduce_axis(ctx, "m", INT64_MIN, 5));
	tu_assert_error(ctx, "reduce_axis m: range");
	ts_clear_error(ctx);
	/* the end itself must be an int64 */
	ck_assert_ptr_null(ts_reduce_axis(ctx, "e", INT64_MAX - 4, 5));
	tu_assert_error(ctx, "reduce_axis e: range");
	ts_clear_error(ctx);
	ck_assert_ptr_nonnull(ts_reduce_axis(ctx, "ok", INT64_MAX - 5, 5));
	ts_ctx_free(ctx);
}
END_TEST

/* B[0] = sum(A[0], over the reduction axes) */
static ts_stage *sum_stage(ts_ctx *ctx, int n, ts_iter *const *axes)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(1), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(1), TS_VARS(i),
				  ts_sum(ctx, TS_READ(ctx, A, i), n, axes));
	ck_assert_ptr_nonnull(B);
	ts_schedule *s = ts_create_schedule(ctx, 1, &B);
	return ts_stage_of(s, B);
}

START_TEST(test_split_rounds_past_int64)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, INT64_MAX - 1);
	ts_stage *st = sum_stage(ctx, 1, &k);
	ts_axis *o, *in;
	/* (2^63 - 2) rounded up to a multiple of 5 is past INT64_MAX */
	ck_assert_int_ne(ts_split(st, ts_reduce_axis_of(st, 0), 5, &o, &in), TS_OK);
	tu_assert_error(ctx, "split(B): axis 'k'");
	tu_assert_error(ctx, "overflows int64");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_fuse_extent_overflows)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, (int64_t)1 << 40);
	ts_iter *l = ts_reduce_axis(ctx, "l", 0, (int64_t)1 << 40);
	ts_stage *st = sum_stage(ctx, 2, (ts_iter *[]){k, l});
	ts_axis *f;
	ck_assert_int_ne(ts_fuse(st, ts_reduce_axis_of(st, 0), ts_reduce_axis_of(st, 1), &f),
			 TS_OK);
	tu_assert_error(ctx, "fuse(B): extent of 'k.l.fused'");
	tu_assert_error(ctx, "overflows int64");
	ts_ctx_free(ctx);
}
END_TEST

/* A hand-built loop whose range leaves its int32 variable is refused: no
 * backend should have to compute min + extent past INT32_MAX. */
START_TEST(test_for_range_leaves_int32)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i");
	ts_stmt *body = ir_evaluate(ctx, ts_int(ctx, 0));
	ck_assert_ptr_null(ir_for(ctx, i, ts_int(ctx, INT32_MAX - 2), ts_int(ctx, 5),
				  TS_FOR_SERIAL, TS_THREAD_NONE, body));
	tu_assert_error(ctx, "for i: range [2147483645, 2147483645 + 5) does not fit its dtype int32");
	ts_clear_error(ctx);
	/* the last point fits, but the end a backend compares with does not */
	ck_assert_ptr_null(ir_for(ctx, i, ts_int(ctx, INT32_MAX - 2), ts_int(ctx, 3),
				  TS_FOR_SERIAL, TS_THREAD_NONE, body));
	tu_assert_error(ctx, "for i: range [2147483645, 2147483645 + 3)");
	ts_clear_error(ctx);
	ck_assert_ptr_nonnull(ir_for(ctx, i, ts_int(ctx, INT32_MAX - 3), ts_int(ctx, 3),
				     TS_FOR_SERIAL, TS_THREAD_NONE, body));
	/* the same range is fine for an int64 variable */
	ts_expr *j = ts_var_typed(ctx, "j", ts_int64);
	ck_assert_ptr_nonnull(ir_for(ctx, j, ts_const(ctx, ts_int64, INT32_MAX - 2),
				     ts_const(ctx, ts_int64, 5), TS_FOR_SERIAL, TS_THREAD_NONE,
				     body));
	ts_ctx_free(ctx);
}
END_TEST

/* A constant that does not fit its dtype would be wrapped silently by every
 * backend (an extent passed through ts_int): it is refused instead, and
 * float values become integer constants by the cast rule. */
START_TEST(test_const_out_of_range)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(ts_int(ctx, INT64_C(5000000000)));
	tu_assert_error(ctx, "const: 5000000000 does not fit int32");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_const(ctx, ts_int8, 128));
	tu_assert_error(ctx, "const: 128 does not fit int8");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_const(ctx, ts_uint8, 256));
	tu_assert_error(ctx, "const: 256 does not fit uint8");
	ts_clear_error(ctx);
	ck_assert_int_eq(ts_const(ctx, ts_uint8, -1)->u.int_imm, 255);
	ck_assert_int_eq(ts_const(ctx, ts_int64, INT64_MIN)->u.int_imm, INT64_MIN);
	ck_assert_int_eq(ts_const(ctx, ts_int32, INT32_MIN)->u.int_imm, INT32_MIN);
	ck_assert_int_eq(ts_make_const(ctx, ts_int32, NAN)->u.int_imm, 0);
	ck_assert_int_eq(ts_make_const(ctx, ts_int32, 1e30)->u.int_imm, INT32_MAX);
	ck_assert_int_eq(ts_make_const(ctx, ts_int8, -1e30)->u.int_imm, -128);
	ck_assert_int_eq(ts_make_const(ctx, ts_uint8, -3.5)->u.int_imm, 0);
	ck_assert_int_eq(ts_make_const(ctx, ts_int64, 1e30)->u.int_imm, INT64_MAX);
	ck_assert_int_eq(ts_make_const(ctx, ts_int32, -3.7)->u.int_imm, -3);
	ck_assert_int_eq(ts_fconst(ctx, ts_int16, 40000.0)->u.int_imm, 32767);
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ts_ctx_free(ctx);
}
END_TEST

/* A constant beside an operand of another integer dtype adopts that dtype
 * only when its value fits: saturating it (uint8 + 300 as uint8 + 255)
 * would change the program without a word.  An int64 constant beside an
 * int32 index widens the index instead. */
START_TEST(test_imm_that_does_not_fit_the_operand)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_uint8);
	ts_tensor *H = ts_placeholder(ctx, "H", TS_SHAPE(4), ts_int16);
	ts_expr *i = ts_var(ctx, "i");
	ck_assert_ptr_null(ts_add(ctx, TS_READ(ctx, A, i), ts_int(ctx, 300)));
	tu_assert_error(ctx, "add: the constant 300 does not fit uint8, the dtype of the other operand");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_mul(ctx, ts_const(ctx, ts_int64, INT64_C(1) << 40), TS_READ(ctx, H, i)));
	tu_assert_error(ctx, "mul: the constant 1099511627776 does not fit int16");
	ts_clear_error(ctx);
	/* fits: adopts the operand's dtype, exactly (no trip through a double) */
	ts_expr *e = ts_add(ctx, ts_cast(ctx, ts_int64, i), ts_const(ctx, ts_int32, 7));
	tu_nonnull(ctx, e);
	ck_assert(ts_dtype_eq(e->dtype, ts_int64));
	e = ts_sub(ctx, ts_var_typed(ctx, "w", TS_DTYPE(TS_TYPE_UINT, 64)), ts_const(ctx, ts_int64, (INT64_C(1) << 60) + 1));
	tu_nonnull(ctx, e);
	ck_assert_int_eq(e->u.bin.b->u.int_imm, (INT64_C(1) << 60) + 1);
	ck_assert_int_eq(ts_add(ctx, TS_READ(ctx, A, i), ts_int(ctx, -1))->u.bin.b->u.int_imm, 255);
	/* an int64 constant widens an int32 index */
	e = ts_lt(ctx, i, ts_const(ctx, ts_int64, INT64_C(5000000000)));
	tu_nonnull(ctx, e);
	ck_assert(ts_dtype_eq(e->u.bin.a->dtype, ts_int64));
	ck_assert_int_eq(e->u.bin.b->u.int_imm, INT64_C(5000000000));
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_index64");
	TCase *tc = tcase_create("mustfail_index64");
	tcase_add_test(tc, test_reduce_axis_range_overflows);
	tcase_add_test(tc, test_split_rounds_past_int64);
	tcase_add_test(tc, test_fuse_extent_overflows);
	tcase_add_test(tc, test_for_range_leaves_int32);
	tcase_add_test(tc, test_const_out_of_range);
	tcase_add_test(tc, test_imm_that_does_not_fit_the_operand);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
