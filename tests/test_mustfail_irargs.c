/*
 * test_mustfail_irargs.c - the ir/ analyses, substitutions, verifier and
 * printers check their arguments.
 *
 * Each case once crashed, hung or came back NULL without a message: range
 * lists that are NULL or have a negative count, substitution lists with NULL
 * entries, a NULL function to verify, an indentation of INT_MAX levels and
 * NULL operands of the simplifier, folder and index cast, another
 * context's buffers and tensors in the builders, a realize of the wrong
 * arity, a select of a vector condition over scalars, and a hand-built
 * function with a bad header given to the printer.  Every call must now
 * fail with a message naming the function where a context is at hand;
 * ir_bound_of, which has none, answers "unbounded".
 */
#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ts_read refused another context's tensor, but the load, store, provide,
 * realize and allocate builders took another context's buffer or tensor:
 * freeing that context left the IR pointing into freed memory (printing
 * the load was a heap-use-after-free). */
START_TEST(test_foreign_buffers_and_tensors)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx, *c2 = ts_ctx_new();
	int64_t four = 4;
	ts_buffer *b2 = ir_buffer_new(c2, "B2", ts_float32, 1, &four, TS_SCOPE_GLOBAL);
	ts_tensor *t2 = ts_placeholder(c2, "T2", TS_SHAPE(4), ts_float32);
	ts_expr *zero = ts_int(c, 0), *one = ts_float(c, 1);
	ts_stmt *body = ir_evaluate(c, zero);
	FAILS_NULL(c, ts_load(c, b2, zero), "load B2: buffer belongs to another context");
	FAILS_NULL(c, ir_store(c, b2, zero, one), "store B2: buffer belongs to another context");
	FAILS_NULL(c, ir_allocate(c, b2, body), "allocate B2: buffer belongs to another context");
	FAILS_NULL(c, ir_provide(c, t2, 1, &zero, one),
		   "provide T2: tensor belongs to another context");
	FAILS_NULL(c, ir_realize(c, t2, 1, &zero, &four, TS_SCOPE_GLOBAL, body),
		   "realize T2: tensor belongs to another context");
	ts_ctx_free(c2);
	/* the context's own still build, and print */
	ts_clear_error(c);
	ts_buffer *b = ir_buffer_new(c, "B", ts_float32, 1, &four, TS_SCOPE_GLOBAL);
	ts_tensor *t = ts_placeholder(c, "T", TS_SHAPE(4), ts_float32);
	ts_expr *l = ts_load(c, b, zero);
	tu_nonnull(c, l);
	ck_assert_str_eq(ir_expr_str(c, l), "B[0]");
	tu_nonnull(c, ir_store(c, b, zero, one));
	tu_nonnull(c, ir_allocate(c, b, body));
	tu_nonnull(c, ir_provide(c, t, 1, &zero, one));
	tu_nonnull(c, ir_realize(c, t, 1, &zero, &four, TS_SCOPE_GLOBAL, body));
	ts_ctx_free(c);
}
END_TEST

/* A realize took any number of ranges up to TS_MAX_DIMS, whatever the
 * tensor's dimensions; every reader takes one per dimension. */
START_TEST(test_realize_arity)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_tensor *t = ts_placeholder(c, "T", TS_SHAPE(4, 4), ts_float32);
	ts_expr *mins[3] = {ts_int(c, 0), ts_int(c, 0), ts_int(c, 0)};
	int64_t ext[3] = {4, 4, 4};
	ts_stmt *body = ir_evaluate(c, x.e);
	FAILS_NULL(c, ir_realize(c, t, 1, mins, ext, TS_SCOPE_GLOBAL, body),
		   "realize T: tensor has 2 dimension(s), got 1 range(s)");
	FAILS_NULL(c, ir_realize(c, t, 3, mins, ext, TS_SCOPE_GLOBAL, body),
		   "realize T: tensor has 2 dimension(s), got 3 range(s)");
	FAILS_NULL(c, ir_realize(c, t, 0, NULL, NULL, TS_SCOPE_GLOBAL, body),
		   "realize T: tensor has 2 dimension(s), got 0 range(s)");
	ts_clear_error(c);
	tu_nonnull(c, ir_realize(c, t, 2, mins, ext, TS_SCOPE_GLOBAL, body));
	ts_ctx_free(c);
}
END_TEST

