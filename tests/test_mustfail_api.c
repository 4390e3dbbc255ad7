/*
 * test_mustfail_api.c - every public entry point checks its arguments.
 *
 * Each public function is called with NULL in each pointer position, with
 * negative or too large counts, with out-of-range enum values, and with
 * axes, stages and tensors that belong elsewhere.  Every such call must come
 * back as an error status or NULL, never a crash, and where a context is at
 * hand its message must name the function.  Calls without any context (a
 * NULL ctx, a NULL stage) are checked for their return value only.
 */
#include "testutil.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "build.h"
#include "c_emit.h"
#include "cuda_driver.h"
#include "interp.h"
#include "llvm.h"
#include "lower.h"
#include "op_schedules.h"
#include "tune.h"

/* The same where no context can be reached: only the result is checked. */
#define NULL_NOCTX(call) ck_assert_msg((call) == NULL, "%s: expected NULL", #call)
#define ST_NOCTX(call) ck_assert_msg((call) != TS_OK, "%s: expected an error", #call)

/* C[13, 11] = sum_k A[13, 7] * B[7, 11], its schedule, a split of C's
 * first axis, and the lowered function; D = relu(C) in a second schedule. */
typedef struct fx {
	ts_ctx *ctx;
	ts_tensor *A, *B, *C;
	ts_schedule *s;
	ts_stage *sc;
	ts_axis *i, *j, *k;
	ts_func *f;
} fx;

static fx fx_new(void)
{
	fx x = {.ctx = ts_ctx_new()};
	x.A = ts_placeholder(x.ctx, "A", TS_SHAPE(13, 7), ts_float32);
	x.B = ts_placeholder(x.ctx, "B", TS_SHAPE(7, 11), ts_float32);
	x.C = ts_rename(x.ctx, ts_op_matmul(x.ctx, x.A, x.B, false, false), "C");
	x.s = ts_create_schedule(x.ctx, 1, &x.C);
	x.sc = ts_stage_of(x.s, x.C);
	x.i = ts_axis_of(x.sc, 0);
	x.j = ts_axis_of(x.sc, 1);
	x.k = ts_reduce_axis_of(x.sc, 0);
	x.f = ts_lower(ts_create_schedule(x.ctx, 1, &x.C), "mm", 3, (ts_tensor *[]){x.A, x.B, x.C});
	tu_nonnull(x.ctx, x.f);
	tu_nonnull(x.ctx, x.k);
	return x;
}

static void fx_free(fx *x)
{
	ts_ctx_free(x->ctx);
}

/* ---- ir.h: names and dtypes ------------------------------------------------------ */

START_TEST(test_names_out_of_range)
{
	ck_assert_str_eq(ir_expr_kind_name((ir_expr_kind)999), "?");
	ck_assert_str_eq(ir_expr_kind_name((ir_expr_kind)-1), "?");
	ck_assert_str_eq(ir_stmt_kind_name((ir_stmt_kind)-3), "?");
	ck_assert_str_eq(ir_intrinsic_name((ir_intrinsic)77), "?");
	ck_assert_int_eq(ir_intrinsic_arity((ir_intrinsic)77), 0);
	ck_assert_str_eq(ts_reduce_op_name((ts_reduce_op)42), "?");
	ck_assert_str_eq(ts_scope_name((ts_scope)99), "?");
	ck_assert_str_eq(ts_for_kind_name((ts_for_kind)-1), "?");
	ck_assert_str_eq(ts_thread_tag_name((ts_thread_tag)-1), "?");
	ck_assert_str_eq(ts_device_name((ts_device)7), "unknown");
	ck_assert(!ir_is_binary((ir_expr_kind)-1));
	ck_assert(!ir_is_compare((ir_expr_kind)1000));
	char buf[24];
	ck_assert_str_eq(ts_dtype_str((ts_dtype){200, 32, 1}, buf), "?32");
	ck_assert_ptr_null(ts_dtype_str(ts_float32, NULL));
	ts_dtype t;
	ck_assert(!ts_dtype_parse(NULL, &t));
	ck_assert(!ts_dtype_parse("float32", NULL));
	ck_assert(!ts_dtype_is_valid((ts_dtype){TS_TYPE_FLOAT, 0, 1}));
	ck_assert(!ts_dtype_is_valid((ts_dtype){TS_TYPE_INT, 32, 0}));
	ck_assert(!ts_dtype_is_valid((ts_dtype){77, 32, 1}));
	ck_assert(ts_dtype_is_valid(ts_dtype_with_lanes(ts_bfloat16, 8)));
}
END_TEST

/* ---- ir.h: expression constructors -------------------------------------------------- */

START_TEST(test_expr_null_ctx)
{
	fx x = fx_new();
	ts_expr *i = x.i->var;
	NULL_NOCTX(ts_int(NULL, 1));
	NULL_NOCTX(ts_const(NULL, ts_int64, 1));
	NULL_NOCTX(ts_float(NULL, 1));
	NULL_NOCTX(ts_fconst(NULL, ts_float64, 1));
	NULL_NOCTX(ts_make_const(NULL, ts_float64, 1));
	NULL_NOCTX(ts_var(NULL, "v"));
	NULL_NOCTX(ts_var_typed(NULL, "v", ts_int64));
	NULL_NOCTX(ts_binary(NULL, IR_ADD, i, i));
	NULL_NOCTX(ts_add(NULL, i, i));
	NULL_NOCTX(ts_div(NULL, i, i));
	NULL_NOCTX(ts_not(NULL, ts_lt(x.ctx, i, i)));
	NULL_NOCTX(ts_select(NULL, ts_lt(x.ctx, i, i), i, i));
	NULL_NOCTX(ts_cast(NULL, ts_int64, i));
	NULL_NOCTX(ts_call(NULL, IR_INTRIN_EXP, 1, (ts_expr *[]){ts_float(x.ctx, 1)}));
	NULL_NOCTX(ts_exp(NULL, ts_float(x.ctx, 1)));
	NULL_NOCTX(ts_pow(NULL, ts_float(x.ctx, 1), ts_float(x.ctx, 2)));
	NULL_NOCTX(ts_read(NULL, x.A, 2, (ts_expr *[]){i, i}));
	NULL_NOCTX(ts_load(NULL, x.f->params[0], i));
	NULL_NOCTX(ts_ramp(NULL, i, 1, 4));
	NULL_NOCTX(ts_broadcast(NULL, i, 4));
	NULL_NOCTX(ts_reduce(NULL, TS_REDUCE_SUM, ts_float(x.ctx, 1), 1, x.C->reduce_axis, NULL));
	NULL_NOCTX(ir_iter_new(NULL, "r", 0, 4, TS_ITER_REDUCE));
	NULL_NOCTX(ir_buffer_new(NULL, "b", ts_float32, 1, (int64_t[]){4}, TS_SCOPE_GLOBAL));
	fx_free(&x);
}
END_TEST

START_TEST(test_expr_null_operands)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_expr *i = x.i->var, *f = ts_float(c, 1);
	FAILS_NULL(c, ts_var(c, NULL), "var");
	FAILS_NULL(c, ts_var_typed(c, NULL, ts_int32), "var");
	FAILS_NULL(c, ts_var_typed(c, "v", (ts_dtype){TS_TYPE_INT, 32, 0}), "var v");
	FAILS_NULL(c, ts_const(c, (ts_dtype){99, 32, 1}, 3), "const");
	FAILS_NULL(c, ts_fconst(c, (ts_dtype){TS_TYPE_FLOAT, 13, 1}, 3), "const");
	FAILS_NULL(c, ts_make_const(c, (ts_dtype){TS_TYPE_FLOAT, 32, 0}, 3), "const");
	FAILS_NULL(c, ts_binary(c, IR_ADD, NULL, i), "add: operand a is NULL");
	FAILS_NULL(c, ts_binary(c, IR_ADD, i, NULL), "add: operand b is NULL");
	FAILS_NULL(c, ts_binary(c, (ir_expr_kind)-1, i, i), "binary");
	FAILS_NULL(c, ts_binary(c, (ir_expr_kind)999, i, i), "binary");
	ts_expr *(*bins[])(ts_ctx *, ts_expr *, ts_expr *) = {
		ts_add, ts_sub, ts_mul, ts_truncdiv, ts_truncmod, ts_floordiv, ts_floormod,
		ts_min, ts_max, ts_eq, ts_ne, ts_lt, ts_le, ts_gt, ts_ge, ts_and, ts_or};
	const char *names[] = {"add", "sub", "mul", "truncdiv", "truncmod", "floordiv",
			       "floormod", "min", "max", "eq", "ne", "lt", "le", "gt", "ge",
			       "and", "or"};
	for (size_t k = 0; k < TS_COUNT_OF(bins); k++) {
		FAILS_NULL(c, bins[k](c, NULL, i), names[k]);
		FAILS_NULL(c, bins[k](c, i, NULL), names[k]);
	}
	FAILS_NULL(c, ts_div(c, NULL, f), "div");
	FAILS_NULL(c, ts_div(c, f, NULL), "div");
	FAILS_NULL(c, ts_not(c, NULL), "not");
	FAILS_NULL(c, ts_select(c, NULL, i, i), "select");
	FAILS_NULL(c, ts_select(c, ts_lt(c, i, i), NULL, i), "select");
	FAILS_NULL(c, ts_select(c, ts_lt(c, i, i), i, NULL), "select");
	FAILS_NULL(c, ts_cast(c, ts_int64, NULL), "cast");
	FAILS_NULL(c, ts_cast(c, (ts_dtype){99, 32, 1}, i), "cast");
	FAILS_NULL(c, ts_cast(c, (ts_dtype){TS_TYPE_INT, 32, 0}, i), "cast");
	ts_expr *(*unary[])(ts_ctx *, ts_expr *) = {ts_exp, ts_log, ts_sqrt, ts_tanh, ts_exp2,
						    ts_fabs, ts_erf, ts_sigmoid};
	const char *unames[] = {"exp", "log", "sqrt", "tanh", "exp2", "fabs", "erf", "sigmoid"};
	for (size_t k = 0; k < TS_COUNT_OF(unary); k++)
		FAILS_NULL(c, unary[k](c, NULL), unames[k]);
	FAILS_NULL(c, ts_pow(c, NULL, f), "pow");
	FAILS_NULL(c, ts_pow(c, f, NULL), "pow");
	fx_free(&x);
}
END_TEST

