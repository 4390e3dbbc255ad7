/*
 * simplify.c - the expression simplifier (ir_simplify, ir_can_prove).
 *
 * Children are simplified first; then one node-level rewrite runs on the
 * rebuilt node.  A rule that builds new nodes passes them through the same
 * rewrite (mk), and every rule strictly shrinks the expression or produces
 * a form no rule rewrites again, so the process ends.
 *
 * Integer + - * are put in the canonical linear form (linear.c).  Rules
 * that reason about true integer values - division and modulo by
 * constants, min/max, comparisons - first check with interval analysis
 * (bound.c) that no value involved can wrap; otherwise the node stays as it
 * is.  This makes `floordiv(x*8 + y, 8)` simplify only when x is ranged,
 * which is the price of soundness at the dtype's edges.
 */
#include "arith_impl.h"

#include <math.h>

typedef struct simp {
	ts_ctx *ctx;
	int n;
	const ir_range *r;
} simp;

static ts_expr *rewrite(simp *s, ts_expr *e);

/* ---- helpers ------------------------------------------------------------------ */

static ts_expr *mk(simp *s, ir_expr_kind k, ts_expr *a, ts_expr *b)
{
	ts_expr *e = ts_binary(s->ctx, k, a, b);
	return e ? rewrite(s, e) : NULL;
}

static ts_expr *cst(simp *s, ts_dtype t, ir_i128 v)
{
	return ts_const(s->ctx, t, ir_wrap_int(t, (int64_t)(uint64_t)v));
}

static bool int_scalar(const ts_expr *e)
{
	return ts_dtype_is_int(e->dtype) && e->dtype.lanes == 1;
}

static ir_ival bnd(const simp *s, const ts_expr *e)
{
	return ir_bound_ival(e, s->n, s->r);
}

static bool lin_of(simp *s, ts_expr *e, ir_lin *l)
{
	ir_lin_init(l, e->dtype);
	return ir_lin_add_expr(s->ctx, l, e, 1);
}

/* The sum's value as an integer equals the IR value (nothing wraps). */
static bool lin_exact(const simp *s, const ir_lin *l, ir_ival *iv)
{
	return ir_lin_bound(l, s->n, s->r, iv) && ir_ival_fits(*iv, l->dtype);
}

/* Rebuilds l; returns orig when the result is structurally the same. */
static ts_expr *from_lin(simp *s, const ir_lin *l, ts_expr *orig)
{
	ts_expr *r = ir_lin_expr(s->ctx, l);
	return r && orig && ir_expr_equal(r, orig) ? orig : r;
}

/* Interval of the integer a - b (int scalars): from their bounds, narrowed by
 * their canonical difference when both are exact.  *fail: out of memory. */
static ir_ival diff(simp *s, ts_expr *a, ts_expr *b, bool *fail)
{
	ir_ival A = bnd(s, a), B = bnd(s, b);
	ir_ival d = {A.lo - B.hi, A.hi - B.lo}, la_iv, lb_iv, ld;
	ir_lin la, lb;
	if (!lin_of(s, a, &la) || !lin_of(s, b, &lb)) {
		*fail = true;
		return d;
	}
	if (lin_exact(s, &la, &la_iv) && lin_exact(s, &lb, &lb_iv) &&
	    ir_lin_diff_bound(&la, &lb, s->n, s->r, &ld)) {
		d.lo = d.lo > ld.lo ? d.lo : ld.lo;
		d.hi = d.hi < ld.hi ? d.hi : ld.hi;
	}
	return d;
}

/* ---- + - * ------------------------------------------------------------------- */

/* Not rebuilt where a constant of the form wrapped: (x - 715827882) * 9,
 * x at most 715827883, would become x*9 - 6442450938 wrapped to int32,
 * equal modulo 2^32 but overflowing where the source did not (the LLVM
 * backend computes int32 indices in 64 bits: a read 6e9 elements off). */
