/* test_ir.c - IR constructors, their checks, traversal and the printer. */
#include "testutil.h"

#include <string.h>

#include "verify.h"

START_TEST(test_expr_print)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_expr *e = ts_sub(ctx, ts_add(ctx, ts_mul(ctx, i, ts_int(ctx, 4)), j),
			    ts_mul(ctx, i, ts_int(ctx, 4)));
	ck_assert_str_eq(ir_expr_str(ctx, e), "i*4 + j - i*4");
	ts_expr *f = ts_mul(ctx, ts_add(ctx, i, j), ts_sub(ctx, i, ts_sub(ctx, j, ts_int(ctx, 1))));
	ck_assert_str_eq(ir_expr_str(ctx, f), "(i + j)*(i - (j - 1))");
	ts_expr *g = ts_floordiv(ctx, ts_truncdiv(ctx, i, ts_int(ctx, -3)), ts_const(ctx, ts_int64, 2));
	/* the int64 immediate adopts the int32 dtype of the other operand */
	ck_assert_str_eq(ir_expr_str(ctx, g), "floordiv(i/-3, 2)");
	ts_expr *x = ts_var_typed(ctx, "x", ts_float32);
	ts_expr *h = ts_select(ctx, ts_and(ctx, ts_lt(ctx, i, j), ts_not(ctx, ts_eq(ctx, i, ts_int(ctx, 0)))),
			       ts_exp(ctx, ts_mul(ctx, x, ts_float(ctx, 0.5))), ts_float(ctx, 1));
	ck_assert_str_eq(ir_expr_str(ctx, h), "select(i < j && !(i == 0), exp(x*0.5f), 1.0f)");
	ck_assert_str_eq(ir_expr_str(ctx, ts_cast(ctx, ts_float64, x)), "float64(x)");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_dtype_errors)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *x = ts_var_typed(ctx, "x", ts_float32);
	ck_assert_ptr_null(ts_add(ctx, i, x));
	tu_assert_error(ctx, "add: dtype mismatch: int32 vs float32");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_floormod(ctx, x, x));
	tu_assert_error(ctx, "floormod: operands must be integers, got float32");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_exp(ctx, i));
	tu_assert_error(ctx, "exp: argument must be float, got int32");
	ts_clear_error(ctx);
	/* a NULL operand propagates and keeps the first error */
	ck_assert_ptr_null(ts_mul(ctx, ts_add(ctx, i, x), i));
	tu_assert_error(ctx, "add: dtype mismatch");
	ts_ctx_free(ctx);
}
END_TEST

/* Every valid scalar dtype's name reads back as that dtype: uint16, uint32
 * and uint64, which placeholders accept and the printer names, were
 * unknown to the parser. */
START_TEST(test_dtype_names_read_back)
{
	const ts_dtype all[] = {ts_int8, ts_int16, ts_int32, ts_int64, ts_uint8,
				TS_DTYPE(TS_TYPE_UINT, 16), TS_DTYPE(TS_TYPE_UINT, 32),
				TS_DTYPE(TS_TYPE_UINT, 64), ts_bool, ts_float16, ts_bfloat16,
				ts_float32, ts_float64};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		char b[24];
		ts_dtype t = {0, 0, 0};
		ck_assert_msg(ts_dtype_parse(ts_dtype_str(all[i], b), &t), "%s", b);
		ck_assert(ts_dtype_eq(t, all[i]));
	}
	ts_dtype t;
	ck_assert(!ts_dtype_parse("uint1", &t));
	ck_assert(!ts_dtype_parse("float32x4", &t));
}
END_TEST

START_TEST(test_substitute_keeps_pointers)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *k = ts_var(ctx, "k");
	ts_expr *e = ts_add(ctx, ts_mul(ctx, i, ts_int(ctx, 8)), j);
	ck_assert_ptr_eq(ir_substitute(ctx, e, 1, &k, &i), e);
	ts_expr *r = ir_substitute(ctx, e, 1, &j, &k);
	ck_assert_ptr_ne(r, e);
	ck_assert_ptr_eq(r->u.bin.a, e->u.bin.a);
	ck_assert_str_eq(ir_expr_str(ctx, r), "i*8 + k");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_alloc_failure)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_ctx_fail_alloc_after(ctx, 2);
	ts_expr *i = ts_var(ctx, "i");
	ck_assert_ptr_null(i);
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NOMEM);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_verifier)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t n = 8;
	ts_buffer *buf = ir_buffer_new(ctx, "C", ts_float32, 1, &n, TS_SCOPE_GLOBAL);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_stmt *st = ir_store(ctx, buf, j, ts_float(ctx, 1));
	ts_func f = {.name = "f", .nparams = 1, .params = &buf,
		     .body = ir_for(ctx, i, ts_int(ctx, 0), ts_int(ctx, 8), TS_FOR_SERIAL, TS_THREAD_NONE, st)};
	ck_assert_int_eq(ir_verify_func(ctx, &f, "test"), TS_ERR_INTERNAL);
	tu_assert_error(ctx, "verify after test: variable used outside its scope: 'j'");
	ts_clear_error(ctx);
	f.body = ir_for(ctx, i, ts_int(ctx, 0), ts_int(ctx, 8), TS_FOR_SERIAL, TS_THREAD_NONE,
			ir_for(ctx, i, ts_int(ctx, 0), ts_int(ctx, 8), TS_FOR_SERIAL, TS_THREAD_NONE,
			       ir_store(ctx, buf, i, ts_float(ctx, 1))));
	ck_assert_int_eq(ir_verify_func(ctx, &f, "test"), TS_ERR_INTERNAL);
	tu_assert_error(ctx, "variable bound twice in nested scopes: 'i'");
	ts_clear_error(ctx);
	f.nparams = 0;
	f.body = ir_for(ctx, i, ts_int(ctx, 0), ts_int(ctx, 8), TS_FOR_SERIAL, TS_THREAD_NONE,
			ir_store(ctx, buf, i, ts_float(ctx, 1)));
	ck_assert_int_eq(ir_verify_func(ctx, &f, "test"), TS_ERR_INTERNAL);
	tu_assert_error(ctx, "store to a buffer not in scope: 'C'");
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ir");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_expr_print);
	tcase_add_test(tc, test_dtype_errors);
	tcase_add_test(tc, test_dtype_names_read_back);
	tcase_add_test(tc, test_substitute_keeps_pointers);
	tcase_add_test(tc, test_alloc_failure);
	tcase_add_test(tc, test_verifier);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
