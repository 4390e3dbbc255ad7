/*
 * loop_partition.c - split a loop at the point where its likely() guards
 * stop holding.
 *
 * For a loop over v in [min, min + extent) whose body holds guards
 * likely(c) that depend on v, the largest k is found (binary search, the
 * guards being monotone in practice and the proof sound regardless) such
 * that every such c provably holds for v in [min, k) and every inner loop
 * variable over its whole range.  The loop becomes a main loop over
 * [min, k) with those guards replaced by true, then a tail loop over
 * [k, min + extent) that keeps them and is partitioned further inside.
 * Guards proved false remove their statement.  Finally every likely(c)
 * left becomes plain c, so no later stage sees likely().
 */
#include "arith.h"
#include "passes.h"

#define MAX_RANGES 256

typedef struct part {
	ts_ctx *ctx;
	ir_range r[MAX_RANGES];
	int nr;
} part;

typedef struct collect {
	const ts_expr *v;
	ts_expr *conds[64];
	int nc;
	ir_range inner[MAX_RANGES];
	int ni;
} collect;

static bool collect_expr(ts_expr *e, void *data)
{
	collect *c = data;
	if (e->kind == IR_CALL && e->u.call.op == IR_INTRIN_LIKELY &&
	    ir_expr_uses_var(e->u.call.args[0], c->v) && c->nc < 64)
		c->conds[c->nc++] = e->u.call.args[0];
	return true;
}

static bool collect_stmt(ts_stmt *s, void *data)
{
	collect *c = data;
	int64_t mn, ex;
	if (s->kind == IR_S_FOR && ir_is_const_int(s->u.for_.min, &mn) &&
	    ir_is_const_int(s->u.for_.extent, &ex) && c->ni < MAX_RANGES)
		c->inner[c->ni++] = (ir_range){s->u.for_.var, mn, ex};
	return true;
}

/* Do all conds hold for v in [lo, hi)? */
static bool holds(part *p, collect *c, const ts_expr *v, int64_t lo, int64_t hi)
{
	ir_range r[MAX_RANGES * 2 + 1];
	int n = 0;
	for (int i = 0; i < p->nr; i++)
		r[n++] = p->r[i];
	for (int i = 0; i < c->ni; i++)
		r[n++] = c->inner[i];
	r[n++] = (ir_range){v, lo, hi - lo};
	for (int i = 0; i < c->nc; i++)
		if (!ir_can_prove(p->ctx, c->conds[i], n, r))
			return false;
	return true;
}

typedef struct {
	const ts_expr *v;
	bool value_known;
} likely_sub;

/* likely(c) with c using v -> true (in the main part). */
static ts_expr *drop_likely(ts_ctx *ctx, ts_expr *e, void *data)
{
	likely_sub *l = data;
	ts_expr *m = ir_expr_map_children(ctx, e, drop_likely, data);
	if (m && m->kind == IR_CALL && m->u.call.op == IR_INTRIN_LIKELY &&
	    (!l->v || ir_expr_uses_var(m->u.call.args[0], l->v)))
		return l->value_known ? ts_const(ctx, ts_bool, 1) : m->u.call.args[0];
	return m;
}

static ts_stmt *drop_likely_stmt(ts_ctx *ctx, ts_stmt *s, void *data)
{
	return ir_stmt_map_children(ctx, s, drop_likely_stmt, drop_likely, data);
}

static ts_stmt *walk(part *p, ts_stmt *s);

static ts_stmt *walk_child(ts_ctx *ctx, ts_stmt *s, void *data)
{
	(void)ctx;
	return walk(data, s);
}

static ts_stmt *walk_body(part *p, ts_expr *v, int64_t lo, int64_t ext, ts_stmt *body)
{
	if (p->nr >= MAX_RANGES)
		return body;
	p->r[p->nr++] = (ir_range){v, lo, ext};
	ts_stmt *r = walk(p, body);
	p->nr--;
	return r;
}

static ts_stmt *loop(part *p, ts_stmt *s, int64_t lo, int64_t hi, ts_stmt *body)
{
	ts_ctx *ctx = p->ctx;
	ts_expr *v = s->u.for_.var;
	body = walk_body(p, v, lo, hi - lo, body);
	if (!body)
		return NULL;
	/* bounds in the variable's dtype: int64 loops keep extents past 2^31 */
	return ir_for(ctx, v, ts_const(ctx, v->dtype, lo), ts_const(ctx, v->dtype, hi - lo),
		      s->u.for_.kind, s->u.for_.thread, body);
}

static ts_stmt *partition_for(part *p, ts_stmt *s)
{
	ts_ctx *ctx = p->ctx;
	int64_t lo, ext;
	ts_expr *v = s->u.for_.var;
	if (!ir_is_const_int(s->u.for_.min, &lo) || !ir_is_const_int(s->u.for_.extent, &ext))
		return ir_stmt_map_children(ctx, s, walk_child, NULL, p);
	collect c = {.v = v};
	ir_stmt_visit(s->u.for_.body, collect_stmt, collect_expr, &c);
	if (c.nc == 0)
		return loop(p, s, lo, lo + ext, s->u.for_.body);
	/* largest k in [lo, lo + ext] with the guards holding on [lo, k) */
	int64_t good = lo, bad = lo + ext + 1;
	while (bad - good > 1) {
		int64_t mid = good + (bad - good) / 2;
		if (holds(p, &c, v, lo, mid))
			good = mid;
		else
			bad = mid;
	}
	if (good == lo)
		return loop(p, s, lo, lo + ext, s->u.for_.body);
	likely_sub l = {v, true};
	ts_stmt *main_body = drop_likely_stmt(ctx, s->u.for_.body, &l);
	ts_stmt *main = main_body ? loop(p, s, lo, good, main_body) : NULL;
	if (good == lo + ext || !main)
		return main;
	ts_stmt *tail = loop(p, s, good, lo + ext, s->u.for_.body);
	return tail ? ir_seq2(ctx, main, tail) : NULL;
}

/* An IF whose likely() guard is provably false disappears. */
static ts_stmt *prune_if(part *p, ts_stmt *s)
{
	ts_ctx *ctx = p->ctx;
	likely_sub plain = {NULL, false};
	ts_expr *c = drop_likely(ctx, s->u.if_.cond, &plain);
	if (c && ir_can_prove(ctx, ts_not(ctx, c), p->nr, p->r))
		return s->u.if_.else_s ? walk(p, s->u.if_.else_s)
				       : ir_evaluate(ctx, ts_int(ctx, 0));
	return ir_stmt_map_children(ctx, s, walk_child, NULL, p);
}

static ts_stmt *walk(part *p, ts_stmt *s)
{
	if (!s)
		return NULL;
	if (s->kind == IR_S_FOR)
		return partition_for(p, s);
	if (s->kind == IR_S_IF)
		return prune_if(p, s);
	return ir_stmt_map_children(p->ctx, s, walk_child, NULL, p);
}

ts_stmt *pass_loop_partition(ts_ctx *ctx, ts_stmt *s)
{
	part *p = ts_alloc(ctx, sizeof(*p));
	if (!p)
		return NULL;
	p->ctx = ctx;
	ts_stmt *r = walk(p, s);
	likely_sub plain = {NULL, false};
	return r ? drop_likely_stmt(ctx, r, &plain) : NULL;
}
