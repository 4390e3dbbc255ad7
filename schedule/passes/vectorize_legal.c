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
 */
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

static ts_stmt *legal(ts_ctx *ctx, ts_stmt *s, void *data)
{
	ts_stmt *m = ir_stmt_map_children(ctx, s, legal, NULL, data);
	if (!m || m->kind != IR_S_FOR || m->u.for_.kind != TS_FOR_VECTORIZED)
		return m;
	int64_t ext;
	if (!ir_is_const_int(m->u.for_.extent, &ext) || ext > TS_MAX_VECTOR_LANES) {
		ts_error(ctx, TS_ERR_INVALID, "vectorize: loop %s needs a constant extent of at most %d lanes",
			 m->u.for_.var->u.var.name, TS_MAX_VECTOR_LANES);
		return NULL;
	}
	if (ext > 1 && straight_line(m->u.for_.body))
		return m;
	return ir_for(ctx, m->u.for_.var, m->u.for_.min, m->u.for_.extent, TS_FOR_SERIAL,
		      TS_THREAD_NONE, m->u.for_.body);
}

ts_stmt *pass_vectorize_legal(ts_ctx *ctx, ts_stmt *s)
{
	return s ? legal(ctx, s, NULL) : NULL;
}
