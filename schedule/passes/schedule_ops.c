/*
 * schedule_ops.c - the first lowering pass: a schedule becomes a loop nest
 * over tensors.
 *
 * Stages computed at root are emitted in dependency order; an intermediate
 * one is wrapped in a REALIZE of its whole shape.  Each stage's loops come
 * from its leaf axes (0-based, constant extents derived from the stage's
 * region through the split/fuse relations); the root index of every axis is
 * rebuilt from the leaf variables by running the relations backwards.  A
 * stage attached with compute_at is emitted inside the target's loop, in a
 * REALIZE of the region bound inference gives there: the union of the
 * reads of every reader inside that loop (the target may be a consumer's
 * consumer, as long as its loop encloses every reader).  A reduction emits an
 * init nest (over its data-parallel leaves) before its first reduction loop,
 * then the update nest.  Splits that do not divide guard the body with
 * `index < extent`, wrapped in likely() when the split asked for a
 * partitioned tail, so that loop_partition can remove it from the main part.
 *
 * Loop variables: every emitted nest gets fresh ones, named after its axes,
 * so computes may share ts_var objects (as TVM users reuse `i`): the
 * stage's root variables are substituted away, and a nest attached inside
 * another never rebinds the enclosing loops' variables.  Once the function
 * is built, loops are named in program order: the first keeps its axis's
 * name, later loops of the same name become x.outer_1, x.outer_2, ...
 *
 * Symbolic extents (te.h ts_size_var): a root stage's axis over a size
 * variable n has the bound's extent for everything static (bound inference,
 * the index width) and n at run time: a loop derived from it runs to
 * ceil(n / span) where the relations allow (split outer parts, fuses; a
 * vectorized, unrolled or thread loop keeps its constant extent), and the
 * body is guarded by likely(index < n), which version_guards turns into
 * whole-tile tests.  Strides follow the loop extents, so a fuse or an
 * nparts split of such an axis divides by a run-time value.
 *
 * store_at / store_root: a stage stored outside the loop it is computed at
 * is realized there instead, over the union of what its readers in that
 * loop need, and its nest at the compute_at loop writes into that buffer:
 * with a region that moves forward along one dimension by at most its
 * extent, the first iteration computes all of it and the others the last
 * `step` rows only (the sliding window; step bounds the move), else all
 * of it each time.
 *
 * Index width: one index dtype per function, int32 unless some tensor's
 * element count, loop extent, split span (ceil(n/f)*f) or reduction range
 * needs more (as TVM and Halide choose).  With int64, the loop variables
 * are int64, constants are built in int64 and the body is substituted with
 * ir_substitute_wide, so indices and guards never wrap.
 */
#include <math.h>
#include <string.h>

#include "arith.h"
#include "bound.h"
#include "passes.h"
#include "printer.h"
#include "te.h"

#define MAX_DEPTH 128

typedef struct ops {
	ts_ctx *ctx;
	ts_schedule *s;
	ts_expr **body;   /* per stage index: the body after inlining */
	bool *built;
	sch_loop stack[MAX_DEPTH];
	ts_axis *stack_axis[MAX_DEPTH]; /* the leaf axis of each loop of the stack */
	int depth;
	ts_sbuf *log;
	ts_dtype it; /* the function's index dtype: int32 or int64 */
	/* loops emitted with a run-time extent, and their constant bound,
	 * for bound inference to relax over */
	int ndyn;
	sch_loop dyn[MAX_DEPTH * 8];
} ops;

/* One stage being emitted: its axes' extents and values. */
typedef struct stage_nest {
	ts_stage *st;
	int64_t ext[64];      /* per axis, parallel to st->all */
	ts_expr *dyn[64];     /* per axis: its run-time extent (NULL: ext) */
	ts_expr *var[64];     /* leaves: the loop variable, of the index dtype */
	ts_expr *val[64];     /* axis value in leaf variables */
	int64_t widest;       /* largest extent or split span seen */
	int nguard;
	ts_expr *guard[64];
	bool guard_reduce[64];
	ts_expr *value;       /* the stage's element value in leaf variables */
	ts_expr *idx[TS_MAX_DIMS];
} stage_nest;

static int stage_pos(const ts_schedule *s, const ts_stage *st)
{
	for (int i = 0; i < s->nstages; i++)
		if (s->stages[i] == st)
			return i;
	return -1;
}

static int axis_pos(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->nall; i++)
		if (st->all[i] == a)
			return i;
	return -1;
}

/* ---- inlining -------------------------------------------------------------- */

static ts_expr *inline_fn(ts_ctx *ctx, ts_expr *e, void *data)
{
	ops *o = data;
	ts_expr *m = ir_expr_map_children(ctx, e, inline_fn, data);
	if (!m || m->kind != IR_READ)
		return m;
	for (int i = 0; i < o->s->nstages; i++) {
		ts_stage *p = o->s->stages[i];
		if (p->tensor != m->u.read.tensor || p->attach != SCH_ATTACH_INLINE)
			continue;
		ts_expr *vars[TS_MAX_DIMS];
		for (int d = 0; d < p->tensor->ndim; d++)
			vars[d] = p->root[d]->var;
		return ir_substitute(ctx, o->body[i], p->tensor->ndim, vars, m->u.read.idx);
	}
	return m;
}

static ts_status inline_all(ops *o)
{
	for (int i = 0; i < o->s->nstages; i++) {
		ts_stage *st = o->s->stages[i];
		o->body[i] = inline_fn(o->ctx, st->body, o);
		if (!o->body[i]) {
			/* a constructor's refusal (TS_MAX_EXPR_NODES for a chain of
			 * producers read twice) gets the stage it happened in */
			const char *why = ts_strdup(o->ctx, ts_last_error(o->ctx));
			ts_status status = ts_last_status(o->ctx);
			ts_clear_error(o->ctx);
			return ts_error(o->ctx, status, "lower: inlining the producers of %s: %s", st->name,
					why ? why : "out of memory");
		}
	}
	return TS_OK;
}

/* ---- axis extents and values ---------------------------------------------------- */

static ts_expr *cond(ops *o, ts_expr *c, bool likely)
{
	if (!likely || !c)
		return c;
	return ts_call(o->ctx, IR_INTRIN_LIKELY, 1, &c);
}

static int64_t ceil_div(int64_t a, int64_t b)
{
	return a / b + (a % b != 0);
}

/* Extents of every axis from the root extents, through the relations.  The
 * primitives refused overflowing products on the full domain; regions are
 * no larger, but check anyway rather than wrap. */
