/* test_bound.c - interval analysis: exact intervals of simple expressions,
 * wrapping and saturation at the dtype's edges, and a randomized check that
 * every evaluated value of every subexpression lies inside its interval;
 * then region inference (schedule/bound.h) for tiles at a shape's end. */
#include "testutil.h"

#include <string.h>

#include "ir/arith.h"
#include "schedule/bound.h"

#define I(v) ts_int(ctx, (v))
#define ADD(a, b) ts_add(ctx, (a), (b))
#define SUB(a, b) ts_sub(ctx, (a), (b))
#define MUL(a, b) ts_mul(ctx, (a), (b))

static void check(ts_ctx *ctx, ts_expr *e, int n, const ir_range *r, int64_t lo, int64_t hi,
		  int line)
{
	ck_assert_msg(e != NULL, "line %d: expression not built: %s", line, ts_last_error(ctx));
	ir_interval v = ir_bound_of(e, n, r);
	ck_assert_msg(v.min == lo && v.max == hi, "line %d: %s in [%lld, %lld], want [%lld, %lld]",
		      line, ir_expr_str(ctx, e), (long long)v.min, (long long)v.max, (long long)lo,
		      (long long)hi);
}

#define CHECK(e, lo, hi) check(ctx, (e), 3, r, (lo), (hi), __LINE__)

START_TEST(test_exact)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *u = ts_var(ctx, "u");
	ir_range r[] = {{i, 0, 16}, {j, 0, 4}, {u, -5, 3}};
	CHECK(I(7), 7, 7);
	CHECK(i, 0, 15);
	CHECK(u, -5, -3);
	CHECK(ADD(MUL(i, I(4)), j), 0, 63);
	CHECK(SUB(i, j), -3, 15);
	CHECK(MUL(i, I(-3)), -45, 0);
	CHECK(MUL(i, u), -75, 0);
	CHECK(MUL(u, u), 9, 25);
	CHECK(ts_floordiv(ctx, SUB(i, I(8)), I(3)), -3, 2);
	CHECK(ts_truncdiv(ctx, SUB(i, I(8)), I(3)), -2, 2);
	CHECK(ts_floormod(ctx, SUB(i, I(8)), I(3)), 0, 2);
	CHECK(ts_truncmod(ctx, SUB(i, I(8)), I(3)), -2, 2);
	CHECK(ts_truncmod(ctx, i, I(5)), 0, 4);
	CHECK(ts_truncmod(ctx, u, I(-4)), -3, 0);
	CHECK(ts_floormod(ctx, i, I(-5)), -4, 0);
	CHECK(ts_floordiv(ctx, i, I(-5)), -3, 0);
	CHECK(ts_floordiv(ctx, u, I(2)), -3, -2);
	CHECK(ts_truncdiv(ctx, u, I(2)), -2, -1);
	/* one block of the divisor: exact remainders */
	CHECK(ts_floormod(ctx, ADD(j, I(8)), I(16)), 8, 11);
	CHECK(ts_floormod(ctx, u, I(8)), 3, 5);
	CHECK(ts_truncmod(ctx, u, I(8)), -5, -3);
	/* divisors that are ranges; one containing zero */
	CHECK(ts_floordiv(ctx, i, ADD(j, I(1))), 0, 15);
	CHECK(ts_floordiv(ctx, i, j), -15, 15);
	CHECK(ts_floormod(ctx, i, ADD(j, I(1))), 0, 3);
	CHECK(ts_floormod(ctx, i, u), -4, 0);
	CHECK(ts_min(ctx, i, I(5)), 0, 5);
	CHECK(ts_max(ctx, i, u), 0, 15);
	CHECK(ts_select(ctx, ts_lt(ctx, i, j), i, ADD(j, I(100))), 0, 103);
	CHECK(ts_lt(ctx, i, j), 0, 1);
	CHECK(ts_cast(ctx, ts_int64, i), 0, 15);
	CHECK(ts_cast(ctx, ts_int8, MUL(i, I(20))), -128, 127); /* 300 does not fit */
	CHECK(ts_cast(ctx, ts_int8, MUL(i, I(5))), 0, 75);
	CHECK(ts_ramp(ctx, i, 2, 4), 0, 21);
	CHECK(ts_ramp(ctx, i, -2, 4), -6, 15);
	CHECK(ts_broadcast(ctx, u, 4), -5, -3);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_edges)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i"), *w = ts_var(ctx, "w");
	ts_expr *l = ts_var_typed(ctx, "l", ts_int64), *b = ts_var_typed(ctx, "b", ts_uint8);
	ir_range r[] = {{i, 0, 16}, {l, 0, 16}, {i, 2, 3}};
	/* the innermost (last) range of a variable wins */
	CHECK(i, 2, 4);
	/* unranged: only the dtype bounds the value */
	CHECK(w, IR_NEG_INF, IR_POS_INF);
	CHECK(ts_var_typed(ctx, "v", ts_int64), IR_NEG_INF, IR_POS_INF);
	CHECK(b, 0, 255);
	CHECK(ts_var_typed(ctx, "c", ts_int8), -128, 127);
	CHECK(ts_var_typed(ctx, "q", TS_DTYPE(TS_TYPE_UINT, 64)), 0, IR_POS_INF);
	CHECK(ts_var_typed(ctx, "p", TS_DTYPE(TS_TYPE_UINT, 32)), 0, IR_POS_INF);
	/* a result that might wrap covers the whole dtype */
	CHECK(ts_add(ctx, b, ts_const(ctx, ts_uint8, 200)), 0, 255);
	CHECK(MUL(i, I(1 << 30)), IR_NEG_INF, IR_POS_INF);
	CHECK(ADD(w, I(1)), IR_NEG_INF, IR_POS_INF);
	CHECK(ts_mul(ctx, l, ts_const(ctx, ts_int64, INT64_C(1) << 40)), 0, 15 * (INT64_C(1) << 40));
	CHECK(ts_mul(ctx, l, ts_const(ctx, ts_int64, INT64_C(1) << 60)), IR_NEG_INF, IR_POS_INF);
	CHECK(ts_truncdiv(ctx, w, I(4)), -536870912, 536870911);
	CHECK(ts_floormod(ctx, w, I(10)), 0, 9);
	CHECK(ts_min(ctx, w, I(10)), IR_NEG_INF, 10);
	CHECK(ts_cast(ctx, ts_int64, w), INT32_MIN, INT32_MAX);
	CHECK(ts_const(ctx, ts_uint8, -1), 255, 255); /* the bit pattern C writes */
	CHECK(ts_var_typed(ctx, "x", ts_float32), IR_NEG_INF, IR_POS_INF);
	CHECK(I(-3), -3, -3);
	ir_interval none = ir_bound_of(NULL, 0, NULL);
	ck_assert(none.min == IR_NEG_INF && none.max == IR_POS_INF);
	ts_ctx_free(ctx);
}
END_TEST

