/* test_ir.c - IR constructors, their checks, traversal and the printer. */
#include "testutil.h"

#include <math.h>
#include <pthread.h>
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

/* An unbound variable under 600 nested lets was not reported: the
 * verifier's scope had room for 512 and skipped every body below. */
START_TEST(test_verifier_deep_scopes)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t n = 8;
	ts_buffer *buf = ir_buffer_new(ctx, "C", ts_float32, 1, &n, TS_SCOPE_GLOBAL);
	ts_expr *j = ts_var(ctx, "j");
	ts_stmt *body = ir_store(ctx, buf, j, ts_float(ctx, 1));
	for (int k = 0; k < 600; k++)
		body = ir_let(ctx, ts_var(ctx, "v"), ts_int(ctx, k), body);
	tu_nonnull(ctx, body);
	ts_func f = {.name = "f", .nparams = 1, .params = &buf, .body = body};
	ck_assert_int_eq(ir_verify_func(ctx, &f, "test"), TS_ERR_INTERNAL);
	tu_assert_error(ctx, "verify after test: variable used outside its scope: 'j'");
	/* 600 allocations deep, the store to one not in scope is found too */
	ts_clear_error(ctx);
	ts_stmt *inner = ir_store(ctx, buf, ts_int(ctx, 0), ts_float(ctx, 1));
	f.nparams = 0;
	for (int k = 0; k < 600; k++) {
		ts_buffer *local = ir_buffer_new(ctx, "L", ts_float32, 1, &n, TS_SCOPE_LOCAL);
		inner = ir_allocate(ctx, local, inner);
	}
	f.body = inner;
	ck_assert_int_eq(ir_verify_func(ctx, &f, "test"), TS_ERR_INTERNAL);
	tu_assert_error(ctx, "store to a buffer not in scope: 'C'");
	/* and bound properly, the deep function verifies */
	ts_clear_error(ctx);
	f.nparams = 1;
	tu_ok(ctx, ir_verify_func(ctx, &f, "test"));
	ts_ctx_free(ctx);
}
END_TEST

/* ---- statements at TS_MAX_STMT_DEPTH ------------------------------------------- */

/* A function whose body is exactly TS_MAX_STMT_DEPTH deep: from the outside
 * in, a loop of one iteration, a let of I[0] plus that loop's variable, an
 * if on the let (that the simplifier cannot decide), an allocation and a
 * sequence storing to it, in turn; at the bottom B[0] = an expression
 * nearly TS_MAX_EXPR_DEPTH deep, which comes to 2 within 1e-6.  (Loops of
 * an extent known only at run time would have LLVM unswitch their guards
 * through 200 levels for minutes.) */
typedef struct deep_stmt {
	ts_ctx *ctx;
	ts_buffer *I, *B;
	ts_func f;
	long nstmts; /* statements in the body */
	ts_expr *unbound;
} deep_stmt;

static ts_stmt *deep_level(deep_stmt *d, int level, ts_expr **var, ts_buffer **tmp, ts_stmt *in)
{
	ts_ctx *ctx = d->ctx;
	ts_expr *i0 = ts_load(ctx, d->I, ts_int(ctx, 0));
	switch (level % 5) {
	case 0:
		return ir_for(ctx, var[level], ts_int(ctx, 0), ts_int(ctx, 1), TS_FOR_SERIAL,
			      TS_THREAD_NONE, in);
	case 1:
		return ir_let(ctx, var[level], ts_add(ctx, i0, var[level - 1]), in);
	case 2:
		return ir_if(ctx, ts_lt(ctx, var[level - 1], ts_int(ctx, 1000000)), in, NULL);
	case 3:
		return ir_allocate(ctx, tmp[level], in);
	default:
		d->nstmts++;
		return ir_seq2(ctx, ir_store(ctx, tmp[level - 1], ts_int(ctx, 0), ts_float(ctx, 1)),
			       in);
	}
}