static ts_status derive_extents(ts_ctx *ctx, stage_nest *n, const int64_t *rext)
{
	ts_stage *st = n->st;
	n->widest = 0;
	for (int r = 0; r < st->nroot; r++) {
		int64_t e = st->root[r]->kind == TS_ITER_DATA ? rext[r] : st->root[r]->extent;
		n->ext[axis_pos(st, st->root[r])] = e;
		n->widest = e > n->widest ? e : n->widest;
	}
	for (int i = 0; i < st->nrel; i++) {
		const sch_relation *r = &st->rel[i];
		int64_t span, oe, ie;
		if (r->kind == SCH_REL_FUSE) {
			oe = n->ext[axis_pos(st, r->outer)];
			ie = n->ext[axis_pos(st, r->inner)];
		} else {
			int64_t e = n->ext[axis_pos(st, r->parent)];
			int64_t given = r->factor ? r->factor : r->nparts;
			int64_t c = given < e ? given : e;
			oe = r->factor ? ceil_div(e, c) : c;
			ie = r->factor ? c : ceil_div(e, c);
			n->ext[axis_pos(st, r->outer)] = oe;
			n->ext[axis_pos(st, r->inner)] = ie;
		}
		if (__builtin_mul_overflow(oe, ie, &span))
			return ts_error(ctx, TS_ERR_INVALID, "lower(%s): extent of '%s' overflows int64",
					st->name, (r->kind == SCH_REL_FUSE ? r->fused : r->parent)->name);
		if (r->kind == SCH_REL_FUSE)
			n->ext[axis_pos(st, r->fused)] = span;
		n->widest = span > n->widest ? span : n->widest;
	}
	return TS_OK;
}

/* A constant of the index dtype. */
static ts_expr *iconst(ops *o, int64_t v)
{
	return ts_const(o->ctx, o->it, v);
}

/* An extent as an expression: the run-time one, else the constant. */
static ts_expr *extent_expr(ops *o, const stage_nest *n, int pos)
{
	return n->dyn[pos] ? n->dyn[pos] : iconst(o, n->ext[pos]);
}

/* The size variable root axis r of st ranges over at run time, in the
 * index dtype; NULL for a constant extent. */
static ts_expr *root_size(ops *o, const ts_stage *st, int r)
{
	ts_expr *v = sch_root_size_var(st, r);
	return v ? ir_index_cast(o->ctx, v, o->it) : NULL;
}

/* Whether root axis r's loops may stop at its run-time extent: a
 * reduction, or a data axis whose region is the whole dimension (an
 * attached stage's tile is constant, its edge guarded). */
static bool runs_to_size(const ts_stage *st, int r, ts_expr *const *rmin, const int64_t *rext)
{
	int64_t lo;
	return st->root[r]->kind == TS_ITER_REDUCE ||
	       (ir_is_const_int(rmin[r], &lo) && lo == 0 && rext[r] == st->tensor->shape[r]);
}

/* Run-time extents, through the relations as derive_extents goes: a
 * factor split's outer part is ceil(d / factor), an nparts split's inner
 * part ceil(d / nparts), a fuse the product. */
static void derive_dyn(ops *o, stage_nest *n, ts_expr *const *rmin, const int64_t *rext)
{
	ts_ctx *ctx = o->ctx;
	ts_stage *st = n->st;
	for (int i = 0; i < st->nall && i < 64; i++)
		n->dyn[i] = NULL;
	for (int r = 0; r < st->nroot; r++)
		if (runs_to_size(st, r, rmin, rext))
			n->dyn[axis_pos(st, st->root[r])] = root_size(o, st, r);
	for (int i = 0; i < st->nrel; i++) {
		const sch_relation *r = &st->rel[i];
		int po = axis_pos(st, r->outer), pi = axis_pos(st, r->inner);
		if (r->kind == SCH_REL_FUSE) {
			if (n->dyn[po] || n->dyn[pi])
				n->dyn[axis_pos(st, r->fused)] =
					ts_mul(ctx, extent_expr(o, n, po), extent_expr(o, n, pi));
			continue;
		}
		ts_expr *d = n->dyn[axis_pos(st, r->parent)];
		int split = r->factor ? po : pi; /* the part whose extent follows d */
		int64_t by = r->factor ? n->ext[pi] : n->ext[po];
		if (d && n->ext[split] > 1)
			n->dyn[split] = ts_floordiv(ctx, ts_add(ctx, d, iconst(o, by - 1)), iconst(o, by));
	}
}

/* Does any value a loop nest of st computes leave int32?  Extents and split
 * spans bound the loop values and the guards; a reduction's range adds its
 * min to them. */
static ts_status stage_needs_int64(ops *o, ts_stage *st, bool *wide)
{
	stage_nest *n = ts_alloc(o->ctx, sizeof(*n));
	if (!n)
		return ts_last_status(o->ctx);
	n->st = st;
	if (derive_extents(o->ctx, n, st->tensor->shape) != TS_OK)
		return ts_last_status(o->ctx);
	*wide |= n->widest > INT32_MAX || ts_tensor_numel(st->tensor) > INT32_MAX;
	/* a root value is its start (0..shape for a region, min for a
	 * reduction) plus a loop value below the widest span */
	for (int r = 0; r < st->nroot; r++) {
		ts_axis *a = st->root[r];
		int64_t lo = a->kind == TS_ITER_REDUCE ? a->root->min : 0, hi;
		int64_t start = a->kind == TS_ITER_REDUCE ? lo : st->tensor->shape[r];
		*wide |= lo < INT32_MIN || __builtin_add_overflow(start, n->widest, &hi) ||
			 hi > INT32_MAX;
	}
	/* the tensor's own reduction axes: rfactor splits one among C and
	 * C.rf, whose bodies rebuild its value (k = ko*8 + ki) beyond either
	 * stage's extents */
	for (int r = 0; r < st->tensor->nreduce; r++) {
		const ts_iter *it = st->tensor->reduce_axis[r];
		*wide |= it->min < INT32_MIN || it->extent > INT32_MAX - it->min;
	}
	return TS_OK;
}

/* int64 when any stage or any tensor it reads needs it, else int32. */
static ts_status choose_index_type(ops *o)
{
	bool wide = false;
	int m;
	ts_tensor **order = sch_tensors(o->s, &m);
	if (!order)
		return ts_last_status(o->ctx);
	for (int i = 0; i < m; i++)
		wide |= ts_tensor_numel(order[i]) > INT32_MAX;
	for (int i = 0; i < o->s->nstages; i++)
		if (stage_needs_int64(o, o->s->stages[i], &wide) != TS_OK)
			return ts_last_status(o->ctx);
	o->it = wide ? ts_int64 : ts_int32;
	return TS_OK;
}

static bool is_root(const ts_stage *st, const ts_axis *a)
{
	for (int r = 0; r < st->nroot; r++)
		if (st->root[r] == a)
			return true;
	return false;
}

