/*
 * schedule.c - stages and the scheduling primitives.
 *
 * Primitives only record: a relation (split, fuse), an edit of the leaf
 * order (reorder), a loop attribute (vectorize, parallel, unroll, bind) or an
 * attachment (compute_at/inline/root).  Each checks every rule first and
 * changes nothing when one is broken, so a failed call leaves a usable
 * schedule behind.
 */
#include "schedule.h"

#include <string.h>

#include "lower.h"
#include "passes.h"
#include "printer.h"
#include "sbuf.h"
#include "te.h"

#define MAX_AXES 64 /* axes ever made in one stage */
#define MAX_STAGES 256

/* ---- helpers ---------------------------------------------------------------- */

static ts_ctx *sctx(ts_stage *st)
{
	return st->sch->ctx;
}

static ts_status fail(ts_stage *st, const char *prim, const char *fmt, const char *arg)
{
	char msg[512];
	snprintf(msg, sizeof(msg), fmt, arg ? arg : "");
	return ts_error(sctx(st), TS_ERR_INVALID, "%s(%s): %s", prim, st->name, msg);
}

static ts_axis *new_axis(ts_stage *st, const char *name, int64_t extent, ts_iter_kind kind,
			 ts_expr *var)
{
	ts_ctx *ctx = sctx(st);
	if (st->nall >= MAX_AXES) {
		ts_error(ctx, TS_ERR_INVALID,
			 "stage %s: more than %d axes (each split makes two, each fuse one)",
			 st->name, MAX_AXES);
		return NULL;
	}
	ts_axis *a = ts_alloc(ctx, sizeof(*a));
	if (!a)
		return NULL;
	a->name = ts_strdup(ctx, name);
	a->var = var ? var : ts_var(ctx, name);
	a->extent = extent;
	a->kind = kind;
	a->loop = TS_FOR_SERIAL;
	if (!a->name || !a->var)
		return NULL;
	st->all[st->nall++] = a;
	return a;
}

static int leaf_index(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->nleaf; i++)
		if (st->leaf[i] == a)
			return i;
	return -1;
}

static bool owns(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->nall; i++)
		if (st->all[i] == a)
			return true;
	return false;
}

/* Checks that axis is a leaf of st; reports under the primitive's name. */
/* An axis being split or fused carries no annotation: its new axes would
 * not (a tensorized axis split would lose its intrinsic, a vectorized one
 * its vectors), silently. */
static bool check_plain(ts_stage *st, const char *prim, const ts_axis *a)
{
	if (a->loop == TS_FOR_SERIAL)
		return true;
	char msg[200];
	snprintf(msg, sizeof(msg), "axis '%s' is %s; %s it before annotating it (the annotation would be lost)",
		 a->name, a->loop == TS_FOR_THREAD ? "bound to a thread" : ts_for_kind_name(a->loop), prim);
	fail(st, prim, "%s", msg);
	return false;
}

/* The refusal of a split's factor (or nparts) that is not positive; a
 * size-variable handle is named as such, not as its number. */
static ts_status bad_factor(ts_stage *st, const char *prim, const char *what, int64_t value)
{
	char msg[128];
	if (ts_is_size_var(value))
		snprintf(msg, sizeof(msg), "%s is a size variable (ts_size_var); it must be a constant", what);
	else
		snprintf(msg, sizeof(msg), "%s must be positive, got %lld", what, (long long)value);
	return fail(st, prim, "%s", msg);
}

static bool check_leaf(ts_stage *st, const char *prim, const ts_axis *a)
{
	if (!a) {
		fail(st, prim, "axis is NULL", NULL);
		return false;
	}
	if (!owns(st, a)) {
		fail(st, prim, "axis '%s' does not belong to this stage", a->name);
		return false;
	}
	if (leaf_index(st, a) < 0) {
		fail(st, prim, "axis '%s' is no longer a leaf (it was split or fused)", a->name);
		return false;
	}
	return true;
}

/* A NULL stage has no context to report in: the status alone says it. */
/* A NULL stage; reported when another argument gives a context. */
/* check_leaf for the axis of another stage (parent) that st is placed at:
 * the messages name st, the primitive's subject, and parent. */
static bool check_target_leaf(ts_stage *st, ts_stage *parent, const char *prim, const ts_axis *a)
{
	char msg[400];
	if (!a)
		snprintf(msg, sizeof(msg), "axis is NULL (a leaf axis of %s is needed)", parent->name);
	else if (!owns(parent, a))
		snprintf(msg, sizeof(msg), "axis '%s' is not an axis of %s", a->name, parent->name);
	else if (leaf_index(parent, a) < 0)
		snprintf(msg, sizeof(msg), "axis '%s' of %s is no longer a leaf (it was split or fused)",
			 a->name, parent->name);
	else
		return true;
	fail(st, prim, "%s", msg);
	return false;
}

static bool check_stage(ts_ctx *ctx, const ts_stage *st, const char *prim)
{
	if (!st && ctx)
		ts_error(ctx, TS_ERR_INVALID, "%s: stage is NULL", prim);
	return st != NULL;
}

static bool check_tail(ts_stage *st, const char *prim, ts_tail tail)
{
	if (tail == TS_TAIL_GUARD || tail == TS_TAIL_PARTITION)
		return true;
	char msg[64];
	snprintf(msg, sizeof(msg), "unknown tail strategy %d", (int)tail);
	fail(st, prim, "%s", msg);
	return false;
}

static bool valid_scope(ts_scope scope)
{
	return scope == TS_SCOPE_GLOBAL || scope == TS_SCOPE_SHARED || scope == TS_SCOPE_LOCAL;
}

/* ---- creating a schedule ----------------------------------------------------- */

static ts_stage *new_stage(ts_schedule *s, ts_tensor *t, ts_expr *body)
{
	ts_ctx *ctx = s->ctx;
	ts_stage *st = ts_alloc(ctx, sizeof(*st));
	if (!st)
		return NULL;
	st->sch = s;
	st->tensor = t;
	st->name = t->name;
	st->body = body;
	st->all = ts_alloc_array(ctx, MAX_AXES, sizeof(ts_axis *));
	st->leaf = ts_alloc_array(ctx, MAX_AXES, sizeof(ts_axis *));
	st->root = ts_alloc_array(ctx, MAX_AXES, sizeof(ts_axis *));
	st->caprel = MAX_AXES;
	st->rel = ts_alloc_array(ctx, MAX_AXES, sizeof(sch_relation));
	if (!st->all || !st->leaf || !st->root || !st->rel)
		return NULL;
	st->attach = SCH_ATTACH_ROOT;
	st->scope = TS_SCOPE_GLOBAL;
	for (int i = 0; i < t->ndim; i++) {
		ts_iter *it = t->axis[i];
		ts_axis *a = new_axis(st, it->var->u.var.name, it->extent, TS_ITER_DATA, it->var);
		if (!a)
			return NULL;
		a->root = it;
		st->root[st->nroot++] = st->leaf[st->nleaf++] = a;
	}
	if (body && body->kind == IR_REDUCE) {
		for (int i = 0; i < body->u.reduce.naxes; i++) {
			ts_iter *it = body->u.reduce.axes[i];
			ts_axis *a = new_axis(st, it->var->u.var.name, it->extent, TS_ITER_REDUCE,
					      it->var);
			if (!a)
				return NULL;
			a->root = it;
			st->root[st->nroot++] = st->leaf[st->nleaf++] = a;
		}
	}
	return st;
}

