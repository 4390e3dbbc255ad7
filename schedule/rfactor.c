/*
 * rfactor.c - factoring a reduction over one of its leaf axes (TVM's
 * s.rfactor, Halide's Func::rfactor), for parallel and vectorized
 * reductions.
 *
 * For a stage C = op_k source(i, k) and a leaf reduction axis kf, rfactor
 * builds a compute C.rf over C's data axes plus kf (a data axis now, at
 * factor_axis) that reduces source over C's other leaf reduction axes, and
 * rewrites C's stage to reduce C.rf over kf.  Since a reduction's leaves
 * are loops of the stage, not axes of the compute, C.rf's body needs each
 * of C's root reduction variables as a function of the leaves: the split
 * and fuse relations are run backwards, as lowering does for loops
 * (schedule_ops.c), over the domains the schedule recorded.  A split that
 * does not divide makes leaf values past the root's end; there C.rf adds
 * the reducer's identity through select(in range, source, identity).  Both
 * arms of a select are evaluated (ir.h) and lowering refuses reads that
 * certainly leave a shape (check_reads.c), so the root values are clamped
 * into their range inside source, as the pad operator clamps.
 *
 * The primitive checks everything and builds the new tensor and bodies
 * before it changes the schedule, so a refused rfactor leaves it as it was.
 */
#include <math.h>
#include <string.h>

#include "schedule.h"
#include "te.h"

#define MAX_AXES 64 /* as in schedule.c: axes ever made in one stage */

ts_expr *sch_reduce_identity(ts_ctx *ctx, ts_reduce_op op, ts_dtype t)
{
	if (!ts_dtype_is_valid(t) || t.code == TS_TYPE_HANDLE || op < TS_REDUCE_SUM || op > TS_REDUCE_PROD) {
		ts_error(ctx, TS_ERR_INVALID, "reduce_identity: %s", ts_dtype_is_valid(t) &&
			 t.code != TS_TYPE_HANDLE ? "unknown reduction" : "invalid dtype");
		return NULL;
	}
	bool fl = ts_dtype_is_float(t);
	int64_t imax = t.code == TS_TYPE_UINT ? (t.bits >= 64 ? -1 : (int64_t)((1ull << t.bits) - 1))
					      : (int64_t)((1ull << (t.bits - 1)) - 1);
	int64_t imin = t.code == TS_TYPE_UINT ? 0 : -imax - 1;
	switch (op) {
	case TS_REDUCE_SUM: return ts_make_const(ctx, t, 0);
	case TS_REDUCE_PROD: return ts_make_const(ctx, t, 1);
	case TS_REDUCE_MAX: return fl ? ts_fconst(ctx, t, -INFINITY) : ts_const(ctx, t, imin);
	case TS_REDUCE_MIN: return fl ? ts_fconst(ctx, t, INFINITY) : ts_const(ctx, t, imax);
	}
	return NULL;
}

/* What rfactor builds before it touches the schedule. */
typedef struct rf_plan {
	ts_ctx *ctx;
	ts_stage *st;
	ts_axis *kf;
	int fa;                      /* factor_axis */
	ts_expr *val[MAX_AXES];      /* per axis of st->all: its value in C.rf's variables */
	ts_expr *guard;              /* the leaf values are inside the root domain */
	ts_expr *vars[TS_MAX_DIMS];  /* C.rf's data variables */
	int nrest;
	ts_iter *rest[TS_MAX_DIMS];  /* C.rf's reduction axes: the other leaves */
	ts_tensor *rf;
	ts_iter *kv;                 /* C's new reduction axis, over kf's domain */
	ts_expr *body;               /* C's new body */
} rf_plan;

static ts_status fail(ts_ctx *ctx, const ts_stage *st, const char *fmt, const char *a,
		      const char *b)
{
	char msg[512];
	snprintf(msg, sizeof(msg), fmt, a ? a : "", b ? b : "");
	return ts_error(ctx, TS_ERR_INVALID, "rfactor(%s): %s", st->name, msg);
}