START_TEST(test_expr_bad_calls)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_expr *i = x.i->var, *f = ts_float(c, 1);
	FAILS_NULL(c, ts_call(c, (ir_intrinsic)77, 1, (ts_expr *[]){f}), "call: unknown intrinsic 77");
	FAILS_NULL(c, ts_call(c, (ir_intrinsic)-1, 1, (ts_expr *[]){f}), "call: unknown intrinsic -1");
	FAILS_NULL(c, ts_call(c, IR_INTRIN_EXP, -1, (ts_expr *[]){f}), "exp: expects 1 argument");
	FAILS_NULL(c, ts_call(c, IR_INTRIN_EXP, 1, NULL), "exp: the argument list is NULL");
	FAILS_NULL(c, ts_call(c, IR_INTRIN_POW, 2, (ts_expr *[]){f, NULL}), "pow: argument 1 is NULL");
	FAILS_NULL(c, ts_read(c, NULL, 2, (ts_expr *[]){i, i}), "read");
	FAILS_NULL(c, ts_read(c, x.A, 2, NULL), "read A: the index list is NULL");
	FAILS_NULL(c, ts_read(c, x.A, -1, (ts_expr *[]){i}), "read A");
	FAILS_NULL(c, ts_read(c, x.A, 2, (ts_expr *[]){i, NULL}), "read A: index 1 is NULL");
	FAILS_NULL(c, ts_load(c, NULL, i), "load");
	FAILS_NULL(c, ts_load(c, x.f->params[0], NULL), "load A: index is NULL");
	FAILS_NULL(c, ts_ramp(c, NULL, 1, 4), "ramp");
	FAILS_NULL(c, ts_ramp(c, i, 1, -4), "ramp");
	FAILS_NULL(c, ts_ramp(c, i, 1, 70000), "ramp");
	FAILS_NULL(c, ts_broadcast(c, NULL, 4), "broadcast");
	FAILS_NULL(c, ts_broadcast(c, i, 0), "broadcast");
	FAILS_NULL(c, ts_broadcast(c, i, 1 << 20), "broadcast");
	ts_iter *k = x.C->reduce_axis[0];
	FAILS_NULL(c, ts_reduce(c, (ts_reduce_op)42, f, 1, &k, NULL), "reduce: unknown reduction 42");
	FAILS_NULL(c, ts_reduce(c, TS_REDUCE_SUM, NULL, 1, &k, NULL), "sum: source is NULL");
	FAILS_NULL(c, ts_reduce(c, TS_REDUCE_SUM, f, 1, NULL, NULL), "sum: the axis list is NULL");
	FAILS_NULL(c, ts_reduce(c, TS_REDUCE_SUM, f, -1, &k, NULL), "sum: needs 1 to 8");
	FAILS_NULL(c, ts_reduce(c, TS_REDUCE_SUM, f, 9, &k, NULL), "sum: needs 1 to 8");
	FAILS_NULL(c, ts_sum(c, f, 1, (ts_iter *[]){NULL}), "sum: reduction axis 0 is NULL");
	fx_free(&x);
}
END_TEST

START_TEST(test_iter_and_buffer)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	FAILS_NULL(c, ir_iter_new(c, NULL, 0, 4, TS_ITER_DATA), "axis");
	FAILS_NULL(c, ir_iter_new(c, "r", 0, 4, (ts_iter_kind)7), "axis 'r': unknown kind 7");
	FAILS_NULL(c, ir_iter_new(c, "r", 0, 0, TS_ITER_DATA), "axis 'r'");
	FAILS_NULL(c, ir_buffer_new(c, NULL, ts_float32, 1, (int64_t[]){4}, TS_SCOPE_GLOBAL),
		   "buffer: name is NULL");
	FAILS_NULL(c, ir_buffer_new(c, "b", ts_float32, 1, NULL, TS_SCOPE_GLOBAL),
		   "buffer b: shape is NULL");
	FAILS_NULL(c, ir_buffer_new(c, "b", ts_float32, -1, (int64_t[]){4}, TS_SCOPE_GLOBAL),
		   "buffer b");
	FAILS_NULL(c, ir_buffer_new(c, "b", ts_float32, 9, (int64_t[9]){1}, TS_SCOPE_GLOBAL),
		   "buffer b");
	FAILS_NULL(c, ir_buffer_new(c, "b", ts_float32, 1, (int64_t[]){4}, (ts_scope)99),
		   "buffer b: unknown scope 99");
	FAILS_NULL(c, ir_buffer_new(c, "b", (ts_dtype){99, 32, 1}, 1, (int64_t[]){4}, TS_SCOPE_GLOBAL),
		   "buffer b: invalid dtype");
	fx_free(&x);
}
END_TEST

/* ---- ir.h: statement constructors ---------------------------------------------------- */

START_TEST(test_stmt_constructors)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_expr *i = x.i->var, *z = ts_int(c, 0), *n = ts_int(c, 4);
	ts_buffer *buf = x.f->params[0];
	ts_stmt *body = ir_evaluate(c, z);
	tu_nonnull(c, body);
	NULL_NOCTX(ir_for(NULL, i, z, n, TS_FOR_SERIAL, TS_THREAD_NONE, body));
	NULL_NOCTX(ir_store(NULL, buf, z, ts_float(c, 1)));
	NULL_NOCTX(ir_provide(NULL, x.A, 2, (ts_expr *[]){z, z}, ts_float(c, 1)));
	NULL_NOCTX(ir_realize(NULL, x.A, 2, (ts_expr *[]){z, z}, (int64_t[]){1, 1},
			      TS_SCOPE_GLOBAL, body));
	NULL_NOCTX(ir_allocate(NULL, buf, body));
	NULL_NOCTX(ir_if(NULL, ts_lt(c, i, n), body, NULL));
	NULL_NOCTX(ir_seq(NULL, 1, &body));
	NULL_NOCTX(ir_seq2(NULL, body, body));
	NULL_NOCTX(ir_let(NULL, i, z, body));
	NULL_NOCTX(ir_evaluate(NULL, z));
	NULL_NOCTX(ir_barrier(NULL));
	FAILS_NULL(c, ir_for(c, NULL, z, n, TS_FOR_SERIAL, TS_THREAD_NONE, body), "for");
	FAILS_NULL(c, ir_for(c, i, NULL, n, TS_FOR_SERIAL, TS_THREAD_NONE, body), "for");
	FAILS_NULL(c, ir_for(c, i, z, NULL, TS_FOR_SERIAL, TS_THREAD_NONE, body), "for");
	FAILS_NULL(c, ir_for(c, i, z, n, TS_FOR_SERIAL, TS_THREAD_NONE, NULL), "for");
	FAILS_NULL(c, ir_for(c, i, z, n, (ts_for_kind)9, TS_THREAD_NONE, body), "for i: unknown loop kind 9");
	FAILS_NULL(c, ir_for(c, i, z, n, TS_FOR_THREAD, (ts_thread_tag)-1, body), "for i: unknown thread tag -1");
	FAILS_NULL(c, ir_store(c, NULL, z, ts_float(c, 1)), "store");
	FAILS_NULL(c, ir_store(c, buf, NULL, ts_float(c, 1)), "store A");
	FAILS_NULL(c, ir_store(c, buf, z, NULL), "store A");
	FAILS_NULL(c, ir_provide(c, NULL, 2, (ts_expr *[]){z, z}, ts_float(c, 1)), "provide");
	FAILS_NULL(c, ir_provide(c, x.A, 2, NULL, ts_float(c, 1)), "provide A");
	FAILS_NULL(c, ir_provide(c, x.A, -2, (ts_expr *[]){z, z}, ts_float(c, 1)), "provide A");
	FAILS_NULL(c, ir_provide(c, x.A, 2, (ts_expr *[]){z, NULL}, ts_float(c, 1)), "provide A");
	FAILS_NULL(c, ir_provide(c, x.A, 2, (ts_expr *[]){z, z}, NULL), "provide A");
	FAILS_NULL(c, ir_realize(c, NULL, 2, (ts_expr *[]){z, z}, (int64_t[]){1, 1},
				 TS_SCOPE_GLOBAL, body), "realize");
	FAILS_NULL(c, ir_realize(c, x.A, 2, NULL, (int64_t[]){1, 1}, TS_SCOPE_GLOBAL, body),
		   "realize A");
	FAILS_NULL(c, ir_realize(c, x.A, 2, (ts_expr *[]){z, z}, NULL, TS_SCOPE_GLOBAL, body),
		   "realize A");
	FAILS_NULL(c, ir_realize(c, x.A, -1, (ts_expr *[]){z, z}, (int64_t[]){1, 1},
				 TS_SCOPE_GLOBAL, body), "realize A");
	FAILS_NULL(c, ir_realize(c, x.A, 2, (ts_expr *[]){z, z}, (int64_t[]){1, 1},
				 (ts_scope)99, body), "realize A: unknown scope 99");
	FAILS_NULL(c, ir_realize(c, x.A, 2, (ts_expr *[]){z, NULL}, (int64_t[]){1, 1},
				 TS_SCOPE_GLOBAL, body), "realize A");
	FAILS_NULL(c, ir_realize(c, x.A, 2, (ts_expr *[]){z, z}, (int64_t[]){1, 1},
				 TS_SCOPE_GLOBAL, NULL), "realize A");
	FAILS_NULL(c, ir_allocate(c, NULL, body), "allocate");
	FAILS_NULL(c, ir_allocate(c, buf, NULL), "allocate A");
	FAILS_NULL(c, ir_if(c, NULL, body, NULL), "if");
	FAILS_NULL(c, ir_if(c, ts_lt(c, i, n), NULL, body), "if");
	FAILS_NULL(c, ir_seq(c, -1, &body), "seq");
	FAILS_NULL(c, ir_seq(c, 2, NULL), "seq");
	FAILS_NULL(c, ir_let(c, NULL, z, body), "let");
	FAILS_NULL(c, ir_let(c, i, NULL, body), "let");
	FAILS_NULL(c, ir_let(c, i, z, NULL), "let");
	FAILS_NULL(c, ir_evaluate(c, NULL), "evaluate");
	fx_free(&x);
}
END_TEST

