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
 *
 * Guards that fail at the first iteration (a padding's v >= pad, read
 * through an inlined padding stage) are taken one by one: each must hold
 * on a prefix or on a suffix of the loop, and the main loop is the range
 * where all of them hold, with a head loop before it and a tail loop after
 * it keeping the guards (as Halide partitions a boundary condition's
 * loops); tests that hold on neither stay in every part, and each part is
 * partitioned again.  Vector and thread loops take no head.  The simplify
 * that follows this pass (lower.c) then drops the clamps of a padding's
 * index from the main loop, whose range is now narrower.
 *
 * Guards proved false remove their statement.  Finally every likely(c)
 * left becomes plain c, so no later stage sees likely().
 */
#include <string.h>

#include "arith.h"
#include "passes.h"

#define MAX_RANGES 256

typedef struct part {
	ts_ctx *ctx;
	ir_range r[MAX_RANGES];
	int nr;
	/* statements the copies made so far add, and the most they may add
	 * (see split_pays) */
	int64_t added, budget;
} part;

static bool count_stmt(ts_stmt *s, void *data)
{
	*(int64_t *)data += s->kind != IR_S_SEQ;
	return true;
}

/* Statements in s (loops and branches counted once, not per iteration). */
static int64_t stmts_in(const ts_stmt *s)
{
	int64_t n = 0;
	if (s)
		ir_stmt_visit((ts_stmt *)s, count_stmt, NULL, &n);
	return n;
}

/* Whether splitting a loop whose body is `body` into `parts` loops stays
 * within the pass's budget, charging it if so.  Each part copies the body,
 * and the parts of loops nested in it split again in every copy: down a
 * chain of padded stages each computed inside the next, the copies
 * multiply (four levels grew 3 KB of loop IR to 290 KB, and LLVM took
 * half a minute over it).  Past the budget a loop keeps its tests, which
 * is slower to run but the same result. */
static bool split_pays(part *p, const ts_stmt *body, int parts)
{
	int64_t more = (int64_t)(parts - 1) * stmts_in(body);
	if (p->added + more > p->budget)
		return false;
	p->added += more;
	return true;
}

typedef struct collect {
	const ts_expr *v;
	ts_expr *conds[64];
	bool sel[64]; /* found only in SELECT conditions (a padding's) */
	int nc;
	enum { FOUND_ELSEWHERE, FOUND_IN_SELECT, FOUND_IN_IF } found; /* add_cond's mode */
	ir_range inner[MAX_RANGES];
	int ni;
} collect;

/* Records the likely() conditions under e that use v.  A condition found
 * in an IF's condition counts as a guard even where a SELECT also tests
 * it; the visit of a SELECT's operands, after the SELECT itself, changes
 * nothing recorded. */
static bool add_cond(ts_expr *e, void *data)
{
	collect *c = data;
	if (e->kind != IR_CALL || e->u.call.op != IR_INTRIN_LIKELY ||
	    !ir_expr_uses_var(e->u.call.args[0], c->v))
		return true;
	for (int i = 0; i < c->nc; i++)
		if (ir_expr_equal(c->conds[i], e->u.call.args[0])) {
			if (c->found == FOUND_IN_IF)
				c->sel[i] = false;
			return true;
		}
	if (c->nc < 64) {
		c->sel[c->nc] = c->found == FOUND_IN_SELECT;
		c->conds[c->nc++] = e->u.call.args[0];
	}
	return true;
}

/* Expressions are visited before their operands, so a SELECT's conditions
 * are recorded as such before the visit reaches them. */
static bool collect_expr(ts_expr *e, void *data)
{
	collect *c = data;
	if (e->kind == IR_SELECT) {
		c->found = FOUND_IN_SELECT;
		ir_expr_visit(e->u.select.cond, add_cond, c);
	}
	c->found = FOUND_ELSEWHERE;
	return add_cond(e, c);
}

static bool collect_stmt(ts_stmt *s, void *data)
{
	collect *c = data;
	int64_t mn, ex;
	if (s->kind == IR_S_IF) {
		c->found = FOUND_IN_IF;
		ir_expr_visit(s->u.if_.cond, add_cond, c);
		c->found = FOUND_ELSEWHERE;
	}
	if (s->kind == IR_S_FOR && ir_is_const_int(s->u.for_.min, &mn) &&
	    ir_is_const_int(s->u.for_.extent, &ex) && c->ni < MAX_RANGES)
		c->inner[c->ni++] = (ir_range){s->u.for_.var, mn, ex};
	return true;
}