static int axis_pos(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->nall; i++)
		if (st->all[i] == a)
			return i;
	return -1;
}

static bool is_leaf(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->nleaf; i++)
		if (st->leaf[i] == a)
			return true;
	return false;
}

/* The rf stage an earlier rfactor made from st over a (NULL if none). */
static const ts_stage *factored_by(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->sch->nstages; i++)
		if (st->sch->stages[i]->rf_of == st && st->sch->stages[i]->rf_axis == a)
			return st->sch->stages[i];
	return NULL;
}

static ts_stage *find_stage(ts_schedule *s, const ts_tensor *t)
{
	for (int i = 0; i < s->nstages; i++)
		if (s->stages[i]->tensor == t)
			return s->stages[i];
	return NULL;
}

/* kf: a leaf reduction axis of st not factored before. */
static ts_status check_axis(ts_ctx *ctx, const ts_stage *st, const ts_axis *kf)
{
	const ts_stage *done;
	if (!kf)
		return fail(ctx, st, "axis is NULL", NULL, NULL);
	if ((done = factored_by(st, kf)) != NULL)
		return fail(ctx, st, "axis '%s' was already factored out into %s", kf->name,
			    done->name);
	if (axis_pos(st, kf) < 0)
		return fail(ctx, st, "axis '%s' does not belong to stage %s", kf->name, st->name);
	if (kf->kind != TS_ITER_REDUCE)
		return fail(ctx, st, "axis '%s' is a data-parallel axis; rfactor factors a reduction axis",
			    kf->name, NULL);
	if (!is_leaf(st, kf))
		return fail(ctx, st, "axis '%s' is no longer a leaf (it was split or fused); pass one of its parts",
			    kf->name, NULL);
	return TS_OK;
}

/* Stages computed at st's loops and read by its reduction would stay
 * inside st while their reader moves to the new root stage C.rf. */
static ts_status check_attached(ts_ctx *ctx, const ts_stage *st)
{
	for (int i = 0; i < st->sch->nstages; i++) {
		const ts_stage *x = st->sch->stages[i];
		if (x->attach != SCH_ATTACH_AT || x->attach_stage != st)
			continue;
		if (x->attach_axis->kind == TS_ITER_REDUCE)
			return fail(ctx, st, "stage %s is computed at reduction axis '%s', which rfactor replaces; "
				    "call rfactor first, then compute_at", x->name, x->attach_axis->name);
		if (ir_expr_reads(st->body, x->tensor))
			return fail(ctx, st, "stage %s is computed inside it (compute_at) and read by the reduction "
				    "that moves to the new stage; call rfactor first, then compute_at %s into it",
				    x->name, x->name);
	}
	return TS_OK;
}

static ts_status check_args(ts_ctx *ctx, const ts_stage *st, const ts_axis *kf, int fa)
{
	const ts_tensor *t = st->tensor;
	if (st->attach == SCH_ATTACH_INLINE)
		return fail(ctx, st, "%s is inlined (compute_inline); only a computed reduction can be factored",
			    st->name, NULL);
	if (!st->body || st->body->kind != IR_REDUCE)
		return fail(ctx, st, "%s is not a reduction (its body has no sum, max or min)", st->name,
			    NULL);
	if (check_axis(ctx, st, kf) != TS_OK)
		return TS_ERR_INVALID;
	for (int r = 0; r < st->nroot; r++) { /* a symbolic dimension is read at its own axis only */
		const ts_expr *n = st->root[r]->kind == TS_ITER_REDUCE ? sch_root_size_var(st, r) : NULL;
		if (n)
			return fail(ctx, st, "reduction axis '%s' has the symbolic extent %s; the factored "
				    "stage would read it at its parts, which lowering cannot bound for every "
				    "extent (rfactor needs a constant extent)", st->root[r]->name,
				    n->u.var.name);
	}
	if (fa < 0 || fa > t->ndim) {
		char msg[160];
		snprintf(msg, sizeof(msg), "factor_axis %d is out of range (0 to %d: the position of '%s' among the %d data axes of the new stage)",
			 fa, t->ndim, kf->name, t->ndim + 1);
		return fail(ctx, st, "%s", msg, NULL);
	}
	if (t->ndim + 1 > TS_MAX_DIMS) {
		char msg[160];
		snprintf(msg, sizeof(msg), "%s has %d dimensions; the new stage would have %d (limit %d)",
			 t->name, t->ndim, t->ndim + 1, TS_MAX_DIMS);
		return fail(ctx, st, "%s", msg, NULL);
	}
	return check_attached(ctx, st);
}