/* Halide's ShiftInwards, for a factor split of a data axis of run-time
 * extent d in a stage that is no reduction: the last tile starts at
 * d - factor (never below 0), overlapping its neighbour, so that every tile
 * is whole once d >= factor and takes version_guards' unguarded copy.  The
 * overlap is computed twice, to the same values: the stage is pure and its
 * buffer is no input's (ts_check_args refuses overlapping outputs).  When
 * the two tiles fall to different threads of a parallel loop, both store
 * the same values to those elements, as Halide's kernels do; guarding the
 * edge tiles instead costs 1.4x on a 1000^3 GEMM (masked scalar code). */
static bool shifts_inward(const ts_stage *st, const sch_relation *r, const ts_expr *d)
{
	return d && r->factor && r->parent->kind == TS_ITER_DATA && is_root(st, r->parent) &&
	       st->body && st->body->kind != IR_REDUCE;
}

static ts_status derive_values(ops *o, stage_nest *n)
{
	ts_ctx *ctx = o->ctx;
	ts_stage *st = n->st;
	for (int i = 0; i < st->nleaf; i++) {
		ts_axis *a = st->leaf[i];
		/* a fresh variable per emitted nest: stages may share index
		 * variables (one ts_var in two computes), and a nest inside
		 * another must not rebind its loop variables; name_loops makes
		 * the names unique once the whole function is built */
		n->var[axis_pos(st, a)] = ts_var_typed(ctx, a->var->u.var.name, o->it);
		n->val[axis_pos(st, a)] = n->var[axis_pos(st, a)];
	}
	for (int i = st->nrel - 1; i >= 0; i--) {
		const sch_relation *r = &st->rel[i];
		if (r->kind == SCH_REL_FUSE) {
			ts_expr *f = n->val[axis_pos(st, r->fused)];
			ts_expr *ie = extent_expr(o, n, axis_pos(st, r->inner));
			n->val[axis_pos(st, r->outer)] = ts_floordiv(ctx, f, ie);
			n->val[axis_pos(st, r->inner)] = ts_floormod(ctx, f, ie);
			continue;
		}
		int pp = axis_pos(st, r->parent);
		int64_t ie = n->ext[axis_pos(st, r->inner)], oe = n->ext[axis_pos(st, r->outer)];
		ts_expr *start = ts_mul(ctx, n->val[axis_pos(st, r->outer)],
					extent_expr(o, n, axis_pos(st, r->inner)));
		if (shifts_inward(st, r, n->dyn[pp]))
			start = ts_max(ctx, iconst(o, 0),
				       ts_min(ctx, start, ts_sub(ctx, n->dyn[pp], iconst(o, ie))));
		ts_expr *v = ts_add(ctx, start, n->val[axis_pos(st, r->inner)]);
		n->val[pp] = v;
		if (n->dyn[pp]) {
			/* a run-time extent: a root's own guard (derive_body) says
			 * the same; a derived axis needs its own */
			if (!is_root(st, r->parent) && n->nguard < 64) {
				n->guard_reduce[n->nguard] = r->parent->kind == TS_ITER_REDUCE;
				n->guard[n->nguard++] = cond(o, ts_lt(ctx, v, n->dyn[pp]), true);
			}
		} else if (oe * ie != n->ext[pp]) {
			n->guard_reduce[n->nguard] = r->parent->kind == TS_ITER_REDUCE;
			n->guard[n->nguard++] = cond(o, ts_lt(ctx, v, iconst(o, n->ext[pp])),
						     r->tail == TS_TAIL_PARTITION);
		}
	}
	return ts_last_status(ctx);
}

static bool is_leaf(const ts_stage *st, const ts_axis *a)
{
	for (int i = 0; i < st->nleaf; i++)
		if (st->leaf[i] == a)
			return true;
	return false;
}

/* The element value and index of the stage in leaf variables. */
static ts_status derive_body(ops *o, stage_nest *n, ts_expr *body, ts_expr *const *rmin)
{
	ts_ctx *ctx = o->ctx;
	ts_stage *st = n->st;
	ts_expr *vars[64], *vals[64];
	for (int r = 0; r < st->nroot; r++) {
		ts_axis *a = st->root[r];
		ts_expr *base = a->kind == TS_ITER_DATA ? ir_index_cast(ctx, rmin[r], o->it)
							: iconst(o, a->root->min);
		vars[r] = a->var;
		vals[r] = ir_simplify(ctx, ts_add(ctx, base, n->val[axis_pos(st, a)]), 0, NULL);
		if (a->kind == TS_ITER_DATA)
			n->idx[r] = vals[r];
		/* a run-time extent: the points past it are not computed (a loop
		 * of the axis itself stops there already) */
		ts_expr *size = root_size(o, st, r);
		bool own_loop = n->dyn[axis_pos(st, a)] && is_leaf(st, a) &&
				(a->loop == TS_FOR_SERIAL || a->loop == TS_FOR_PARALLEL);
		if (size && !own_loop && n->nguard < 64) {
			ts_expr *at = a->kind == TS_ITER_DATA ? vals[r] : n->val[axis_pos(st, a)];
			n->guard_reduce[n->nguard] = a->kind == TS_ITER_REDUCE;
			n->guard[n->nguard++] = cond(o, ts_lt(ctx, at, size), true);
		}
	}
	n->value = ts_dtype_eq(o->it, ts_int32) ? ir_substitute(ctx, body, st->nroot, vars, vals)
						: ir_substitute_wide(ctx, body, st->nroot, vars, vals);
	/* a widened value that is an index variable (P[i] = i, max(i, 3 - i))
	 * comes back int64; the element is stored in the stage's dtype, as
	 * the reference evaluator stores it */
	if (n->value && !ts_dtype_eq(n->value->dtype, body->dtype))
		n->value = ir_index_cast(ctx, n->value, body->dtype);
	return n->value ? TS_OK : ts_last_status(ctx);
}

/* ---- statements ---------------------------------------------------------------- */

static ts_expr *combine(ts_ctx *ctx, ts_reduce_op op, ts_expr *acc, ts_expr *v)
{
	switch (op) {
	case TS_REDUCE_SUM: return ts_add(ctx, acc, v);
	case TS_REDUCE_PROD: return ts_mul(ctx, acc, v);
	case TS_REDUCE_MAX: return ts_max(ctx, acc, v);
	case TS_REDUCE_MIN: return ts_min(ctx, acc, v);
	}
	return NULL;
}

static ts_stmt *guarded(ops *o, stage_nest *n, ts_stmt *s, bool with_reduce)
{
	ts_expr *c = NULL;
	for (int i = 0; i < n->nguard; i++) {
		if (n->guard_reduce[i] && !with_reduce)
			continue;
		c = c ? ts_and(o->ctx, c, n->guard[i]) : n->guard[i];
	}
	return c ? ir_if(o->ctx, c, s, NULL) : s;
}

typedef enum { NEST_ALL, NEST_DATA_ONLY } nest_filter;

static ts_stmt *build_stage(ops *o, ts_stage *st, ts_expr *const *rmin, const int64_t *rext,
			    const bool *edge);