/* ---- ir.h: traversal ------------------------------------------------------------------ */

static bool visit_all(ts_expr *e, void *data)
{
	(void)e;
	(*(int *)data)++;
	return true;
}

static ts_expr *keep(ts_ctx *ctx, ts_expr *e, void *data)
{
	(void)ctx, (void)data;
	return e;
}

START_TEST(test_traversal)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	int count = 0;
	ir_expr_visit(NULL, visit_all, &count);
	ir_expr_visit(x.C->body, NULL, &count);
	ir_stmt_visit(NULL, NULL, visit_all, &count);
	ir_stmt_visit(x.f->body, NULL, NULL, NULL);
	ck_assert_int_eq(count, 0);
	NULL_NOCTX(ir_expr_map_children(NULL, x.C->body, keep, NULL));
	FAILS_NULL(c, ir_expr_map_children(c, NULL, keep, NULL), "map_children");
	FAILS_NULL(c, ir_expr_map_children(c, x.C->body, NULL, NULL), "map_children");
	NULL_NOCTX(ir_stmt_map_children(NULL, x.f->body, NULL, NULL, NULL));
	FAILS_NULL(c, ir_stmt_map_children(c, NULL, NULL, NULL, NULL), "map_children");
	ts_expr *v = x.i->var;
	NULL_NOCTX(ir_substitute(NULL, v, 1, &v, &v));
	FAILS_NULL(c, ir_substitute(c, NULL, 1, &v, &v), "substitute");
	FAILS_NULL(c, ir_substitute(c, v, -1, &v, &v), "substitute");
	FAILS_NULL(c, ir_substitute(c, v, 1, NULL, &v), "substitute");
	FAILS_NULL(c, ir_substitute(c, v, 1, &v, NULL), "substitute");
	FAILS_NULL(c, ir_substitute(c, v, 1, (ts_expr *[]){NULL}, &v), "substitute");
	NULL_NOCTX(ir_stmt_substitute(NULL, x.f->body, 1, &v, &v));
	FAILS_NULL(c, ir_stmt_substitute(c, NULL, 1, &v, &v), "substitute");
	FAILS_NULL(c, ir_stmt_substitute(c, x.f->body, 1, NULL, &v), "substitute");
	FAILS_NULL(c, ir_stmt_substitute(c, x.f->body, -3, &v, &v), "substitute");
	ck_assert(!ir_expr_uses_var(NULL, v));
	ck_assert(!ir_expr_uses_var(v, NULL));
	ck_assert(ir_expr_equal(NULL, NULL));
	ck_assert(!ir_expr_equal(v, NULL));
	ck_assert(!ir_expr_equal(NULL, v));
	int64_t out;
	ck_assert(!ir_is_const_int(NULL, &out));
	ck_assert(ir_is_const_int(ts_int(c, 3), NULL)); /* out is optional */
	fx_free(&x);
}
END_TEST

/* ---- printer.h -------------------------------------------------------------------------- */

START_TEST(test_printer)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ir_sb_expr(NULL, x.C->body);
	ir_sb_stmt(NULL, x.f->body, 0);
	ir_sb_func(NULL, x.f);
	ir_sb_graph(NULL, 1, &x.C);
	ts_sbuf sb = {0};
	ts_sb_puts(NULL, "x");
	ts_sb_puts(&sb, NULL);
	ts_sb_putc(NULL, 'x');
	ts_sb_printf(NULL, "%d", 1);
	ts_sb_printf(&sb, NULL);
	ts_sb_indent(NULL, 3);
	ts_sb_indent(&sb, -3);
	ck_assert_str_eq(ts_sb_str(NULL), "");
	ck_assert_str_eq(ts_sb_str(&sb), "");
	ts_sb_free(NULL);
	ir_sb_expr(&sb, NULL);
	ir_sb_stmt(&sb, NULL, -5);
	ir_sb_func(&sb, NULL);
	ir_sb_graph(&sb, -1, &x.C);
	ir_sb_graph(&sb, 1, NULL);
	ir_sb_graph(&sb, 1, (ts_tensor *[]){NULL});
	ts_sb_free(&sb);
	ir_print_expr(NULL, x.C->body);
	ir_print_stmt(NULL, x.f->body);
	ir_print_func(NULL, x.f);
	ts_print_graph(NULL, 1, &x.C);
	ir_print_expr(stderr, NULL);
	ir_print_stmt(stderr, NULL);
	ir_print_func(stderr, NULL);
	ts_print_graph(stderr, 1, NULL);
	ts_print_graph(stderr, -2, &x.C);
	NULL_NOCTX(ir_expr_str(NULL, x.C->body));
	NULL_NOCTX(ir_stmt_str(NULL, x.f->body));
	NULL_NOCTX(ir_func_str(NULL, x.f));
	NULL_NOCTX(ts_graph_str(NULL, 1, &x.C));
	FAILS_NULL(c, ir_expr_str(c, NULL), "expr_str: expression is NULL");
	FAILS_NULL(c, ir_stmt_str(c, NULL), "stmt_str: statement is NULL");
	FAILS_NULL(c, ir_func_str(c, NULL), "func_str: function is NULL");
	FAILS_NULL(c, ts_graph_str(c, 1, NULL), "graph_str");
	FAILS_NULL(c, ts_graph_str(c, -1, &x.C), "graph_str");
	FAILS_NULL(c, ts_graph_str(c, 1, (ts_tensor *[]){NULL}), "graph_str: output 0 is NULL");
	ts_tensor *order[8];
	ck_assert_int_lt(ts_graph_topo(1, NULL, order, 8), 0);
	ck_assert_int_lt(ts_graph_topo(-1, &x.C, order, 8), 0);
	ck_assert_int_lt(ts_graph_topo(1, (ts_tensor *[]){NULL}, order, 8), 0);
	ck_assert_int_eq(ts_graph_topo(1, &x.C, NULL, 0), 3);
	ck_assert_int_lt(ts_graph_topo(1, &x.C, NULL, 8), 0);
	ck_assert_int_eq(ts_graph_topo(1, &x.C, order, -4), 3);
	fx_free(&x);
}
END_TEST

/* ---- te.h -------------------------------------------------------------------------------- */

static ts_expr *lambda_null(ts_ctx *ctx, ts_expr *const *axes, void *user)
{
	(void)ctx, (void)axes, (void)user;
	return NULL;
}

START_TEST(test_te)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_expr *i = ts_var(c, "i"), *j = ts_var(c, "j");
	ts_expr *body = ts_add(c, TS_READ(c, x.A, i, j), ts_float(c, 1));
	NULL_NOCTX(ts_placeholder(NULL, "P", TS_SHAPE(2), ts_float32));
	NULL_NOCTX(ts_reduce_axis(NULL, "r", 0, 4));
	NULL_NOCTX(ts_compute(NULL, "D", TS_SHAPE(13, 7), TS_VARS(i, j), body));
	NULL_NOCTX(ts_compute_n(NULL, "D", TS_SHAPE(13, 7), TS_VARS_N(i, j), body));
	NULL_NOCTX(ts_compute_lambda(NULL, "D", TS_SHAPE(13, 7), lambda_null, NULL));
	NULL_NOCTX(ts_sum(NULL, ts_float(c, 1), 1, x.C->reduce_axis));
	NULL_NOCTX(ts_rename(NULL, x.A, "Q"));
	FAILS_NULL(c, ts_placeholder(c, NULL, TS_SHAPE(2), ts_float32), "placeholder");
	/* a NULL shape is named as such, not as a dimension count out of range */
	FAILS_NULL(c, ts_placeholder(c, "P", 2, NULL, ts_float32), "placeholder P: the shape is NULL");
	FAILS_NULL(c, ts_placeholder(c, "P", -1, (int64_t[]){2}, ts_float32), "placeholder P");
	FAILS_NULL(c, ts_placeholder(c, "P", 9, (int64_t[9]){1}, ts_float32), "placeholder P");
	FAILS_NULL(c, ts_placeholder(c, "P", TS_SHAPE(2), ts_dtype_with_lanes(ts_float32, 4)),
		   "placeholder P");
	FAILS_NULL(c, ts_placeholder(c, "P", TS_SHAPE(2), (ts_dtype){99, 32, 1}), "placeholder P");
	FAILS_NULL(c, ts_placeholder(c, "P", TS_SHAPE(2), (ts_dtype){TS_TYPE_FLOAT, 7, 1}),
		   "placeholder P");
	FAILS_NULL(c, ts_reduce_axis(c, NULL, 0, 4), "reduce_axis");
	FAILS_NULL(c, ts_reduce_axis(c, "r", 0, -4), "reduce_axis r");
	FAILS_NULL(c, ts_compute(c, NULL, TS_SHAPE(13, 7), TS_VARS(i, j), body), "compute");
	FAILS_NULL(c, ts_compute(c, "D", 2, NULL, TS_VARS(i, j), body), "compute D: the shape is NULL");
	FAILS_NULL(c, ts_compute(c, "D", TS_SHAPE(13, 7), NULL, body), "compute D");
	FAILS_NULL(c, ts_compute(c, "D", TS_SHAPE(13, 7), TS_VARS(i, NULL), body), "compute D");
	FAILS_NULL(c, ts_compute(c, "D", TS_SHAPE(13, 7), TS_VARS(i, j), NULL), "compute D");
	FAILS_NULL(c, ts_compute(c, "D", -1, (int64_t[]){1}, TS_VARS(i, j), body), "compute D");
	FAILS_NULL(c, ts_compute(c, "D", 9, (int64_t[9]){1}, TS_VARS(i, j), body), "compute D");
	FAILS_NULL(c, ts_compute_n(c, "D", TS_SHAPE(13, 7), -1, TS_VARS(i, j), body), "compute D");
	FAILS_NULL(c, ts_compute_n(c, "D", TS_SHAPE(13, 7), 2, NULL, body), "compute D");
	FAILS_NULL(c, ts_compute_lambda(c, "D", TS_SHAPE(13, 7), NULL, NULL), "compute D");
	FAILS_NULL(c, ts_compute_lambda(c, "D", TS_SHAPE(13, 7), lambda_null, NULL), "compute D");
	FAILS_NULL(c, ts_compute_lambda(c, "D", 2, NULL, lambda_null, NULL), "compute D: the shape is NULL");
	FAILS_NULL(c, ts_compute_lambda(c, "D", 12, (int64_t[12]){1}, lambda_null, NULL),
		   "compute D");
	FAILS_NULL(c, ts_sum(c, NULL, 1, x.C->reduce_axis), "sum");
	FAILS_NULL(c, ts_sum(c, ts_float(c, 1), 1, NULL), "sum");
	FAILS_NULL(c, ts_reduce_max(c, NULL, 1, x.C->reduce_axis), "max");
	FAILS_NULL(c, ts_reduce_min(c, ts_float(c, 1), -1, x.C->reduce_axis), "min");
	ck_assert_int_eq(ts_tensor_numel(NULL), 0);
	FAILS_NULL(c, ts_rename(c, NULL, "Q"), "rename: tensor is NULL");
	FAILS_NULL(c, ts_rename(c, x.A, NULL), "rename");
	FAILS_NULL(c, ts_rename(c, x.A, ""), "rename");
	fx_free(&x);
}
END_TEST