/* The values axis a takes: its extent, or for the inner axis of a split
 * whose factor passes its parent's values (the outer axis then has one
 * value) the parent's: split(k of 8, INT64_MAX) then rfactor made a loop
 * of INT64_MAX iterations, or a buffer of 2^31 - 1 partial sums. */
static int64_t reach(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->nrel; i++) {
		const sch_relation *r = &st->rel[i];
		if (r->kind == SCH_REL_SPLIT && r->inner == a) {
			int64_t par = reach(st, r->parent);
			return a->extent < par ? a->extent : par;
		}
	}
	return a->extent;
}

/* The leaves: kf becomes C.rf's data variable, every other reduction leaf
 * one of its reduction axes. */
static ts_status plan_leaves(rf_plan *p)
{
	ts_stage *st = p->st;
	for (int d = 0; d < st->tensor->ndim; d++)
		p->vars[d < p->fa ? d : d + 1] = ts_var(p->ctx, st->root[d]->var->u.var.name);
	p->vars[p->fa] = ts_var(p->ctx, p->kf->name);
	p->val[axis_pos(st, p->kf)] = p->vars[p->fa];
	for (int i = 0; i < st->nleaf; i++) {
		ts_axis *a = st->leaf[i];
		if (a->kind != TS_ITER_REDUCE || a == p->kf)
			continue;
		if (p->nrest == TS_MAX_DIMS) {
			char msg[96];
			snprintf(msg, sizeof(msg), "more than %d reduction leaves would remain in the new stage",
				 TS_MAX_DIMS);
			return fail(p->ctx, st, "%s", msg, NULL);
		}
		ts_iter *it = ir_iter_new(p->ctx, a->name, 0, reach(st, a), TS_ITER_REDUCE);
		if (!it)
			return ts_last_status(p->ctx);
		p->rest[p->nrest++] = it;
		p->val[axis_pos(st, a)] = it->var;
	}
	return ts_last_status(p->ctx);
}

static void add_guard(rf_plan *p, ts_expr *c)
{
	p->guard = p->guard ? ts_and(p->ctx, p->guard, c) : c;
}

/* e in dtype t when t is the wider integer type (NULL stays NULL). */
static ts_expr *widened(ts_ctx *ctx, ts_expr *e, ts_dtype t)
{
	return e && e->dtype.bits < t.bits ? ts_cast(ctx, t, e) : e;
}

/* The index dtype for values up to hi, starting from t and the operands'
 * own: int64 once hi leaves int32 (a reduction beyond int32 is rebuilt in
 * int64, not wrapped), else the widest of them. */
static ts_dtype index_dtype(ts_dtype t, int64_t hi, const ts_expr *a, const ts_expr *b)
{
	if (hi > INT32_MAX)
		return ts_int64;
	if (a && a->dtype.bits > t.bits)
		t = ts_dtype_element(a->dtype);
	if (b && b->dtype.bits > t.bits)
		t = ts_dtype_element(b->dtype);
	return t;
}

/* Runs the reduction's relations backwards, as lowering does: a split's
 * parent is outer * inner_extent + inner (guarded when the split does not
 * divide), a fused pair is fused / inner_extent and fused % inner_extent. */