/* ---- randomized containment --------------------------------------------------------- */

typedef struct {
	uint64_t s;
} rng;

static uint32_t next(rng *r)
{
	r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(r->s >> 33);
}

static int64_t pick(rng *r, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(next(r) % (uint64_t)(hi - lo + 1));
}

static ts_expr *gen(ts_ctx *ctx, rng *r, int depth, ts_expr **vars)
{
	if (depth == 0 || next(r) % 5 == 0)
		return next(r) % 10 < 7 ? vars[next(r) % 3] : I(pick(r, -12, 12));
	ts_expr *a = gen(ctx, r, depth - 1, vars), *b = gen(ctx, r, depth - 1, vars);
	static const ir_expr_kind kinds[] = {IR_ADD, IR_SUB, IR_MUL, IR_TRUNCDIV, IR_TRUNCMOD,
					     IR_FLOORDIV, IR_FLOORMOD, IR_MIN, IR_MAX};
	ir_expr_kind k = kinds[next(r) % TS_COUNT_OF(kinds)];
	if (k == IR_MUL && next(r) % 6 == 0)
		b = I(1 << 23); /* reach the int32 edges */
	if (next(r) % 8 == 0)
		return ts_select(ctx, ts_lt(ctx, a, b), b, a);
	return ts_binary(ctx, k, a, b);
}

static int64_t w32(int64_t v)
{
	return (int32_t)(uint32_t)(uint64_t)v;
}

typedef struct {
	ts_ctx *ctx;
	ts_expr **vars;
	const int64_t *vals;
	int n;
	const ir_range *r;
	bool err;
	long checked;
} env;

static int64_t eval(const ts_expr *e, env *v);

static int64_t eval_div(ir_expr_kind k, int64_t a, int64_t b)
{
	if (b == 0)
		return 0; /* x / 0 = x % 0 = 0 (ir.h) */
	int64_t q = a / b, m = a % b;
	bool adj = m != 0 && ((m < 0) != (b < 0));
	switch (k) {
	case IR_TRUNCDIV: return w32(q);
	case IR_TRUNCMOD: return m;
	case IR_FLOORDIV: return w32(adj ? q - 1 : q);
	default: return adj ? m + b : m;
	}
}

static int64_t eval_node(const ts_expr *e, env *v)
{
	if (e->kind == IR_INT_IMM)
		return e->u.int_imm;
	if (e->kind == IR_VAR) {
		for (int i = 0; i < 3; i++)
			if (v->vars[i] == e)
				return v->vals[i];
	}
	if (e->kind == IR_SELECT) {
		int64_t c = eval(e->u.select.cond, v);
		int64_t t = eval(e->u.select.t, v), f = eval(e->u.select.f, v);
		return c ? t : f;
	}
	int64_t a = eval(e->u.bin.a, v), b = eval(e->u.bin.b, v);
	switch (e->kind) {
	case IR_ADD: return w32(a + b);
	case IR_SUB: return w32(a - b);
	case IR_MUL: return w32(a * b);
	case IR_MIN: return a < b ? a : b;
	case IR_MAX: return a > b ? a : b;
	case IR_LT: return a < b;
	default: return eval_div(e->kind, a, b);
	}
}

