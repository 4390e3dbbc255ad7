/*
 * simplify_stmt.c - simplification of loop-IR statements (ir_simplify_stmt).
 *
 * The walk carries the ranges of the enclosing loops and lets, so every
 * expression is simplified knowing where its variables lie.  Statements that
 * end up doing nothing (an EVALUATE, a loop or an if around nothing) vanish;
 * inside the walk that is the EMPTY marker, which never escapes: a whole
 * statement that vanishes is returned as `EVALUATE(0)`.
 */
#include "arith_impl.h"

typedef struct sst {
	ts_ctx *ctx;
	int n;
	const ir_range *r;
} sst;

static const ts_stmt empty_marker;
#define EMPTY ((ts_stmt *)&empty_marker)

static ts_stmt *stmt(sst *s, ts_stmt *st);

static ts_expr *ex(ts_ctx *ctx, ts_expr *e, void *data)
{
	sst *s = data;
	return ir_simplify(ctx, e, s->n, s->r);
}

/* inner = s plus `var` in [lo, hi] (s itself when that is not representable). */
static bool push(sst *s, const ts_expr *var, ir_i128 lo, ir_i128 hi, sst *inner)
{
	*inner = *s;
	if (lo > hi || lo < INT64_MIN || hi > INT64_MAX || hi - lo + 1 > INT64_MAX)
		return true;
	ir_range *r = ts_alloc_array(s->ctx, (size_t)s->n + 1, sizeof(*r));
	if (!r)
		return false;
	for (int i = 0; i < s->n; i++)
		r[i] = s->r[i];
	r[s->n] = (ir_range){var, (int64_t)lo, (int64_t)(hi - lo + 1)};
	inner->n = s->n + 1;
	inner->r = r;
	return true;
}

/* The loop variable lies in [min, min + extent - 1] for every min, extent. */
static bool loop_scope(sst *s, const ts_expr *var, ts_expr *min, ts_expr *ext, sst *inner)
{
	ir_ival m = ir_bound_ival(min, s->n, s->r), e = ir_bound_ival(ext, s->n, s->r);
	return push(s, var, m.lo, m.hi + e.hi - 1, inner);
}

static ts_stmt *for_stmt(sst *s, ts_stmt *st)
{
	ts_expr *var = st->u.for_.var;
	ts_expr *min = ex(s->ctx, st->u.for_.min, s), *ext = ex(s->ctx, st->u.for_.extent, s);
	if (!min || !ext)
		return NULL;
	int64_t c;
	if (ir_is_const_int(ext, &c) && c == 1 && st->u.for_.kind != TS_FOR_THREAD) {
		ts_stmt *b = ir_stmt_substitute(s->ctx, st->u.for_.body, 1, &var, &min);
		return b ? stmt(s, b) : NULL;
	}
	sst inner;
	if (!loop_scope(s, var, min, ext, &inner))
		return NULL;
	ts_stmt *body = stmt(&inner, st->u.for_.body);
	if (!body || body == EMPTY)
		return body;
	if (min == st->u.for_.min && ext == st->u.for_.extent && body == st->u.for_.body)
		return st;
	return ir_for(s->ctx, var, min, ext, st->u.for_.kind, st->u.for_.thread, body);
}

/* {v : v k c} as an interval (c an integer, k a comparison); false for NE. */
static bool cmp_ival(ir_expr_kind k, ir_i128 c, ir_ival *out)
{
	switch (k) {
	case IR_LT: *out = (ir_ival){-IR_IVAL_BIG, c - 1}; return true;
	case IR_LE: *out = (ir_ival){-IR_IVAL_BIG, c}; return true;
	case IR_GT: *out = (ir_ival){c + 1, IR_IVAL_BIG}; return true;
	case IR_GE: *out = (ir_ival){c, IR_IVAL_BIG}; return true;
	case IR_EQ: *out = (ir_ival){c, c}; return true;
	case IR_INT_IMM: case IR_FLOAT_IMM: case IR_VAR: case IR_ADD: case IR_SUB:
	case IR_MUL: case IR_DIV: case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV:
	case IR_FLOORMOD: case IR_MIN: case IR_MAX: case IR_NE: case IR_AND: case IR_OR:
	case IR_NOT: case IR_CAST: case IR_SELECT: case IR_CALL: case IR_READ:
	case IR_LOAD: case IR_RAMP: case IR_BROADCAST: case IR_REDUCE:
	case IR_EXPR_KIND_COUNT:
		break;
	}
	return false;
}

