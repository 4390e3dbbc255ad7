/*
 * test_mustfail_irargs.c - the ir/ analyses, substitutions, verifier and
 * printers check their arguments.
 *
 * Each case once crashed, hung or came back NULL without a message: range
 * lists that are NULL or have a negative count, substitution lists with NULL
 * entries, a NULL function to verify, an indentation of INT_MAX levels and
 * NULL operands of the simplifier, folder and index cast.  Every call must
 * now fail with a message naming the function where a context is at hand;
 * ir_bound_of, which has none, answers "unbounded".
 */
#include "testutil.h"

#include <limits.h>
#include <string.h>

#include "arith.h"
#include "printer.h"
#include "verify.h"

/* A bool answer that must be false with `part` in the error. */
#define FAILS_FALSE(ctx, call, part)                                            \
	do {                                                                    \
		ts_clear_error(ctx);                                            \
		ck_assert_msg(!(call), "%s: expected false", #call);            \
		tu_assert_error(ctx, part);                                     \
	} while (0)

/* i in [0, 16): the variable, i + 1 and i < 16 (provable with the range). */
typedef struct fx {
	ts_ctx *ctx;
	ts_expr *i, *e, *cond;
	ir_range r;
	ts_stmt *loop;
} fx;

static fx fx_new(void)
{
	fx x = {.ctx = ts_ctx_new()};
	ts_ctx *c = x.ctx;
	x.i = ts_var(c, "i");
	x.e = ts_add(c, x.i, ts_int(c, 1));
	x.cond = ts_lt(c, x.i, ts_int(c, 16));
	x.r = (ir_range){x.i, 0, 16};
	x.loop = ir_for(c, x.i, ts_int(c, 0), ts_int(c, 16), TS_FOR_SERIAL, TS_THREAD_NONE,
			ir_evaluate(c, x.e));
	tu_nonnull(c, x.loop);
	return x;
}

START_TEST(test_substitute_wide)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_expr *v64 = ts_cast(c, ts_int64, ts_var(c, "w"));
	ts_expr *none = NULL;
	FAILS_NULL(c, ir_substitute_wide(c, x.e, 1, NULL, &v64),
		   "substitute_wide: a NULL variable or value list");
	FAILS_NULL(c, ir_substitute_wide(c, x.e, 1, &x.i, NULL),
		   "substitute_wide: a NULL variable or value list");
	FAILS_NULL(c, ir_substitute_wide(c, x.e, 1, &x.i, &none),
		   "substitute_wide: a NULL variable or value");
	FAILS_NULL(c, ir_substitute_wide(c, x.e, 1, &none, &v64),
		   "substitute_wide: a NULL variable or value");
	FAILS_NULL(c, ir_substitute_wide(c, NULL, 1, &x.i, &v64),
		   "substitute_wide: nothing to substitute in (NULL)");
	FAILS_NULL(c, ir_substitute_wide(c, x.e, -1, &x.i, &v64),
		   "substitute_wide: a negative count");
	ck_assert_ptr_null(ir_substitute_wide(NULL, x.e, 1, &x.i, &v64));
	/* the valid call still widens */
	ts_clear_error(c);
	ts_expr *w = ir_substitute_wide(c, x.e, 1, &x.i, &v64);
	tu_nonnull(c, w);
	ck_assert_ptr_eq(ir_substitute_wide(c, x.e, 0, NULL, NULL), x.e);
	ts_ctx_free(c);
}
END_TEST

START_TEST(test_bound_of_bad_ranges)
{
	fx x = fx_new();
	ir_interval ok = ir_bound_of(x.e, 1, &x.r);
	ck_assert(ok.min == 1 && ok.max == 16);
	ir_interval a = ir_bound_of(x.e, 1, NULL);
	ck_assert(a.min == IR_NEG_INF && a.max == IR_POS_INF);
	ir_interval b = ir_bound_of(x.i, INT_MIN, &x.r);
	ck_assert(b.min == IR_NEG_INF && b.max == IR_POS_INF);
	ir_interval d = ir_bound_of(x.i, -1, &x.r);
	ck_assert(d.min == IR_NEG_INF && d.max == IR_POS_INF);
	ir_interval n = ir_bound_of(NULL, 1, NULL);
	ck_assert(n.min == IR_NEG_INF && n.max == IR_POS_INF);
	ts_ctx_free(x.ctx);
}
END_TEST