/* Evaluates e and checks the value of every node against its interval. */
static int64_t eval(const ts_expr *e, env *v)
{
	int64_t x = eval_node(e, v);
	if (v->err)
		return 0;
	ir_interval b = ir_bound_of(e, v->n, v->r);
	ck_assert_msg(x >= b.min && x <= b.max, "%s = %lld at (%lld, %lld, %lld), outside [%lld, %lld]",
		      ir_expr_str(v->ctx, e), (long long)x, (long long)v->vals[0],
		      (long long)v->vals[1], (long long)v->vals[2], (long long)b.min, (long long)b.max);
	v->checked++;
	return x;
}

START_TEST(test_random_containment)
{
	rng r = {777};
	long checked = 0;
	for (int iter = 0; iter < 300; iter++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_expr *vars[3] = {ts_var(ctx, "x"), ts_var(ctx, "y"), ts_var(ctx, "z")};
		ir_range rg[3];
		for (int k = 0; k < 3; k++)
			rg[k] = (ir_range){vars[k], pick(&r, -20, 10), pick(&r, 1, 6)};
		ts_expr *e = gen(ctx, &r, 4, vars);
		ck_assert_ptr_nonnull(e);
		int64_t vals[3];
		for (vals[0] = rg[0].min; vals[0] < rg[0].min + rg[0].extent; vals[0]++)
			for (vals[1] = rg[1].min; vals[1] < rg[1].min + rg[1].extent; vals[1]++)
				for (vals[2] = rg[2].min; vals[2] < rg[2].min + rg[2].extent; vals[2]++) {
					env v = {ctx, vars, vals, 3, rg, false, 0};
					eval(e, &v);
					checked += v.checked;
				}
		ts_ctx_free(ctx);
	}
	ck_assert_int_gt(checked, 100000);
}
END_TEST

/* P[i] = A[i] over 1000 elements, read in tiles of 64 at b*64 + t. */
typedef struct tile_case {
	ts_ctx *ctx;
	ts_tensor *A, *P;
	ts_expr *b, *t;
	sch_loop relax, outer;
	ts_expr *pvar;
	int64_t pmin, pext;
} tile_case;

static tile_case tiles(ts_ctx *ctx)
{
	tile_case c = {.ctx = ctx};
	c.A = ts_placeholder(ctx, "A", TS_SHAPE(1000), ts_float32);
	c.P = ts_placeholder(ctx, "P", TS_SHAPE(1000), ts_float32);
	c.b = ts_var(ctx, "b");
	c.t = ts_var(ctx, "t");
	c.pvar = ts_var(ctx, "i");
	c.relax = (sch_loop){c.t, 64, TS_FOR_SERIAL, TS_THREAD_NONE};
	c.outer = (sch_loop){c.b, 16, TS_FOR_THREAD, TS_BLOCK_X};
	c.pmin = 0;
	c.pext = 1000;
	return c;
}

static ts_expr *region_of(tile_case *c, ts_expr *idx, bool gpu, int64_t *ext, bool *edge)
{
	ts_ctx *ctx = c->ctx;
	ts_expr *pbody = TS_READ(ctx, c->A, c->pvar);
	sch_producer p = {c->P, pbody, 1, &c->pvar, &c->pmin, &c->pext, gpu, 0, NULL, false};
	ts_expr *min = NULL;
	ts_status st = sch_infer_region(ctx, &p, TS_READ(ctx, c->P, idx), 1, &c->relax, 1,
					&c->outer, &min, ext, edge);
	ck_assert_msg(st == TS_OK, "%s", ts_last_error(ctx));
	return min;
}

/* A tile clamped inside the tensor (min(b*64 + t, 999)) spans 64 elements,
 * not the whole dimension; on a GPU a tile at the end keeps its start and
 * the producer is told to guard past the shape. */
START_TEST(test_region_tiles)
{
	ts_ctx *ctx = ts_ctx_new();
	tile_case c = tiles(ctx);
	ts_expr *i = ADD(MUL(c.b, I(64)), c.t);
	int64_t ext;
	bool edge;
	region_of(&c, ts_min(ctx, i, I(999)), false, &ext, &edge);
	ck_assert_int_eq(ext, 64);
	ck_assert(!edge);
	ts_expr *min = region_of(&c, i, false, &ext, &edge);
	ck_assert_int_eq(ext, 64);
	ck_assert_ptr_nonnull(strstr(ir_expr_str(ctx, min), "936")); /* moved back inside */
	min = region_of(&c, i, true, &ext, &edge);
	ck_assert_int_eq(ext, 64);
	ck_assert(edge);
	ck_assert_str_eq(ir_expr_str(ctx, min), "b*64");
	ts_ctx_free(ctx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("bound");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_exact);
	tcase_add_test(tc, test_edges);
	tcase_add_test(tc, test_random_containment);
	tcase_add_test(tc, test_region_tiles);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
