/*
 * ranges.c - a scoped stack of variable ranges for the emitters, and the
 * intervals of expressions over it (see ranges.h).
 *
 * Lookups walk the stack from the innermost entry: the first entry of a
 * variable decides, ranged or not.  ir_bound_of takes at most 16 ranges
 * per query, the variables of one expression, which an index or a value
 * never exceeds in practice; the others span their dtypes, which is
 * sound.
 */
#include "ranges.h"

#include <string.h>

bool cg_ranges_push(cg_ranges *rs, const void *key, ir_interval iv)
{
	if (rs->n == rs->cap) {
		int cap = rs->cap ? rs->cap * 2 : 32;
		cg_range *g = ts_alloc_array(rs->ctx, (size_t)cap, sizeof(*g));
		if (!g)
			return false;
		if (rs->n)
			memcpy(g, rs->r, (size_t)rs->n * sizeof(*g));
		rs->r = g;
		rs->cap = cap;
	}
	rs->r[rs->n++] = (cg_range){.key = key};
	cg_ranges_set(rs, key, iv);
	return true;
}

void cg_ranges_set(cg_ranges *rs, const void *key, ir_interval iv)
{
	for (int i = rs->n - 1; i >= 0; i--)
		if (rs->r[i].key == key) {
			bool ranged = cg_bounded(iv) && iv.min <= iv.max;
			rs->r[i] = (cg_range){key, ranged, iv.min, iv.max};
			return;
		}
}

void cg_ranges_pop(cg_ranges *rs, int mark)
{
	if (mark >= 0 && mark < rs->n)
		rs->n = mark;
}

typedef struct range_walk {
	const cg_ranges *rs;
	int n;
	ir_range r[16];
} range_walk;

static bool gather_range(ts_expr *e, void *data)
{
	range_walk *w = data;
	if (e->kind != IR_VAR || w->n == (int)TS_COUNT_OF(w->r))
		return true;
	for (int i = 0; i < w->n; i++)
		if (w->r[i].var == e)
			return true;
	for (int i = w->rs->n - 1; i >= 0; i--) {
		const cg_range *ne = &w->rs->r[i];
		if (ne->key != e)
			continue;
		int64_t ext;
		if (ne->ranged && !__builtin_sub_overflow(ne->hi, ne->lo, &ext) && ext < INT64_MAX)
			w->r[w->n++] = (ir_range){e, ne->lo, ext + 1};
		break;
	}
	return true;
}

ir_interval cg_ranges_bound(const cg_ranges *rs, const ts_expr *e)
{
	range_walk w = {.rs = rs};
	ir_expr_visit((ts_expr *)e, gather_range, &w);
	return ir_bound_of(e, w.n, w.r);
}

bool cg_bounded(ir_interval iv)
{
	return iv.min != IR_NEG_INF && iv.max != IR_POS_INF;
}

bool cg_ranges_fit(const cg_ranges *rs, const ts_expr *e)
{
	ts_dtype t = ts_dtype_element(e->dtype);
	ir_interval iv = cg_ranges_bound(rs, e);
	if (!ts_dtype_is_int(t) || t.bits >= 32)
		return cg_bounded(iv);
	/* below 32 bits ir_bound_of answers the whole dtype where the value
	 * might wrap (and where it spans the dtype exactly, which is taken
	 * for a wrap too) */
	int64_t lo = t.code == TS_TYPE_UINT ? 0 : -(INT64_C(1) << (t.bits - 1));
	int64_t hi = t.code == TS_TYPE_UINT ? (INT64_C(1) << t.bits) - 1 : (INT64_C(1) << (t.bits - 1)) - 1;
	return iv.min > lo || iv.max < hi;
}

ir_interval cg_loop_range(ir_interval min, int64_t ext_max)
{
	int64_t hi;
	if (cg_bounded(min) && ext_max != IR_POS_INF && !__builtin_add_overflow(min.max, ext_max - 1, &hi))
		return (ir_interval){min.min, hi};
	return (ir_interval){IR_NEG_INF, IR_POS_INF};
}

ir_interval cg_let_range(const ts_func *f, const ts_expr *v, ir_interval iv)
{
	for (int k = 0; k < f->nsizes; k++)
		if (f->size_vars[k] == v)
			iv = (ir_interval){1, f->size_max[k]};
	if (!ts_dtype_is_int(v->dtype))
		return (ir_interval){IR_NEG_INF, IR_POS_INF};
	return iv;
}