/* Stages attached at axis a of st: each realized around `inner`, built with
 * the loops of st up to a on the stack. */
typedef ts_stmt *(*nest_fn)(ops *, stage_nest *, int, int, nest_filter);
static ts_stmt *attach(ops *o, stage_nest *n, int leafpos, nest_fn inner, int next, int end,
		       nest_filter f);

static ts_stmt *loops(ops *o, stage_nest *n, int pos, int end, nest_filter f);

static ts_stmt *innermost(ops *o, stage_nest *n, nest_filter f)
{
	ts_ctx *ctx = o->ctx;
	ts_tensor *t = n->st->tensor;
	ts_expr *v = n->value;
	if (v->kind != IR_REDUCE)
		return guarded(o, n, ir_provide(ctx, t, t->ndim, n->idx, v), true);
	if (f == NEST_DATA_ONLY) {
		ts_expr *init = v->u.reduce.init ? v->u.reduce.init
						 : sch_reduce_identity(ctx, v->u.reduce.op, v->dtype);
		return guarded(o, n, ir_provide(ctx, t, t->ndim, n->idx, init), false);
	}
	ts_expr *acc = ts_read(ctx, t, t->ndim, n->idx);
	ts_expr *upd = combine(ctx, v->u.reduce.op, acc, v->u.reduce.source);
	return guarded(o, n, ir_provide(ctx, t, t->ndim, n->idx, upd), true);
}

/* First leaf position derived from a reduction axis (nleaf if none). */
static int first_reduce_leaf(const ts_stage *st)
{
	for (int i = 0; i < st->nleaf; i++)
		if (st->leaf[i]->kind == TS_ITER_REDUCE)
			return i;
	return st->nleaf;
}

/* body preceded by the prefetches of stage st at its leaf a (the loop on
 * top of o's stack), each offset along a loop of the stack. */
static ts_stmt *prefetches(ops *o, const ts_stage *st, const ts_axis *a, ts_stmt *body)
{
	for (int i = 0; body && i < st->nprefetch; i++) {
		const sch_prefetch *p = &st->prefetch[i];
		if (p->axis != a)
			continue;
		ts_expr *ahead = NULL;
		int64_t ahead_ext = 0;
		for (int d = o->depth - 1; d >= 0 && !ahead; d--)
			if (o->stack_axis[d] == p->ahead) {
				ahead = o->stack[d].var;
				ahead_ext = o->stack[d].extent;
			}
		if (!ahead) {
			ts_error(o->ctx, TS_ERR_INVALID, "lower: prefetch(%s) of stage %s at '%s': the loop of "
				 "'%s' does not enclose it (give an outer leaf of %s or of a stage it is "
				 "computed at)", p->tensor->name, st->name, a->name, p->ahead->name, st->name);
			return NULL;
		}
		body = sch_prefetch_nest(o->ctx, p, ahead, ahead_ext, o->stack, o->depth, body, o->it);
	}
	return body;
}

/* The loop of leaf `pos`, its body made by next (with attachments when the
 * nest is the full one). */
static ts_stmt *emit_loop(ops *o, stage_nest *n, int pos, int end, nest_filter f, nest_fn next)
{
	ts_axis *a = n->st->leaf[pos];
	int64_t e = n->ext[axis_pos(n->st, a)];
	ts_expr *var = n->var[axis_pos(n->st, a)];
	if (o->depth >= MAX_DEPTH) {
		ts_error(o->ctx, TS_ERR_INVALID, "lower: loops nested deeper than %d", MAX_DEPTH);
		return NULL;
	}
	/* vector, unrolled and thread loops keep the constant extent (their
	 * guards hold the edge); others stop at the run-time one */
	ts_expr *dyn = a->loop == TS_FOR_SERIAL || a->loop == TS_FOR_PARALLEL
			       ? n->dyn[axis_pos(n->st, a)] : NULL;
	if (dyn && o->ndyn >= (int)TS_COUNT_OF(o->dyn)) {
		ts_error(o->ctx, TS_ERR_INVALID, "lower: more than %d loops with run-time extents",
			 (int)TS_COUNT_OF(o->dyn));
		return NULL;
	}
	if (dyn)
		o->dyn[o->ndyn++] = (sch_loop){var, e, a->loop, a->thread};
	o->stack_axis[o->depth] = a;
	o->stack[o->depth++] = (sch_loop){var, e, a->loop, a->thread};
	ts_stmt *body = f == NEST_ALL ? attach(o, n, pos, next, pos + 1, end, f)
				      : next(o, n, pos + 1, end, f);
	if (body && f != NEST_DATA_ONLY)
		body = prefetches(o, n->st, a, body);
	o->depth--;
	return ir_for(o->ctx, var, iconst(o, 0), dyn ? dyn : iconst(o, e), a->loop, a->thread,
		      body);
}

static ts_stmt *loops(ops *o, stage_nest *n, int pos, int end, nest_filter f)
{
	ts_stage *st = n->st;
	if (f == NEST_DATA_ONLY)
		while (pos < end && st->leaf[pos]->kind == TS_ITER_REDUCE)
			pos++;
	if (pos < end)
		return emit_loop(o, n, pos, end, f, loops);
	return innermost(o, n, f);
}

/* A reduction: the loops before its first reduction leaf enclose an init
 * nest (data-parallel leaves only) and then the update nest. */
static ts_stmt *prefix(ops *o, stage_nest *n, int pos, int end, nest_filter f)
{
	if (pos >= end)
		return ir_seq2(o->ctx, loops(o, n, end, n->st->nleaf, NEST_DATA_ONLY),
			       loops(o, n, end, n->st->nleaf, NEST_ALL));
	return emit_loop(o, n, pos, end, f, prefix);
}

/* Is stage c computed inside p's loop at leaf position pos or deeper: p
 * itself, or attached there directly or through a chain of attachments? */
static bool inside(const ts_schedule *s, const ts_stage *c, const ts_stage *p, int pos)
{
	for (int hops = 0; hops <= s->nstages; hops++) {
		if (c == p)
			return true;
		if (c->attach != SCH_ATTACH_AT)
			return false;
		if (c->attach_stage == p) {
			int at = p->nleaf - 1;
			while (at >= 0 && p->leaf[at] != c->attach_axis)
				at--;
			return at >= pos;
		}
		c = c->attach_stage;
	}
	return false;
}

/* compute_at(x, p, axis) is valid at lowering when p's loop encloses every
 * stage that reads x (after inlining), as in TVM and Halide: x is computed
 * once per iteration of that loop, before any of its readers. */