static ts_status plan_relations(rf_plan *p)
{
	ts_ctx *ctx = p->ctx;
	ts_stage *st = p->st;
	for (int i = st->nrel - 1; i >= 0; i--) {
		const sch_relation *r = &st->rel[i];
		if (r->outer->kind != TS_ITER_REDUCE)
			continue;
		if (r->kind == SCH_REL_FUSE) {
			ts_expr *f = p->val[axis_pos(st, r->fused)];
			ts_dtype t = index_dtype(ts_int32, r->fused->extent, f, NULL);
			ts_expr *ie = ts_const(ctx, t, r->inner->extent);
			f = widened(ctx, f, t);
			p->val[axis_pos(st, r->outer)] = ts_floordiv(ctx, f, ie);
			p->val[axis_pos(st, r->inner)] = ts_floormod(ctx, f, ie);
			continue;
		}
		/* outer * inner_extent + inner reaches the split's span, which
		 * passes the parent's extent when the split leaves a tail */
		ts_expr *o = p->val[axis_pos(st, r->outer)], *in = p->val[axis_pos(st, r->inner)];
		int64_t span = r->outer->extent * r->inner->extent;
		ts_dtype t = index_dtype(ts_dtype_element(r->parent->var->dtype),
					 span > r->parent->extent ? span : r->parent->extent, o, in);
		ts_expr *v = ts_add(ctx, ts_mul(ctx, widened(ctx, o, t), ts_const(ctx, t, r->inner->extent)),
				    widened(ctx, in, t));
		p->val[axis_pos(st, r->parent)] = v;
		if (span != r->parent->extent)
			add_guard(p, ts_lt(ctx, v, ts_const(ctx, t, r->parent->extent)));
	}
	return ts_last_status(ctx);
}

/* C.rf's element: the source at the root values (clamped when a guard
 * exists), the identity where the guard fails. */
static ts_expr *plan_source(rf_plan *p)
{
	ts_ctx *ctx = p->ctx;
	ts_stage *st = p->st;
	ts_expr *old[MAX_AXES], *now[MAX_AXES];
	int n = 0;
	for (int r = 0; r < st->nroot; r++) {
		ts_axis *a = st->root[r];
		old[n] = a->var;
		if (a->kind == TS_ITER_DATA) {
			now[n++] = p->vars[r < p->fa ? r : r + 1];
			continue;
		}
		/* clamped into the axis, the value fits its variable's dtype
		 * (int64 for a range beyond int32), and so does min + value */
		ts_expr *v = p->val[axis_pos(st, a)];
		ts_dtype vt = ts_dtype_element(a->var->dtype);
		if (v && p->guard)
			v = ts_min(ctx, v, ts_const(ctx, ts_dtype_element(v->dtype), a->extent - 1));
		if (v && v->dtype.bits != vt.bits)
			v = ts_cast(ctx, vt, v);
		now[n++] = a->root->min ? ts_add(ctx, v, ts_const(ctx, vt, a->root->min)) : v;
	}
	if (ts_last_status(ctx) != TS_OK)
		return NULL;
	ts_expr *red = st->body;
	ts_expr *src = ir_substitute(ctx, red->u.reduce.source, n, old, now);
	if (src && p->guard)
		src = ts_select(ctx, p->guard, src,
				sch_reduce_identity(ctx, red->u.reduce.op, src->dtype));
	return src;
}

/* "C.rf", or "C.rf2", ... when C was factored before. */
static const char *rf_name(rf_plan *p)
{
	return sch_fresh_name(p->st->sch, p->st->tensor->name, "rf");
}