/* A tensor of another context is refused by whatever consumes it. */
START_TEST(test_foreign_tensors)
{
	fx x = fx_new(), y = fx_new();
	ts_ctx *c = x.ctx;
	ts_expr *i = ts_var(c, "i"), *j = ts_var(c, "j");
	FAILS_NULL(c, TS_READ(c, y.A, i, j), "read A: tensor belongs to another context");
	FAILS_NULL(c, ts_op_relu(c, y.A), "relu: tensor A belongs to another context");
	ts_expr *yi = ts_var(y.ctx, "i"), *yj = ts_var(y.ctx, "j");
	ts_expr *ybody = TS_READ(y.ctx, y.A, yi, yj);
	tu_nonnull(y.ctx, ybody);
	FAILS_NULL(c, ts_compute(c, "D", TS_SHAPE(13, 7), TS_VARS(yi, yj), ybody),
		   "compute D: index variable 0 belongs to another context");
	FAILS_NULL(c, ts_compute(c, "D", TS_SHAPE(13, 7), TS_VARS(i, j), ybody),
		   "compute D: the body belongs to another context");
	/* expressions of another context: refused where they are combined,
	 * not taken into a body that outlives them */
	FAILS_NULL(c, ts_add(c, TS_READ(c, x.A, i, j), ts_float(y.ctx, 2.5)),
		   "add: operand b belongs to another context");
	FAILS_NULL(c, TS_READ(c, x.A, yi, j), "read A: index 0 belongs to another context");
	FAILS_NULL(c, ts_select(c, ts_lt(y.ctx, yi, yj), ts_float(c, 1), ts_float(c, 2)),
		   "select: the condition belongs to another context");
	FAILS_NULL(c, ts_cast(c, ts_int32, yi), "cast: the operand belongs to another context");
	FAILS_NULL(c, ts_exp(c, ts_float(y.ctx, 1)), "exp: argument 0 belongs to another context");
	FAILS_NULL(c, ts_sum(c, ts_float(c, 1), 1, y.C->reduce_axis),
		   "sum: a reduction axis belongs to another context");
	FAILS_NULL(c, ts_sum(c, ts_float(y.ctx, 1), 1, x.C->reduce_axis),
		   "sum: the source belongs to another context");
	FAILS_NULL(c, ir_evaluate(c, yi), "evaluate: an operand belongs to another context");
	FAILS_NULL(c, ir_for(c, i, ts_int(c, 0), ts_int(y.ctx, 4), TS_FOR_SERIAL, TS_THREAD_NONE,
			     ir_evaluate(c, i)),
		   "for: extent: the expression belongs to another context");
	FAILS_NULL(c, ir_seq2(c, ir_evaluate(c, i), ir_evaluate(y.ctx, yi)),
		   "seq: a statement belongs to another context");
	FAILS_NULL(c, ts_op_add(c, x.A, y.A), "add: tensor A belongs to another context");
	FAILS_NULL(c, ts_create_schedule(c, 1, &y.C),
		   "create_schedule: output 0 (C) belongs to another context");
	FAILS_NULL(c, ts_lower(x.s, "mm", 3, (ts_tensor *[]){x.A, y.B, x.C}), "lower(mm)");
	ts_clear_error(c);
	/* the operator schedules name the tensor they were given */
	FAILS_ST(c, ts_schedule_matmul_cpu(x.s, y.C, NULL),
		 "schedule_matmul_cpu: tensor C belongs to another context");
	FAILS_ST(c, ts_schedule_matmul_cuda(x.s, y.C, NULL),
		 "schedule_matmul_cuda: tensor C belongs to another context");
	FAILS_ST(c, ts_schedule_dense_cpu(x.s, y.C, NULL),
		 "schedule_dense_cpu: tensor C belongs to another context");
	FAILS_NULL(c, ts_rename(c, y.A, "Q"), "rename: tensor A belongs to another context");
	FAILS_ST(c, ts_eval(c, 1, &y.A, (void *[]){&i}), "eval: tensor A belongs to another context");
	/* a lowered function of another context */
	FAILS_NULL(c, ts_build(c, y.f, "llvm"), "build mm: the function belongs to another context");
	FAILS_NULL(c, cg_llvm_compile(c, y.f, "llvm"), "llvm(mm): the function belongs to another context");
	FAILS_NULL(c, cg_emit_c(c, y.f), "c: function mm belongs to another context");
	FAILS_NULL(c, cg_emit_cuda(c, y.f, NULL), "cuda: function mm belongs to another context");
	float a[13 * 7], b[7 * 11], out[13 * 11];
	FAILS_ST(c, cg_interp_run(c, y.f, (void *[]){a, b, out}),
		 "interp: function mm belongs to another context");
	fx_free(&y);
	fx_free(&x);
}
END_TEST

/* ---- eval.h -------------------------------------------------------------------------- */

START_TEST(test_eval)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	float a[13 * 7], b[7 * 11], out[13 * 11];
	ST_NOCTX(ts_eval(NULL, 3, (ts_tensor *[]){x.A, x.B, x.C}, (void *[]){a, b, out}));
	FAILS_ST(c, ts_eval(c, -1, (ts_tensor *[]){x.A}, (void *[]){a}), "eval");
	FAILS_ST(c, ts_eval(c, 3, NULL, (void *[]){a, b, out}), "eval");
	FAILS_ST(c, ts_eval(c, 3, (ts_tensor *[]){x.A, x.B, x.C}, NULL), "eval");
	FAILS_ST(c, ts_eval(c, 3, (ts_tensor *[]){x.A, NULL, x.C}, (void *[]){a, b, out}),
		 "eval: binding 1 names no tensor");
	FAILS_ST(c, ts_eval(c, 3, (ts_tensor *[]){x.A, x.B, x.C}, (void *[]){a, NULL, out}),
		 "eval: tensor B is bound to NULL");
	ck_assert_double_eq(ts_elem_get_f64(NULL, ts_float32, 0), 0);
	ck_assert_int_eq(ts_elem_get_i64(NULL, ts_int32, 0), 0);
	ck_assert_double_eq(ts_elem_get_f64(a, (ts_dtype){99, 32, 1}, 0), 0);
	ck_assert_int_eq(ts_elem_get_i64(a, (ts_dtype){TS_TYPE_INT, 3, 1}, 0), 0);
	ts_elem_set_f64(NULL, ts_float32, 0, 1);
	ts_elem_set_i64(NULL, ts_int32, 0, 1);
	ts_elem_set_f64(a, (ts_dtype){99, 32, 1}, 0, 1);
	ts_elem_set_i64(a, (ts_dtype){TS_TYPE_UINT, 9, 1}, 0, 1);
	fx_free(&x);
}
END_TEST

/* ---- ops.h ------------------------------------------------------------------------------- */