static ts_status check_readers_inside(ops *o, ts_stage *x, int pos)
{
	ts_stage *p = x->attach_stage;
	for (int i = 0; i < o->s->nstages; i++) {
		ts_stage *c = o->s->stages[i];
		if (c == x || c->attach == SCH_ATTACH_INLINE || !ir_expr_reads(o->body[i], x->tensor))
			continue;
		if (!inside(o->s, c, p, pos))
			return ts_error(o->ctx, TS_ERR_INVALID,
					"compute_at(%s): stage %s reads %s but is not computed inside %s's loop '%s' "
					"(every reader must be %s itself or attached at or below that loop)",
					x->name, c->name, x->name, p->name, x->attach_axis->name, p->name);
	}
	/* p's reduction starts from its init, in a nest before its first
	 * reduction loop: x computed at or below that loop is not there yet */
	int first = 0;
	while (first < p->nleaf && p->leaf[first]->kind != TS_ITER_REDUCE)
		first++;
	int at = stage_pos(o->s, p);
	const ts_expr *body = at >= 0 ? o->body[at] : NULL;
	if (pos >= first && body && body->kind == IR_REDUCE && body->u.reduce.init &&
	    ir_expr_reads(body->u.reduce.init, x->tensor))
		return ts_error(o->ctx, TS_ERR_INVALID,
				"compute_at(%s): %s's reduction starts from %s (its init), which is computed "
				"before %s's first reduction loop '%s', but %s is computed inside %s's loop '%s'; "
				"attach %s outside '%s'", x->name, p->name, x->name, p->name, p->leaf[first]->name,
				x->name, p->name, x->attach_axis->name, x->name, p->leaf[first]->name);
	return TS_OK;
}

static void log_region(ops *o, ts_stage *x, ts_expr *const *min, const int64_t *ext)
{
	if (!o->log)
		return;
	ts_sb_printf(o->log, "%s: ", x->name);
	if (x->attach == SCH_ATTACH_AT)
		ts_sb_printf(o->log, "compute_at %s.%s:", x->attach_stage->name, x->attach_axis->name);
	else
		ts_sb_puts(o->log, "root:");
	for (int d = 0; d < x->tensor->ndim; d++) {
		ts_sb_puts(o->log, d ? " x [" : " [");
		ir_sb_expr(o->log, min[d]);
		ts_sb_printf(o->log, ", %lld]", (long long)ext[d]);
	}
	ts_sb_putc(o->log, '\n');
}

/* Every loop of the statement a producer is realized around (the consumer's
 * loops after the attachment point and the loops of the stages attached
 * inside them): relaxed over their extent.  Plus the enclosing threadIdx
 * loops when x lives in shared memory (all threads fill it). */
typedef struct loop_list {
	ts_ctx *ctx;
	const ops *o;
	int n, cap;
	sch_loop *l;
} loop_list;

static bool push_loop(loop_list *ll, sch_loop l)
{
	if (ll->n == ll->cap) {
		int cap = ll->cap ? 2 * ll->cap : 64;
		sch_loop *grown = ts_alloc_array(ll->ctx, (size_t)cap, sizeof(sch_loop));
		if (!grown)
			return false;
		if (ll->n)
			memcpy(grown, ll->l, (size_t)ll->n * sizeof(sch_loop));
		ll->l = grown, ll->cap = cap;
	}
	ll->l[ll->n++] = l;
	return true;
}

static bool loop_fn(ts_stmt *s, void *data)
{
	loop_list *ll = data;
	int64_t e;
	if (s->kind != IR_S_FOR)
		return true;
	if (ir_is_const_int(s->u.for_.extent, &e))
		return push_loop(ll, (sch_loop){s->u.for_.var, e, s->u.for_.kind, s->u.for_.thread});
	for (int i = 0; i < ll->o->ndyn; i++) /* a run-time extent: relaxed over its bound */
		if (ll->o->dyn[i].var == s->u.for_.var)
			return push_loop(ll, ll->o->dyn[i]);
	return true;
}

static ts_status relaxed_loops(ops *o, ts_stmt *inner, const ts_stage *x, loop_list *ll)
{
	*ll = (loop_list){.ctx = o->ctx, .o = o};
	ir_stmt_visit(inner, loop_fn, NULL, ll);
	if (x->scope == TS_SCOPE_SHARED)
		for (int i = 0; i < o->depth; i++)
			if (o->stack[i].kind == TS_FOR_THREAD && o->stack[i].thread >= TS_THREAD_X)
				push_loop(ll, o->stack[i]);
	return ts_last_status(o->ctx);
}

static int outer_loops(ops *o, const sch_loop *relax, int nrelax, sch_loop *out)
{
	int m = 0;
	for (int i = 0; i < o->depth; i++) {
		bool relaxed = false;
		for (int j = 0; j < nrelax; j++)
			relaxed |= relax[j].var == o->stack[i].var;
		if (!relaxed)
			out[m++] = o->stack[i];
	}
	return m;
}

/* Inside a thread loop, regions keep their natural start and guard the
 * shape's end (see sch_producer): tiles stay tile-sized and aligned. */
static bool in_gpu_threads(const ops *o)
{
	for (int i = 0; i < o->depth; i++)
		if (o->stack[i].kind == TS_FOR_THREAD)
			return true;
	return false;
}

/* The tensors of the stages attached inside x: realized over the region x
 * reads, so x never reads them out of bounds. */
static int staged_in(const ops *o, const ts_stage *x, const ts_tensor **out)
{
	int m = 0;
	for (int i = 0; i < o->s->nstages && m < 64; i++)
		if (o->s->stages[i]->attach == SCH_ATTACH_AT && o->s->stages[i]->attach_stage == x)
			out[m++] = o->s->stages[i]->tensor;
	return m;
}

/* Whether x's buffer lives outside the loop it is computed at. */
static bool stored_outside(const ts_stage *x)
{
	return x->attach == SCH_ATTACH_AT &&
	       (x->store == SCH_STORE_ROOT || (x->store == SCH_STORE_AT && x->store_axis != x->attach_axis));
}

/* The region of x that every read of x in inner needs: the consumer's own
 * reads and those of readers attached deeper in its loops. */
static ts_status infer(ops *o, ts_stage *x, ts_stmt *inner, ts_expr **min, int64_t *ext,
		       bool *edge)
{
	ts_ctx *ctx = o->ctx;
	loop_list relax;
	sch_loop outer[MAX_DEPTH];
	if (relaxed_loops(o, inner, x, &relax) != TS_OK)
		return ts_last_status(ctx);
	int no = outer_loops(o, relax.l, relax.n, outer);
	ts_expr *vars[64];
	int64_t vmin[64], vext[64];
	for (int i = 0; i < x->nroot && i < 64; i++) {
		ts_axis *a = x->root[i];
		vars[i] = a->var;
		vmin[i] = a->kind == TS_ITER_DATA ? 0 : a->root->min;
		vext[i] = a->kind == TS_ITER_DATA ? x->tensor->shape[i] : a->extent;
	}
	sch_producer prod = {x->tensor, o->body[stage_pos(o->s, x)], x->nroot, vars, vmin, vext,
			     in_gpu_threads(o), 0, NULL, stored_outside(x)};
	const ts_tensor *staged[64];
	prod.nstaged = staged_in(o, x, staged);
	prod.staged = staged;
	return sch_infer_region_stmt(ctx, &prod, inner, relax.n, relax.l, no, outer, min, ext, edge);
}