/* Do conds[from, to) hold for v in [lo, hi)? */
static bool holds_some(part *p, collect *c, const ts_expr *v, int64_t lo, int64_t hi, int from,
		       int to)
{
	ir_range r[MAX_RANGES * 2 + 1];
	int n = 0;
	for (int i = 0; i < p->nr; i++)
		r[n++] = p->r[i];
	for (int i = 0; i < c->ni; i++)
		r[n++] = c->inner[i];
	r[n++] = (ir_range){v, lo, hi - lo};
	for (int i = from; i < to; i++)
		if (!ir_can_prove(p->ctx, c->conds[i], n, r))
			return false;
	return true;
}

/* Do all conds hold for v in [lo, hi)? */
static bool holds(part *p, collect *c, const ts_expr *v, int64_t lo, int64_t hi)
{
	return holds_some(p, c, v, lo, hi, 0, c->nc);
}

typedef struct {
	const ts_expr *v;
	bool value_known;
	const collect *only; /* when set, only these conditions are dropped */
} likely_sub;

static bool listed(const collect *c, const ts_expr *cond)
{
	for (int i = 0; i < c->nc; i++)
		if (ir_expr_equal(c->conds[i], cond))
			return true;
	return false;
}

/* likely(c) with c using v -> true (in the main part). */
static ts_expr *drop_likely(ts_ctx *ctx, ts_expr *e, void *data)
{
	likely_sub *l = data;
	ts_expr *m = ir_expr_map_children(ctx, e, drop_likely, data);
	if (m && m->kind == IR_CALL && m->u.call.op == IR_INTRIN_LIKELY &&
	    (!l->v || ir_expr_uses_var(m->u.call.args[0], l->v)) &&
	    (!l->only || listed(l->only, m->u.call.args[0])))
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

/* The range [*a, *b) of [lo, hi) where condition i provably holds, when
 * that is a prefix or a suffix of the loop; false otherwise. */
static bool holding_range(part *p, collect *c, const ts_expr *v, int i, int64_t lo, int64_t hi,
			  int64_t *a, int64_t *b)
{
	int64_t good, bad;
	if (holds_some(p, c, v, lo, lo + 1, i, i + 1)) { /* a prefix: its largest end */
		good = lo + 1, bad = hi + 1;
		while (bad - good > 1) {
			int64_t mid = good + (bad - good) / 2;
			*(holds_some(p, c, v, lo, mid, i, i + 1) ? &good : &bad) = mid;
		}
		*a = lo, *b = good;
		return true;
	}
	if (!holds_some(p, c, v, hi - 1, hi, i, i + 1))
		return false;
	good = hi - 1, bad = lo; /* a suffix: its smallest start */
	while (good - bad > 1) {
		int64_t mid = bad + (good - bad) / 2;
		*(holds_some(p, c, v, mid, hi, i, i + 1) ? &good : &bad) = mid;
	}
	*a = good, *b = hi;
	return true;
}

static ts_stmt *partition_for(part *p, ts_stmt *s);

/* Loop s narrowed to [lo, hi) with body `body`, partitioned again: a part
 * may still split where conditions that failed on the whole loop hold. */
static ts_stmt *partition_range(part *p, ts_stmt *s, ts_stmt *body, int64_t lo, int64_t hi)
{
	ts_ctx *ctx = p->ctx;
	ts_expr *v = s->u.for_.var;
	ts_stmt *narrow = ir_for(ctx, v, ts_const(ctx, v->dtype, lo), ts_const(ctx, v->dtype, hi - lo),
				 s->u.for_.kind, s->u.for_.thread, body);
	return narrow ? partition_for(p, narrow) : NULL;
}

static ts_stmt *partition_part(part *p, ts_stmt *s, int64_t lo, int64_t hi)
{
	return partition_range(p, s, s->u.for_.body, lo, hi);
}

/* Loop s over [lo, hi), whose conditions c do not all hold at lo: a head
 * loop, a main loop over the range where every condition that holds on a
 * prefix or a suffix holds, without those, and a tail loop; the head and
 * the tail are partitioned again.  s as it is (its body partitioned) when
 * no condition holds on such a range. */
static ts_stmt *partition_head(part *p, ts_stmt *s, collect *c, int64_t lo, int64_t hi)
{
	ts_ctx *ctx = p->ctx;
	ts_expr *v = s->u.for_.var;
	int64_t a = lo, b = hi;
	/* the conditions that hold on a prefix or a suffix; the others stay
	 * in every part */
	collect *held = ts_alloc(ctx, sizeof(*held));
	if (!held)
		return NULL;
	for (int i = 0; i < c->nc; i++) {
		int64_t ai, bi;
		if (!holding_range(p, c, v, i, lo, hi, &ai, &bi))
			continue;
		held->conds[held->nc++] = c->conds[i];
		a = ai > a ? ai : a;
		b = bi < b ? bi : b;
	}
	if (held->nc == 0 || a >= b || (a == lo && b == hi) ||
	    !split_pays(p, s->u.for_.body, 1 + (a > lo) + (b < hi)))
		return loop(p, s, lo, hi, s->u.for_.body);
	likely_sub l = {v, true, held};
	ts_stmt *main_body = drop_likely_stmt(ctx, s->u.for_.body, &l), *parts[3];
	if (!main_body)
		return NULL;
	int n = 0;
	if (a > lo && !(parts[n++] = partition_part(p, s, lo, a)))
		return NULL;
	if (!(parts[n++] = loop(p, s, a, b, main_body)))
		return NULL;
	if (b < hi && !(parts[n++] = partition_part(p, s, b, hi)))
		return NULL;
	return ir_seq(ctx, n, parts);
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
	/* a vector or thread loop keeps its lanes whole: a padding's test
	 * stays there (a clamped vector read is a masked load) */
	bool lanes = s->u.for_.kind == TS_FOR_VECTORIZED || s->u.for_.kind == TS_FOR_THREAD;
	/* first the guards of statements (a split's tail): the longest prefix
	 * where they all hold */
	collect *g = ts_alloc(ctx, sizeof(*g));
	if (!g)
		return NULL;
	for (int i = 0; i < c.nc; i++)
		if (!c.sel[i])
			g->conds[g->nc++] = c.conds[i];
	g->ni = c.ni;
	memcpy(g->inner, c.inner, sizeof(c.inner[0]) * (size_t)c.ni);
	/* bad: past the loop's end (saturated: a loop may end at INT64_MAX,
	 * its last iteration then left to the guarded tail) */
	int64_t good = lo, bad = lo < 0 || ext < INT64_MAX - lo ? lo + ext + 1 : INT64_MAX;
	while (g->nc && bad - good > 1) {
		int64_t mid = good + (bad - good) / 2;
		*(holds(p, g, v, lo, mid) ? &good : &bad) = mid;
	}
	if (good > lo && good < lo + ext && !split_pays(p, s->u.for_.body, 2))
		return loop(p, s, lo, lo + ext, s->u.for_.body);
	if (good > lo) {
		likely_sub l = {v, true, g};
		ts_stmt *main_body = drop_likely_stmt(ctx, s->u.for_.body, &l), *main, *tail;
		if (!main_body)
			return NULL;
		if (lanes) {
			main = loop(p, s, lo, good, main_body);
			tail = main && good < lo + ext ? loop(p, s, good, lo + ext, s->u.for_.body) : NULL;
		} else {
			main = partition_range(p, s, main_body, lo, good);
			tail = main && good < lo + ext ? partition_part(p, s, good, lo + ext) : NULL;
		}
		if (!main || good == lo + ext)
			return main;
		return tail ? ir_seq2(ctx, main, tail) : NULL;
	}
	if (lanes || c.nc == 0)
		return loop(p, s, lo, lo + ext, s->u.for_.body);
	return partition_head(p, s, &c, lo, lo + ext);
}

/* An IF whose likely() guard is provably false disappears. */
static ts_stmt *prune_if(part *p, ts_stmt *s)
{
	ts_ctx *ctx = p->ctx;
	likely_sub plain = {NULL, false, NULL};
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
	/* copies may add 4 times the program's statements, and at least 1024:
	 * ResNet-50's convolutions with their padding inlined add at most
	 * 204 to 16; a chain of three padded stages each computed inside the
	 * next added 832 to 35 (LLVM: 1.5 s), of four 2748 to 46 (14 s) */
	int64_t n = stmts_in(s);
	p->budget = n < 256 ? 1024 : 4 * n;
	ts_stmt *r = walk(p, s);
	likely_sub plain = {NULL, false, NULL};
	return r ? drop_likely_stmt(ctx, r, &plain) : NULL;
}