static ts_status add_stage(ts_schedule *s, ts_stage *st, int at)
{
	if (s->nstages >= s->capstages)
		return ts_error(s->ctx, TS_ERR_INVALID, "schedule: more than %d stages", MAX_STAGES);
	memmove(&s->stages[at + 1], &s->stages[at],
		(size_t)(s->nstages - at) * sizeof(ts_stage *));
	s->stages[at] = st;
	s->nstages++;
	return TS_OK;
}

ts_stage *sch_stage_new(ts_schedule *s, ts_tensor *t, int at)
{
	if (!s)
		return NULL;
	if (!t || t->op != TS_OP_COMPUTE || at < 0 || at > s->nstages) {
		ts_error(s->ctx, TS_ERR_INVALID, "stage_new: %s", !t ? "tensor is NULL"
			 : t->op != TS_OP_COMPUTE ? "a placeholder has no stage" : "position out of range");
		return NULL;
	}
	ts_stage *st = new_stage(s, t, t->body);
	return st && add_stage(s, st, at) == TS_OK ? st : NULL;
}

ts_axis *sch_axis_new(ts_stage *st, const char *name, int64_t extent, ts_iter_kind kind,
		      ts_expr *var)
{
	if (!st)
		return NULL;
	if (!name || extent < 1 || (kind != TS_ITER_DATA && kind != TS_ITER_REDUCE)) {
		ts_error(sctx(st), TS_ERR_INVALID, "axis_new(%s): %s", st->name, !name ? "name is NULL"
			 : extent < 1 ? "extent must be positive" : "unknown axis kind");
		return NULL;
	}
	return new_axis(st, name, extent, kind, var);
}

ts_expr *sch_root_size_var(const ts_stage *st, int r)
{
	if (!st || r < 0 || r >= st->nroot)
		return NULL;
	const ts_axis *a = st->root[r];
	if (a->kind == TS_ITER_DATA)
		return st->tensor->dim_var[r];
	return a->root ? a->root->extent_var : NULL;
}

ts_schedule *ts_create_schedule(ts_ctx *ctx, int n, ts_tensor *const *outputs)
{
	if (!ctx)
		return NULL;
	if (n < 1 || n > MAX_STAGES || !outputs) {
		ts_error(ctx, TS_ERR_INVALID, "create_schedule: needs 1 to %d outputs (got %d%s)",
			 MAX_STAGES, n, outputs ? "" : ", NULL list");
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		if (!outputs[i] || outputs[i]->op != TS_OP_COMPUTE) {
			ts_error(ctx, TS_ERR_INVALID, "create_schedule: output %d is %s", i,
				 outputs[i] ? "a placeholder, not a compute" : "NULL");
			return NULL;
		}
		if (outputs[i]->ctx && outputs[i]->ctx != ctx) {
			ts_error(ctx, TS_ERR_INVALID,
				 "create_schedule: output %d (%s) belongs to another context", i,
				 outputs[i]->name);
			return NULL;
		}
	}
	ts_schedule *s = ts_alloc(ctx, sizeof(*s));
	ts_tensor **order = ts_alloc_array(ctx, MAX_STAGES, sizeof(ts_tensor *));
	if (!s || !order)
		return NULL;
	s->ctx = ctx;
	s->nout = n;
	s->outputs = ts_alloc_array(ctx, (size_t)n, sizeof(ts_tensor *));
	s->capstages = MAX_STAGES;
	s->stages = ts_alloc_array(ctx, MAX_STAGES, sizeof(ts_stage *));
	if (!s->outputs || !s->stages)
		return NULL;
	memcpy(s->outputs, outputs, (size_t)n * sizeof(ts_tensor *));
	int m = ts_graph_topo(n, outputs, order, MAX_STAGES);
	if (m < 0) {
		ts_error(ctx, TS_ERR_NOMEM, "create_schedule: out of memory ordering the tensors");
		return NULL;
	}
	if (m > MAX_STAGES) {
		ts_error(ctx, TS_ERR_INVALID, "create_schedule: more than %d tensors", MAX_STAGES);
		return NULL;
	}
	for (int i = 0; i < m; i++) {
		if (order[i]->op != TS_OP_COMPUTE)
			continue;
		ts_stage *st = new_stage(s, order[i], order[i]->body);
		if (!st || add_stage(s, st, s->nstages) != TS_OK)
			return NULL;
		for (int j = 0; j < n; j++)
			st->is_output |= outputs[j] == order[i];
	}
	/* the starting nest, so that the first primitive has one to differ from */
	sch_step(s, "create_schedule(%s%s)", outputs[0]->name, n > 1 ? ", ..." : "");
	return s;
}

/* t's stage in s, or NULL (the callers say why, each naming itself). */
static ts_stage *find_stage(const ts_schedule *s, const ts_tensor *t)
{
	for (int i = 0; i < s->nstages; i++)
		if (s->stages[i]->tensor == t)
			return s->stages[i];
	return NULL;
}

ts_stage *ts_stage_of(ts_schedule *s, const ts_tensor *t)
{
	if (!s)
		return NULL;
	if (!t) {
		ts_error(s->ctx, TS_ERR_INVALID, "stage_of: tensor is NULL");
		return NULL;
	}
	ts_stage *st = find_stage(s, t);
	if (st)
		return st;
	ts_error(s->ctx, TS_ERR_INVALID,
		 "stage_of: tensor %s has no stage in this schedule (a placeholder, or not reached from the outputs)",
		 t->name);
	return NULL;
}

static ts_axis *nth_root(ts_stage *st, int i, ts_iter_kind kind)
{
	if (!st)
		return NULL;
	int seen = 0;
	for (int r = 0; r < st->nroot; r++) {
		if (st->root[r]->kind != kind)
			continue;
		if (seen++ == i)
			return st->root[r];
	}
	ts_error(sctx(st), TS_ERR_INVALID, "%s(%s): stage %s has no %s axis %d",
		 kind == TS_ITER_DATA ? "axis_of" : "reduce_axis_of", st->name, st->name,
		 kind == TS_ITER_DATA ? "data" : "reduction", i);
	return NULL;
}

ts_axis *ts_axis_of(ts_stage *st, int i)
{
	return nth_root(st, i, TS_ITER_DATA);
}

ts_axis *ts_reduce_axis_of(ts_stage *st, int i)
{
	return nth_root(st, i, TS_ITER_REDUCE);
}

/* The step header of a primitive that takes a list of axes. */
static void step_axes(ts_stage *st, const char *prim, int n, ts_axis *const *axes)
{
	if (ts_ctx_print_steps(sctx(st)) == TS_PRINT_STEPS_OFF)
		return;
	char list[400] = "";
	size_t len = 0;
	for (int i = 0; i < n && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, ", %s", axes[i]->name);
	sch_step(st->sch, "%s(%s%s)", prim, st->name, list);
}

/* ---- split, tile, fuse, reorder ------------------------------------------------ */

/* Lowering clamps the given part of a split to the extent e and loops over
 * c * ceil(e / c) points; the tail guard compares indices below that span,
 * so it must be an int64. */
static bool split_span_overflows(int64_t e, int64_t value)
{
	int64_t c = value < e ? value : e, span;
	return __builtin_mul_overflow(c, e / c + (e % c != 0), &span);
}