static ts_expr *int_arith(simp *s, ts_expr *e)
{
	ir_lin l;
	if (!lin_of(s, e, &l))
		return NULL;
	return l.wrapped ? e : from_lin(s, &l, e);
}

static bool is_fconst(const ts_expr *e, double v)
{
	return e->kind == IR_FLOAT_IMM && e->u.float_imm == v;
}

/* select(c, t, -0.0), the form a sum's term takes where a test leaves it
 * out (fe_skip_padding) */
static bool is_dropped_term(const ts_expr *e)
{
	return e->kind == IR_SELECT && ir_is_neg_zero(e->u.select.f);
}

/* One value, no arithmetic: a variable, a constant, an element of memory. */
static bool is_value(const ts_expr *e)
{
	return e->kind == IR_VAR || e->kind == IR_FLOAT_IMM || e->kind == IR_LOAD || e->kind == IR_READ;
}

/* acc + sel, sel = select(c, t, -0.0): select(c, acc + t, acc). */
static ts_expr *skipped_sum(simp *s, ts_expr *acc, ts_expr *sel)
{
	ts_expr *sum = mk(s, IR_ADD, acc, sel->u.select.t);
	ts_expr *r = sum ? ts_select(s->ctx, sel->u.select.cond, sum, acc) : NULL;
	return r ? rewrite(s, r) : NULL;
}

/* Float (and vector) arithmetic: only identities that are exact in IEEE. */
static ts_expr *other_arith(simp *s, ts_expr *e)
{
	ts_expr *a = e->u.bin.a, *b = e->u.bin.b;
	if ((e->kind == IR_MUL || e->kind == IR_DIV) && is_fconst(b, 1.0))
		return a;
	if (e->kind == IR_MUL && is_fconst(a, 1.0))
		return b;
	if (e->kind == IR_ADD && ir_is_neg_zero(b))
		return a;
	if (e->kind == IR_ADD && ir_is_neg_zero(a))
		return b;
	/* a + select(c, t, -0.0) is select(c, a + t, a): an accumulation the
	 * test skips, which loop_partition's parts resolve to the update or
	 * to nothing, and elsewhere one blend after a fused multiply-add.
	 * Only for an accumulator a that is one value (a load, a variable):
	 * a is written twice, and a sum of such terms, each a select of
	 * the last, would double at every term */
	if (e->kind == IR_ADD && is_value(a) && is_dropped_term(b))
		return skipped_sum(s, a, b);
	if (e->kind == IR_ADD && is_value(b) && is_dropped_term(a))
		return skipped_sum(s, b, a);
	return e;
}

/* ---- division and modulo --------------------------------------------------------- */

static bool is_div(ir_expr_kind k)
{
	return k == IR_TRUNCDIV || k == IR_FLOORDIV;
}

static bool is_trunc(ir_expr_kind k)
{
	return k == IR_TRUNCDIV || k == IR_TRUNCMOD;
}

/* floordiv(floordiv(x, c), d) = floordiv(x, c*d); floormod(floormod(x, c), d)
 * = floormod(x, d) when d divides c; the same for trunc. */
static ts_expr *nested(simp *s, ts_expr *e, ir_i128 d)
{
	ts_expr *a = e->u.bin.a;
	if (a->kind != e->kind || a->u.bin.b->kind != IR_INT_IMM)
		return e;
	ir_i128 c = ir_imm_value(a->u.bin.b);
	if (c <= 0)
		return e;
	if (!is_div(e->kind))
		return c % d == 0 ? mk(s, e->kind, a->u.bin.a, e->u.bin.b) : e;
	if (c > IR_IVAL_BIG / d)
		return e;
	ir_ival prod = {c * d, c * d};
	if (!ir_ival_fits(prod, e->dtype))
		return e;
	return mk(s, e->kind, a->u.bin.a, cst(s, e->dtype, c * d));
}