START_TEST(test_simplify_bad_ranges)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	FAILS_NULL(c, ir_simplify(c, x.e, 1, NULL), "simplify: ranges is NULL with 1 range");
	FAILS_NULL(c, ir_simplify(c, x.e, 3, NULL), "simplify: ranges is NULL with 3 ranges");
	FAILS_NULL(c, ir_simplify(c, x.e, INT_MIN, &x.r), "simplify: negative range count");
	FAILS_NULL(c, ir_simplify(c, x.e, -1, &x.r), "simplify: negative range count -1");
	FAILS_FALSE(c, ir_can_prove(c, x.cond, 1, NULL), "can_prove: ranges is NULL with 1 range");
	FAILS_FALSE(c, ir_can_prove(c, x.cond, INT_MIN, &x.r), "can_prove: negative range count");
	/* even when the condition alone decides, the ranges are checked */
	FAILS_FALSE(c, ir_can_prove(c, NULL, 1, NULL), "can_prove: ranges is NULL");
	FAILS_NULL(c, ir_simplify_stmt(c, x.loop, 1, NULL),
		   "simplify_stmt: ranges is NULL with 1 range");
	FAILS_NULL(c, ir_simplify_stmt(c, x.loop, INT_MIN, &x.r),
		   "simplify_stmt: negative range count");
	/* the valid calls still work */
	ts_clear_error(c);
	ck_assert(ir_can_prove(c, x.cond, 1, &x.r));
	tu_nonnull(c, ir_simplify(c, x.e, 0, NULL));
	tu_nonnull(c, ir_simplify_stmt(c, x.loop, 0, NULL));
	ck_assert_int_eq(ts_last_status(c), TS_OK);
	ts_ctx_free(c);
}
END_TEST

START_TEST(test_verify_null)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	FAILS_ST(c, ir_verify_func(c, NULL, "p"), "verify_func: function is NULL");
	ck_assert_int_eq(ts_last_status(c), TS_ERR_INVALID);
	ts_func f = {.name = "f", .body = x.loop};
	FAILS_ST(c, ir_verify_func(c, &f, NULL), "verify_func: pass name is NULL");
	f.nparams = 2;
	FAILS_ST(c, ir_verify_func(c, &f, "p"), "verify_func: function has a bad parameter list");
	f.nparams = -1;
	FAILS_ST(c, ir_verify_func(c, &f, "p"), "verify_func: function has a bad parameter list");
	ck_assert_int_ne(ir_verify_func(NULL, NULL, "p"), TS_OK);
	f.nparams = 0;
	ts_clear_error(c);
	tu_ok(c, ir_verify_func(c, &f, "p"));
	ts_ctx_free(c);
}
END_TEST

START_TEST(test_indent_bounded)
{
	fx x = fx_new();
	ts_sbuf sb = {0};
	ts_sb_indent(&sb, INT_MAX);
	ck_assert_uint_eq(sb.len, 2 * TS_SB_MAX_INDENT);
	ts_sb_indent(&sb, INT_MIN);
	ts_sb_indent(&sb, -1);
	ck_assert_uint_eq(sb.len, 2 * TS_SB_MAX_INDENT);
	ts_sb_free(&sb);
	/* a loop's body prints one level deeper: indent + 1 must not overflow */
	ir_sb_stmt(&sb, x.loop, INT_MAX);
	ck_assert(!sb.oom);
	ck_assert_uint_lt(sb.len, 8 * TS_SB_MAX_INDENT);
	ck_assert_ptr_nonnull(strstr(ts_sb_str(&sb), "for (i, 0, 16)"));
	ts_sb_free(&sb);
	ir_sb_stmt(&sb, x.loop, INT_MIN);
	ck_assert(ts_sb_str(&sb)[0] == 'f');
	ts_sb_free(&sb);
	ts_ctx_free(x.ctx);
}
END_TEST