static ts_status split(ts_stage *st, ts_axis *parent, int64_t value, bool by_factor,
		       ts_tail tail, ts_axis **outer, ts_axis **inner)
{
	if (!check_stage(st ? sctx(st) : NULL, st, "split") || !check_leaf(st, "split", parent))
		return TS_ERR_INVALID;
	if (!outer || !inner)
		return fail(st, "split", "%s is NULL (where the new axes go)", !outer ? "outer" : "inner");
	if (!check_tail(st, "split", tail) || !check_plain(st, "split", parent))
		return TS_ERR_INVALID;
	if (value <= 0)
		return bad_factor(st, "split", by_factor ? "factor" : "nparts", value);
	int64_t e = parent->extent;
	int64_t q = e / value + (e % value != 0); /* ceil(e / value) without overflow */
	int64_t oe = by_factor ? q : value;
	int64_t ie = by_factor ? value : q;
	if (split_span_overflows(e, value)) {
		char msg[300];
		snprintf(msg, sizeof(msg),
			 "axis '%s' of extent %lld split by %lld rounds up past INT64_MAX (overflows int64)",
			 parent->name, (long long)e, (long long)value);
		return fail(st, "split", "%s", msg);
	}
	char name[256];
	snprintf(name, sizeof(name), "%s.outer", parent->name);
	ts_axis *o = new_axis(st, name, oe, parent->kind, NULL);
	snprintf(name, sizeof(name), "%s.inner", parent->name);
	ts_axis *in = o ? new_axis(st, name, ie, parent->kind, NULL) : NULL;
	if (!in)
		return ts_last_status(sctx(st));
	sch_relation *r = &st->rel[st->nrel++];
	*r = (sch_relation){.kind = SCH_REL_SPLIT, .parent = parent, .outer = o, .inner = in,
			    .factor = by_factor ? value : 0, .nparts = by_factor ? 0 : value,
			    .tail = tail};
	int at = leaf_index(st, parent);
	memmove(&st->leaf[at + 2], &st->leaf[at + 1], (size_t)(st->nleaf - at - 1) * sizeof(ts_axis *));
	st->leaf[at] = o;
	st->leaf[at + 1] = in;
	st->nleaf++;
	*outer = o;
	*inner = in;
	sch_step(st->sch, "split(%s, %s, %s=%lld%s)", st->name, parent->name,
		 by_factor ? "factor" : "nparts", (long long)value,
		 tail == TS_TAIL_PARTITION ? ", tail=partition" : "");
	return TS_OK;
}

ts_status ts_split(ts_stage *st, ts_axis *parent, int64_t factor, ts_axis **outer,
		   ts_axis **inner)
{
	return split(st, parent, factor, true, TS_TAIL_GUARD, outer, inner);
}

ts_status ts_split_tail(ts_stage *st, ts_axis *parent, int64_t factor, ts_tail tail,
			ts_axis **outer, ts_axis **inner)
{
	return split(st, parent, factor, true, tail, outer, inner);
}

ts_status ts_split_nparts(ts_stage *st, ts_axis *parent, int64_t nparts, ts_axis **outer,
			  ts_axis **inner)
{
	return split(st, parent, nparts, false, TS_TAIL_GUARD, outer, inner);
}

ts_status ts_set_tail(ts_stage *st, ts_axis *axis, ts_tail tail)
{
	if (!check_stage(st ? sctx(st) : NULL, st, "set_tail"))
		return TS_ERR_INVALID;
	if (!axis)
		return fail(st, "set_tail", "axis is NULL", NULL);
	if (!check_tail(st, "set_tail", tail))
		return TS_ERR_INVALID;
	for (int i = 0; i < st->nrel; i++) {
		sch_relation *r = &st->rel[i];
		if (r->kind == SCH_REL_SPLIT && (r->outer == axis || r->inner == axis)) {
			r->tail = tail;
			sch_step(st->sch, "set_tail(%s, %s, %s)", st->name, axis->name,
				 tail == TS_TAIL_PARTITION ? "partition" : "guard");
			return TS_OK;
		}
	}
	return fail(st, "set_tail", "axis '%s' was not made by a split", axis ? axis->name : "?");
}

ts_status ts_tile(ts_stage *st, ts_axis *x, ts_axis *y, int64_t fx, int64_t fy,
		  ts_axis **xo, ts_axis **yo, ts_axis **xi, ts_axis **yi)
{
	ts_axis *a, *b, *c, *d;
	if (!st)
		return TS_ERR_INVALID;
	if (!check_leaf(st, "tile", x) || !check_leaf(st, "tile", y))
		return TS_ERR_INVALID;
	if (!xo || !yo || !xi || !yi)
		return fail(st, "tile", "%s is NULL (where the new axes go)",
			    !xo ? "xo" : !yo ? "yo" : !xi ? "xi" : "yi");
	if (fx <= 0 || fy <= 0)
		return bad_factor(st, "tile", "factor", fx <= 0 ? fx : fy);
	if (x == y)
		return fail(st, "tile", "axis '%s' given twice", x->name);
	/* everything the two splits could refuse, checked before the first
	 * changes the schedule (a refused second split left the first) */
	if (!check_plain(st, "tile", x) || !check_plain(st, "tile", y))
		return TS_ERR_INVALID;
	for (int k = 0; k < 2; k++) {
		const ts_axis *a = k ? y : x;
		int64_t f = k ? fy : fx;
		if (split_span_overflows(a->extent, f)) {
			char msg[300];
			snprintf(msg, sizeof(msg), "axis '%s' of extent %lld split by %lld rounds up past "
				 "INT64_MAX (overflows int64)", a->name, (long long)a->extent, (long long)f);
			return fail(st, "tile", "%s", msg);
		}
	}
	if (st->nall + 4 > MAX_AXES) {
		char msg[300];
		snprintf(msg, sizeof(msg), "stage %s would have more than %d axes (each split makes two, "
			 "each fuse one)", st->name, MAX_AXES);
		return fail(st, "tile", "%s", msg);
	}
	st->sch->step_quiet++; /* one step for the whole tile */
	ts_status r = ts_split(st, x, fx, &a, &c);
	if (r == TS_OK)
		r = ts_split(st, y, fy, &b, &d);
	if (r == TS_OK)
		r = ts_reorder(st, 4, (ts_axis *[]){a, b, c, d});
	st->sch->step_quiet--;
	if (r != TS_OK)
		return r;
	*xo = a, *yo = b, *xi = c, *yi = d;
	sch_step(st->sch, "tile(%s, %s, %s, %lld, %lld)", st->name, x->name, y->name, (long long)fx,
		 (long long)fy);
	return TS_OK;
}

