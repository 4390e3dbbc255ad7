/*
 * bound.c - region inference for compute_at (see bound.h).
 *
 * Each index expression is bounded symbolically: relaxed variables become
 * their constant range, other variables stay as themselves, and the bound
 * is propagated through the operators that index arithmetic uses (+, -,
 * multiplication by a constant, division and modulo by a positive constant,
 * min, max, select); an expression of outer variables only is its own
 * bound, whatever its form.  Anything else falls back to the whole
 * dimension, which is always correct, only larger.
 */
#include "bound.h"

#include "arith.h"

/* [lo, hi] for the outer variables' values; w bounds hi - lo by a constant
 * whatever those values are (-1: no such bound), so that min(x, c), whose
 * symbolic bounds simplify badly, still spans no more than x. */
typedef struct {
	ts_expr *lo, *hi; /* inclusive; NULL: unknown */
	int64_t w;
} sym;

typedef struct {
	ts_ctx *ctx;
	int nrelax;
	const sch_loop *relax;
} bctx;

static sym unknown(void)
{
	return (sym){NULL, NULL, -1};
}

static int64_t wsum(int64_t a, int64_t b)
{
	return a < 0 || b < 0 ? -1 : a + b;
}

static int64_t wmax(int64_t a, int64_t b)
{
	return a < 0 || b < 0 ? -1 : a > b ? a : b;
}

static bool known(sym s)
{
	return s.lo && s.hi;
}

static sym bound(bctx *b, ts_expr *e);

static sym scale(bctx *b, sym s, ts_expr *c, int64_t cv)
{
	ts_expr *lo = ts_mul(b->ctx, s.lo, c), *hi = ts_mul(b->ctx, s.hi, c);
	int64_t a = cv < 0 ? -cv : cv;
	int64_t w = s.w < 0 || (a && s.w > INT64_MAX / a) ? -1 : s.w * a;
	return cv >= 0 ? (sym){lo, hi, w} : (sym){hi, lo, w};
}

static sym bound_mul(bctx *b, ts_expr *e)
{
	int64_t c;
	ts_expr *x = e->u.bin.a, *k = e->u.bin.b;
	if (!ir_is_const_int(k, &c)) {
		x = e->u.bin.b;
		k = e->u.bin.a;
		if (!ir_is_const_int(k, &c))
			return unknown();
	}
	sym s = bound(b, x);
	return known(s) ? scale(b, s, k, c) : unknown();
}

static sym bound_div_mod(bctx *b, ts_expr *e)
{
	int64_t c;
	if (!ir_is_const_int(e->u.bin.b, &c) || c <= 0)
		return unknown();
	sym s = bound(b, e->u.bin.a);
	if (!known(s))
		return unknown();
	ts_ctx *ctx = b->ctx;
	ts_expr *d = e->u.bin.b;
	if (e->kind == IR_FLOORDIV || e->kind == IR_TRUNCDIV)
		return (sym){ts_binary(ctx, e->kind, s.lo, d), ts_binary(ctx, e->kind, s.hi, d),
			     s.w < 0 ? -1 : s.w / c + 1};
	/* modulo: exact only when lo and hi fall in the same block of c */
	ts_expr *same = ir_simplify(ctx, ts_sub(ctx, ts_floordiv(ctx, s.hi, d), ts_floordiv(ctx, s.lo, d)),
				    0, NULL);
	int64_t z;
	if (e->kind == IR_FLOORMOD && ir_is_const_int(same, &z) && z == 0)
		return (sym){ts_floormod(ctx, s.lo, d), ts_floormod(ctx, s.hi, d), s.w};
	if (e->kind == IR_FLOORMOD)
		return (sym){ts_make_const(ctx, e->dtype, 0), ts_make_const(ctx, e->dtype, (double)(c - 1)),
			     c - 1};
	return unknown();
}

/* A relaxed variable, or a read (whose value is no bound to place in a
 * region start). */