START_TEST(test_ops)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_tensor *X = ts_placeholder(c, "X", TS_SHAPE(1, 4, 6, 6), ts_float32);
	ts_tensor *W = ts_placeholder(c, "W", TS_SHAPE(4, 4, 3, 3), ts_float32);
	ts_tensor *Xc = ts_op_layout_nchw_to_nchwc(c, X, 2);
	ts_tensor *Wc = ts_op_weight_oihw_to_blocked(c, W, 2, 2);
	tu_nonnull(c, Wc);
	NULL_NOCTX(ts_op_matmul(NULL, x.A, x.B, false, false));
	NULL_NOCTX(ts_op_relu(NULL, x.A));
	NULL_NOCTX(ts_op_softmax(NULL, x.A));
	NULL_NOCTX(ts_op_pad(NULL, x.A, (int64_t[]){1, 1}, (int64_t[]){1, 1}, 0));
	NULL_NOCTX(ts_op_conv2d_nchw(NULL, X, W, 1, 1, 1, 1, 1, 1, 1));
	FAILS_NULL(c, ts_op_matmul(c, NULL, x.B, false, false), "matmul");
	FAILS_NULL(c, ts_op_matmul(c, x.A, NULL, false, false), "matmul");
	FAILS_NULL(c, ts_op_batch_matmul(c, NULL, x.B, false, false), "batch_matmul");
	FAILS_NULL(c, ts_op_dense(c, NULL, x.B, NULL), "dense");
	FAILS_NULL(c, ts_op_dense(c, x.A, NULL, NULL), "dense");
	FAILS_NULL(c, ts_op_relu(c, NULL), "relu");
	FAILS_NULL(c, ts_op_add(c, NULL, x.A), "add");
	FAILS_NULL(c, ts_op_add(c, x.A, NULL), "add");
	FAILS_NULL(c, ts_op_bias_add(c, NULL, x.A, 0), "bias_add");
	FAILS_NULL(c, ts_op_bias_add(c, x.A, NULL, 0), "bias_add");
	FAILS_NULL(c, ts_op_bias_add(c, x.A, x.A, 99), "bias_add");
	FAILS_NULL(c, ts_op_bias_add(c, x.A, x.A, -99), "bias_add");
	FAILS_NULL(c, ts_op_clip(c, NULL, 0, 1), "clip");
	FAILS_NULL(c, ts_op_pad(c, NULL, (int64_t[]){1, 1}, (int64_t[]){1, 1}, 0), "pad");
	FAILS_NULL(c, ts_op_pad(c, x.A, NULL, (int64_t[]){1, 1}, 0), "pad");
	FAILS_NULL(c, ts_op_pad(c, x.A, (int64_t[]){1, 1}, NULL, 0), "pad");
	FAILS_NULL(c, ts_op_conv2d_nchw(c, NULL, W, 1, 1, 1, 1, 1, 1, 1), "conv2d_nchw");
	FAILS_NULL(c, ts_op_conv2d_nchw(c, X, NULL, 1, 1, 1, 1, 1, 1, 1), "conv2d_nchw");
	FAILS_NULL(c, ts_op_conv2d_nchw(c, X, W, 1, 1, 1, 1, 1, 1, 0), "conv2d_nchw");
	FAILS_NULL(c, ts_op_conv2d_nchw(c, X, W, 1, 1, 1, 1, 1, 1, -4), "conv2d_nchw");
	FAILS_NULL(c, ts_op_conv2d_nhwc(c, NULL, W, 1, 1, 1, 1, 1, 1, 1), "conv2d_nhwc");
	FAILS_NULL(c, ts_op_conv2d_nhwc(c, X, NULL, 1, 1, 1, 1, 1, 1, 1), "conv2d_nhwc");
	FAILS_NULL(c, ts_op_depthwise_conv2d_nchw(c, NULL, W, 1, 1, 1, 1, 1, 1), "depthwise");
	FAILS_NULL(c, ts_op_depthwise_conv2d_nchw(c, X, NULL, 1, 1, 1, 1, 1, 1), "depthwise");
	FAILS_NULL(c, ts_op_layout_nchw_to_nchwc(c, NULL, 2), "nchw");
	FAILS_NULL(c, ts_op_layout_nchw_to_nchwc(c, X, 0), "nchw");
	FAILS_NULL(c, ts_op_layout_nchw_to_nchwc(c, X, -2), "nchw");
	FAILS_NULL(c, ts_op_layout_nchwc_to_nchw(c, NULL), "nchw");
	FAILS_NULL(c, ts_op_weight_oihw_to_blocked(c, NULL, 2, 2), "oihw");
	FAILS_NULL(c, ts_op_weight_oihw_to_blocked(c, W, 0, 2), "oihw");
	FAILS_NULL(c, ts_op_weight_oihw_to_blocked(c, W, 2, -2), "oihw");
	FAILS_NULL(c, ts_op_conv2d_nchwc(c, NULL, Wc, 1, 1, 1, 1, 1, 1), "conv2d_nchwc");
	FAILS_NULL(c, ts_op_conv2d_nchwc(c, Xc, NULL, 1, 1, 1, 1, 1, 1), "conv2d_nchwc");
	FAILS_NULL(c, ts_op_max_pool2d(c, NULL, 2, 2, 2, 2, 0, 0), "max_pool2d");
	FAILS_NULL(c, ts_op_max_pool2d(c, X, 0, 2, 2, 2, 0, 0), "max_pool2d");
	FAILS_NULL(c, ts_op_avg_pool2d(c, NULL, 2, 2, 2, 2, 0, 0, true), "avg_pool2d");
	FAILS_NULL(c, ts_op_avg_pool2d(c, X, 2, -2, 2, 2, 0, 0, true), "avg_pool2d");
	FAILS_NULL(c, ts_op_softmax(c, NULL), "softmax");
	FAILS_NULL(c, ts_op_matmul_packed(c, NULL, x.B, 4), "matmul_packed");
	FAILS_NULL(c, ts_op_matmul_packed(c, x.A, NULL, 4), "matmul_packed");
	FAILS_NULL(c, ts_op_matmul_packed(c, x.A, x.B, 0), "matmul_packed");
	FAILS_NULL(c, ts_op_matmul_packed(c, x.A, x.B, -8), "matmul_packed");
	fx_free(&x);
}
END_TEST

/* ---- schedule.h -------------------------------------------------------------------------- */

START_TEST(test_schedule_null_stage)
{
	fx x = fx_new();
	ts_axis *o, *in, *f;
	NULL_NOCTX(ts_create_schedule(NULL, 1, &x.C));
	NULL_NOCTX(ts_stage_of(NULL, x.C));
	NULL_NOCTX(ts_axis_of(NULL, 0));
	NULL_NOCTX(ts_reduce_axis_of(NULL, 0));
	ST_NOCTX(ts_split(NULL, x.i, 4, &o, &in));
	ST_NOCTX(ts_split_nparts(NULL, x.i, 4, &o, &in));
	ST_NOCTX(ts_split_tail(NULL, x.i, 4, TS_TAIL_GUARD, &o, &in));
	ST_NOCTX(ts_set_tail(NULL, x.i, TS_TAIL_GUARD));
	ST_NOCTX(ts_tile(NULL, x.i, x.j, 4, 4, &o, &in, &f, &f));
	ST_NOCTX(ts_fuse(NULL, x.i, x.j, &f));
	ST_NOCTX(ts_reorder(NULL, 2, (ts_axis *[]){x.j, x.i}));
	ST_NOCTX(ts_vectorize(NULL, x.j));
	ST_NOCTX(ts_parallel(NULL, x.i));
	ST_NOCTX(ts_unroll(NULL, x.j));
	ST_NOCTX(ts_bind(NULL, x.i, TS_BLOCK_X));
	/* compute_at's target gives a context: the NULL stage is named there */
	ck_assert_int_ne(ts_compute_at(NULL, x.sc, x.i), TS_OK);
	tu_assert_error(x.ctx, "compute_at: stage is NULL");
	ts_clear_error(x.ctx);
	ST_NOCTX(ts_compute_inline(NULL));
	ST_NOCTX(ts_compute_root(NULL));
	ST_NOCTX(ts_set_scope(NULL, TS_SCOPE_LOCAL));
	NULL_NOCTX(ts_cache_read(NULL, x.A, TS_SCOPE_SHARED, 1, &x.C));
	NULL_NOCTX(ts_cache_write(NULL, x.C, TS_SCOPE_LOCAL));
	NULL_NOCTX(ts_schedule_str(NULL));
	ts_stage *out[4];
	ck_assert_int_lt(sch_consumers(NULL, x.A, out, 4), 0);
	ck_assert_int_eq(ts_last_status(x.ctx), TS_OK);
	fx_free(&x);
}
END_TEST