static ir_i128 gcd(ir_i128 a, ir_i128 b)
{
	a = a < 0 ? -a : a;
	b = b < 0 ? -b : b;
	while (b) {
		ir_i128 t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* floordiv(g*x, g*d) = floordiv(x, d), floormod(g*x, g*d) = g*floormod(x, d);
 * la is exact and, for trunc kinds, non-negative. */
static ts_expr *common_factor(simp *s, ts_expr *e, const ir_lin *la, ir_i128 d)
{
	ir_i128 g = gcd(d, la->k);
	for (int i = 0; i < la->n && g > 1; i++)
		g = gcd(g, la->t[i].coef);
	if (g <= 1)
		return e;
	ir_lin q;
	ir_lin_init(&q, la->dtype);
	for (int i = 0; i < la->n; i++)
		if (la->t[i].coef && !ir_lin_add_term(s->ctx, &q, la->t[i].atom, (int64_t)(la->t[i].coef / g)))
			return NULL;
	q.k = (int64_t)(la->k / g);
	ts_expr *x = from_lin(s, &q, NULL);
	ts_expr *r = x ? mk(s, e->kind, x, cst(s, e->dtype, d / g)) : NULL;
	if (!r || is_div(e->kind))
		return r;
	return mk(s, IR_MUL, r, cst(s, e->dtype, g));
}

/* Writes a = d*Q + R with Q the terms whose coefficients d divides. */
static bool split(simp *s, const ir_lin *la, ir_i128 d, ir_lin *q, ir_lin *r)
{
	ir_lin_init(q, la->dtype);
	ir_lin_init(r, la->dtype);
	r->k = la->k;
	for (int i = 0; i < la->n; i++) {
		ir_i128 c = la->t[i].coef;
		bool ok = c % d == 0 ? ir_lin_add_term(s->ctx, q, la->t[i].atom, (int64_t)(c / d))
				     : ir_lin_add_term(s->ctx, r, la->t[i].atom, (int64_t)c);
		if (!ok)
			return false;
	}
	return true;
}

/* a = c*P + R with c a divisor of d and 0 <= R < c (the index of a split
 * or vectorized axis inside a coarser one): floordiv(a, d) is
 * floordiv(P, d/c) and floormod(a, d) is floormod(P, d/c)*c + R, because R
 * never carries into a multiple of c. */
static ts_expr *by_coarse_split(simp *s, ts_expr *e, const ir_lin *la, ir_i128 d)
{
	for (int i = 0; i < la->n; i++) {
		/* candidates: the common factors of d and some coefficient */
		ir_i128 c = gcd(d, la->t[i].coef);
		if (c <= 1 || c == d)
			continue;
		ir_lin p, r;
		ir_ival rv;
		if (!split(s, la, c, &p, &r))
			return NULL;
		ir_i128 kq = ir_floordiv128(la->k, c);
		p.k = (int64_t)kq;
		r.k = (int64_t)(la->k - kq * c);
		if (!ir_lin_has_terms(&p) || !lin_exact(s, &r, &rv) || rv.lo < 0 || rv.hi >= c)
			continue;
		ts_expr *px = from_lin(s, &p, NULL);
		ts_expr *q = px ? mk(s, e->kind, px, cst(s, e->dtype, d / c)) : NULL;
		if (!q || is_div(e->kind))
			return q;
		ts_expr *rx = from_lin(s, &r, NULL);
		return rx ? mk(s, IR_ADD, mk(s, IR_MUL, q, cst(s, e->dtype, c)), rx) : NULL;
	}
	return e;
}

/* a = d*Q + R with R in one block [m*d, m*d + d): the quotient is Q + m and
 * the remainder R - m*d.  Otherwise Q's terms move out of the division. */
static ts_expr *by_split(simp *s, ts_expr *e, const ir_lin *la, ir_i128 d)
{
	ir_lin q, r;
	ir_ival rv;
	if (!split(s, la, d, &q, &r))
		return NULL;
	if (!lin_exact(s, &r, &rv))
		return e;
	ir_i128 m = ir_floordiv128(rv.lo, d);
	ts_expr *a = e->u.bin.a;
	if (m == ir_floordiv128(rv.hi, d)) {
		ir_lin *res = is_div(e->kind) ? &q : &r;
		ir_i128 k = is_div(e->kind) ? (ir_i128)q.k + m : (ir_i128)r.k - m * d;
		res->k = ir_lin_wrap(la->dtype, (int64_t)(uint64_t)k);
		return from_lin(s, res, is_div(e->kind) ? NULL : a);
	}
	if (!ir_lin_has_terms(&q) || (is_trunc(e->kind) && rv.lo < 0)) {
		ts_expr *c = rv.lo >= 0 ? by_coarse_split(s, e, la, d) : e;
		return c != e ? c : common_factor(s, e, la, d);
	}
	ts_expr *rx = from_lin(s, &r, NULL);
	ts_expr *inner = rx ? mk(s, e->kind, rx, e->u.bin.b) : NULL;
	if (!inner || !is_div(e->kind))
		return inner;
	ts_expr *qx = from_lin(s, &q, NULL);
	return qx ? mk(s, IR_ADD, qx, inner) : NULL;
}

/* x / y with a non-constant y: 0 when 0 <= x < y. */
static ts_expr *by_bound(simp *s, ts_expr *e)
{
	ir_ival a = bnd(s, e->u.bin.a), b = bnd(s, e->u.bin.b);
	if (a.lo >= 0 && b.lo > a.hi)
		return is_div(e->kind) ? cst(s, e->dtype, 0) : e->u.bin.a;
	return e;
}

static ts_expr *divmod(simp *s, ts_expr *e)
{
	ts_expr *a = e->u.bin.a, *b = e->u.bin.b;
	if (b->kind != IR_INT_IMM)
		return by_bound(s, e);
	ir_i128 d = ir_imm_value(b);
	if (d == 0 || (d == -1 && !is_div(e->kind)))
		return cst(s, e->dtype, 0); /* x / 0 = x % 0 = x % -1 = 0 (ir.h) */
	if (d < 0)
		return e;
	if (d == 1)
		return is_div(e->kind) ? a : cst(s, e->dtype, 0);
	ts_expr *r = nested(s, e, d);
	if (r != e)
		return r;
	/* trunc and floor agree on a >= 0, so trunc kinds use the floor rules */
	if (is_trunc(e->kind) && bnd(s, a).lo < 0)
		return e;
	ir_lin la;
	ir_ival av;
	if (!lin_of(s, a, &la))
		return NULL;
	if (!lin_exact(s, &la, &av))
		return e;
	return by_split(s, e, &la, d);
}

/* ---- min, max, comparisons ---------------------------------------------------------- */

static ts_expr *minmax(simp *s, ts_expr *e)
{
	ts_expr *a = e->u.bin.a, *b = e->u.bin.b;
	if (ir_expr_equal(a, b))
		return a;
	if (!int_scalar(e))
		return e;
	bool fail = false, is_min = e->kind == IR_MIN;
	ir_ival d = diff(s, a, b, &fail);
	if (fail)
		return NULL;
	if (d.hi <= 0)
		return is_min ? a : b;
	if (d.lo >= 0)
		return is_min ? b : a;
	/* min(min(x, c1), c2) = min(x, min(c1, c2)) */
	if (a->kind == e->kind && a->u.bin.b->kind == IR_INT_IMM && b->kind == IR_INT_IMM) {
		ts_expr *c = ir_fold_const(s->ctx, ts_binary(s->ctx, e->kind, a->u.bin.b, b));
		return c ? mk(s, e->kind, a->u.bin.a, c) : NULL;
	}
	return e;
}

/* 1: true, 0: false, -1: unknown, for `a k b` with a - b in d. */
static int decide(ir_expr_kind k, ir_ival d)
{
	switch (k) {
	case IR_LT: return d.hi < 0 ? 1 : d.lo >= 0 ? 0 : -1;
	case IR_LE: return d.hi <= 0 ? 1 : d.lo > 0 ? 0 : -1;
	case IR_GT: return d.lo > 0 ? 1 : d.hi <= 0 ? 0 : -1;
	case IR_GE: return d.lo >= 0 ? 1 : d.hi < 0 ? 0 : -1;
	case IR_EQ: return d.lo == 0 && d.hi == 0 ? 1 : d.lo > 0 || d.hi < 0 ? 0 : -1;
	case IR_NE: return d.lo == 0 && d.hi == 0 ? 0 : d.lo > 0 || d.hi < 0 ? 1 : -1;
	case IR_INT_IMM: case IR_FLOAT_IMM: case IR_VAR: case IR_ADD: case IR_SUB:
	case IR_MUL: case IR_DIV: case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV:
	case IR_FLOORMOD: case IR_MIN: case IR_MAX: case IR_AND: case IR_OR: case IR_NOT:
	case IR_CAST: case IR_SELECT: case IR_CALL: case IR_READ: case IR_LOAD:
	case IR_RAMP: case IR_BROADCAST: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	return -1;
}

static ts_expr *compare(simp *s, ts_expr *e)
{
	ts_expr *a = e->u.bin.a, *b = e->u.bin.b;
	bool fail = false;
	ir_ival d = {0, 0};
	if (!ir_expr_equal(a, b))
		d = diff(s, a, b, &fail);
	if (fail)
		return NULL;
	int v = decide(e->kind, d);
	if (v >= 0)
		return cst(s, e->dtype, v);
	/* constants go to the right: `4 <= j` is `j >= 4` */
	static const ir_expr_kind swapped[] = {IR_EQ, IR_NE, IR_GT, IR_GE, IR_LT, IR_LE};
	if (a->kind == IR_INT_IMM && b->kind != IR_INT_IMM)
		return mk(s, swapped[e->kind - IR_EQ], b, a);
	return e;
}

/* ---- logic, select, cast ---------------------------------------------------------------- */

static ts_expr *logic(simp *s, ts_expr *e)
{
	ts_expr *a = e->u.bin.a, *b = e->u.bin.b;
	bool is_and = e->kind == IR_AND;
	if (ir_expr_equal(a, b))
		return a;
	if (a->kind == IR_INT_IMM)
		return (a->u.int_imm != 0) == is_and ? b : cst(s, e->dtype, !is_and);
	if (b->kind == IR_INT_IMM)
		return (b->u.int_imm != 0) == is_and ? a : cst(s, e->dtype, !is_and);
	return e;
}

static ir_expr_kind inverse_cmp(ir_expr_kind k)
{
	switch (k) {
	case IR_EQ: return IR_NE;
	case IR_NE: return IR_EQ;
	case IR_LT: return IR_GE;
	case IR_GE: return IR_LT;
	case IR_LE: return IR_GT;
	case IR_GT: return IR_LE;
	case IR_INT_IMM: case IR_FLOAT_IMM: case IR_VAR: case IR_ADD: case IR_SUB:
	case IR_MUL: case IR_DIV: case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV:
	case IR_FLOORMOD: case IR_MIN: case IR_MAX: case IR_AND: case IR_OR: case IR_NOT:
	case IR_CAST: case IR_SELECT: case IR_CALL: case IR_READ: case IR_LOAD:
	case IR_RAMP: case IR_BROADCAST: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	return IR_EXPR_KIND_COUNT;
}

static ts_expr *not_rule(simp *s, ts_expr *e)
{
	ts_expr *a = e->u.un.a;
	if (a->kind == IR_NOT)
		return a->u.un.a;
	/* !(a < b) is a >= b only without NaN, so only for integers */
	if (ir_is_compare(a->kind) && ts_dtype_is_int(a->u.bin.a->dtype))
		return mk(s, inverse_cmp(a->kind), a->u.bin.a, a->u.bin.b);
	return e;
}

/* The conjuncts of a condition, as select_rule assumes them. */
typedef struct known {
	ts_expr *c[8];
	int n;
} known;

static void conjuncts(known *k, ts_expr *c)
{
	if (c->kind == IR_AND) {
		conjuncts(k, c->u.bin.a);
		conjuncts(k, c->u.bin.b);
	} else if (k->n < 8 && c->dtype.lanes == 1) {
		k->c[k->n++] = c;
	}
}

/* e with every conjunct of k replaced by true. */
static ts_expr *assume(ts_ctx *ctx, ts_expr *e, void *data)
{
	const known *k = data;
	for (int i = 0; i < k->n; i++)
		if (ir_expr_equal(e, k->c[i]))
			return ts_const(ctx, ts_bool, 1);
	return ir_expr_map_children(ctx, e, assume, data);
}

static ts_expr *simp_expr(ts_ctx *ctx, ts_expr *e, void *data);

/* In select(c, t, f), t is taken only where c holds: c's conjuncts are
 * true in it.  A padding's select inlined into a sum's term that skips
 * the padding (select(c, select(c, x, 0) * w, -0.0)) keeps one test. */
static ts_expr *select_rule(simp *s, ts_expr *e)
{
	ts_expr *t = e->u.select.t;
	if (ir_expr_equal(t, e->u.select.f))
		return t;
	known k = {.n = 0};
	conjuncts(&k, e->u.select.cond);
	if (k.n == 0) /* a vector condition */
		return e;
	ts_expr *u = assume(s->ctx, t, &k);
	if (!u || u == t)
		return u ? e : NULL;
	u = simp_expr(s->ctx, u, s);
	return u ? ts_select(s->ctx, e->u.select.cond, u, e->u.select.f) : NULL;
}

/* Every value of integer dtype `from` is a value of `to`. */
static bool int_widens(ts_dtype from, ts_dtype to)
{
	ir_ival f = ir_dtype_ival(from), t = ir_dtype_ival(to);
	return ts_dtype_is_int(from) && ts_dtype_is_int(to) && f.lo >= t.lo && f.hi <= t.hi;
}

/* int32(int64(x)) = x for an int32 x: the inner cast loses nothing. */
static ts_expr *cast_rule(ts_expr *e)
{
	ts_expr *a = e->u.un.a;
	if (a->kind == IR_CAST && ts_dtype_eq(a->u.un.a->dtype, e->dtype) &&
	    int_widens(ts_dtype_element(e->dtype), ts_dtype_element(a->dtype)))
		return a->u.un.a;
	return e;
}

/* ---- the rewrite ------------------------------------------------------------------------ */

static ts_expr *var_rule(simp *s, ts_expr *e)
{
	ir_ival v = bnd(s, e);
	return v.lo == v.hi && int_scalar(e) ? cst(s, e->dtype, v.lo) : e;
}

static ts_expr *imm_rule(simp *s, ts_expr *e)
{
	int64_t w = ir_wrap_int(e->dtype, e->u.int_imm);
	return w == e->u.int_imm ? e : ts_const(s->ctx, e->dtype, w);
}

static ts_expr *rewrite(simp *s, ts_expr *e)
{
	ts_expr *f = ir_fold_const(s->ctx, e);
	if (f != e)
		return f;
	switch (e->kind) {
	case IR_INT_IMM:
		return imm_rule(s, e);
	case IR_VAR:
		return var_rule(s, e);
	case IR_ADD: case IR_SUB: case IR_MUL:
		return int_scalar(e) ? int_arith(s, e) : other_arith(s, e);
	case IR_DIV:
		return other_arith(s, e);
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
		return int_scalar(e) ? divmod(s, e) : e;
	case IR_MIN: case IR_MAX:
		return minmax(s, e);
	case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE:
		return int_scalar(e->u.bin.a) ? compare(s, e) : e;
	case IR_AND: case IR_OR:
		return logic(s, e);
	case IR_NOT:
		return not_rule(s, e);
	case IR_CAST:
		return cast_rule(e);
	case IR_SELECT:
		return select_rule(s, e);
	case IR_FLOAT_IMM: case IR_CALL: case IR_READ: case IR_LOAD: case IR_RAMP:
	case IR_BROADCAST: case IR_REDUCE: case IR_EXPR_KIND_COUNT:
		break;
	}
	return e;
}

/* ---- the walk -------------------------------------------------------------------------- */


/* The source of a reduction sees its axes' ranges. */
static ts_expr *simp_reduce(simp *s, ts_expr *e)
{
	int na = e->u.reduce.naxes;
	ir_range *r = ts_alloc_array(s->ctx, (size_t)(s->n + na), sizeof(*r));
	if (!r)
		return NULL;
	for (int i = 0; i < s->n; i++)
		r[i] = s->r[i];
	for (int i = 0; i < na; i++) {
		const ts_iter *it = e->u.reduce.axes[i];
		r[s->n + i] = (ir_range){it->var, it->min, it->extent};
	}
	simp inner = {s->ctx, s->n + na, r};
	ts_expr *src = simp_expr(s->ctx, e->u.reduce.source, &inner);
	ts_expr *init = e->u.reduce.init ? simp_expr(s->ctx, e->u.reduce.init, s) : NULL;
	if (!src || (e->u.reduce.init && !init))
		return NULL;
	if (src == e->u.reduce.source && init == e->u.reduce.init)
		return e;
	return ts_reduce(s->ctx, e->u.reduce.op, src, na, e->u.reduce.axes, init);
}

static ts_expr *simp_expr(ts_ctx *ctx, ts_expr *e, void *data)
{
	simp *s = data;
	if (e->kind == IR_REDUCE)
		return simp_reduce(s, e);
	ts_expr *m = ir_expr_map_children(ctx, e, simp_expr, data);
	return m ? rewrite(s, m) : NULL;
}

/* Checks user-given ranges; records an error naming the bad one. */
bool ir_check_ranges(ts_ctx *ctx, const char *what, int n, const ir_range *r)
{
	if (n < 0) {
		ts_error(ctx, TS_ERR_INVALID, "%s: negative range count %d", what, n);
		return false;
	}
	if (n > 0 && !r) {
		ts_error(ctx, TS_ERR_INVALID, "%s: ranges is NULL with %d range%s", what, n,
			 n == 1 ? "" : "s");
		return false;
	}
	for (int i = 0; i < n; i++) {
		if (!r[i].var || r[i].var->kind != IR_VAR) {
			ts_error(ctx, TS_ERR_INVALID, "%s: range %d is not over a variable", what, i);
			return false;
		}
		if (r[i].extent <= 0 || r[i].min > INT64_MAX - (r[i].extent - 1)) {
			ts_error(ctx, TS_ERR_INVALID,
				 "%s: range of '%s' [%lld, +%lld) is empty or overflows int64", what,
				 r[i].var->u.var.name, (long long)r[i].min, (long long)r[i].extent);
			return false;
		}
	}
	return true;
}

ts_expr *ir_simplify(ts_ctx *ctx, ts_expr *e, int n, const ir_range *ranges)
{
	if (!e) {
		ts_error(ctx, TS_ERR_INVALID, "simplify: nothing to simplify (NULL)");
		return NULL;
	}
	if (!ir_check_ranges(ctx, "simplify", n, ranges))
		return NULL;
	simp s = {ctx, n, ranges};
	return simp_expr(ctx, e, &s);
}

bool ir_can_prove(ts_ctx *ctx, ts_expr *cond, int n, const ir_range *ranges)
{
	/* bad ranges are reported even when cond alone settles the answer */
	if (!ir_check_ranges(ctx, "can_prove", n, ranges))
		return false;
	if (!cond || !ts_dtype_is_bool(cond->dtype))
		return false;
	ts_expr *r = ir_simplify(ctx, cond, n, ranges);
	return r && r->kind == IR_INT_IMM && r->u.int_imm != 0;
}