ts_status ts_fuse(ts_stage *st, ts_axis *outer, ts_axis *inner, ts_axis **fused)
{
	if (!check_stage(st ? sctx(st) : NULL, st, "fuse") || !check_leaf(st, "fuse", outer) ||
	    !check_leaf(st, "fuse", inner))
		return TS_ERR_INVALID;
	if (!fused)
		return fail(st, "fuse", "fused is NULL (where the new axis goes)", NULL);
	if (!check_plain(st, "fuse", outer) || !check_plain(st, "fuse", inner))
		return TS_ERR_INVALID;
	if (outer == inner)
		return fail(st, "fuse", "outer and inner are the same axis ('%s')", outer->name);
	int io = leaf_index(st, outer), ii = leaf_index(st, inner);
	if (ii != io + 1) {
		char msg[300];
		snprintf(msg, sizeof(msg), "axes '%s' and '%s' are not adjacent (outer must come right before inner)",
			 outer->name, inner->name);
		return fail(st, "fuse", "%s", msg);
	}
	if (outer->kind != inner->kind)
		return fail(st, "fuse", "cannot fuse a data-parallel axis with a reduction axis ('%s')",
			    outer->kind == TS_ITER_REDUCE ? outer->name : inner->name);
	char name[300];
	snprintf(name, sizeof(name), "%s.%s.fused", outer->name, inner->name);
	int64_t extent;
	if (__builtin_mul_overflow(outer->extent, inner->extent, &extent)) {
		char msg[400];
		snprintf(msg, sizeof(msg), "extent of '%s' (%lld x %lld) overflows int64", name,
			 (long long)outer->extent, (long long)inner->extent);
		return fail(st, "fuse", "%s", msg);
	}
	ts_axis *f = new_axis(st, name, extent, outer->kind, NULL);
	if (!f)
		return ts_last_status(sctx(st));
	sch_relation *r = &st->rel[st->nrel++];
	*r = (sch_relation){.kind = SCH_REL_FUSE, .outer = outer, .inner = inner, .fused = f};
	st->leaf[io] = f;
	memmove(&st->leaf[ii], &st->leaf[ii + 1], (size_t)(st->nleaf - ii - 1) * sizeof(ts_axis *));
	st->nleaf--;
	*fused = f;
	sch_step(st->sch, "fuse(%s, %s, %s)", st->name, outer->name, inner->name);
	return TS_OK;
}

ts_status ts_reorder(ts_stage *st, int n, ts_axis *const *order)
{
	if (!check_stage(st ? sctx(st) : NULL, st, "reorder"))
		return TS_ERR_INVALID;
	int pos[MAX_AXES];
	if (n < 1 || n > st->nleaf)
		return fail(st, "reorder", "needs between 1 and the number of leaf axes", NULL);
	if (!order)
		return fail(st, "reorder", "the axis list is NULL", NULL);
	for (int i = 0; i < n; i++) {
		if (!check_leaf(st, "reorder", order[i]))
			return TS_ERR_INVALID;
		for (int j = 0; j < i; j++)
			if (order[j] == order[i])
				return fail(st, "reorder", "axis '%s' appears twice", order[i]->name);
		pos[i] = leaf_index(st, order[i]);
	}
	/* the named axes keep their set of positions, filled in the new order */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && pos[j - 1] > pos[j]; j--) {
			int t = pos[j];
			pos[j] = pos[j - 1];
			pos[j - 1] = t;
		}
	for (int i = 0; i < n; i++)
		st->leaf[pos[i]] = order[i];
	step_axes(st, "reorder", n, order);
	return TS_OK;
}

/* ---- loop attributes ------------------------------------------------------------ */

static ts_status set_loop(ts_stage *st, const char *prim, ts_axis *a, ts_for_kind k)
{
	if (!check_stage(st ? sctx(st) : NULL, st, prim) || !check_leaf(st, prim, a))
		return TS_ERR_INVALID;
	if (a->loop != TS_FOR_SERIAL && a->loop != k)
		return fail(st, prim, "axis '%s' is already marked with another loop kind", a->name);
	for (int i = 0; i < st->nleaf && st->leaf[i] != a; i++)
		if (st->leaf[i]->loop == TS_FOR_TENSORIZED) {
			char msg[300];
			snprintf(msg, sizeof(msg), "axis '%s' is inside the nest tensorized at '%s', whose "
				 "loops stay plain", a->name, st->leaf[i]->name);
			return fail(st, prim, "%s", msg);
		}
	a->loop = k;
	if (k != TS_FOR_THREAD && k != TS_FOR_TENSORIZED) /* they print their tag or intrinsic */
		sch_step(st->sch, "%s(%s, %s)", prim, st->name, a->name);
	return TS_OK;
}

ts_status ts_vectorize(ts_stage *st, ts_axis *a)
{
	if (st && a && owns(st, a) && a->kind == TS_ITER_REDUCE)
		return fail(st, "vectorize", "axis '%s' is a reduction axis", a->name);
	/* a stage computed at another has its domain fixed only at lowering,
	 * where vectorize_legal checks the limit again */
	if (st && a && owns(st, a) && st->attach != SCH_ATTACH_AT && a->extent > TS_MAX_VECTOR_LANES) {
		char msg[200];
		snprintf(msg, sizeof(msg), "extent %lld of axis '%s' exceeds the limit of %d lanes",
			 (long long)a->extent, a->name, TS_MAX_VECTOR_LANES);
		return fail(st, "vectorize", "%s", msg);
	}
	return set_loop(st, "vectorize", a, TS_FOR_VECTORIZED);
}

ts_status ts_parallel(ts_stage *st, ts_axis *a)
{
	if (st && a && owns(st, a) && a->kind == TS_ITER_REDUCE)
		return fail(st, "parallel", "axis '%s' is a reduction axis", a->name);
	return set_loop(st, "parallel", a, TS_FOR_PARALLEL);
}

/* Nested unrolled loops multiply: refuses a when it and the stage's other
 * unrolled leaves would copy the body more than TS_MAX_UNROLL_STMTS times.
 * The unroll pass checks again with the extents lowering gives. */
static ts_status check_unroll_product(ts_stage *st, const ts_axis *a)
{
	int64_t copies = a->extent;
	ts_sbuf with = {0};
	for (int i = 0; i < st->nleaf; i++) {
		const ts_axis *o = st->leaf[i];
		if (o == a || o->loop != TS_FOR_UNROLLED)
			continue;
		if (o->extent > 0)
			copies = copies > INT64_MAX / o->extent ? INT64_MAX : copies * o->extent;
		ts_sb_printf(&with, "%s'%s'", with.len ? ", " : "", o->name);
	}
	ts_status r = TS_OK;
	if (copies > TS_MAX_UNROLL_STMTS) {
		char msg[400];
		snprintf(msg, sizeof(msg), "unrolling '%s' with %s would make %lld copies of the body (limit %d)",
			 a->name, with.oom ? "?" : ts_sb_str(&with), (long long)copies,
			 TS_MAX_UNROLL_STMTS);
		r = fail(st, "unroll", "%s", msg);
	}
	ts_sb_free(&with);
	return r;
}

/* Whether st reads t, directly or through stages computed inline into it
 * (an epilogue's residual, read by the stage the chain is inlined into);
 * depth bounds the walk (a schedule's stages form no cycle). */
static bool stage_reads(const ts_stage *st, const ts_tensor *t)
{
	return ir_expr_reads(st->body, t);
}

static bool reads_through_inline(const ts_stage *st, const ts_tensor *t, int depth)
{
	if (stage_reads(st, t))
		return true;
	for (int i = 0; depth > 0 && i < st->tensor->ninputs; i++)
		for (int j = 0; j < st->sch->nstages; j++) {
			const ts_stage *in = st->sch->stages[j];
			if (in->tensor == st->tensor->inputs[i] && in->attach == SCH_ATTACH_INLINE &&
			    reads_through_inline(in, t, depth - 1))
				return true;
		}
	return false;
}

/* Whether axis `ahead` belongs to st or to a stage of st's schedule. */
static bool known_axis(const ts_stage *st, const ts_axis *ahead)
{
	for (int i = 0; i < st->sch->nstages; i++)
		if (owns(st->sch->stages[i], ahead))
			return true;
	return false;
}