START_TEST(test_schedule_bad_args)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_stage *sc = x.sc;
	ts_axis *o, *in, *f, *a, *b;
	FAILS_NULL(c, ts_create_schedule(c, 1, NULL), "create_schedule");
	FAILS_NULL(c, ts_create_schedule(c, -1, &x.C), "create_schedule");
	FAILS_NULL(c, ts_create_schedule(c, 1, (ts_tensor *[]){NULL}), "create_schedule: output 0 is NULL");
	FAILS_NULL(c, ts_stage_of(x.s, NULL), "stage_of: tensor is NULL");
	FAILS_NULL(c, ts_axis_of(sc, -1), "axis_of(C)");
	FAILS_NULL(c, ts_axis_of(sc, 2), "axis_of(C)");
	FAILS_NULL(c, ts_reduce_axis_of(sc, -1), "reduce_axis_of(C)");
	FAILS_NULL(c, ts_reduce_axis_of(sc, 1), "reduce_axis_of(C)");
	FAILS_ST(c, ts_split(sc, NULL, 4, &o, &in), "split(C): axis is NULL");
	FAILS_ST(c, ts_split(sc, x.i, 4, NULL, &in), "split(C): outer is NULL");
	FAILS_ST(c, ts_split(sc, x.i, 4, &o, NULL), "split(C): inner is NULL");
	FAILS_ST(c, ts_split(sc, x.i, 4, NULL, NULL), "split(C): outer is NULL");
	FAILS_ST(c, ts_split_nparts(sc, x.i, 4, NULL, &in), "split(C): outer is NULL");
	FAILS_ST(c, ts_split_tail(sc, x.i, 4, (ts_tail)5, &o, &in), "split(C): unknown tail strategy 5");
	FAILS_ST(c, ts_split_tail(sc, x.i, 4, (ts_tail)-1, &o, &in), "split(C): unknown tail strategy -1");
	tu_ok(c, ts_split(sc, x.i, 4, &o, &in));
	FAILS_ST(c, ts_set_tail(sc, NULL, TS_TAIL_GUARD), "set_tail(C): axis is NULL");
	FAILS_ST(c, ts_set_tail(sc, o, (ts_tail)5), "set_tail(C): unknown tail strategy 5");
	FAILS_ST(c, ts_tile(sc, NULL, x.j, 4, 4, &a, &b, &f, &f), "tile(C): axis is NULL");
	FAILS_ST(c, ts_tile(sc, o, x.j, 4, 4, NULL, &b, &f, &f), "tile(C): xo is NULL");
	FAILS_ST(c, ts_tile(sc, o, x.j, 4, 4, &a, &b, &f, NULL), "tile(C): yi is NULL");
	{
		/* what the second split would refuse is refused before the
		 * first changes anything (the first split stayed) */
		ts_schedule *s2 = ts_create_schedule(c, 1, &x.C);
		ts_stage *s2c = ts_stage_of(s2, x.C);
		tu_ok(c, ts_unroll(s2c, ts_axis_of(s2c, 1)));
		const char *before = ts_schedule_str(s2);
		FAILS_ST(c, ts_tile(s2c, ts_axis_of(s2c, 0), ts_axis_of(s2c, 1), 4, 4, &a, &b, &f, &in),
			 "tile(C): axis 'j' is unrolled; tile it before annotating it");
		ck_assert_str_eq(ts_schedule_str(s2), before);
	}
	FAILS_ST(c, ts_fuse(sc, o, in, NULL), "fuse(C): fused is NULL");
	FAILS_ST(c, ts_fuse(sc, NULL, in, &f), "fuse(C): axis is NULL");
	FAILS_ST(c, ts_reorder(sc, 2, NULL), "reorder(C)");
	FAILS_ST(c, ts_reorder(sc, -1, (ts_axis *[]){o}), "reorder(C)");
	FAILS_ST(c, ts_reorder(sc, 99, (ts_axis *[]){o}), "reorder(C)");
	FAILS_ST(c, ts_reorder(sc, 2, (ts_axis *[]){o, NULL}), "reorder(C): axis is NULL");
	FAILS_ST(c, ts_vectorize(sc, NULL), "vectorize(C): axis is NULL");
	FAILS_ST(c, ts_parallel(sc, NULL), "parallel(C): axis is NULL");
	FAILS_ST(c, ts_unroll(sc, NULL), "unroll(C): axis is NULL");
	FAILS_ST(c, ts_bind(sc, NULL, TS_BLOCK_X), "bind(C): axis is NULL");
	FAILS_ST(c, ts_bind(sc, o, (ts_thread_tag)-1), "bind(C): invalid thread tag");
	FAILS_ST(c, ts_bind(sc, o, (ts_thread_tag)99), "bind(C): invalid thread tag");
	FAILS_ST(c, ts_bind(sc, o, TS_THREAD_NONE), "bind(C): invalid thread tag");
	FAILS_ST(c, ts_compute_at(sc, NULL, o), "compute_at(C)");
	FAILS_ST(c, ts_set_scope(sc, (ts_scope)99), "set_scope(C)");
	FAILS_ST(c, ts_set_scope(sc, (ts_scope)-1), "set_scope(C)");
	FAILS_NULL(c, ts_cache_read(x.s, NULL, TS_SCOPE_SHARED, 1, &x.C), "cache_read");
	FAILS_NULL(c, ts_cache_read(x.s, x.A, TS_SCOPE_SHARED, 1, NULL), "cache_read(A): readers is NULL");
	FAILS_NULL(c, ts_cache_read(x.s, x.A, TS_SCOPE_SHARED, -1, &x.C), "cache_read");
	FAILS_NULL(c, ts_cache_read(x.s, x.A, TS_SCOPE_SHARED, 1, (ts_tensor *[]){NULL}),
		   "cache_read(A): reader 0 is NULL");
	FAILS_NULL(c, ts_cache_read(x.s, x.A, (ts_scope)99, 1, &x.C), "cache_read(A): unknown scope 99");
	FAILS_NULL(c, ts_cache_read(x.s, x.A, TS_SCOPE_SHARED, 300, &x.C), "cache_read(A): needs 1 or more readers");
	/* a reader with no stage (a placeholder): the message names cache_read */
	FAILS_NULL(c, ts_cache_read(x.s, x.A, TS_SCOPE_SHARED, 1, &x.B),
		   "cache_read(A): reader 0 (B) has no stage in this schedule");
	FAILS_NULL(c, ts_stage_of(x.s, x.A), "stage_of: tensor A has no stage in this schedule");
	FAILS_NULL(c, ts_cache_write(x.s, NULL, TS_SCOPE_LOCAL), "cache_write: tensor is NULL");
	FAILS_NULL(c, ts_cache_write(x.s, x.C, (ts_scope)99), "cache_write(C): unknown scope 99");
	ts_stage *out[4];
	ck_assert_int_eq(sch_consumers(x.s, x.A, NULL, 0), 1);
	ck_assert_int_lt(sch_consumers(x.s, x.A, NULL, 4), 0);
	ck_assert_int_eq(sch_consumers(x.s, NULL, out, 4), 0);
	/* the schedule is still usable after all these refusals */
	ts_clear_error(c);
	ts_func *fn = ts_lower(x.s, "mm2", 3, (ts_tensor *[]){x.A, x.B, x.C});
	tu_nonnull(c, fn);
	tu_check_func_interp(c, fn, 1e-4);
	fx_free(&x);
}
END_TEST

/* Axes of another stage, stages of another schedule. */
START_TEST(test_schedule_foreign)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_tensor *D = ts_rename(c, ts_op_relu(c, x.C), "D");
	ts_schedule *s2 = ts_create_schedule(c, 1, &D);
	ts_stage *sd = ts_stage_of(s2, D), *sc2 = ts_stage_of(s2, x.C);
	ts_axis *o, *in, *f;
	tu_nonnull(c, sc2);
	FAILS_ST(c, ts_split(sd, x.i, 4, &o, &in), "split(D): axis 'i' does not belong to this stage");
	FAILS_ST(c, ts_fuse(sd, x.i, x.j, &f), "fuse(D): axis 'i' does not belong to this stage");
	FAILS_ST(c, ts_reorder(sd, 1, (ts_axis *[]){x.j}), "reorder(D): axis 'j' does not belong");
	FAILS_ST(c, ts_vectorize(sd, x.j), "vectorize(D): axis 'j' does not belong");
	FAILS_ST(c, ts_bind(sd, x.j, TS_THREAD_X), "bind(D): axis 'j' does not belong");
	FAILS_ST(c, ts_set_tail(sd, x.j, TS_TAIL_PARTITION), "set_tail(D)");
	/* x.sc is C's stage in the first schedule, sd in the second */
	FAILS_ST(c, ts_compute_at(sc2, x.sc, x.i),
		 "compute_at(C): stage C belongs to another schedule");
	FAILS_ST(c, ts_compute_at(sc2, sd, x.i), "compute_at(C): axis 'i' is not an axis of D");
	FAILS_NULL(c, ts_cache_read(s2, x.A, TS_SCOPE_SHARED, 1, (ts_tensor *[]){x.B}),
		   "stage");
	fx_free(&x);
}
END_TEST

/* ---- lower.h and op_schedules.h ------------------------------------------------------------ */

START_TEST(test_lower)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_tensor **args = (ts_tensor *[]){x.A, x.B, x.C};
	NULL_NOCTX(ts_lower(NULL, "mm", 3, args));
	NULL_NOCTX(ts_lower_until(NULL, "mm", 3, args, "flatten"));
	NULL_NOCTX(ts_schedule_bounds_str(NULL));
	FAILS_NULL(c, ts_lower(x.s, NULL, 3, args), "lower");
	FAILS_NULL(c, ts_lower(x.s, "", 3, args), "lower");
	FAILS_NULL(c, ts_lower(x.s, "mm", 3, NULL), "lower(mm)");
	FAILS_NULL(c, ts_lower(x.s, "mm", -1, args), "lower(mm)");
	FAILS_NULL(c, ts_lower(x.s, "mm", 1000, args), "lower(mm)");
	FAILS_NULL(c, ts_lower(x.s, "mm", 3, (ts_tensor *[]){x.A, NULL, x.C}), "lower(mm)");
	FAILS_NULL(c, ts_lower_until(x.s, "mm", 3, args, "nope"), "lower(mm): unknown pass");
	fx_free(&x);
}
END_TEST

START_TEST(test_op_schedules)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	ts_matmul_cpu_params mp = ts_matmul_cpu_default();
	ts_conv2d_cpu_params cp = ts_conv2d_cpu_default();
	ts_matmul_cuda_params gp = ts_matmul_cuda_default();
	ST_NOCTX(ts_schedule_default_cpu(NULL, 8));
	ST_NOCTX(ts_schedule_default_cuda(NULL, 128));
	ST_NOCTX(ts_schedule_matmul_cpu(NULL, x.C, &mp));
	ST_NOCTX(ts_schedule_conv2d_nchwc_cpu(NULL, x.C, &cp));
	ST_NOCTX(ts_schedule_matmul_cuda(NULL, x.C, &gp));
	ST_NOCTX(ts_schedule_conv2d_cuda(NULL, x.C, &gp));
	FAILS_ST(c, ts_schedule_default_cpu(x.s, 0), "schedule_default_cpu");
	FAILS_ST(c, ts_schedule_default_cpu(x.s, -8), "schedule_default_cpu");
	FAILS_ST(c, ts_schedule_default_cuda(x.s, 0), "schedule_default_cuda");
	FAILS_ST(c, ts_schedule_default_cuda(x.s, 1 << 20), "schedule_default_cuda");
	FAILS_ST(c, ts_schedule_matmul_cpu(x.s, NULL, &mp), "schedule_matmul_cpu");
	ts_matmul_cpu_params bad = mp;
	bad.mr = 0;
	FAILS_ST(c, ts_schedule_matmul_cpu(x.s, x.C, &bad), "schedule_matmul_cpu: parameter mr");
	ts_conv2d_cpu_params badc = cp;
	badc.ow_block = -1;
	FAILS_ST(c, ts_schedule_conv2d_nchwc_cpu(x.s, x.C, &badc), "schedule_conv2d_nchwc_cpu");
	ts_matmul_cuda_params badg = gp;
	badg.tile_k = 0;
	FAILS_ST(c, ts_schedule_matmul_cuda(x.s, x.C, &badg), "schedule_matmul_cuda: parameter tile_k");
	FAILS_ST(c, ts_schedule_conv2d_cuda(x.s, x.C, &badg), "schedule_conv2d_cuda: parameter tile_k");
	FAILS_ST(c, ts_schedule_conv2d_nchwc_cpu(x.s, NULL, &cp), "schedule_conv2d_nchwc_cpu");
	FAILS_ST(c, ts_schedule_matmul_cuda(x.s, NULL, &gp), "schedule_matmul_cuda");
	FAILS_ST(c, ts_schedule_conv2d_cuda(x.s, NULL, &gp), "schedule_conv2d_cuda");
	fx_free(&x);
}
END_TEST

/* ---- build.h, interp.h, c_emit.h, llvm.h ------------------------------------------------------ */