static bool relaxed_fn(const ts_expr *e, const void *data)
{
	const bctx *b = data;
	if (e->kind == IR_READ || e->kind == IR_LOAD)
		return true;
	for (int i = 0; e->kind == IR_VAR && i < b->nrelax; i++)
		if (b->relax[i].var == e)
			return true;
	return false;
}

static sym bound(bctx *b, ts_expr *e)
{
	ts_ctx *ctx = b->ctx;
	sym x, y;
	/* no relaxed variable nor read: the value itself, whatever its form
	 * (a tile start that divides by a run-time extent) */
	if (!ir_expr_any(e, relaxed_fn, b))
		return (sym){e, e, 0};
	switch (e->kind) {
	case IR_INT_IMM:
		return (sym){e, e, 0};
	case IR_VAR:
		for (int i = 0; i < b->nrelax; i++)
			if (b->relax[i].var == e)
				return (sym){ts_make_const(ctx, e->dtype, 0),
					     ts_make_const(ctx, e->dtype, (double)(b->relax[i].extent - 1)),
					     b->relax[i].extent - 1};
		return (sym){e, e, 0};
	case IR_ADD:
	case IR_SUB:
		x = bound(b, e->u.bin.a);
		y = bound(b, e->u.bin.b);
		if (!known(x) || !known(y))
			return unknown();
		if (e->kind == IR_ADD)
			return (sym){ts_add(ctx, x.lo, y.lo), ts_add(ctx, x.hi, y.hi), wsum(x.w, y.w)};
		return (sym){ts_sub(ctx, x.lo, y.hi), ts_sub(ctx, x.hi, y.lo), wsum(x.w, y.w)};
	case IR_MUL:
		return bound_mul(b, e);
	case IR_FLOORDIV:
	case IR_FLOORMOD:
	case IR_TRUNCDIV:
		return bound_div_mod(b, e);
	case IR_MIN:
	case IR_MAX:
		x = bound(b, e->u.bin.a);
		y = bound(b, e->u.bin.b);
		if (!known(x) || !known(y))
			return unknown();
		/* min and max of two ranges span no more than the wider one */
		return (sym){ts_binary(ctx, e->kind, x.lo, y.lo), ts_binary(ctx, e->kind, x.hi, y.hi),
			     wmax(x.w, y.w)};
	case IR_SELECT:
		x = bound(b, e->u.select.t);
		y = bound(b, e->u.select.f);
		if (!known(x) || !known(y))
			return unknown();
		return (sym){ts_min(ctx, x.lo, y.lo), ts_max(ctx, x.hi, y.hi), -1};
	case IR_CAST:
		if (!ts_dtype_is_int(e->dtype) || !ts_dtype_is_int(e->u.un.a->dtype))
			return unknown();
		x = bound(b, e->u.un.a);
		if (!known(x))
			return unknown();
		return (sym){ts_cast(ctx, e->dtype, x.lo), ts_cast(ctx, e->dtype, x.hi), x.w};
	default:
		return unknown();
	}
}

typedef struct {
	bctx *b;
	const ts_tensor *t;
	sym dim[TS_MAX_DIMS];
	bool full[TS_MAX_DIMS];
	bool any;
} region_acc;

/* Two reads whose starts differ by a constant d span max(wa, d + wb) - min(0, d). */
static int64_t union_width(ts_ctx *ctx, sym a, sym b)
{
	int64_t d;
	ts_expr *diff = ir_simplify(ctx, ts_sub(ctx, b.lo, a.lo), 0, NULL);
	if (a.w < 0 || b.w < 0 || !diff || !ir_is_const_int(diff, &d))
		return -1;
	int64_t hi = a.w > d + b.w ? a.w : d + b.w;
	return hi - (d < 0 ? d : 0);
}