ts_status ts_prefetch_ahead(ts_stage *st, ts_tensor *t, ts_axis *axis, ts_axis *ahead,
			    int64_t offset)
{
	if (!check_stage(t ? t->ctx : NULL, st, "prefetch") || !check_leaf(st, "prefetch", axis))
		return TS_ERR_INVALID;
	if (!t)
		return fail(st, "prefetch", "tensor is NULL", NULL);
	if (t->op != TS_OP_PLACEHOLDER)
		return fail(st, "prefetch", "%s is computed here; only inputs (placeholders) are prefetched",
			    t->name);
	if (!reads_through_inline(st, t, st->sch->nstages))
		return fail(st, "prefetch", "the stage does not read %s, directly or through stages "
			    "computed inline into it", t->name);
	for (int d = 0; d < t->ndim; d++)
		if (t->dim_var[d])
			return fail(st, "prefetch", "%s has a symbolic extent; its region would be clipped to "
				    "the bound, past the array a call passes", t->name);
	if (!ahead)
		return fail(st, "prefetch", "the axis the offset applies to is NULL", NULL);
	if (!known_axis(st, ahead))
		return fail(st, "prefetch", "axis '%s' belongs to no stage of this schedule", ahead->name);
	if (offset == 0 || offset < -INT32_MAX || offset > INT32_MAX) {
		char msg[96];
		snprintf(msg, sizeof(msg), "offset %lld: it must be nonzero and at most 2^31 - 1 in "
			 "magnitude", (long long)offset);
		return fail(st, "prefetch", "%s", msg);
	}
	if (st->nprefetch >= TS_MAX_PREFETCH) {
		char msg[64];
		snprintf(msg, sizeof(msg), "more than %d prefetches", TS_MAX_PREFETCH);
		return fail(st, "prefetch", "%s", msg);
	}
	st->prefetch[st->nprefetch++] = (sch_prefetch){t, axis, ahead, offset};
	if (ahead == axis)
		sch_step(st->sch, "prefetch(%s, %s, %s, %lld)", st->name, t->name, axis->name,
			 (long long)offset);
	else
		sch_step(st->sch, "prefetch_ahead(%s, %s, %s, %s, %lld)", st->name, t->name,
			 axis->name, ahead->name, (long long)offset);
	return TS_OK;
}

ts_status ts_storage_align(ts_stage *st, int dim, int64_t factor, int64_t offset)
{
	if (!check_stage(NULL, st, "storage_align"))
		return TS_ERR_INVALID;
	char msg[160];
	if (st->is_output)
		return fail(st, "storage_align", "%s is an output: its layout is the caller's", st->name);
	if (st->tensor->ndim < 2)
		return fail(st, "storage_align", "%s has fewer than two dimensions: no stride to pad (the last "
			    "dimension's stride is 1)", st->name);
	if (dim < 0 || dim > st->tensor->ndim - 2) {
		snprintf(msg, sizeof(msg), "dimension %d: give 0 to %d (the last dimension's stride is 1)",
			 dim, st->tensor->ndim - 2);
		return fail(st, "storage_align", "%s", msg);
	}
	if (factor < 1 || factor > (1 << 20) || offset < 0 || offset >= factor) {
		snprintf(msg, sizeof(msg), "factor %lld and offset %lld: needs 1 <= factor <= 2^20 and "
			 "0 <= offset < factor", (long long)factor, (long long)offset);
		return fail(st, "storage_align", "%s", msg);
	}
	st->align_factor[dim] = factor;
	st->align_offset[dim] = offset;
	sch_step(st->sch, "storage_align(%s, %d, %lld, %lld)", st->name, dim, (long long)factor,
		 (long long)offset);
	return TS_OK;
}

ts_status ts_double_buffer(ts_stage *st)
{
	if (!check_stage(NULL, st, "double_buffer"))
		return TS_ERR_INVALID;
	if (st->is_output)
		return fail(st, "double_buffer", "%s is an output: its buffer is the caller's",
			    st->name);
	st->double_buffer = true;
	sch_step(st->sch, "double_buffer(%s)", st->name);
	return TS_OK;
}

ts_status ts_prefetch(ts_stage *st, ts_tensor *t, ts_axis *axis, int64_t offset)
{
	return ts_prefetch_ahead(st, t, axis, axis, offset);
}

ts_status ts_unroll(ts_stage *st, ts_axis *a)
{
	if (st && a && owns(st, a) && st->attach != SCH_ATTACH_AT && a->extent > TS_MAX_UNROLL) {
		char msg[200];
		snprintf(msg, sizeof(msg), "extent %lld of axis '%s' exceeds the unroll limit of %d",
			 (long long)a->extent, a->name, TS_MAX_UNROLL);
		return fail(st, "unroll", "%s", msg);
	}
	if (st && a && owns(st, a) && st->attach != SCH_ATTACH_AT &&
	    check_unroll_product(st, a) != TS_OK)
		return TS_ERR_INVALID;
	return set_loop(st, "unroll", a, TS_FOR_UNROLLED);
}

ts_status ts_bind(ts_stage *st, ts_axis *a, ts_thread_tag tag)
{
	if (!check_stage(st ? sctx(st) : NULL, st, "bind") || !check_leaf(st, "bind", a))
		return TS_ERR_INVALID;
	if (tag < TS_BLOCK_X || tag > TS_THREAD_Z)
		return fail(st, "bind", "invalid thread tag for axis '%s'", a->name);
	if (a->kind == TS_ITER_REDUCE)
		return fail(st, "bind", "axis '%s' is a reduction axis", a->name);
	for (int i = 0; i < st->nleaf; i++) {
		ts_axis *o = st->leaf[i];
		if (o != a && o->loop == TS_FOR_THREAD && o->thread == tag) {
			char msg[300];
			snprintf(msg, sizeof(msg), "%s is already bound to axis '%s'",
				 ts_thread_tag_name(tag), o->name);
			return fail(st, "bind", "%s", msg);
		}
	}
	ts_status r = set_loop(st, "bind", a, TS_FOR_THREAD);
	if (r == TS_OK) {
		a->thread = tag;
		sch_step(st->sch, "bind(%s, %s, %s)", st->name, a->name, ts_thread_tag_name(tag));
	}
	return r;
}

ts_status ts_tensorize(ts_stage *st, ts_axis *a, ts_intrin intrin)
{
	if (!check_stage(st ? sctx(st) : NULL, st, "tensorize") || !check_leaf(st, "tensorize", a))
		return TS_ERR_INVALID;
	if (intrin != TS_INTRIN_MMA_16X16X16)
		return fail(st, "tensorize", "unknown intrinsic (give TS_INTRIN_MMA_16X16X16)", NULL);
	int pos = leaf_index(st, a), n = st->nleaf - pos;
	char msg[300];
	if (n != 2 && n != 3) {
		snprintf(msg, sizeof(msg), "the nest from '%s' has %d loops; the MMA takes 3 (16 x 16 "
			 "x 16: two data axes and a reduction, innermost) or 2 (16 x 16: the "
			 "accumulator's tile stored or filled)", a->name, n);
		return fail(st, "tensorize", "%s", msg);
	}
	for (int i = pos; i < st->nleaf; i++) {
		const ts_axis *o = st->leaf[i];
		/* a stage computed at another has its extents fixed only at
		 * lowering; the cuda target checks them then */
		if (o->extent != 16 && st->attach != SCH_ATTACH_AT) {
			snprintf(msg, sizeof(msg), "loop '%s' has extent %lld; every loop of the MMA's "
				 "nest has 16 (split by 16 first)", o->name, (long long)o->extent);
			return fail(st, "tensorize", "%s", msg);
		}
		if (i > pos && o->loop != TS_FOR_SERIAL) {
			snprintf(msg, sizeof(msg), "loop '%s' inside '%s' is %s; the MMA's nest stays "
				 "plain loops", o->name, a->name, ts_for_kind_name(o->loop));
			return fail(st, "tensorize", "%s", msg);
		}
	}
	if (a->kind == TS_ITER_REDUCE)
		return fail(st, "tensorize", "axis '%s' is a reduction axis; give the outermost data axis of the 16 x 16 x 16 nest", a->name);
	ts_status r = set_loop(st, "tensorize", a, TS_FOR_TENSORIZED);
	if (r == TS_OK)
		sch_step(st->sch, "tensorize(%s, %s, mma_16x16x16)", st->name, a->name);
	return r;
}