/* The comparison that holds exactly when `a k b` fails, or when it holds
 * with the operands swapped. */
static ir_expr_kind flip(ir_expr_kind k, bool negate)
{
	static const ir_expr_kind neg[] = {IR_NE, IR_EQ, IR_GE, IR_GT, IR_LE, IR_LT};
	static const ir_expr_kind swap[] = {IR_EQ, IR_NE, IR_GT, IR_GE, IR_LT, IR_LE};
	return negate ? neg[k - IR_EQ] : swap[k - IR_EQ];
}

/* Narrows the range of v when `v k c` (or `c k v`) is known to be `holds`;
 * conjunctions that hold and disjunctions that fail narrow each part. */
static bool assume(sst *s, ts_expr *cond, bool holds, sst *out)
{
	*out = *s;
	if (cond->kind == IR_NOT)
		return assume(s, cond->u.un.a, !holds, out);
	if ((cond->kind == IR_AND && holds) || (cond->kind == IR_OR && !holds)) {
		sst mid;
		return assume(s, cond->u.bin.a, holds, &mid) && assume(&mid, cond->u.bin.b, holds, out);
	}
	if (!ir_is_compare(cond->kind) || !ts_dtype_is_int(cond->u.bin.a->dtype))
		return true;
	ts_expr *a = cond->u.bin.a, *b = cond->u.bin.b;
	ir_expr_kind k = holds ? cond->kind : flip(cond->kind, true);
	if (a->kind == IR_INT_IMM && b->kind == IR_VAR) {
		ts_expr *t = a;
		a = b;
		b = t;
		k = flip(k, false);
	}
	ir_ival known, want;
	if (a->kind != IR_VAR || b->kind != IR_INT_IMM || !cmp_ival(k, ir_imm_value(b), &want))
		return true;
	known = ir_bound_ival(a, s->n, s->r);
	return push(s, a, known.lo > want.lo ? known.lo : want.lo,
		    known.hi < want.hi ? known.hi : want.hi, out);
}

static ts_stmt *if_stmt(sst *s, ts_stmt *st)
{
	ts_expr *cond = ex(s->ctx, st->u.if_.cond, s);
	if (!cond)
		return NULL;
	if (cond->kind == IR_INT_IMM) {
		if (cond->u.int_imm)
			return stmt(s, st->u.if_.then_s);
		return st->u.if_.else_s ? stmt(s, st->u.if_.else_s) : EMPTY;
	}
	sst st_then, st_else;
	if (!assume(s, cond, true, &st_then) || !assume(s, cond, false, &st_else))
		return NULL;
	ts_stmt *t = stmt(&st_then, st->u.if_.then_s);
	ts_stmt *e = st->u.if_.else_s ? stmt(&st_else, st->u.if_.else_s) : NULL;
	if (!t || (st->u.if_.else_s && !e))
		return NULL;
	if (e == EMPTY)
		e = NULL;
	if (t == EMPTY) {
		if (!e)
			return EMPTY;
		ts_expr *nc = ex(s->ctx, ts_not(s->ctx, cond), s);
		return ir_if(s->ctx, nc, e, NULL);
	}
	if (cond == st->u.if_.cond && t == st->u.if_.then_s && e == st->u.if_.else_s)
		return st;
	return ir_if(s->ctx, cond, t, e);
}

static ts_stmt *let_stmt(sst *s, ts_stmt *st)
{
	ts_expr *var = st->u.let.var, *v = ex(s->ctx, st->u.let.value, s);
	if (!v)
		return NULL;
	if (v->kind == IR_INT_IMM || v->kind == IR_FLOAT_IMM) {
		ts_stmt *b = ir_stmt_substitute(s->ctx, st->u.let.body, 1, &var, &v);
		return b ? stmt(s, b) : NULL;
	}
	sst inner = *s;
	if (ts_dtype_is_int(v->dtype) && v->dtype.lanes == 1) {
		ir_ival b = ir_bound_ival(v, s->n, s->r);
		if (!push(s, var, b.lo, b.hi, &inner))
			return NULL;
	}
	ts_stmt *body = stmt(&inner, st->u.let.body);
	if (!body || body == EMPTY)
		return body;
	if (v == st->u.let.value && body == st->u.let.body)
		return st;
	return ir_let(s->ctx, var, v, body);
}