/* Adds the element at idx[] (over the relaxed loops) to the region. */
static void accumulate(region_acc *r, ts_expr *const *idx)
{
	ts_ctx *ctx = r->b->ctx;
	for (int d = 0; d < r->t->ndim; d++) {
		if (r->full[d])
			continue;
		sym s = bound(r->b, idx[d]);
		if (!known(s)) {
			r->full[d] = true;
			continue;
		}
		if (r->any) {
			s.w = union_width(ctx, r->dim[d], s);
			s.lo = ts_min(ctx, r->dim[d].lo, s.lo);
			s.hi = ts_max(ctx, r->dim[d].hi, s.hi);
		}
		r->dim[d] = s;
	}
	r->any = true;
}

static bool collect(ts_expr *e, void *data)
{
	region_acc *r = data;
	if (e->kind == IR_READ && e->u.read.tensor == r->t)
		accumulate(r, e->u.read.idx);
	return true;
}

/* A statement's reads of the producer and its stores into it, apart. */
typedef struct region_accs {
	region_acc reads, stores;
} region_accs;

static bool collect_read(ts_expr *e, void *data)
{
	return collect(e, &((region_accs *)data)->reads);
}

static bool collect_store(ts_stmt *st, void *data)
{
	region_acc *r = &((region_accs *)data)->stores;
	if (st->kind == IR_S_PROVIDE && st->u.provide.tensor == r->t)
		accumulate(r, st->u.provide.idx);
	return true;
}

static ir_range *ranges_of(ts_ctx *ctx, int n, const sch_loop *loops)
{
	ir_range *r = ts_alloc_array(ctx, (size_t)(n ? n : 1), sizeof(*r));
	for (int i = 0; r && i < n; i++)
		r[i] = (ir_range){loops[i].var, 0, loops[i].extent};
	return r;
}

/* Constant extent of [lo, hi] over the outer ranges (w: a bound of hi - lo
 * found on the way, or -1), or -1 if unbounded. */
static int64_t extent_of(ts_ctx *ctx, ts_expr *lo, ts_expr *hi, int64_t w, int n,
			 const ir_range *r)
{
	ts_expr *diff = ir_simplify(ctx, ts_sub(ctx, hi, lo), n, r);
	ir_interval iv = diff ? ir_bound_of(diff, n, r) : (ir_interval){0, IR_POS_INF};
	if (w >= 0 && w < iv.max)
		iv.max = w;
	if (iv.max == IR_POS_INF)
		return -1;
	return iv.max < 0 ? 1 : iv.max + 1;
}

typedef struct overhang {
	ir_range r[64];
	int n;
	bool safe;
	const sch_producer *p;
} overhang;

static bool staged(const sch_producer *p, const ts_tensor *t)
{
	for (int i = 0; i < p->nstaged; i++)
		if (p->staged[i] == t)
			return true;
	return false;
}

static bool overhang_fn(ts_expr *e, void *data)
{
	overhang *o = data;
	if (e->kind != IR_READ)
		return true;
	const ts_tensor *t = e->u.read.tensor;
	/* guarded regions are never moved back, so a staged buffer covers
	 * every read of it (elsewhere it may be, and then it does not) */
	if (o->p->guard_edges && staged(o->p, t))
		return true;
	for (int d = 0; d < e->u.read.n && o->safe; d++) {
		ir_interval iv = ir_bound_of(e->u.read.idx[d], o->n, o->r);
		o->safe = iv.min >= 0 && iv.max < t->shape[d];
	}
	return o->safe;
}

/* May the producer be computed with data index d up to hi? */
static bool may_overhang(const sch_producer *p, int d, int64_t hi)
{
	overhang o = {.safe = true, .p = p};
	if (!p->body || p->nroot > (int)TS_COUNT_OF(o.r))
		return false;
	for (int i = 0; i < p->nroot; i++) {
		int64_t ext = i == d ? hi + 1 - p->min[i] : p->extent[i];
		o.r[o.n++] = (ir_range){p->vars[i], p->min[i], ext};
	}
	ir_expr_visit(p->body, overhang_fn, &o);
	return o.safe;
}