START_TEST(test_build)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	NULL_NOCTX(ts_build(NULL, x.f, "llvm"));
	FAILS_NULL(c, ts_build(c, NULL, "llvm"), "build");
	FAILS_NULL(c, ts_build(c, x.f, "tpu"), "build mm");
	ts_module *m = ts_build(c, x.f, "llvm");
	tu_nonnull(c, m);
	ts_array *arr[3];
	for (int i = 0; i < 3; i++) {
		arr[i] = ts_array_new(c, ts_float32, 2, x.f->params[i]->shape);
		ts_array_fill_random(arr[i], (uint64_t)i + 1, -1, 1);
	}
	ST_NOCTX(ts_module_run(NULL, 3, arr));
	FAILS_ST(c, ts_module_run(m, -1, arr), "call mm");
	FAILS_ST(c, ts_module_run(m, 3, NULL), "call mm");
	FAILS_ST(c, ts_module_run(m, 100, arr), "call mm");
	ST_NOCTX(ts_module_launch(NULL, 3, arr));
	FAILS_ST(c, ts_module_launch(m, -1, arr), "call mm");
	FAILS_ST(c, ts_module_launch(m, 3, NULL), "call mm");
	ts_timing t;
	ST_NOCTX(ts_module_time(NULL, 3, arr, 0, 1, &t));
	FAILS_ST(c, ts_module_time(m, 3, arr, 0, 1, NULL), "time");
	FAILS_ST(c, ts_module_time(m, 3, arr, -1, 1, &t), "time");
	FAILS_ST(c, ts_module_time(m, 3, arr, 0, 0, &t), "time");
	NULL_NOCTX(ts_module_source(NULL, "c"));
	FAILS_NULL(c, ts_module_source(m, NULL), "module mm: source kind is NULL");
	FAILS_NULL(c, ts_module_source(m, "cobol"), "module mm");
	ST_NOCTX(ts_module_export(NULL, "/tmp/x.o", NULL));
	FAILS_ST(c, ts_module_export(m, NULL, NULL), "export mm: the object path is NULL");
	FAILS_ST(c, ts_module_export(m, "/tmp/tessera_same.o", "/tmp/tessera_same.o"),
		 "llvm(mm): the header '/tmp/tessera_same.o' is the object file");
	unlink("/tmp/tessera_same.o");
	ts_phase_times pt = ts_module_times(NULL);
	ck_assert_double_eq(pt.total_ms, 0);
	ck_assert_ptr_null(ts_module_target(NULL));
	ck_assert_ptr_null(ts_module_func(NULL));
	ts_module_free(NULL);
	tu_ok(c, ts_module_run(m, 3, arr));
	for (int i = 0; i < 3; i++)
		ts_array_free(arr[i]);
	ts_module_free(m);
	fx_free(&x);
}
END_TEST

START_TEST(test_interp_and_emit)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	float a[13 * 7], b[7 * 11], out[13 * 11];
	void *data[3] = {a, b, out};
	ST_NOCTX(cg_interp_run(NULL, x.f, data));
	ST_NOCTX(cg_interp_stmt(NULL, x.f->body, 3, x.f->params, data));
	FAILS_ST(c, cg_interp_stmt(c, x.f->body, -1, x.f->params, data), "interp");
	FAILS_ST(c, cg_interp_stmt(c, x.f->body, 3, NULL, data), "interp");
	FAILS_ST(c, cg_interp_stmt(c, x.f->body, 3, x.f->params, NULL), "interp");
	NULL_NOCTX(cg_emit_c(NULL, x.f));
	NULL_NOCTX(cg_emit_cuda(NULL, x.f, NULL));
	NULL_NOCTX(cg_cuda_insert_sync(NULL, x.f->body));
	FAILS_NULL(c, cg_emit_c(c, NULL), "c: function is NULL");
	FAILS_NULL(c, cg_emit_cuda(c, NULL, NULL), "cuda: function is NULL");
	FAILS_NULL(c, cg_cuda_insert_sync(c, NULL), "insert_sync: statement is NULL");
	NULL_NOCTX(cg_llvm_compile(NULL, x.f, "llvm"));
	FAILS_NULL(c, cg_llvm_compile(c, NULL, "llvm"), "llvm: no function");
	ck_assert_ptr_null(cg_llvm_entry(NULL));
	FAILS_NULL(c, cg_llvm_ir_text(c, NULL, false), "llvm: no module");
	FAILS_NULL(c, cg_llvm_asm_text(c, NULL), "llvm: no module");
	FAILS_ST(c, cg_llvm_write_object(c, NULL, "/tmp/x.o", NULL), "llvm: write_object");
	ck_assert_ptr_null(cg_llvm_target_str(NULL));
	cg_llvm_times lt = cg_llvm_get_times(NULL);
	ck_assert_double_eq(lt.build_ms, 0);
	cg_llvm_free(NULL);
	cg_llvm_module *lm = cg_llvm_compile(c, x.f, "llvm");
	tu_nonnull(c, lm);
	NULL_NOCTX(cg_llvm_ir_text(NULL, lm, false));
	NULL_NOCTX(cg_llvm_asm_text(NULL, lm));
	ST_NOCTX(cg_llvm_write_object(NULL, lm, "/tmp/x.o", NULL));
	FAILS_ST(c, cg_llvm_write_object(c, lm, NULL, NULL), "llvm: write_object");
	cg_llvm_free(lm);
	fx_free(&x);
}
END_TEST

/* ---- cuda_driver.h (no device needed: NULL handles are refused first) ------------------------ */

START_TEST(test_cuda_null)
{
	fx x = fx_new();
	ts_ctx *c = x.ctx;
	NULL_NOCTX(ts_cuda_open(NULL));
	ts_cuda_close(NULL);
	ck_assert_ptr_null(ts_cuda_device_name(NULL));
	ck_assert_ptr_null(ts_cuda_arch(NULL));
	int major = 1, minor = 1;
	ts_cuda_compute_capability(NULL, &major, &minor);
	ck_assert_int_eq(major, 0);
	ck_assert_int_eq(minor, 0);
	ts_cuda_compute_capability(NULL, NULL, NULL);
	NULL_NOCTX(ts_cuda_array_new(NULL, NULL, ts_float32, TS_SHAPE(4)));
	FAILS_NULL(c, ts_cuda_array_new(c, NULL, ts_float32, TS_SHAPE(4)), "cuda: array");
	ts_cuda_array_free(NULL);
	ts_array *h = ts_array_new(c, ts_float32, TS_SHAPE(4));
	FAILS_ST(c, ts_cuda_copy_to_device(c, NULL, h), "cuda: copy");
	FAILS_ST(c, ts_cuda_copy_to_device(c, h, NULL), "cuda: copy");
	FAILS_ST(c, ts_cuda_copy_to_host(c, NULL, h), "cuda: copy");
	FAILS_ST(c, ts_cuda_copy_to_host(c, h, NULL), "cuda: copy");
	ST_NOCTX(ts_cuda_copy_to_host(NULL, h, h));
	ts_array nodata = {.dtype = ts_float32, .ndim = 1, .shape = {4}, .device = TS_DEVICE_CUDA};
	FAILS_ST(c, ts_cuda_copy_to_device(c, &nodata, h), "cuda: copy to device: an array has NULL data");
	FAILS_NULL(c, ts_cuda_module_load(c, NULL, "x", 1), "cuda: module load");
	ts_cuda_module_unload(NULL);
	ts_cuda_kernel k;
	FAILS_ST(c, ts_cuda_module_kernel(c, NULL, "f", &k), "cuda: kernel");
	ts_launch l = {{1, 1, 1}, {1, 1, 1}, 0, 0};
	FAILS_ST(c, ts_cuda_launch(c, NULL, &l, 1, &h), "cuda: launch");
	FAILS_ST(c, ts_cuda_synchronize(c, NULL), "cuda: synchronize");
	ts_cuda_time_opts o = {.repeats = 1};
	ts_timing t;
	FAILS_ST(c, ts_cuda_time_kernel(c, NULL, &l, 1, &h, &o, &t), "cuda: launch");
	FAILS_ST(c, ts_cuda_time(c, NULL, NULL, NULL, &o, &t), "cuda: time: no device");
	ts_array_free(h);
	fx_free(&x);
}
END_TEST

/* ---- threadpool.h, timer.h, args.h ------------------------------------------------------------ */

static int ok_fn(void *p)
{
	(void)p;
	return 0;
}

START_TEST(test_runtime_misc)
{
	ts_ctx *c = ts_ctx_new();
	ck_assert_int_ne(ts_parallel_for(10, NULL, NULL), 0);
	ck_assert_int_eq(ts_parallel_for(-5, NULL, NULL), 0);
	int prev = ts_set_num_threads(-3);
	ck_assert_int_ge(ts_num_threads(), 1);
	ts_set_num_threads(1 << 30);
	ck_assert_int_le(ts_num_threads(), 1024);
	ts_set_num_threads(prev);
	ts_timing t;
	ST_NOCTX(ts_time_run(NULL, ok_fn, NULL, 0, 1, 1, &t));
	FAILS_ST(c, ts_time_run(c, NULL, NULL, 0, 1, 1, &t), "time_run");
	FAILS_ST(c, ts_time_run(c, ok_fn, NULL, 0, 1, 1, NULL), "time_run");
	FAILS_ST(c, ts_time_run(c, ok_fn, NULL, -1, 1, 1, &t), "time_run");
	FAILS_ST(c, ts_time_run(c, ok_fn, NULL, 0, 0, 1, &t), "time_run");
	FAILS_ST(c, ts_time_run(c, ok_fn, NULL, 0, 1, -1, &t), "time_run");
	ck_assert(ts_median(NULL, 5) != ts_median(NULL, 5)); /* NaN */
	NULL_NOCTX(ts_phase_times_str(NULL, &(ts_phase_times){0}));
	FAILS_NULL(c, ts_phase_times_str(c, NULL), "phase_times_str");
	ST_NOCTX(ts_check_args(NULL, NULL, 0, NULL, TS_DEVICE_CPU));
	ts_func f = {.name = "noop"};
	FAILS_ST(c, ts_check_args(c, &f, -1, NULL, TS_DEVICE_CPU), "call noop");
	FAILS_ST(c, ts_check_args(c, &f, 0, NULL, (ts_device)9), "call noop: unknown device 9");
	ts_ctx_free(c);
}
END_TEST