static deep_stmt deep_stmt_build(void)
{
	enum { D = TS_MAX_STMT_DEPTH };
	deep_stmt d = {.ctx = ts_ctx_new()};
	ts_ctx *ctx = d.ctx;
	d.I = ir_buffer_new(ctx, "I", ts_int32, 1, (int64_t[]){2}, TS_SCOPE_GLOBAL);
	d.B = ir_buffer_new(ctx, "B", ts_float32, 1, (int64_t[]){2}, TS_SCOPE_GLOBAL);
	d.unbound = ts_var(ctx, "unbound");
	ts_expr *var[D];
	ts_buffer *tmp[D];
	int last_let = 0;
	for (int k = 0; k < D - 1; k++) {
		char name[16];
		snprintf(name, sizeof(name), "%c%d", k % 5 == 0 ? 'i' : 'w', k);
		var[k] = ts_var(ctx, name);
		tmp[k] = ir_buffer_new(ctx, "t", ts_float32, 1, (int64_t[]){1}, TS_SCOPE_LOCAL);
		last_let = k % 5 == 1 ? k : last_let;
	}
	ts_expr *acc = ts_cast(ctx, ts_float32, var[last_let]);
	while (acc && acc->depth + 2 <= TS_MAX_EXPR_DEPTH - 8)
		acc = ts_add(ctx, ts_mul(ctx, acc, ts_float(ctx, 0.5)), ts_float(ctx, 1));
	ts_stmt *s = ir_store(ctx, d.B, ts_int(ctx, 0), acc);
	d.nstmts = D;
	for (int k = D - 2; k >= 0; k--)
		s = deep_level(&d, k, var, tmp, s);
	d.f = (ts_func){.name = "deep", .nparams = 2, .body = s, .ctx = ctx,
			.params = ts_alloc_array(ctx, 2, sizeof(ts_buffer *))};
	if (d.f.params)
		d.f.params[0] = d.I, d.f.params[1] = d.B;
	return d;
}

static bool count_stmt(ts_stmt *s, void *data)
{
	(void)s;
	((long *)data)[0]++;
	return true;
}

static bool count_expr(ts_expr *e, void *data)
{
	(void)e;
	((long *)data)[1]++;
	return true;
}

/* Runs f with I[0] = 0 and checks B[0]; a message on failure. */
static const char *deep_run(deep_stmt *d, ts_module *m)
{
	ts_ctx *ctx = d->ctx;
	ts_array *I = ts_array_new(ctx, ts_int32, 1, (int64_t[]){2});
	ts_array *B = ts_array_new(ctx, ts_float32, 1, (int64_t[]){2});
	const char *failed = !I || !B ? "allocating arrays" : NULL;
	if (!failed) {
		((int32_t *)I->data)[0] = 0, ((int32_t *)I->data)[1] = 1;
		((float *)B->data)[0] = 0;
		ts_status st = m ? ts_module_run(m, 2, (ts_array *[]){I, B})
				 : cg_interp_run(ctx, &d->f, (void *[]){I->data, B->data});
		if (st != TS_OK || fabsf(((float *)B->data)[0] - 2.0f) > 1e-6f)
			failed = m ? "running the module" : "interpreting";
	}
	ts_array_free(I);
	ts_array_free(B);
	return failed;
}

/* Every walk over the loop IR, at the limit.  A message on failure instead
 * of an assertion, so that it can run on a pool worker. */
static const char *deep_stmt_pipeline(deep_stmt *d)
{
	ts_ctx *ctx = d->ctx;
	ts_stmt *body = d->f.body;
	if (!body || !d->f.params || body->depth != TS_MAX_STMT_DEPTH)
		return "building the body";
	const char *text = ir_func_str(ctx, &d->f);
	if (!text || !strstr(text, "B[0] = "))
		return "printing";
	long n[2] = {0, 0};
	ir_stmt_visit(body, count_stmt, count_expr, n);
	if (n[0] != d->nstmts || n[1] < TS_MAX_EXPR_DEPTH)
		return "visiting";
	if (ir_verify_func(ctx, &d->f, "test") != TS_OK)
		return "verifying";
	ts_expr *zero = ts_int(ctx, 0);
	if (ir_stmt_substitute(ctx, body, 1, &d->unbound, &zero) != body)
		return "substituting";
	if (!ir_simplify_stmt(ctx, body, 0, NULL))
		return "simplifying";
	if (deep_run(d, NULL))
		return "interpreting";
	ts_module *m = ts_build(ctx, &d->f, "llvm");
	if (!m)
		return "building";
	const char *c = ts_module_source(m, "c");
	const char *failed = c ? deep_run(d, m) : "emitting C";
	ts_module_free(m);
	return failed;
}