bool sch_stage_untouched(const ts_stage *st)
{
	if (!st)
		return false;
	bool same = st->nrel == 0 && st->attach == SCH_ATTACH_ROOT && st->nleaf == st->nroot;
	for (int i = 0; same && i < st->nleaf; i++)
		same = st->leaf[i] == st->root[i] && st->leaf[i]->loop == TS_FOR_SERIAL;
	return same;
}

/* ---- attachment -------------------------------------------------------------------- */

/* Does st read t, directly or through the stages it reads?  seen[] marks
 * the stages already walked (the schedule is a DAG, so each once). */
static bool depends_on(const ts_stage *st, const ts_tensor *t, bool *seen)
{
	ts_schedule *s = st->sch;
	if (stage_reads(st, t))
		return true;
	for (int i = 0; i < s->nstages; i++) {
		ts_stage *p = s->stages[i];
		if (p == st || seen[i] || !stage_reads(st, p->tensor))
			continue;
		seen[i] = true;
		if (depends_on(p, t, seen))
			return true;
	}
	return false;
}

ts_tensor **sch_tensors(ts_schedule *s, int *n)
{
	if (!s || !n) {
		if (s)
			ts_error(s->ctx, TS_ERR_INVALID, "schedule: sch_tensors needs a count to fill");
		return NULL;
	}
	/* create_schedule counted at most MAX_STAGES tensors, but the stages
	 * cache_read, cache_write and rfactor add since come on top: no fixed
	 * table holds them all */
	int m = ts_graph_topo(s->nout, s->outputs, NULL, 0);
	ts_tensor **order = m >= 0 ? ts_alloc_array(s->ctx, (size_t)m + 1, sizeof(*order)) : NULL;
	if (!order || ts_graph_topo(s->nout, s->outputs, order, m) != m) {
		ts_error(s->ctx, TS_ERR_NOMEM, "schedule: out of memory ordering the tensors");
		return NULL;
	}
	*n = m;
	return order;
}

int sch_consumers(ts_schedule *s, const ts_tensor *t, ts_stage **out, int max)
{
	int n = 0;
	if (!s || (max > 0 && !out))
		return -1;
	if (!t)
		return 0;
	for (int i = 0; i < s->nstages; i++)
		if (stage_reads(s->stages[i], t)) {
			if (n < max)
				out[n] = s->stages[i];
			n++;
		}
	return n;
}

ts_status ts_compute_at(ts_stage *st, ts_stage *parent, ts_axis *axis)
{
	/* a NULL stage is reported in the target's context when there is one */
	if (!check_stage(st ? sctx(st) : parent ? sctx(parent) : NULL, st, "compute_at"))
		return TS_ERR_INVALID;
	if (!parent)
		return fail(st, "compute_at", "target stage is NULL", NULL);
	if (parent->sch != st->sch)
		return fail(st, "compute_at", "stage %s belongs to another schedule", parent->name);
	if (st->is_output)
		return fail(st, "compute_at", "%s is an output of the schedule and must be computed at root",
			    st->name);
	if (parent == st)
		return fail(st, "compute_at", "a stage cannot be computed inside itself", NULL);
	/* any consumer of st, direct or not (TVM and Halide allow attaching
	 * into a consumer's consumer); that its loop encloses every reader is
	 * checked at lowering, when all attachments are known */
	bool seen[MAX_STAGES] = {0};
	if (!depends_on(parent, st->tensor, seen)) {
		char msg[300];
		snprintf(msg, sizeof(msg), "stage %s does not read %s, directly or through other stages",
			 parent->name, st->name);
		return fail(st, "compute_at", "%s", msg);
	}
	for (ts_stage *p = parent; p; p = p->attach == SCH_ATTACH_AT ? p->attach_stage : NULL) {
		if (p->attach_stage == st && p->attach == SCH_ATTACH_AT) {
			char msg[300];
			snprintf(msg, sizeof(msg), "stage %s is itself computed inside %s (a cycle)",
				 parent->name, st->name);
			return fail(st, "compute_at", "%s", msg);
		}
	}
	if (!check_target_leaf(st, parent, "compute_at", axis))
		return TS_ERR_INVALID;
	st->attach = SCH_ATTACH_AT;
	st->attach_stage = parent;
	st->attach_axis = axis;
	sch_step(st->sch, "compute_at(%s, %s, %s)", st->name, parent->name, axis->name);
	return TS_OK;
}

ts_status ts_store_at(ts_stage *st, ts_stage *parent, ts_axis *axis)
{
	if (!check_stage(st ? sctx(st) : parent ? sctx(parent) : NULL, st, "store_at"))
		return TS_ERR_INVALID;
	if (!parent)
		return fail(st, "store_at", "target stage is NULL", NULL);
	if (parent->sch != st->sch)
		return fail(st, "store_at", "stage %s belongs to another schedule", parent->name);
	if (st->is_output)
		return fail(st, "store_at", "%s is an output of the schedule and is stored by the caller",
			    st->name);
	if (parent == st)
		return fail(st, "store_at", "a stage cannot be stored inside itself", NULL);
	if (!check_target_leaf(st, parent, "store_at", axis))
		return TS_ERR_INVALID;
	st->store = SCH_STORE_AT;
	st->store_stage = parent;
	st->store_axis = axis;
	sch_step(st->sch, "store_at(%s, %s, %s)", st->name, parent->name, axis->name);
	return TS_OK;
}

ts_status ts_store_root(ts_stage *st)
{
	if (!check_stage(st ? sctx(st) : NULL, st, "store_root"))
		return TS_ERR_INVALID;
	st->store = SCH_STORE_ROOT;
	st->store_stage = NULL;
	st->store_axis = NULL;
	sch_step(st->sch, "store_root(%s)", st->name);
	return TS_OK;
}

ts_status ts_compute_inline(ts_stage *st)
{
	if (!check_stage(st ? sctx(st) : NULL, st, "compute_inline"))
		return TS_ERR_INVALID;
	if (st->body && st->body->kind == IR_REDUCE)
		return fail(st, "compute_inline", "%s is a reduction and cannot be inlined", st->name);
	if (st->is_output)
		return fail(st, "compute_inline", "%s is an output of the schedule and cannot be inlined",
			    st->name);
	st->attach = SCH_ATTACH_INLINE;
	st->attach_stage = NULL;
	st->attach_axis = NULL;
	sch_step(st->sch, "compute_inline(%s)", st->name);
	return TS_OK;
}