/* Calls added with the step printer, lowering warnings, module launches
 * and the shared timing summary take NULL like every other call. */
START_TEST(test_newer_calls)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(ts_lower_warnings(NULL));
	ck_assert_ptr_null(ts_schedule_step_str(NULL));
	ts_ctx_set_print_steps(NULL, 1);
	ck_assert_int_eq(ts_module_launch(NULL, 0, NULL), TS_ERR_INVALID);
	ck_assert_int_ne(ts_cuda_l2_bytes(ctx, NULL, NULL), TS_OK);
	ts_clear_error(ctx);
	ck_assert_int_ne(ts_cuda_time(ctx, NULL, NULL, NULL, NULL, NULL), TS_OK);
	ts_clear_error(ctx);
	ts_timing t;
	double v[2] = {3, 1};
	ts_timing_from_samples(NULL, 2, &t);
	ck_assert_int_eq(t.samples, 0);
	ck_assert(isnan(t.median));
	ts_timing_from_samples(v, -1, &t);
	ck_assert_int_eq(t.samples, 0);
	ts_timing_from_samples(v, 2, NULL);
	ts_timing_from_samples(v, 2, &t);
	ck_assert_int_eq(t.samples, 2);
	ck_assert_double_eq(t.median, 2);
	ts_ctx_free(ctx);
}
END_TEST

/* An error left by an earlier call (a refused build) neither fails a
 * later lowering or build nor stands in for its message; a NULL argument
 * that an earlier failure produced still reports that root cause. */
/* ts_array_fill_random with bounds that hold no value leaves the array as
 * it is (it wrote values outside them, or NaN); huge bounds on an integer
 * array convert without undefined behaviour. */
START_TEST(test_fill_random_bounds)
{
	ts_ctx *c = ts_ctx_new();
	ts_array *f = ts_array_new(c, ts_float32, TS_SHAPE(64));
	ts_array *i = ts_array_new(c, ts_int32, TS_SHAPE(64));
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(i);
	float *fd = f->data;
	double bounds[][2] = {{5, 1}, {NAN, 1}, {0, INFINITY}, {-INFINITY, 0}};
	for (int k = 0; k < 4; k++) {
		for (int e = 0; e < 64; e++)
			fd[e] = 7.0f;
		ts_array_fill_random(f, 3, bounds[k][0], bounds[k][1]);
		for (int e = 0; e < 64; e++)
			ck_assert_float_eq(fd[e], 7.0f);
	}
	ts_array_fill_random(f, 3, 1, 5);
	for (int e = 0; e < 64; e++)
		ck_assert(fd[e] >= 1 && fd[e] < 5);
	ts_array_fill_random(i, 3, -1e30, 1e30); /* clamped, then narrowed */
	ts_array_free(f);
	ts_array_free(i);
	ts_ctx_free(c);
}
END_TEST

/* Helpers the headers declare for the layers' own use are as safe: NULL
 * pointers, a root index out of range, an arena request no block could
 * hold (AddressSanitizer aborted on the malloc), a forged tuning task and a
 * stashed error without its terminating NUL. */
START_TEST(test_helpers_and_internals)
{
	ts_ctx *ctx = ts_ctx_new();
	double lo = 5, top = 7;
	ck_assert(!ir_int_range(ts_int32, NULL, &top) && !ir_int_range(ts_int32, &lo, NULL));
	ck_assert(lo == 5 && top == 7);
	ck_assert(ir_int_range(ts_int8, &lo, &top) && lo == -128 && top == 128);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), TS_READ(ctx, A, i));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ck_assert_ptr_null(sch_fresh_name(NULL, "a", "b"));
	FAILS_NULL(ctx, sch_fresh_name(s, NULL, "b"), "schedule: a fresh name needs a base and a suffix");
	ck_assert_ptr_null(sch_root_size_var(NULL, 0));
	ck_assert_ptr_null(sch_root_size_var(sc, -1));
	ck_assert_ptr_null(sch_root_size_var(sc, 1000000));
	ck_assert(!sch_stage_untouched(NULL) && sch_stage_untouched(sc));
	int n = -1;
	ck_assert_ptr_null(sch_tensors(NULL, &n));
	FAILS_NULL(ctx, sch_tensors(s, NULL), "sch_tensors needs a count to fill");
	ts_tensor **all = sch_tensors(s, &n);
	ck_assert(all && n == 2 && all[0] == A && all[1] == C);
	FAILS_NULL(ctx, ts_alloc(ctx, (size_t)1 << 62), "allocation of 4611686018427387904 bytes is more than the arena gives (2^40)");
	FAILS_NULL(ctx, ts_alloc(ctx, SIZE_MAX), "is more than the arena gives");
	FAILS_NULL(ctx, ts_alloc_array(ctx, (size_t)1 << 31, (size_t)1 << 31), "is more than the arena gives");
	ts_tune_task bad;
	memset(&bad, 0xff, sizeof bad);
	ts_tune_cand cand = {0};
	ts_conv2d_cpu_params p = ts_tune_conv2d_params(&bad, &cand), d = ts_conv2d_cpu_default();
	ck_assert(!memcmp(&p, &d, sizeof p));
	bool packed = true;
	ts_matmul_cpu_params mp = ts_tune_matmul_params(&bad, &cand, &packed), md = ts_matmul_cpu_default();
	ck_assert(tu_same_matmul_params(mp, md) && !packed);
	ts_error_stashed sv;
	memset(&sv, 'A', sizeof sv);
	sv.status = TS_ERR_INVALID;
	ts_error_unstash(ctx, &sv);
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_INVALID);
	ck_assert_int_eq((int)strlen(ts_last_error(ctx)), (int)sizeof sv.msg - 1); /* as much as the slot holds */
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_earlier_error_does_not_leak)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *H = ts_placeholder(ctx, "H", TS_SHAPE(8), ts_float16);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *G = ts_compute(ctx, "G", TS_SHAPE(8), TS_VARS(i), TS_READ(ctx, H, i));
	ts_func *fh = ts_lower(ts_create_schedule(ctx, 1, &G), "half", 2, (ts_tensor *[]){H, G});
	tu_nonnull(ctx, fh);
	ck_assert_ptr_null(ts_build(ctx, fh, "llvm"));
	tu_assert_error(ctx, "parameter H is float16, a dtype the LLVM backend does not support");
	{
		/* an intermediate stage of float32 parameters is named too */
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(8), ts_float32);
		ts_tensor *Hb = ts_compute(ctx, "Half", TS_SHAPE(8), TS_VARS(i),
					   ts_cast(ctx, ts_bfloat16, TS_READ(ctx, X, i)));
		ts_tensor *Y = ts_compute(ctx, "Y", TS_SHAPE(8), TS_VARS(i),
					  ts_cast(ctx, ts_float32, TS_READ(ctx, Hb, i)));
		ts_func *fb = ts_lower(ts_create_schedule(ctx, 1, &Y), "pipe", 2, (ts_tensor *[]){X, Y});
		tu_nonnull(ctx, fb);
		ck_assert_ptr_null(ts_build(ctx, fb, "llvm"));
		tu_assert_error(ctx, "llvm(pipe): buffer Half is bfloat16, a dtype the LLVM backend does not support");
	}
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(8), ts_float32);
	ts_tensor *B = ts_compute(ctx, "B", TS_SHAPE(8), TS_VARS(i), TS_READ(ctx, A, i));
	ts_func *f = ts_lower(ts_create_schedule(ctx, 1, &B), "copy", 2, (ts_tensor *[]){A, B});
	tu_nonnull(ctx, f);
	ts_module *m = ts_build(ctx, f, "llvm");
	tu_nonnull(ctx, m);
	ck_assert_int_eq(ts_last_status(ctx), TS_OK);
	ts_module_free(m);
	/* the root cause of a NULL stays */
	ts_tensor *bad = ts_compute(ctx, "bad", TS_SHAPE(0), TS_VARS(i), TS_READ(ctx, A, i));
	ck_assert_ptr_null(bad);
	char cause[256];
	snprintf(cause, sizeof cause, "%s", ts_last_error(ctx));
	ck_assert_ptr_null(ts_lower(ts_create_schedule(ctx, 1, &bad), "bad", 2, (ts_tensor *[]){A, bad}));
	tu_assert_error(ctx, cause);
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mustfail_api");
	TCase *ir = tcase_create("ir");
	tcase_add_test(ir, test_names_out_of_range);
	tcase_add_test(ir, test_expr_null_ctx);
	tcase_add_test(ir, test_expr_null_operands);
	tcase_add_test(ir, test_expr_bad_calls);
	tcase_add_test(ir, test_iter_and_buffer);
	tcase_add_test(ir, test_stmt_constructors);
	tcase_add_test(ir, test_traversal);
	tcase_add_test(ir, test_printer);
	suite_add_tcase(s, ir);
	TCase *fe = tcase_create("frontend");
	tcase_add_test(fe, test_te);
	tcase_add_test(fe, test_foreign_tensors);
	tcase_add_test(fe, test_eval);
	tcase_add_test(fe, test_ops);
	suite_add_tcase(s, fe);
	TCase *sch = tcase_create("schedule");
	tcase_add_test(sch, test_schedule_null_stage);
	tcase_add_test(sch, test_schedule_bad_args);
	tcase_add_test(sch, test_schedule_foreign);
	tcase_add_test(sch, test_lower);
	tcase_add_test(sch, test_op_schedules);
	suite_add_tcase(s, sch);
	TCase *cg = tcase_create("codegen");
	tcase_set_timeout(cg, 60);
	tcase_add_test(cg, test_build);
	tcase_add_test(cg, test_interp_and_emit);
	tcase_add_test(cg, test_cuda_null);
	tcase_add_test(cg, test_runtime_misc);
	tcase_add_test(cg, test_newer_calls);
	tcase_add_test(cg, test_earlier_error_does_not_leak);
	tcase_add_test(cg, test_helpers_and_internals);
	tcase_add_test(cg, test_fill_random_bounds);
	suite_add_tcase(s, cg);
	return s;
}


int main(void)
{
	return tu_run_suite(suite());
}