/* 50,000 nested ifs overflowed the stack of the printer (and of every other
 * walk): statements had no depth limit. */
START_TEST(test_stmt_depth_limit)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_stmt *s = ir_evaluate(ctx, ts_int(ctx, 0)), *deepest = NULL;
	ts_expr *c = ts_lt(ctx, ts_var(ctx, "x"), ts_int(ctx, 3));
	int built = 0;
	for (int i = 0; i < 50000 && s; i++, built++) {
		deepest = s;
		s = ir_if(ctx, c, s, NULL);
	}
	ck_assert_ptr_null(s);
	ck_assert_int_eq(built, TS_MAX_STMT_DEPTH);
	tu_assert_error(ctx, "if: statement nesting deeper than 1000 (TS_MAX_STMT_DEPTH");
	ck_assert_int_eq(deepest->depth, TS_MAX_STMT_DEPTH);
	ts_clear_error(ctx);
	const char *text = ir_stmt_str(ctx, deepest);
	tu_nonnull(ctx, text);
	ck_assert_ptr_nonnull(strstr(text, "if (x < 3) {"));
	/* every constructor with a body refuses one level more */
	ts_expr *v = ts_var(ctx, "v");
	int64_t one = 1;
	ts_buffer *b = ir_buffer_new(ctx, "L", ts_float32, 1, &one, TS_SCOPE_LOCAL);
	ts_tensor *T = ts_placeholder(ctx, "T", TS_SHAPE(1), ts_float32);
	ts_stmt *ev = ir_evaluate(ctx, ts_int(ctx, 1));
	FAILS_NULL(ctx, ir_for(ctx, v, ts_int(ctx, 0), ts_int(ctx, 4), TS_FOR_SERIAL, TS_THREAD_NONE,
			       deepest), "for: statement nesting deeper than 1000");
	FAILS_NULL(ctx, ir_let(ctx, v, ts_int(ctx, 1), deepest), "let: statement nesting deeper");
	FAILS_NULL(ctx, ir_if(ctx, c, ev, deepest), "if: statement nesting deeper");
	FAILS_NULL(ctx, ir_allocate(ctx, b, deepest), "allocate: statement nesting deeper");
	FAILS_NULL(ctx, ir_realize(ctx, T, 1, (ts_expr *[]){ts_int(ctx, 0)}, &one, TS_SCOPE_GLOBAL,
				   deepest), "realize: statement nesting deeper");
	FAILS_NULL(ctx, ir_seq2(ctx, ev, deepest), "seq: statement nesting deeper");
	ts_ctx_free(ctx);
}
END_TEST

/* A sequence is one level whatever its length: a flat list of 100,000
 * statements is 2 deep, while appending one at a time nests. */
START_TEST(test_stmt_depth_of_sequences)
{
	enum { N = 100000 };
	ts_ctx *ctx = ts_ctx_new();
	ts_stmt **list = ts_alloc_array(ctx, N, sizeof(*list));
	ts_stmt *leaf = ir_evaluate(ctx, ts_int(ctx, 0));
	ck_assert_int_eq(leaf->depth, 1);
	for (int i = 0; i < N; i++)
		list[i] = leaf;
	ts_stmt *flat = ir_seq(ctx, N, list);
	tu_nonnull(ctx, flat);
	ck_assert_int_eq(flat->depth, 2);
	ts_stmt *loop = ir_for(ctx, ts_var(ctx, "i"), ts_int(ctx, 0), ts_int(ctx, 4), TS_FOR_SERIAL,
			       TS_THREAD_NONE, flat);
	ck_assert_int_eq(loop->depth, 3);
	ck_assert_int_eq(ir_seq2(ctx, leaf, loop)->depth, 4);
	ts_stmt *chain = leaf;
	int k = 0;
	while (chain && k < N)
		chain = ir_seq2(ctx, chain, leaf), k++;
	ck_assert_ptr_null(chain);
	ck_assert_int_eq(k, TS_MAX_STMT_DEPTH);
	tu_assert_error(ctx, "seq: statement nesting deeper than 1000");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_stmt_depth_at_limit)
{
	deep_stmt d = deep_stmt_build();
	const char *failed = deep_stmt_pipeline(&d);
	ck_assert_msg(failed == NULL, "%s: %s", failed, ts_last_error(d.ctx));
	/* one level more is refused */
	ck_assert_ptr_null(ir_let(d.ctx, ts_var(d.ctx, "x"), ts_int(d.ctx, 0), d.f.body));
	tu_assert_error(d.ctx, "let: statement nesting deeper than 1000");
	ts_ctx_free(d.ctx);
}
END_TEST