ts_status ts_compute_root(ts_stage *st)
{
	if (!check_stage(st ? sctx(st) : NULL, st, "compute_root"))
		return TS_ERR_INVALID;
	st->attach = SCH_ATTACH_ROOT;
	st->attach_stage = NULL;
	st->attach_axis = NULL;
	sch_step(st->sch, "compute_root(%s)", st->name);
	return TS_OK;
}

ts_status ts_set_scope(ts_stage *st, ts_scope scope)
{
	if (!check_stage(st ? sctx(st) : NULL, st, "set_scope"))
		return TS_ERR_INVALID;
	if (!valid_scope(scope))
		return fail(st, "set_scope", "unknown scope", NULL);
	if (st->is_output && scope != TS_SCOPE_GLOBAL)
		return fail(st, "set_scope", "%s is an output of the schedule and lives in global memory",
			    st->name);
	st->scope = scope;
	sch_step(st->sch, "set_scope(%s, %s)", st->name, ts_scope_name(scope));
	return TS_OK;
}

/* ---- cache_read / cache_write ------------------------------------------------------- */

typedef struct {
	const ts_tensor *from;
	ts_tensor *to;
} retarget;

static ts_expr *retarget_fn(ts_ctx *ctx, ts_expr *e, void *data)
{
	retarget *r = data;
	ts_expr *m = ir_expr_map_children(ctx, e, retarget_fn, data);
	if (m && m->kind == IR_READ && m->u.read.tensor == r->from)
		return ts_read(ctx, r->to, m->u.read.n, m->u.read.idx);
	return m;
}

static bool has_stage_named(const ts_schedule *s, const char *name)
{
	for (int i = 0; i < s->nstages; i++)
		if (strcmp(s->stages[i]->name, name) == 0)
			return true;
	return false;
}

const char *sch_fresh_name(const ts_schedule *s, const char *base, const char *suffix)
{
	if (!s)
		return NULL;
	if (!base || !suffix) {
		ts_error(s->ctx, TS_ERR_INVALID, "schedule: a fresh name needs a base and a suffix");
		return NULL;
	}
	const char *name = ts_sprintf(s->ctx, "%s.%s", base, suffix);
	for (int n = 2; name && has_stage_named(s, name); n++)
		name = ts_sprintf(s->ctx, "%s.%s%d", base, suffix, n);
	return name;
}

/* A compute tensor "<t>.<scope>" (fresh in s) with fresh axes; the caller
 * gives it a body. */
static ts_tensor *clone_tensor(ts_schedule *s, const ts_tensor *t, ts_scope scope)
{
	ts_ctx *ctx = s->ctx;
	ts_tensor *c = ts_alloc(ctx, sizeof(*c));
	if (!c)
		return NULL;
	*c = *t;
	c->name = sch_fresh_name(s, t->name, ts_scope_name(scope));
	c->op = TS_OP_COMPUTE;
	c->id = ts_ctx_next_id(ctx);
	c->axis = ts_alloc_array(ctx, (size_t)t->ndim, sizeof(ts_iter *));
	if (!c->name || !c->axis)
		return NULL;
	for (int i = 0; i < t->ndim; i++) {
		const char *vn = t->op == TS_OP_COMPUTE ? t->axis[i]->var->u.var.name
							: ts_sprintf(ctx, "ax%d", i);
		c->axis[i] = vn ? ir_iter_new(ctx, vn, 0, t->shape[i], TS_ITER_DATA) : NULL;
		if (!c->axis[i])
			return NULL;
		c->axis[i]->extent_var = t->dim_var[i];
	}
	return c;
}

static int stage_index(ts_schedule *s, const ts_stage *st)
{
	for (int i = 0; i < s->nstages; i++)
		if (s->stages[i] == st)
			return i;
	return -1;
}

/* The tensor and scope of cache_read / cache_write. */
static ts_status check_cache_args(ts_schedule *s, const char *prim, const ts_tensor *t,
				  ts_scope scope)
{
	if (!t)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s: tensor is NULL", prim);
	if (t->ctx && t->ctx != s->ctx)
		return ts_error(s->ctx, TS_ERR_INVALID, "%s(%s): tensor belongs to another context",
				prim, t->name);
	if (!valid_scope(scope))
		return ts_error(s->ctx, TS_ERR_INVALID, "%s(%s): unknown scope %d", prim, t->name,
				(int)scope);
	return TS_OK;
}

ts_tensor *ts_cache_read(ts_schedule *s, ts_tensor *t, ts_scope scope, int nreaders,
			 ts_tensor *const *readers)
{
	if (!s || check_cache_args(s, "cache_read", t, scope) != TS_OK)
		return NULL;
	ts_ctx *ctx = s->ctx;
	if (nreaders < 1 || nreaders > MAX_STAGES || !readers) {
		ts_error(ctx, TS_ERR_INVALID, "cache_read(%s): %s", t->name,
			 readers ? "needs 1 or more readers, at most one per stage"
				 : "readers is NULL");
		return NULL;
	}
	for (int i = 0; i < nreaders; i++) {
		if (!readers[i]) {
			ts_error(ctx, TS_ERR_INVALID, "cache_read(%s): reader %d is NULL", t->name, i);
			return NULL;
		}
	}
	ts_stage *rs[MAX_STAGES];
	int first = s->nstages;
	for (int i = 0; i < nreaders; i++) {
		rs[i] = find_stage(s, readers[i]);
		if (!rs[i]) {
			ts_error(ctx, TS_ERR_INVALID,
				 "cache_read(%s): reader %d (%s) has no stage in this schedule (a placeholder, or not reached from the outputs)",
				 t->name, i, readers[i]->name);
			return NULL;
		}
		if (!stage_reads(rs[i], t)) {
			ts_error(ctx, TS_ERR_INVALID, "cache_read(%s): stage %s does not read %s", t->name,
				 rs[i]->name, t->name);
			return NULL;
		}
		int at = stage_index(s, rs[i]);
		first = at < first ? at : first;
	}
	ts_tensor *c = clone_tensor(s, t, scope);
	if (!c)
		return NULL;
	ts_expr *idx[TS_MAX_DIMS];
	for (int i = 0; i < t->ndim; i++)
		idx[i] = c->axis[i]->var;
	c->body = ts_read(ctx, t, t->ndim, idx);
	c->nreduce = 0;
	c->reduce_axis = NULL;
	c->ninputs = 1;
	c->inputs = ts_alloc_array(ctx, 1, sizeof(ts_tensor *));
	if (!c->body || !c->inputs)
		return NULL;
	c->inputs[0] = t;
	ts_stage *st = new_stage(s, c, c->body);
	if (!st || add_stage(s, st, first) != TS_OK)
		return NULL;
	st->scope = scope;
	retarget r = {t, c};
	for (int i = 0; i < nreaders; i++) {
		ts_expr *b = retarget_fn(ctx, rs[i]->body, &r);
		if (!b)
			return NULL;
		rs[i]->body = b;
	}
	sch_step(s, "cache_read(%s, %s) -> %s", t->name, ts_scope_name(scope), c->name);
	return c;
}