static ts_stmt *seq_stmt(sst *s, ts_stmt *st)
{
	int n = st->u.seq.n, total = 0;
	bool changed = false;
	ts_stmt **res = ts_alloc_array(s->ctx, (size_t)n, sizeof(*res));
	if (!res)
		return NULL;
	for (int i = 0; i < n; i++) {
		res[i] = stmt(s, st->u.seq.s[i]);
		if (!res[i])
			return NULL;
		changed |= res[i] != st->u.seq.s[i];
		total += res[i] == EMPTY ? 0 : res[i]->kind == IR_S_SEQ ? res[i]->u.seq.n : 1;
	}
	if (!changed)
		return st;
	if (total == 0)
		return EMPTY;
	ts_stmt **flat = ts_alloc_array(s->ctx, (size_t)total, sizeof(*flat));
	if (!flat)
		return NULL;
	int m = 0;
	for (int i = 0; i < n; i++) {
		if (res[i] != EMPTY && res[i]->kind == IR_S_SEQ)
			for (int j = 0; j < res[i]->u.seq.n; j++)
				flat[m++] = res[i]->u.seq.s[j];
		else if (res[i] != EMPTY)
			flat[m++] = res[i];
	}
	return ir_seq(s->ctx, m, flat);
}

/* REALIZE and ALLOCATE: the body first, then the statement's own expressions. */
static ts_stmt *scoped_stmt(sst *s, ts_stmt *st)
{
	bool realize = st->kind == IR_S_REALIZE;
	ts_stmt *old = realize ? st->u.realize.body : st->u.alloc.body;
	ts_stmt *body = stmt(s, old);
	if (!body || body == EMPTY)
		return body;
	ts_stmt *r = st;
	if (body != old && realize)
		r = ir_realize(s->ctx, st->u.realize.tensor, st->u.realize.n, st->u.realize.min,
			       st->u.realize.extent, st->u.realize.scope, body);
	else if (body != old)
		r = ir_allocate(s->ctx, st->u.alloc.buf, body);
	return r ? ir_stmt_map_children(s->ctx, r, NULL, ex, s) : NULL;
}

/* A store of the element it loads changes nothing: gone.  (A sum whose
 * term a test leaves out, a + select(false, t, -0.0), simplifies to one.) */
static ts_stmt *store_stmt(sst *s, ts_stmt *st)
{
	ts_stmt *r = ir_stmt_map_children(s->ctx, st, NULL, ex, s);
	if (!r)
		return NULL;
	const ts_expr *v = r->u.store.value;
	if (v->kind == IR_LOAD && v->u.load.buf == r->u.store.buf &&
	    ir_expr_equal(v->u.load.index, r->u.store.index))
		return EMPTY;
	return r;
}

static ts_stmt *stmt(sst *s, ts_stmt *st)
{
	switch (st->kind) {
	case IR_S_FOR:
		return for_stmt(s, st);
	case IR_S_IF:
		return if_stmt(s, st);
	case IR_S_LET:
		return let_stmt(s, st);
	case IR_S_SEQ:
		return seq_stmt(s, st);
	case IR_S_REALIZE:
	case IR_S_ALLOCATE:
		return scoped_stmt(s, st);
	case IR_S_STORE:
		return store_stmt(s, st);
	case IR_S_PROVIDE:
	case IR_S_PREFETCH: /* a hint, but the one statement that asks for it */
		return ir_stmt_map_children(s->ctx, st, NULL, ex, s);
	case IR_S_EVALUATE:
		return EMPTY; /* expressions have no side effects */
	case IR_S_BARRIER:
	case IR_STMT_KIND_COUNT:
		break;
	}
	return st;
}

ts_stmt *ir_simplify_stmt(ts_ctx *ctx, ts_stmt *s, int n, const ir_range *ranges)
{
	if (!s) {
		ts_error(ctx, TS_ERR_INVALID, "simplify_stmt: nothing to simplify (NULL)");
		return NULL;
	}
	if (!ir_check_ranges(ctx, "simplify_stmt", n, ranges))
		return NULL;
	sst st = {ctx, n, ranges};
	ts_stmt *r = stmt(&st, s);
	if (r != EMPTY)
		return r;
	int64_t v;
	if (s->kind == IR_S_EVALUATE && ir_is_const_int(s->u.eval.value, &v) && v == 0 &&
	    ts_dtype_eq(s->u.eval.value->dtype, ts_int32))
		return s;
	return ir_evaluate(ctx, ts_int(ctx, 0));
}