START_TEST(test_null_operands_say_so)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_stmt *nulls[2] = {NULL, NULL};
	FAILS_NULL(c, ir_simplify(c, NULL, 0, NULL), "simplify: nothing to simplify");
	FAILS_NULL(c, ir_simplify_stmt(c, NULL, 0, NULL), "simplify_stmt: nothing to simplify");
	FAILS_NULL(c, ir_fold_const(c, NULL), "fold_const: expression is NULL");
	FAILS_NULL(c, ir_index_cast(c, NULL, ts_int64), "index_cast: expression is NULL");
	FAILS_NULL(c, ir_seq(c, 0, nulls), "seq: no statement");
	FAILS_NULL(c, ir_seq(c, 0, NULL), "seq: no statement");
	FAILS_NULL(c, ir_seq(c, 2, nulls), "seq: no statement among 2");
	FAILS_NULL(c, ir_seq2(c, NULL, NULL), "seq: no statement");
	/* a NULL left by an earlier failure keeps that failure's message */
	ts_clear_error(c);
	ck_assert_ptr_null(ir_evaluate(c, NULL));
	ck_assert_ptr_null(ir_seq(c, 2, nulls));
	tu_assert_error(c, "evaluate");
	/* one statement among NULLs is still returned as is */
	ts_clear_error(c);
	ck_assert_ptr_eq(ir_seq2(c, NULL, x.loop), x.loop);
	ck_assert_int_eq(ts_last_status(c), TS_OK);
	ts_ctx_free(c);
}
END_TEST

/* A loop over a float variable was built (the emitters and evaluators
 * count every loop variable as an integer); a LET of a non-variable was
 * reported as a dtype disagreement. */
START_TEST(test_loop_and_let_variables)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_expr *f = ts_var_typed(c, "f", ts_float32);
	ts_expr *v = ts_var_typed(c, "v", ts_dtype_with_lanes(ts_int32, 4));
	ts_stmt *body = ir_evaluate(c, x.e);
	FAILS_NULL(c, ir_for(c, f, ts_int(c, 0), ts_int(c, 4), TS_FOR_SERIAL, TS_THREAD_NONE, body),
		   "for f: loop variable has dtype float32; it must be an integer scalar");
	FAILS_NULL(c, ir_for(c, v, ts_int(c, 0), ts_int(c, 4), TS_FOR_SERIAL, TS_THREAD_NONE, body),
		   "for v: loop variable has dtype int32x4; it must be an integer scalar");
	FAILS_NULL(c, ir_let(c, ts_int(c, 1), ts_int(c, 2), body),
		   "let: the bound name is INT_IMM, not a variable");
	FAILS_NULL(c, ir_let(c, x.i, ts_float(c, 2), body),
		   "let i: variable and value disagree in dtype (int32 vs float32)");
	ts_clear_error(c);
	ts_expr *w = ts_var_typed(c, "w", ts_int64);
	tu_nonnull(c, ir_for(c, w, ts_int(c, 0), ts_int(c, 4), TS_FOR_SERIAL, TS_THREAD_NONE, body));
	tu_nonnull(c, ir_let(c, x.i, ts_int(c, 2), body));
	ts_ctx_free(c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mustfail_irargs");
	TCase *tc = tcase_create("ir");
	tcase_add_test(tc, test_substitute_wide);
	tcase_add_test(tc, test_bound_of_bad_ranges);
	tcase_add_test(tc, test_simplify_bad_ranges);
	tcase_add_test(tc, test_verify_null);
	tcase_add_test(tc, test_indent_bounded);
	tcase_add_test(tc, test_null_operands_say_so);
	tcase_add_test(tc, test_loop_and_let_variables);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