/* e with its clamps against values independent of v dropped: min(x, c)
 * and max(x, c) move by no more than x does. */
static ts_expr *unclamped(ts_ctx *ctx, ts_expr *e, void *v)
{
	if ((e->kind == IR_MIN || e->kind == IR_MAX) && !ir_expr_uses_var(e->u.bin.b, v))
		return unclamped(ctx, e->u.bin.a, v);
	if ((e->kind == IR_MIN || e->kind == IR_MAX) && !ir_expr_uses_var(e->u.bin.a, v))
		return unclamped(ctx, e->u.bin.b, v);
	return ir_expr_map_children(ctx, e, unclamped, v);
}

/* The dimension along which x's region [min, min + ext) moves from one
 * iteration of v to the next, by 0 to *step elements (every other
 * dimension staying put), in *dim and *step; *dim is -1 when the region
 * does not move.  False when it moves otherwise (backwards, by more than
 * its extent, by a varying amount, or along two dimensions).  A region
 * clamped at the shape's end moves by less than *step, never more. */
static bool slides(ops *o, const ts_stage *x, ts_expr *v, ts_expr *const *min, const int64_t *ext,
		   int *dim, int64_t *step)
{
	ts_ctx *ctx = o->ctx;
	ts_expr *prev = ts_sub(ctx, v, ts_const(ctx, v->dtype, 1));
	*dim = -1;
	for (int d = 0; d < x->tensor->ndim; d++) {
		ir_mono m = ir_monotone(min[d], v);
		ts_expr *now = m == IR_MONO_UP ? unclamped(ctx, min[d], v) : NULL;
		ts_expr *was = now && prev ? ir_substitute(ctx, now, 1, &v, &prev) : NULL;
		ts_expr *diff = was ? ir_simplify(ctx, ts_sub(ctx, now, was), 0, NULL) : NULL;
		int64_t k;
		if (m == IR_MONO_INDEP)
			continue;
		if (!diff || !ir_is_const_int(diff, &k) || k < 0 || k > ext[d] || *dim >= 0)
			return false;
		*dim = d, *step = k;
	}
	return true;
}

/* The nests of x at its compute_at loop when it is stored outside it: the
 * loops from the storage down to here must run in order, one at a time;
 * the window slides when it can (see the top). */
static ts_stmt *stored_nest(ops *o, ts_stage *x, ts_expr **min, int64_t *ext, const bool *edge,
			    ts_stmt *inner)
{
	ts_ctx *ctx = o->ctx;
	int from = 0;
	for (int i = 0; x->store == SCH_STORE_AT && i < o->depth; i++)
		if (o->stack_axis[i] == x->store_axis)
			from = i + 1;
	for (int i = from; i < o->depth; i++)
		if (o->stack[i].kind != TS_FOR_SERIAL && o->stack[i].kind != TS_FOR_UNROLLED) {
			ts_error(ctx, TS_ERR_INVALID,
				 "store_%s(%s): loop '%s' between %s's storage and its computation is %s; "
				 "its iterations would share the buffer (store at that loop or inside it)",
				 x->store == SCH_STORE_ROOT ? "root" : "at", x->name,
				 o->stack[i].var->u.var.name, x->name,
				 o->stack[i].kind == TS_FOR_THREAD
					 ? ts_sprintf(ctx, "bound to %s", ts_thread_tag_name(o->stack[i].thread))
				 : o->stack[i].kind == TS_FOR_TENSORIZED
					 ? "tensorized (a warp's lanes run its iterations, not one after another)"
					 : ts_for_kind_name(o->stack[i].kind));
			return NULL;
		}
	ts_expr *v = o->stack[o->depth - 1].var;
	int dim;
	int64_t step;
	ts_stmt *first = build_stage(o, x, min, ext, edge);
	if (!first || !slides(o, x, v, min, ext, &dim, &step))
		return first ? ir_seq2(ctx, first, inner) : NULL;
	ts_stmt *next = NULL;
	/* the rows the previous iteration did not compute, and where the step
	 * was smaller (a clamped region), rows it did: a pure recomputation */
	if (dim >= 0) {
		ts_expr *nmin[TS_MAX_DIMS];
		int64_t next_ext[TS_MAX_DIMS];
		for (int d = 0; d < x->tensor->ndim; d++)
			nmin[d] = min[d], next_ext[d] = ext[d];
		nmin[dim] = ts_add(ctx, min[dim], iconst(o, ext[dim] - step));
		next_ext[dim] = step;
		/* x is built again, and so are the stages computed inside it;
		 * bounds_str shows the first nest's loops */
		for (int i = 0; i < o->s->nstages; i++)
			if (inside(o->s, o->s->stages[i], x, 0))
				o->built[i] = false;
		ts_sbuf *saved = o->log;
		o->log = NULL;
		next = build_stage(o, x, nmin, next_ext, edge);
		o->log = saved;
		if (!next)
			return NULL;
	}
	ts_stmt *nests = ir_if(ctx, ts_eq(ctx, v, iconst(o, 0)), first, next);
	return nests ? ir_seq2(ctx, nests, inner) : NULL;
}

/* x computed before inner, realized around it unless stored further out. */
static ts_stmt *attach_one(ops *o, ts_stage *x, ts_stmt *inner)
{
	ts_ctx *ctx = o->ctx;
	ts_expr *min[TS_MAX_DIMS];
	int64_t ext[TS_MAX_DIMS];
	bool edge[TS_MAX_DIMS];
	if (infer(o, x, inner, min, ext, edge) != TS_OK)
		return NULL;
	log_region(o, x, min, ext);
	if (stored_outside(x))
		return stored_nest(o, x, min, ext, edge, inner);
	ts_stmt *nest = build_stage(o, x, min, ext, edge);
	if (!nest)
		return NULL;
	return ir_realize(ctx, x->tensor, x->tensor->ndim, min, ext, x->scope,
			  ir_seq2(ctx, nest, inner));
}

