/*
 * unroll.c - replace each UNROLLED loop by copies of its body.
 *
 * The loop must have constant bounds (the schedule checked the extent
 * against TS_MAX_UNROLL).  Inner loops are unrolled first, so nested
 * unrolled loops multiply out.  Each copy has the loop variable replaced by
 * its constant value; simplify then folds the indices.
 */
#include "passes.h"
#include "schedule.h"

static ts_stmt *unroll(ts_ctx *ctx, ts_stmt *s, void *data)
{
	ts_stmt *m = ir_stmt_map_children(ctx, s, unroll, NULL, data);
	if (!m || m->kind != IR_S_FOR || m->u.for_.kind != TS_FOR_UNROLLED)
		return m;
	int64_t lo, ext;
	if (!ir_is_const_int(m->u.for_.min, &lo) || !ir_is_const_int(m->u.for_.extent, &ext)) {
		ts_error(ctx, TS_ERR_INVALID, "unroll: loop %s has a non-constant extent",
			 m->u.for_.var->u.var.name);
		return NULL;
	}
	if (ext > TS_MAX_UNROLL) {
		ts_error(ctx, TS_ERR_INVALID, "unroll: loop %s has extent %lld, beyond the limit of %d",
			 m->u.for_.var->u.var.name, (long long)ext, TS_MAX_UNROLL);
		return NULL;
	}
	ts_stmt **copies = ts_alloc_array(ctx, (size_t)ext, sizeof(ts_stmt *));
	if (!copies)
		return NULL;
	for (int64_t i = 0; i < ext; i++) {
		ts_expr *val = ts_const(ctx, m->u.for_.var->dtype, lo + i);
		copies[i] = ir_stmt_substitute(ctx, m->u.for_.body, 1, &m->u.for_.var, &val);
		if (!copies[i])
			return NULL;
	}
	return ir_seq(ctx, (int)ext, copies);
}

ts_stmt *pass_unroll(ts_ctx *ctx, ts_stmt *s)
{
	return s ? unroll(ctx, s, NULL) : NULL;
}