ts_tensor *ts_cache_write(ts_schedule *s, ts_tensor *t, ts_scope scope)
{
	if (!s || check_cache_args(s, "cache_write", t, scope) != TS_OK)
		return NULL;
	ts_ctx *ctx = s->ctx;
	ts_stage *st = ts_stage_of(s, t);
	if (!st)
		return NULL;
	/* the stage keeps its data axes only, in their root order, and the
	 * cache takes its place in the nest: a reorder, an attachment or a
	 * loop kind already given would be lost or left pointing at axes
	 * that moved to the cache */
	if (!sch_stage_untouched(st)) {
		fail(st, "cache_write", "must come before %s is split, fused, reordered, annotated "
		     "(parallel, vectorize, unroll, bind), attached or inlined", st->name);
		return NULL;
	}
	ts_tensor *c = clone_tensor(s, t, scope);
	if (!c)
		return NULL;
	ts_expr *old[TS_MAX_DIMS], *fresh[TS_MAX_DIMS];
	for (int i = 0; i < t->ndim; i++) {
		old[i] = st->root[i]->var;
		fresh[i] = c->axis[i]->var;
	}
	c->body = ir_substitute(ctx, st->body, t->ndim, old, fresh);
	if (!c->body)
		return NULL;
	ts_stage *cs = new_stage(s, c, c->body);
	if (!cs || add_stage(s, cs, stage_index(s, st)) != TS_OK)
		return NULL;
	cs->scope = scope;
	/* t's stage now copies the cached result: data axes only */
	st->body = ts_read(ctx, c, t->ndim, old);
	if (!st->body)
		return NULL;
	st->nall = st->nleaf = st->nroot = t->ndim;
	sch_step(s, "cache_write(%s, %s) -> %s", t->name, ts_scope_name(scope), c->name);
	return c;
}

/* ---- printing ---------------------------------------------------------------------------- */

static void print_stage(ts_sbuf *sb, const ts_stage *st)
{
	ts_sb_printf(sb, "stage %s", st->name);
	if (st->attach == SCH_ATTACH_INLINE)
		ts_sb_puts(sb, ": inline");
	else if (st->attach == SCH_ATTACH_AT)
		ts_sb_printf(sb, ": compute_at %s.%s", st->attach_stage->name, st->attach_axis->name);
	else
		ts_sb_puts(sb, ": root");
	if (st->store == SCH_STORE_ROOT)
		ts_sb_puts(sb, ", store_root");
	else if (st->store == SCH_STORE_AT)
		ts_sb_printf(sb, ", store_at %s.%s", st->store_stage->name, st->store_axis->name);
	if (st->scope != TS_SCOPE_GLOBAL)
		ts_sb_printf(sb, ", scope %s", ts_scope_name(st->scope));
	ts_sb_puts(sb, "\n");
	if (st->rf_of)
		ts_sb_printf(sb, "  rfactor of %s over %s (factor_axis %d)\n", st->rf_of->name,
			     st->rf_axis->name, st->rf_factor_axis);
	for (int i = 0; i < st->nrel; i++) {
		const sch_relation *r = &st->rel[i];
		if (r->kind == SCH_REL_SPLIT)
			ts_sb_printf(sb, "  split %s -> %s, %s (%s %lld%s)\n", r->parent->name,
				     r->outer->name, r->inner->name, r->factor ? "factor" : "nparts",
				     (long long)(r->factor ? r->factor : r->nparts),
				     r->tail == TS_TAIL_PARTITION ? ", partition tail" : "");
		else
			ts_sb_printf(sb, "  fuse %s, %s -> %s\n", r->outer->name, r->inner->name,
				     r->fused->name);
	}
	ts_sb_puts(sb, "  loops:");
	for (int i = 0; i < st->nleaf; i++) {
		const ts_axis *a = st->leaf[i];
		ts_sb_printf(sb, " %s[%lld]", a->name, (long long)a->extent);
		if (a->loop == TS_FOR_THREAD)
			ts_sb_printf(sb, "@%s", ts_thread_tag_name(a->thread));
		else if (a->loop != TS_FOR_SERIAL)
			ts_sb_printf(sb, "@%s", ts_for_kind_name(a->loop));
	}
	ts_sb_puts(sb, "\n");
	for (int d = 0; d < st->tensor->ndim; d++)
		if (st->align_factor[d])
			ts_sb_printf(sb, "  storage_align dimension %d: stride = k * %lld + %lld\n", d,
				     (long long)st->align_factor[d], (long long)st->align_offset[d]);
	if (st->double_buffer)
		ts_sb_puts(sb, "  double_buffer: two copies, the next step's fetched while one is read\n");
	for (int i = 0; i < st->nprefetch; i++) {
		const sch_prefetch *p = &st->prefetch[i];
		ts_sb_printf(sb, "  prefetch %s at %s, %s %+lld\n", p->tensor->name, p->axis->name,
			     p->ahead->name, (long long)p->offset);
	}
	/* symbolic extents: the loops above are at the bounds */
	for (int r = 0; r < st->nroot; r++) {
		const ts_expr *v = sch_root_size_var(st, r);
		if (v)
			ts_sb_printf(sb, "  %s ranges over %s <= %lld: its loops run to their share of %s\n",
				     st->root[r]->name, v->u.var.name, (long long)st->root[r]->extent,
				     v->u.var.name);
	}
}

/* The first stage computed at leaf pos of st or deeper (NULL if none). */
static const ts_stage *attached_within(const ts_stage *st, int pos)
{
	for (int i = 0; i < st->sch->nstages; i++) {
		const ts_stage *x = st->sch->stages[i];
		if (x->attach == SCH_ATTACH_AT && x->attach_stage == st &&
		    leaf_index(st, x->attach_axis) >= pos)
			return x;
	}
	return NULL;
}

/* A vectorized leaf with loops inside it: vectorize_legal will run it
 * serially (ts_lower_warnings says so for certain), unless the inner loops
 * disappear first (extent 1, or unrolled). */
static void print_vector_warnings(ts_sbuf *sb, const ts_stage *st)
{
	for (int i = 0; i < st->nleaf; i++) {
		const ts_axis *a = st->leaf[i];
		if (a->loop != TS_FOR_VECTORIZED)
			continue;
		const ts_stage *x = attached_within(st, i);
		if (i + 1 < st->nleaf)
			ts_sb_printf(sb, "  warning: vectorize(%s): '%s' encloses loop '%s'", st->name,
				     a->name, st->leaf[i + 1]->name);
		else if (x)
			ts_sb_printf(sb, "  warning: vectorize(%s): '%s' encloses stage %s", st->name,
				     a->name, x->name);
		else
			continue;
		ts_sb_puts(sb, "; lowering makes it serial unless the inner loops have extent 1 or are unrolled\n");
	}
}

/* For schedules with attachments: the regions bound inference gives and
 * the loops of attached stages, or why lowering fails.  A pending error
 * is left alone (and the section left out). */
static void print_bounds(ts_sbuf *sb, ts_schedule *s)
{
	bool attached = false;
	for (int i = 0; i < s->nstages; i++)
		attached |= s->stages[i]->attach == SCH_ATTACH_AT;
	const char *bounds = attached ? ts_schedule_bounds_str(s) : NULL;
	if (bounds)
		ts_sb_printf(sb, "after bound inference:\n%s", bounds);
}

const char *ts_schedule_str(ts_schedule *s)
{
	if (!s)
		return NULL;
	ts_sbuf sb = {0};
	for (int i = 0; i < s->nstages; i++) {
		print_stage(&sb, s->stages[i]);
		print_vector_warnings(&sb, s->stages[i]);
	}
	print_bounds(&sb, s);
	const char *r = sb.oom ? NULL : ts_strdup(s->ctx, ts_sb_str(&sb));
	ts_sb_free(&sb);
	return r;
}