typedef struct deep_stmt_run {
	const char *failed[2];
	char error[2][256];
} deep_stmt_run;

static void deep_stmt_chunk(int64_t begin, int64_t end, void *closure)
{
	deep_stmt_run *w = closure;
	for (int64_t c = begin; c < end; c++) {
		deep_stmt d = deep_stmt_build();
		w->failed[c] = deep_stmt_pipeline(&d);
		snprintf(w->error[c], sizeof(w->error[c]), "%s", ts_last_error(d.ctx));
		ts_ctx_free(d.ctx);
	}
}

/* Chunk 1 runs on a pool worker, with the stack a user's parallel
 * compilation gets. */
START_TEST(test_stmt_depth_at_limit_on_worker)
{
	int old = ts_set_num_threads(2);
	deep_stmt_run w = {{"not run", "not run"}, {"", ""}};
	ts_parallel_for(2, deep_stmt_chunk, &w);
	ts_set_num_threads(old);
	for (int c = 0; c < 2; c++)
		ck_assert_msg(w.failed[c] == NULL, "chunk %d: %s: %s", c, w.failed[c], w.error[c]);
}
END_TEST

static void *deep_stmt_thread(void *closure)
{
	deep_stmt_chunk(0, 1, closure);
	return NULL;
}

/* ir.h promises that the limit fits in half of an 8 MB stack. */
START_TEST(test_stmt_depth_at_limit_in_4mb)
{
	pthread_attr_t attr;
	pthread_t t;
	deep_stmt_run w = {{"not run", "not run"}, {"", ""}};
	ck_assert_int_eq(pthread_attr_init(&attr), 0);
	ck_assert_int_eq(pthread_attr_setstacksize(&attr, 4 << 20), 0);
	ck_assert_int_eq(pthread_create(&t, &attr, deep_stmt_thread, &w), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	pthread_attr_destroy(&attr);
	ck_assert_msg(w.failed[0] == NULL, "%s: %s", w.failed[0], w.error[0]);
}
END_TEST

/* ---- ts_graph_topo ------------------------------------------------------------- */

/* n diamonds in a chain: T = U + V, both reading the T below, from A. */
static ts_tensor *diamond_chain(ts_ctx *ctx, int n)
{
	ts_tensor *t = ts_placeholder(ctx, "A", TS_SHAPE(1), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	for (int k = 0; k < n && t; k++) {
		ts_tensor *u = ts_compute(ctx, "U", TS_SHAPE(1), TS_VARS(i),
					  ts_mul(ctx, TS_READ(ctx, t, i), ts_float(ctx, 2)));
		ts_tensor *v = ts_compute(ctx, "V", TS_SHAPE(1), TS_VARS(i),
					  ts_mul(ctx, TS_READ(ctx, t, i), ts_float(ctx, 3)));
		t = ts_compute(ctx, "T", TS_SHAPE(1), TS_VARS(i),
			       ts_add(ctx, TS_READ(ctx, u, i), TS_READ(ctx, v, i)));
	}
	return t;
}

/* Whether each tensor comes once, and after every tensor it reads (plain
 * checks: a Check assertion costs a write to its pipe). */
static bool topo_order_ok(ts_tensor *const *order, int n)
{
	for (int k = 0; k < n; k++) {
		for (int j = 0; j < k; j++)
			if (order[j] == order[k])
				return false;
		for (int in = 0; order[k]->op == TS_OP_COMPUTE && in < order[k]->ninputs; in++) {
			int j = 0;
			while (j < k && order[j] != order[k]->inputs[in])
				j++;
			if (j == k)
				return false;
		}
	}
	return true;
}

/* The walk kept 256 tensors as seen and walked a subgraph shared by two
 * paths once per path beyond them: a chain of 150 diamonds took 7.5 s and
 * counted 33,554,810 tensors for 451. */
START_TEST(test_graph_topo_shared_subgraphs)
{
	ts_ctx *ctx = ts_ctx_new();
	/* the order of a small graph: producers first, depth first, inputs
	 * in order */
	ts_tensor *small = diamond_chain(ctx, 1);
	ts_tensor *order[8];
	ck_assert_int_eq(ts_graph_topo(1, &small, order, 8), 4);
	ck_assert_str_eq(order[0]->name, "A");
	ck_assert_str_eq(order[1]->name, "U");
	ck_assert_str_eq(order[2]->name, "V");
	ck_assert_ptr_eq(order[3], small);
	/* 300 tensors first, then 10 diamonds: all of them past the old set */
	ts_tensor *outs[301];
	for (int k = 0; k < 300; k++)
		outs[k] = ts_placeholder(ctx, "P", TS_SHAPE(1), ts_float32);
	outs[300] = diamond_chain(ctx, 10);
	tu_nonnull(ctx, outs[300]);
	ck_assert_int_eq(ts_graph_topo(301, outs, NULL, 0), 300 + 3 * 10 + 1);
	/* 1,000 diamonds, in full and cut at 256 entries */
	ts_tensor *t = diamond_chain(ctx, 1000);
	tu_nonnull(ctx, t);
	ts_tensor **all = ts_alloc_array(ctx, 3001, sizeof(*all));
	ck_assert_int_eq(ts_graph_topo(1, &t, all, 3001), 3001);
	ck_assert(topo_order_ok(all, 3001));
	ck_assert_ptr_eq(all[3000], t);
	ts_tensor *first[256];
	ck_assert_int_eq(ts_graph_topo(1, &t, first, 256), 3001);
	ck_assert(memcmp(first, all, sizeof(first)) == 0);
	/* a second output inside the graph adds nothing */
	ts_tensor *two[2] = {t, all[1500]};
	ck_assert_int_eq(ts_graph_topo(2, two, NULL, 0), 3001);
	ts_ctx_free(ctx);
}
END_TEST

/* The walk recursed once per stage: a chain of 100,000 overflowed the
 * stack. */
START_TEST(test_graph_topo_long_chain)
{
	enum { N = 100000 };
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *t = ts_placeholder(ctx, "A", TS_SHAPE(1), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	for (int k = 0; k < N && t; k++)
		t = ts_compute(ctx, "T", TS_SHAPE(1), TS_VARS(i),
			       ts_add(ctx, TS_READ(ctx, t, i), ts_float(ctx, 1)));
	tu_nonnull(ctx, t);
	ts_tensor **order = ts_alloc_array(ctx, N + 1, sizeof(*order));
	ck_assert_int_eq(ts_graph_topo(1, &t, order, N + 1), N + 1);
	ck_assert_str_eq(order[0]->name, "A");
	int k = 1;
	while (k <= N && order[k]->inputs[0] == order[k - 1])
		k++;
	ck_assert_int_eq(k, N + 1);
	/* the printer shows the first 256 */
	const char *text = ts_graph_str(ctx, 1, &t);
	tu_nonnull(ctx, text);
	ck_assert_ptr_nonnull(strstr(text, "A = placeholder(float32, [1])"));
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
	tcase_add_test(tc, test_verifier_deep_scopes);
	tcase_add_test(tc, test_stmt_depth_limit);
	tcase_add_test(tc, test_stmt_depth_of_sequences);
	tcase_add_test(tc, test_stmt_depth_at_limit);
	tcase_add_test(tc, test_stmt_depth_at_limit_on_worker);
	tcase_add_test(tc, test_stmt_depth_at_limit_in_4mb);
	tcase_add_test(tc, test_graph_topo_shared_subgraphs);
	tcase_add_test(tc, test_graph_topo_long_chain);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