static ts_stmt *attach(ops *o, stage_nest *n, int leafpos, nest_fn inner, int next, int end,
		       nest_filter f)
{
	ts_axis *a = n->st->leaf[leafpos];
	ts_stage *xs[64];
	int nx = 0;
	for (int i = 0; i < o->s->nstages && nx < 64; i++) {
		ts_stage *x = o->s->stages[i];
		if (x->attach == SCH_ATTACH_AT && x->attach_stage == n->st && x->attach_axis == a)
			xs[nx++] = x;
	}
	ts_stmt *body = inner(o, n, next, end, f);
	/* innermost attachment last in stage order: producers realize outside */
	for (int i = nx - 1; body && i >= 0; i--)
		body = attach_one(o, xs[i], body);
	/* buffers stored at this loop, computed further in */
	for (int i = o->s->nstages - 1; body && i >= 0; i--) {
		ts_stage *x = o->s->stages[i];
		if (!stored_outside(x) || x->store != SCH_STORE_AT || x->store_stage != n->st ||
		    x->store_axis != a)
			continue;
		ts_expr *min[TS_MAX_DIMS];
		int64_t ext[TS_MAX_DIMS];
		bool edge[TS_MAX_DIMS];
		if (infer(o, x, body, min, ext, edge) != TS_OK)
			return NULL;
		body = ir_realize(o->ctx, x->tensor, x->tensor->ndim, min, ext, x->scope, body);
	}
	return body;
}

/* The loops of an attached stage with the extents its region gives them. */
static void log_loops(ops *o, const stage_nest *n)
{
	if (!o->log || n->st->attach != SCH_ATTACH_AT)
		return;
	ts_sb_puts(o->log, "  loops:");
	for (int i = 0; i < n->st->nleaf; i++) {
		const ts_axis *a = n->st->leaf[i];
		ts_sb_printf(o->log, " %s[%lld]", a->name, (long long)n->ext[axis_pos(n->st, a)]);
	}
	ts_sb_putc(o->log, '\n');
}

/* Regions that pass the shape's end on a GPU (see sch_producer): the
 * stage computes only the elements inside it. */
static void guard_edges(ops *o, stage_nest *n, const bool *edge)
{
	for (int d = 0; edge && d < n->st->tensor->ndim && n->nguard < 64; d++) {
		if (!edge[d])
			continue;
		n->guard_reduce[n->nguard] = false;
		n->guard[n->nguard++] = ts_lt(o->ctx, n->idx[d], iconst(o, n->st->tensor->shape[d]));
	}
}

/* A leaf with a run-time extent whose loop keeps the bound's constant
 * extent (vector, unrolled, thread loops: emit_loop) runs past the run-time
 * one, where its value would overlap the next outer iteration's (an
 * nparts split's inner part) or leave the shape (a fused loop): those
 * iterations do nothing. */
static void guard_constant_loops(ops *o, stage_nest *n)
{
	ts_stage *st = n->st;
	for (int i = 0; i < st->nleaf && n->nguard < 64; i++) {
		ts_axis *a = st->leaf[i];
		int pos = axis_pos(st, a);
		if (!n->dyn[pos] || a->loop == TS_FOR_SERIAL || a->loop == TS_FOR_PARALLEL)
			continue;
		n->guard_reduce[n->nguard] = a->kind == TS_ITER_REDUCE;
		n->guard[n->nguard++] = cond(o, ts_lt(o->ctx, n->var[pos], n->dyn[pos]), true);
	}
}

static ts_stmt *build_stage(ops *o, ts_stage *st, ts_expr *const *rmin, const int64_t *rext,
			    const bool *edge)
{
	int si = stage_pos(o->s, st);
	if (o->built[si]) {
		ts_error(o->ctx, TS_ERR_INTERNAL, "lower: stage %s emitted twice", st->name);
		return NULL;
	}
	o->built[si] = true;
	stage_nest *n = ts_alloc(o->ctx, sizeof(*n));
	if (!n)
		return NULL;
	n->st = st;
	if (derive_extents(o->ctx, n, rext) != TS_OK)
		return NULL;
	derive_dyn(o, n, rmin, rext);
	if (derive_values(o, n) != TS_OK ||
	    derive_body(o, n, o->body[si], rmin) != TS_OK)
		return NULL;
	log_loops(o, n);
	guard_edges(o, n, edge);
	guard_constant_loops(o, n);
	if (n->value->kind == IR_REDUCE)
		return prefix(o, n, 0, first_reduce_leaf(st), NEST_ALL);
	return loops(o, n, 0, st->nleaf, NEST_ALL);
}

/* store_at's rules that need the whole schedule (ts_store_at). */
static ts_status check_store(ops *o, const ts_stage *x)
{
	const char *prim = x->store == SCH_STORE_ROOT ? "store_root" : "store_at";
	if (x->store == SCH_STORE_COMPUTE)
		return TS_OK;
	if (x->attach == SCH_ATTACH_INLINE)
		return ts_error(o->ctx, TS_ERR_INVALID, "%s(%s): %s is inlined and has no buffer", prim,
				x->name, x->name);
	if (x->store == SCH_STORE_ROOT)
		return TS_OK;
	const ts_stage *p = x->store_stage;
	if (x->attach != SCH_ATTACH_AT || x->attach_stage != p)
		return ts_error(o->ctx, TS_ERR_INVALID,
				"store_at(%s): %s must be computed at %s (compute_at), at or inside loop '%s'",
				x->name, x->name, p->name, x->store_axis->name);
	int ps = -1, pc = -1;
	for (int k = 0; k < p->nleaf; k++) {
		ps = p->leaf[k] == x->store_axis ? k : ps;
		pc = p->leaf[k] == x->attach_axis ? k : pc;
	}
	if (ps < 0)
		return ts_error(o->ctx, TS_ERR_INVALID,
				"store_at(%s): axis '%s' is no longer a leaf of %s (split or fused after store_at)",
				x->name, x->store_axis->name, p->name);
	if (ps > pc)
		return ts_error(o->ctx, TS_ERR_INVALID,
				"store_at(%s): the storage loop '%s' is inside the compute_at loop '%s'",
				x->name, x->store_axis->name, x->attach_axis->name);
	return TS_OK;
}

static bool leaf_of_any(const ts_schedule *s, const ts_axis *a)
{
	for (int i = 0; i < s->nstages; i++)
		for (int l = 0; l < s->stages[i]->nleaf; l++)
			if (s->stages[i]->leaf[l] == a)
				return true;
	return false;
}

/* The prefetches, alignments and double buffering a stage asks for: a
 * prefetch names loops, and axes split or fused after it name none.  A
 * stage computed inline has no loops to prefetch in and no buffer to
 * align; a double buffer needs a loop around its fetch. */