static ts_status region_of(ts_ctx *ctx, const sch_producer *p, const region_acc *accp,
			   int nouter, const sch_loop *outer, ts_expr **min, int64_t *extent,
			   bool *edge)
{
	const ts_tensor *t = p->tensor;
	region_acc acc = *accp;
	ir_range *r = ranges_of(ctx, nouter, outer);
	if (!r)
		return ts_last_status(ctx);
	for (int d = 0; d < t->ndim; d++) {
		int64_t shape = t->shape[d];
		if (edge)
			edge[d] = false;
		if (!acc.any || acc.full[d] || !known(acc.dim[d])) {
			min[d] = ts_int(ctx, 0);
			extent[d] = shape;
			continue;
		}
		ts_expr *lo = ir_simplify(ctx, acc.dim[d].lo, nouter, r);
		ts_expr *hi = lo ? ir_simplify(ctx, acc.dim[d].hi, nouter, r) : NULL;
		if (!hi)
			return ts_last_status(ctx);
		/* a guarded region covers reads past the end (their values unused) */
		int64_t e = extent_of(ctx, lo, hi, acc.dim[d].w, nouter, r);
		extent[d] = e < 0 || (e > shape && !p->guard_edges) ? shape : e;
		/* start inside [0, shape - extent] so the region never leaves the
		 * tensor: it still covers every read, which lies in [0, shape);
		 * unless computing past the end is harmless (see bound.h) */
		ts_expr *start = ts_max(ctx, lo, ts_int(ctx, 0));
		ir_interval lo_iv = ir_bound_of(lo, nouter, r);
		bool past = lo_iv.max == IR_POS_INF || lo_iv.max > shape - extent[d];
		bool harmless = past && lo_iv.max != IR_POS_INF && !p->stored_outside &&
				may_overhang(p, d, lo_iv.max + extent[d] - 1);
		if (edge)
			edge[d] = p->guard_edges && past && !harmless;
		if (start && past && !harmless && !p->guard_edges)
			/* in the index dtype: int64 starts may pass 2^31 */
			start = ts_min(ctx, start, ts_const(ctx, start->dtype, shape - extent[d]));
		min[d] = ir_simplify(ctx, start, nouter, r);
		if (!min[d])
			return ts_last_status(ctx);
	}
	return TS_OK;
}

ts_status sch_infer_region(ts_ctx *ctx, const sch_producer *p, ts_expr *body, int nrelax,
			   const sch_loop *relax, int nouter, const sch_loop *outer,
			   ts_expr **min, int64_t *extent, bool *edge)
{
	bctx b = {ctx, nrelax, relax};
	region_acc acc = {.b = &b, .t = p->tensor};
	ir_expr_visit(body, collect, &acc);
	return region_of(ctx, p, &acc, nouter, outer, min, extent, edge);
}

ts_status sch_infer_region_stmt(ts_ctx *ctx, const sch_producer *p, ts_stmt *body, int nrelax,
				const sch_loop *relax, int nouter, const sch_loop *outer,
				ts_expr **min, int64_t *extent, bool *edge)
{
	bctx b = {ctx, nrelax, relax};
	region_accs acc = {{.b = &b, .t = p->tensor}, {.b = &b, .t = p->tensor}};
	ir_stmt_visit(body, collect_store, collect_read, &acc);
	/* A statement that computes the producer (the loop its buffer is
	 * stored at, outside the one it is computed at) needs what its windows
	 * write: each covers the reads inside its loop, but may be wider
	 * (rounded, moved back inside the shape), so the windows' union can
	 * pass the reads'. */
	return region_of(ctx, p, acc.stores.any ? &acc.stores : &acc.reads, nouter, outer, min, extent, edge);
}