/* The tensor C.rf and C's new body, reading it. */
static ts_status plan_tensors(rf_plan *p)
{
	ts_ctx *ctx = p->ctx;
	ts_stage *st = p->st;
	const ts_tensor *t = st->tensor;
	ts_expr *red = st->body, *src = plan_source(p);
	if (!src)
		return ts_last_status(ctx);
	ts_expr *body = p->nrest ? ts_reduce(ctx, red->u.reduce.op, src, p->nrest, p->rest, NULL)
				 : src;
	int64_t shape[TS_MAX_DIMS];
	for (int d = 0; d < t->ndim; d++)
		shape[d < p->fa ? d : d + 1] = ts_tensor_dim(t, d);
	shape[p->fa] = reach(st, p->kf);
	const char *name = rf_name(p);
	p->rf = body && name ? ts_compute(ctx, name, t->ndim + 1, shape, p->vars, body) : NULL;
	p->kv = ir_iter_new(ctx, ts_sprintf(ctx, "%s.v", p->kf->name), 0, shape[p->fa], TS_ITER_REDUCE);
	if (!p->rf || !p->kv)
		return ts_last_status(ctx);
	ts_expr *idx[TS_MAX_DIMS];
	for (int d = 0; d < t->ndim; d++)
		idx[d < p->fa ? d : d + 1] = st->root[d]->var;
	idx[p->fa] = p->kv->var;
	ts_expr *rd = ts_read(ctx, p->rf, t->ndim + 1, idx);
	p->body = rd ? ts_reduce(ctx, red->u.reduce.op, rd, 1, &p->kv, red->u.reduce.init) : NULL;
	return p->body ? TS_OK : ts_last_status(ctx);
}

/* st keeps its data axes, their relations and loop kinds; its reduction
 * becomes the one axis kf.v, innermost. */
static ts_status rewrite_stage(rf_plan *p)
{
	ts_stage *st = p->st;
	int n = 0;
	for (int i = 0; i < st->nall; i++)
		if (st->all[i]->kind == TS_ITER_DATA)
			st->all[n++] = st->all[i];
	st->nall = n;
	for (int i = n = 0; i < st->nrel; i++)
		if (st->rel[i].outer->kind == TS_ITER_DATA)
			st->rel[n++] = st->rel[i];
	st->nrel = n;
	for (int i = n = 0; i < st->nleaf; i++)
		if (st->leaf[i]->kind == TS_ITER_DATA)
			st->leaf[n++] = st->leaf[i];
	st->nleaf = n;
	st->nroot = st->tensor->ndim;
	st->body = p->body;
	ts_axis *a = sch_axis_new(st, p->kv->var->u.var.name, p->kv->extent, TS_ITER_REDUCE,
				  p->kv->var);
	if (!a)
		return ts_last_status(p->ctx);
	a->root = p->kv;
	st->root[st->nroot++] = a;
	st->leaf[st->nleaf++] = a;
	return TS_OK;
}

ts_tensor *ts_rfactor(ts_schedule *s, ts_tensor *t, ts_axis *kf, int factor_axis)
{
	if (!s)
		return NULL;
	ts_ctx *ctx = s->ctx;
	if (!t) {
		ts_error(ctx, TS_ERR_INVALID, "rfactor: tensor is NULL");
		return NULL;
	}
	ts_stage *st = find_stage(s, t);
	if (!st) {
		ts_error(ctx, TS_ERR_INVALID,
			 "rfactor(%s): %s has no stage in this schedule (a placeholder, or not reached from the outputs)",
			 t->name, t->name);
		return NULL;
	}
	if (check_args(ctx, st, kf, factor_axis) != TS_OK)
		return NULL;
	/* as ts_lower: an error an earlier call left is not this one's, and the
	 * steps below tell failure by the error slot */
	ts_clear_error(ctx);
	rf_plan *p = ts_alloc(ctx, sizeof(*p));
	if (!p)
		return NULL;
	*p = (rf_plan){.ctx = ctx, .st = st, .kf = kf, .fa = factor_axis};
	if (plan_leaves(p) != TS_OK || plan_relations(p) != TS_OK || plan_tensors(p) != TS_OK)
		return NULL;
	int at = 0;
	while (s->stages[at] != st)
		at++;
	ts_stage *rs = sch_stage_new(s, p->rf, at);
	if (!rs || rewrite_stage(p) != TS_OK)
		return NULL;
	rs->rf_of = st;
	rs->rf_axis = kf;
	rs->rf_factor_axis = factor_axis;
	sch_step(s, "rfactor(%s, %s, %d) -> %s", t->name, kf->name, factor_axis, p->rf->name);
	return p->rf;
}