/* select(broadcast(x < 3, 4), 1, 2) was built as an int32: a condition of
 * 4 lanes choosing between scalars, which no backend can emit. */
START_TEST(test_select_lanes)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_expr *vcond = ts_broadcast(c, x.cond, 4), *v8cond = ts_broadcast(c, x.cond, 8);
	ts_expr *vec = ts_broadcast(c, x.e, 4);
	FAILS_NULL(c, ts_select(c, vcond, ts_int(c, 1), ts_int(c, 2)),
		   "select: condition has 4 lanes, the values 1");
	FAILS_NULL(c, ts_select(c, v8cond, vec, vec), "select: condition has 8 lanes, the values 4");
	/* a condition of the values' lanes picks per lane; a scalar one
	 * picks whole vectors */
	ts_clear_error(c);
	ts_expr *per_lane = ts_select(c, vcond, vec, ts_broadcast(c, ts_int(c, 0), 4));
	tu_nonnull(c, per_lane);
	ck_assert_int_eq(per_lane->dtype.lanes, 4);
	ts_expr *whole = ts_select(c, x.cond, vec, vec);
	tu_nonnull(c, whole);
	ck_assert_int_eq(whole->dtype.lanes, 4);
	ts_ctx_free(c);
}
END_TEST

/* The printer dereferenced a hand-built function's parameter list as it
 * stood: two parameters in a NULL list crashed it. */
START_TEST(test_func_str_bad_header)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	int64_t four = 4;
	ts_buffer *b = ir_buffer_new(c, "B", ts_float32, 1, &four, TS_SCOPE_GLOBAL);
	ts_buffer *params[2] = {b, NULL};
	ts_func f = {.name = "f", .nparams = 2, .params = NULL, .body = x.loop, .ctx = c};
	FAILS_NULL(c, ir_func_str(c, &f), "func_str: bad function: 2 parameters in a NULL list");
	f.nparams = -1;
	FAILS_NULL(c, ir_func_str(c, &f), "func_str: bad function: -1 parameters in a NULL list");
	f.params = params;
	FAILS_NULL(c, ir_func_str(c, &f), "func_str: bad function: -1 parameters in a list");
	f.nparams = 2;
	FAILS_NULL(c, ir_func_str(c, &f), "func_str: bad function: parameter 1 is NULL");
	f.nparams = 1;
	f.name = NULL;
	FAILS_NULL(c, ir_func_str(c, &f), "func_str: bad function: its name is NULL");
	/* the text printers say so in place of the function */
	f.nparams = 2;
	f.name = "f";
	ts_sbuf sb = {0};
	ir_sb_func(&sb, &f);
	ck_assert_str_eq(ts_sb_str(&sb), "<bad function: parameter 1 is NULL>\n");
	ts_sb_free(&sb);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(out);
	ir_print_func(out, &f);
	fclose(out);
	ck_assert_str_eq(text, "<bad function: parameter 1 is NULL>\n");
	free(text);
	/* a good header prints */
	ts_clear_error(c);
	f.nparams = 1;
	const char *good = ir_func_str(c, &f);
	tu_nonnull(c, good);
	ck_assert_ptr_nonnull(strstr(good, "func f(B: float32[4]) {"));
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
	tcase_add_test(tc, test_foreign_buffers_and_tensors);
	tcase_add_test(tc, test_realize_arity);
	tcase_add_test(tc, test_select_lanes);
	tcase_add_test(tc, test_func_str_bad_header);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