static ts_status check_hints(ops *o)
{
	for (int i = 0; i < o->s->nstages; i++) {
		const ts_stage *x = o->s->stages[i];
		if (x->nprefetch && x->attach == SCH_ATTACH_INLINE)
			return ts_error(o->ctx, TS_ERR_INVALID, "lower: stage %s is computed inline: it has no "
					"loops for its prefetch of %s", x->name, x->prefetch[0].tensor->name);
		if (x->double_buffer && x->attach != SCH_ATTACH_AT)
			return ts_error(o->ctx, TS_ERR_INVALID, "lower: double_buffer(%s): the stage is computed "
					"%s, not at a loop whose steps could overlap its fetches (compute_at it "
					"at a loop of its consumer)", x->name,
					x->attach == SCH_ATTACH_INLINE ? "inline: it has no buffer" : "at root");
		for (int d = 0; d < x->tensor->ndim; d++)
			if (x->align_factor[d] && x->attach == SCH_ATTACH_INLINE)
				return ts_error(o->ctx, TS_ERR_INVALID, "lower: stage %s is computed inline: it "
						"has no buffer for its storage_align", x->name);
		for (int p = 0; p < x->nprefetch; p++) {
			const sch_prefetch *pf = &x->prefetch[p];
			const ts_axis *gone = !leaf_of_any(o->s, pf->axis) ? pf->axis
					      : !leaf_of_any(o->s, pf->ahead) ? pf->ahead : NULL;
			if (gone)
				return ts_error(o->ctx, TS_ERR_INVALID, "lower: prefetch(%s) of stage %s: axis '%s' "
						"was split or fused after the prefetch named it, or replaced by "
						"rfactor (name the axes that are left)",
						pf->tensor->name, x->name, gone->name);
		}
	}
	return TS_OK;
}

static ts_status check_attachments(ops *o)
{
	for (int i = 0; i < o->s->nstages; i++) {
		ts_stage *x = o->s->stages[i];
		if (check_store(o, x) != TS_OK)
			return TS_ERR_INVALID;
		if (x->attach != SCH_ATTACH_AT)
			continue;
		ts_stage *p = x->attach_stage;
		if (p->attach == SCH_ATTACH_INLINE)
			return ts_error(o->ctx, TS_ERR_INVALID,
					"compute_at(%s): target stage %s is inlined", x->name, p->name);
		int pos = -1;
		for (int k = 0; k < p->nleaf; k++)
			pos = p->leaf[k] == x->attach_axis ? k : pos;
		if (pos < 0)
			return ts_error(o->ctx, TS_ERR_INVALID,
					"compute_at(%s): axis '%s' is no longer a leaf of %s (split or fused after compute_at)",
					x->name, x->attach_axis->name, p->name);
		if (check_readers_inside(o, x, pos) != TS_OK)
			return TS_ERR_INVALID;
	}
	return TS_OK;
}

/* ---- loop names ----------------------------------------------------------------- */

/* Loop variables seen so far, in program order, and the names given. */
typedef struct namer {
	ts_ctx *ctx;
	int n, cap;
	ts_expr **var;
	bool ok;
} namer;

static bool name_taken(const namer *nm, const char *name)
{
	for (int i = 0; i < nm->n; i++)
		if (strcmp(nm->var[i]->u.var.name, name) == 0)
			return true;
	return false;
}

static bool seen_var(const namer *nm, const ts_expr *v)
{
	for (int i = 0; i < nm->n; i++)
		if (nm->var[i] == v)
			return true;
	return false;
}

/* The first loop of a name keeps it, later ones get _1, _2, ...  The
 * variables were made by this pass (derive_values) and nothing else holds
 * them yet, so they are renamed in place. */
static bool name_fn(ts_stmt *s, void *data)
{
	namer *nm = data;
	if (!nm->ok || s->kind != IR_S_FOR || seen_var(nm, s->u.for_.var))
		return nm->ok;
	ts_expr *v = s->u.for_.var;
	if (name_taken(nm, v->u.var.name)) {
		const char *name = NULL;
		for (int k = 1; !name || name_taken(nm, name); k++)
			name = ts_sprintf(nm->ctx, "%s_%d", v->u.var.name, k);
		v->u.var.name = name;
	}
	if (nm->n == nm->cap) {
		int cap = nm->cap ? 2 * nm->cap : 64;
		ts_expr **grown = ts_alloc_array(nm->ctx, (size_t)cap, sizeof(ts_expr *));
		if (!grown)
			return nm->ok = false;
		if (nm->n)
			memcpy(grown, nm->var, (size_t)nm->n * sizeof(ts_expr *));
		nm->var = grown, nm->cap = cap;
	}
	nm->var[nm->n++] = v;
	return true;
}

/* Distinct loops print distinctly: "x.outer" and "x.outer_1". */
static ts_status name_loops(ts_ctx *ctx, ts_stmt *body)
{
	namer nm = {.ctx = ctx, .ok = true};
	ir_stmt_visit(body, name_fn, NULL, &nm);
	return nm.ok ? TS_OK : ts_last_status(ctx);
}

ts_stmt *pass_schedule_ops(ts_ctx *ctx, ts_schedule *s, ts_sbuf *log)
{
	ops *o = ts_alloc(ctx, sizeof(*o));
	if (!o)
		return NULL;
	o->ctx = ctx;
	o->s = s;
	o->log = log;
	o->body = ts_alloc_array(ctx, (size_t)s->nstages, sizeof(ts_expr *));
	o->built = ts_alloc_array(ctx, (size_t)s->nstages, sizeof(bool));
	if (!o->body || !o->built || inline_all(o) != TS_OK || check_attachments(o) != TS_OK ||
	    check_hints(o) != TS_OK ||
	    choose_index_type(o) != TS_OK)
		return NULL;
	ts_stmt *body = NULL;
	for (int i = s->nstages - 1; i >= 0; i--) {
		ts_stage *st = s->stages[i];
		if (st->attach != SCH_ATTACH_ROOT)
			continue;
		ts_expr *min[TS_MAX_DIMS];
		for (int d = 0; d < st->tensor->ndim; d++)
			min[d] = iconst(o, 0);
		log_region(o, st, min, st->tensor->shape);
		ts_stmt *nest = build_stage(o, st, min, st->tensor->shape, NULL);
		if (!nest)
			return NULL;
		body = body ? ir_seq2(ctx, nest, body) : nest;
		if (!st->is_output)
			body = ir_realize(ctx, st->tensor, st->tensor->ndim, min, st->tensor->shape,
					  st->scope, body);
		if (!body)
			return NULL;
	}
	/* stored at root, computed inside: the whole shape for the function */
	for (int i = 0; body && i < s->nstages; i++) {
		ts_stage *x = s->stages[i];
		if (x->store != SCH_STORE_ROOT || !stored_outside(x))
			continue;
		ts_expr *min[TS_MAX_DIMS];
		for (int d = 0; d < x->tensor->ndim; d++)
			min[d] = iconst(o, 0);
		body = ir_realize(ctx, x->tensor, x->tensor->ndim, min, x->tensor->shape, x->scope, body);
	}
	if (!body)
		return NULL;
	for (int i = 0; i < s->nstages; i++)
		if (s->stages[i]->attach != SCH_ATTACH_INLINE && !o->built[i]) {
			ts_error(ctx, TS_ERR_INVALID, "lower: stage %s is never computed", s->stages[i]->name);
			return NULL;
		}
	return name_loops(ctx, body) == TS_OK ? body : NULL;
}
