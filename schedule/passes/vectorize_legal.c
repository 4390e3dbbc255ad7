/*
 * vectorize_legal.c - decide which VECTORIZED loops codegen may vectorize.
 *
 * A vectorized loop must have a constant extent within TS_MAX_VECTOR_LANES
 * (an error otherwise: the schedule promised it).  Its body must be
 * straight-line code: stores, lets, ifs (codegen masks or scalarizes them).
 * A body with an inner loop or an allocation cannot become one vector
 * instruction stream, so such a loop is demoted to serial, which keeps the
 * meaning and is visible in the printed IR; ts_lower compares the loops
 * before and after this pass and reports each demotion as a warning
 * (ts_lower_warnings, and on stderr when the passes are printed).
 *
 * Inside GPU thread loops, a vectorized loop whose body is one guarded
 * statement (a tile's load at a shape's end) is split so that the interior
 * keeps its vector access: when every lane passes the guard (it suffices
 * to test the first and the last lane when the guard holds on an interval
 * of lanes) the loop runs unguarded, else as before.
 */
#include "arith.h"
#include "passes.h"
#include "schedule.h"

static bool straight_fn(ts_stmt *s, void *data)
{
	bool *ok = data;
	if (s->kind == IR_S_FOR || s->kind == IR_S_ALLOCATE || s->kind == IR_S_BARRIER)
		*ok = false;
	return *ok;
}

static bool straight_line(ts_stmt *body)
{
	bool ok = true;
	ir_stmt_visit(body, straight_fn, NULL, &ok);
	return ok;
}

/* Whether the lanes v for which c holds form an interval. */
static bool interval_guard(ts_expr *c, const ts_expr *v)
{
	switch (c->kind) {
	case IR_AND:
		return interval_guard(c->u.bin.a, v) && interval_guard(c->u.bin.b, v);
	case IR_LT:
	case IR_LE:
	case IR_GT:
	case IR_GE:
		return ir_monotone_diff(c->u.bin.a, c->u.bin.b, v) != IR_MONO_UNKNOWN;
	default:
		return !ir_expr_uses_var(c, v);
	}
}

static ts_expr *at_lane(ts_ctx *ctx, ts_expr *c, ts_expr *v, ts_expr *lane)
{
	return ir_simplify(ctx, ir_substitute(ctx, c, 1, &v, &lane), 0, NULL);
}

/* for v { if (c) s }  ->  if (c at the first and last lane) for v { s }
 * else for v { if (c) s }; m is the vectorized loop of `ext` lanes. */
static ts_stmt *split_guard(ts_ctx *ctx, ts_stmt *m, int64_t ext)
{
	ts_stmt *b = m->u.for_.body;
	ts_expr *v = m->u.for_.var, *lo = m->u.for_.min;
	if (b->kind != IR_S_IF || b->u.if_.else_s || !interval_guard(b->u.if_.cond, v))
		return m;
	ts_expr *c = b->u.if_.cond;
	/* the unguarded copy gets a variable of its own: loop variables stay unique */
	ts_expr *nv = ts_var_typed(ctx, v->u.var.name, v->dtype);
	ts_stmt *body = nv ? ir_stmt_substitute(ctx, b->u.if_.then_s, 1, &v, &nv) : NULL;
	ts_stmt *fast = body ? ir_for(ctx, nv, lo, m->u.for_.extent, TS_FOR_VECTORIZED,
				      TS_THREAD_NONE, body) : NULL;
	if (!fast)
		return NULL;
	if (!ir_expr_uses_var(c, v)) /* the same for every lane */
		return ir_if(ctx, c, fast, NULL);
	ts_expr *hi = ir_simplify(ctx, ts_add(ctx, lo, ts_const(ctx, lo->dtype, ext - 1)), 0, NULL);
	ts_expr *first = hi ? at_lane(ctx, c, v, lo) : NULL, *last = first ? at_lane(ctx, c, v, hi) : NULL;
	return last ? ir_if(ctx, ts_and(ctx, first, last), fast, m) : NULL;
}

static ts_stmt *legal(ts_ctx *ctx, ts_stmt *s, void *data)
{
	int *gpu = data;
	bool thread = s->kind == IR_S_FOR && s->u.for_.kind == TS_FOR_THREAD;
	*gpu += thread;
	ts_stmt *m = ir_stmt_map_children(ctx, s, legal, NULL, data);
	*gpu -= thread;
	if (!m || m->kind != IR_S_FOR || m->u.for_.kind != TS_FOR_VECTORIZED)
		return m;
	int64_t ext;
	if (!ir_is_const_int(m->u.for_.extent, &ext) || ext > TS_MAX_VECTOR_LANES) {
		ts_error(ctx, TS_ERR_INVALID, "vectorize: loop %s needs a constant extent of at most %d lanes",
			 m->u.for_.var->u.var.name, TS_MAX_VECTOR_LANES);
		return NULL;
	}
	if (ext > 1 && straight_line(m->u.for_.body))
		return *gpu ? split_guard(ctx, m, ext) : m;
	return ir_for(ctx, m->u.for_.var, m->u.for_.min, m->u.for_.extent, TS_FOR_SERIAL,
		      TS_THREAD_NONE, m->u.for_.body);
}

ts_stmt *pass_vectorize_legal(ts_ctx *ctx, ts_stmt *s)
{
	int gpu = 0;
	return s ? legal(ctx, s, &gpu) : NULL;
}
