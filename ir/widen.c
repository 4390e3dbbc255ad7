/*
 * widen.c - substitution into 64-bit index arithmetic (TVM's index dtype
 * rewriting).
 *
 * When a function's extents need int64 indices, lowering replaces the
 * user's int32 axis variables with int64 loop values.  A plain
 * ir_substitute would mix dtypes, so ir_substitute_wide rebuilds the
 * integer operations over a replaced variable in int64.  What they mean
 * follows the reference evaluator, which binds axis variables to exact
 * integers and wraps the result of every int32 + - * / % to int32:
 *  - in an index (a READ's indices, and the arithmetic, comparisons and
 *    selects and widening integer casts inside them) the arithmetic stays
 *    int64, so it cannot wrap: that is the point of int64 indices;
 *  - elsewhere (a value: cast(float32, i * j)) an int32 + - * / % computed
 *    in int64 is cast back to int32, so it wraps as the evaluator's does,
 *    while a variable on its own (cast(int64, k)) keeps its exact value.
 * Where a widened value feeds a node whose operand dtype is fixed (an
 * intrinsic, NOT, the source of a reduction) it is cast back as well.  READ
 * indices always come back int64: an int32 tensor value used as an index
 * (gather A[B[i]]) is widened with a cast.
 */
#include "arith.h"
#include "arith_impl.h"

typedef struct widen {
	int n;
	ts_expr *const *vars;
	ts_expr *const *values;
} widen;

ts_expr *ir_index_cast(ts_ctx *ctx, ts_expr *e, ts_dtype t)
{
	if (!e) {
		ts_error(ctx, TS_ERR_INVALID, "index_cast: expression is NULL");
		return NULL;
	}
	if (ts_dtype_eq(e->dtype, t))
		return e;
	/* a constant keeps its value (wrapped to its own dtype first) */
	if (e->kind == IR_INT_IMM && ts_dtype_is_int(e->dtype))
		return ts_const(ctx, t, ir_wrap_int(e->dtype, e->u.int_imm));
	return ts_cast(ctx, t, e);
}

static ts_expr *wide(ts_ctx *ctx, ts_expr *e, const widen *w, bool index);

/* A child of a node whose operand dtype is fixed: widened, then cast back. */
static ts_expr *wide_fixed(ts_ctx *ctx, ts_expr *e, void *data)
{
	return ir_index_cast(ctx, wide(ctx, e, data, false), e->dtype);
}

static bool both_int(const ts_expr *a, const ts_expr *b)
{
	return ts_dtype_is_int(a->dtype) && ts_dtype_is_int(b->dtype) && a->dtype.lanes == 1 &&
	       b->dtype.lanes == 1;
}

/* Operands of one node whose dtypes came apart: both become int64. */
static void unify(ts_ctx *ctx, ts_expr **a, ts_expr **b)
{
	if (ts_dtype_eq((*a)->dtype, (*b)->dtype) || !both_int(*a, *b))
		return;
	*a = ir_index_cast(ctx, *a, ts_int64);
	*b = ir_index_cast(ctx, *b, ts_int64);
}

/* + - * / % wrap their result to the dtype in the evaluator; min, max and
 * comparisons return an operand or a bool. */
static bool wraps(ir_expr_kind k)
{
	return k >= IR_ADD && k <= IR_FLOORMOD;
}

static ts_expr *wide_binary(ts_ctx *ctx, ts_expr *e, const widen *w, bool index)
{
	ts_expr *a = wide(ctx, e->u.bin.a, w, index), *b = wide(ctx, e->u.bin.b, w, index);
	if (!a || !b)
		return NULL;
	if (a == e->u.bin.a && b == e->u.bin.b)
		return e;
	unify(ctx, &a, &b);
	ts_expr *r = a && b ? ts_binary(ctx, e->kind, a, b) : NULL;
	if (r && !index && wraps(e->kind))
		r = ir_index_cast(ctx, r, e->dtype);
	return r;
}

static ts_expr *wide_select(ts_ctx *ctx, ts_expr *e, const widen *w, bool index)
{
	ts_expr *c = wide(ctx, e->u.select.cond, w, index);
	ts_expr *t = wide(ctx, e->u.select.t, w, index), *f = wide(ctx, e->u.select.f, w, index);
	if (!c || !t || !f)
		return NULL;
	if (c == e->u.select.cond && t == e->u.select.t && f == e->u.select.f)
		return e;
	unify(ctx, &t, &f);
	return t && f ? ts_select(ctx, c, t, f) : NULL;
}

/* A widening integer cast inside an index (int64(i - 2), which an int64
 * extent beside an int32 variable makes) is part of the index arithmetic:
 * what it casts stays int64 too.  Any other cast takes a value. */
static ts_expr *wide_cast(ts_ctx *ctx, ts_expr *e, const widen *w, bool index)
{
	const ts_expr *from = e->u.un.a;
	bool widening = ts_dtype_is_int(e->dtype) && ts_dtype_is_int(from->dtype) &&
			e->dtype.bits >= from->dtype.bits;
	ts_expr *a = wide(ctx, e->u.un.a, w, index && widening);
	if (!a || a == e->u.un.a)
		return a ? e : NULL;
	return ts_dtype_eq(a->dtype, e->dtype) ? a : ts_cast(ctx, e->dtype, a);
}

static ts_expr *wide_read(ts_ctx *ctx, ts_expr *e, const widen *w)
{
	int n = e->u.read.n;
	ts_expr **idx = ts_alloc_array(ctx, (size_t)n, sizeof(*idx));
	if (!idx)
		return NULL;
	for (int d = 0; d < n; d++) {
		idx[d] = ir_index_cast(ctx, wide(ctx, e->u.read.idx[d], w, true), ts_int64);
		if (!idx[d])
			return NULL;
	}
	return ts_read(ctx, e->u.read.tensor, n, idx);
}

static ts_expr *wide_reduce(ts_ctx *ctx, ts_expr *e, const widen *w)
{
	ts_expr *src = wide_fixed(ctx, e->u.reduce.source, (void *)w);
	ts_expr *init = e->u.reduce.init ? wide_fixed(ctx, e->u.reduce.init, (void *)w) : NULL;
	if (!src || (e->u.reduce.init && !init))
		return NULL;
	if (src == e->u.reduce.source && init == e->u.reduce.init)
		return e;
	return ts_reduce(ctx, e->u.reduce.op, src, e->u.reduce.naxes, e->u.reduce.axes, init);
}

static ts_expr *wide(ts_ctx *ctx, ts_expr *e, const widen *w, bool index)
{
	if (!e)
		return NULL;
	if (ir_is_binary(e->kind))
		return wide_binary(ctx, e, w, index);
	if (e->kind == IR_VAR) {
		for (int i = 0; i < w->n; i++)
			if (w->vars[i] == e)
				return w->values[i];
		return e;
	}
	if (e->kind == IR_SELECT)
		return wide_select(ctx, e, w, index);
	if (e->kind == IR_CAST)
		return wide_cast(ctx, e, w, index);
	if (e->kind == IR_READ)
		return wide_read(ctx, e, w);
	if (e->kind == IR_REDUCE)
		return wide_reduce(ctx, e, w);
	return ir_expr_map_children(ctx, e, wide_fixed, (void *)w);
}

ts_expr *ir_substitute_wide(ts_ctx *ctx, ts_expr *e, int n, ts_expr *const *vars,
			    ts_expr *const *values)
{
	if (!ctx || !ir_check_subst(ctx, "substitute_wide", e, n, vars, values))
		return NULL;
	widen w = {n, vars, values};
	return wide(ctx, e, &w, false);
}
