/*
 * check_reads.c - refuse, at lower time, tensor reads outside the read
 * tensor's shape.
 *
 * The reference evaluator and the interpreter catch such reads at run time;
 * compiled code would read past the buffer silently.  Every stage's body is
 * checked over the stage's whole domain: each root variable (data axes, then
 * reduction axes) ranges over its axis, and each index of each READ is
 * bounded with the interval analysis of ir/ (ir_bound_of), on the index as
 * written and simplified.  Reads of placeholders and of intermediate tensors
 * are checked alike, inlined stages included, so that every read the
 * program's meaning performs is covered.
 *
 * Interval analysis over-approximates (a variable occurring twice, floormod,
 * a read inside an index), so the rule is: an index whose interval lies in
 * [0, extent) is accepted; one whose interval is exact and leaves [0,
 * extent), or lies entirely outside it, is refused; one that reads tensor
 * data (a gather) is refused too unless clamped into the shape, since no
 * analysis bounds data; any other is accepted, since the reach past the
 * shape may be an artefact of the analysis.  An
 * interval is exact when every domain variable occurs at most once in the
 * index and the index is built only from constants, variables, +, -, *,
 * min, max and division by a positive constant, with no intermediate value
 * that might wrap: each of these is monotone in each operand and its
 * operands depend on disjoint variables, so both ends are attained.
 *
 * A dimension whose extent is a size variable n (te.h ts_size_var) is read
 * only at an axis variable of the stage that ranges over n itself, from 0:
 * the bounds above hold for n's upper bound, not for the n of a call, and
 * nothing short of the axis being n's own proves an index below every n.
 * Size variables used in a body range over [1, max].
 *
 * A select does not protect a read: both arms are evaluated (ir.h), so the
 * untaken arm's index must be inside the shape too.  Refusals under a select
 * say so and point at the clamped index the pad operator uses.
 */
#include "check_reads.h"

#include "arith.h"
#include "printer.h"
#include "te.h"

typedef struct reads {
	ts_ctx *ctx;
	const ts_stage *st;
	int n, nroot;    /* domain variables; the first nroot are the stage's axes */
	ir_range *r;     /* the stage's domain */
	bool in_select;  /* the expression visited is an arm of a select */
	bool wide;       /* the function's indices will be int64 (no int32 wrap) */
	ts_status status;
} reads;

static int domain_index(const reads *c, const ts_expr *v)
{
	for (int i = 0; i < c->n; i++)
		if (c->r[i].var == v)
			return i;
	return -1;
}

/* The interval of e computed exactly, in mathematical integers, for the
 * expressions of the rule above (constants, domain variables used once,
 * + - * min max, division by a positive constant, widening casts); false
 * for any other, or when an end overflows int64.  *wraps is set when an
 * intermediate of a 32-bit dtype leaves int32: code that computes the
 * index in int32 would wrap there.  used marks the domain variables
 * already seen. */
static bool exact(const reads *c, const ts_expr *e, uint64_t *used, ir_interval *iv, bool *wraps)
{
	ir_interval a, b;
	int64_t k, p[4];
	int i;
	if (e->dtype.lanes != 1 || !ts_dtype_is_int(e->dtype) || e->dtype.bits < 32)
		return false;
	switch (e->kind) {
	case IR_INT_IMM:
		*iv = (ir_interval){e->u.int_imm, e->u.int_imm};
		break;
	case IR_VAR:
		i = domain_index(c, e);
		if (i < 0 || i >= 64 || ((*used >> i) & 1) ||
		    __builtin_add_overflow(c->r[i].min, c->r[i].extent - 1, &k))
			return false;
		*used |= UINT64_C(1) << i;
		*iv = (ir_interval){c->r[i].min, k};
		break;
	case IR_CAST: /* to a dtype at least as wide: the value is unchanged */
		if (e->u.un.a->dtype.bits > e->dtype.bits || !exact(c, e->u.un.a, used, iv, wraps))
			return false;
		break;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_MIN: case IR_MAX:
		if (!exact(c, e->u.bin.a, used, &a, wraps) || !exact(c, e->u.bin.b, used, &b, wraps))
			return false;
		if (e->kind == IR_MIN || e->kind == IR_MAX) {
			bool mn = e->kind == IR_MIN;
			*iv = (ir_interval){mn ? (a.min < b.min ? a.min : b.min) : (a.min > b.min ? a.min : b.min),
					    mn ? (a.max < b.max ? a.max : b.max) : (a.max > b.max ? a.max : b.max)};
			break;
		}
		if (e->kind == IR_ADD) {
			if (__builtin_add_overflow(a.min, b.min, &iv->min) ||
			    __builtin_add_overflow(a.max, b.max, &iv->max))
				return false;
			break;
		}
		if (e->kind == IR_SUB) {
			if (__builtin_sub_overflow(a.min, b.max, &iv->min) ||
			    __builtin_sub_overflow(a.max, b.min, &iv->max))
				return false;
			break;
		}
		if (__builtin_mul_overflow(a.min, b.min, &p[0]) || __builtin_mul_overflow(a.min, b.max, &p[1]) ||
		    __builtin_mul_overflow(a.max, b.min, &p[2]) || __builtin_mul_overflow(a.max, b.max, &p[3]))
			return false;
		*iv = (ir_interval){p[0], p[0]};
		for (i = 1; i < 4; i++) {
			iv->min = p[i] < iv->min ? p[i] : iv->min;
			iv->max = p[i] > iv->max ? p[i] : iv->max;
		}
		break;
	case IR_FLOORDIV: case IR_TRUNCDIV: /* monotone for a positive divisor */
		if (!ir_is_const_int(e->u.bin.b, &k) || k <= 0 || !exact(c, e->u.bin.a, used, &a, wraps))
			return false;
		if (e->kind == IR_TRUNCDIV)
			*iv = (ir_interval){a.min / k, a.max / k};
		else
			*iv = (ir_interval){a.min / k - (a.min % k < 0), a.max / k - (a.max % k < 0)};
		break;
	default:
		return false;
	}
	*wraps |= e->dtype.bits == 32 && (iv->min < INT32_MIN || iv->max > INT32_MAX);
	return true;
}

static bool exact_bound(const reads *c, const ts_expr *e, ir_interval *iv, bool *wraps)
{
	uint64_t used = 0;
	ir_interval m;
	*wraps = false;
	if (exact(c, e, &used, &m, wraps)) {
		*iv = m;
		return true;
	}
	*iv = ir_bound_of(e, c->n, c->r);
	return false;
}

/* The interval of idx over the domain, and whether it is exact; false on
 * allocation failure. */
static bool bound_index(const reads *c, ts_expr *idx, ir_interval *iv, bool *is_exact, bool *wraps)
{
	*is_exact = exact_bound(c, idx, iv, wraps);
	if (*is_exact)
		return true;
	/* the simplifier merges repeated terms (i*2 - i is i), which may make
	 * the bound exact or at least tighter */
	ts_expr *simple = ir_simplify(c->ctx, idx, c->n, c->r);
	if (!simple)
		return false;
	ir_interval b;
	*is_exact = exact_bound(c, simple, &b, wraps);
	if (!*is_exact) { /* both are sound, so their intersection is too */
		b.min = iv->min > b.min ? iv->min : b.min;
		b.max = iv->max < b.max ? iv->max : b.max;
	}
	*iv = b;
	return true;
}

/* "[8, 24)", "(-inf, 0)", ... */
static const char *range_str(ts_ctx *ctx, ir_interval iv)
{
	char lo[32], hi[32];
	if (iv.min == IR_NEG_INF)
		snprintf(lo, sizeof(lo), "(-inf");
	else
		snprintf(lo, sizeof(lo), "[%lld", (long long)iv.min);
	if (iv.max == IR_POS_INF)
		snprintf(hi, sizeof(hi), "+inf)");
	else
		snprintf(hi, sizeof(hi), "%lld)", (long long)iv.max + 1);
	const char *s = ts_sprintf(ctx, "%s, %s", lo, hi);
	return s ? s : "?";
}

static ts_status refuse(const reads *c, const ts_expr *rd, int d, ir_interval iv)
{
	const ts_tensor *t = rd->u.read.tensor;
	const char *text = ir_expr_str(c->ctx, rd);
	const char *hint = c->in_select
		? " (both arms of a select are evaluated: clamp the index, as pad does)" : "";
	return ts_error(c->ctx, TS_ERR_INVALID,
			"lower: %s reads %s over %s in dimension %d, but %s has extent %lld%s",
			c->st->name, text ? text : t->name, range_str(c->ctx, iv), d, t->name,
			(long long)t->shape[d], hint);
}

/* An index whose int32 arithmetic leaves int32 somewhere in the domain,
 * in a function whose indices stay int32: the code would wrap (ir.h) and
 * read wherever the wrapped value points. */
static ts_status refuse_wrap(const reads *c, const ts_expr *rd, int d)
{
	const char *text = ir_expr_str(c->ctx, rd->u.read.idx[d]);
	return ts_error(c->ctx, TS_ERR_INVALID,
			"lower: %s reads %s with index %s in dimension %d, whose int32 arithmetic leaves "
			"int32 and would wrap (ir.h): build the index in int64 (ts_cast to ts_int64)",
			c->st->name, rd->u.read.tensor->name, text ? text : "?", d);
}

/* The size variable a root axis of the stage ranges over from 0 (NULL:
 * none). */
static const ts_expr *axis_size_var(const reads *c, int r)
{
	const ts_axis *a = c->st->root[r];
	return a->kind == TS_ITER_DATA || (a->root && a->root->min == 0) ? sch_root_size_var(c->st, r)
									 : NULL;
}

/* Dimension d of the read has extent size variable n: its index must be
 * an axis ranging over n (widening casts aside). */
static ts_status check_symbolic(const reads *c, const ts_expr *rd, int d, const ts_expr *n)
{
	const ts_expr *x = rd->u.read.idx[d];
	while (x->kind == IR_CAST && x->u.un.a->dtype.bits <= x->dtype.bits &&
	       ts_dtype_is_int(x->u.un.a->dtype))
		x = x->u.un.a;
	int r = domain_index(c, x);
	if (r >= 0 && r < c->nroot && axis_size_var(c, r) == n)
		return TS_OK;
	const char *text = ir_expr_str(c->ctx, rd), *why = "";
	if (r >= 0 && r < c->nroot) { /* an axis, but over something else */
		const ts_expr *v = axis_size_var(c, r);
		why = v ? ts_sprintf(c->ctx, "; %s ranges over %s", x->u.var.name, v->u.var.name)
			: ts_sprintf(c->ctx, "; %s ranges over the constant %lld", x->u.var.name,
				     (long long)c->r[r].extent);
	}
	return ts_error(c->ctx, TS_ERR_INVALID,
			"lower: %s reads %s, whose dimension %d has the symbolic extent %s: its index "
			"must be an axis ranging over %s itself (no other index is provably inside "
			"for every %s)%s",
			c->st->name, text ? text : rd->u.read.tensor->name, d, n->u.var.name,
			n->u.var.name, n->u.var.name, why ? why : "");
}

static bool is_read(const ts_expr *e, const void *data)
{
	(void)data;
	return e->kind == IR_READ;
}

/* An index computed from tensor data (a gather) that the analysis cannot
 * bound: whatever the data holds, compiled code must not read past the
 * tensor, so the index is to be clamped in the expression. */
static ts_status refuse_gather(const reads *c, const ts_expr *rd, int d)
{
	const char *text = ir_expr_str(c->ctx, rd);
	return ts_error(c->ctx, TS_ERR_INVALID,
			"lower: %s reads %s: index %d is computed from tensor data, which nothing bounds, so "
			"compiled code could read past %s; clamp it into [0, %lld) (ts_max(ts_min(i, %lld), 0))",
			c->st->name, text ? text : rd->u.read.tensor->name, d, rd->u.read.tensor->name,
			(long long)rd->u.read.tensor->shape[d], (long long)rd->u.read.tensor->shape[d] - 1);
}

static ts_status check_read(const reads *c, const ts_expr *rd)
{
	for (int d = 0; d < rd->u.read.n; d++) {
		const ts_expr *sv = rd->u.read.tensor->dim_var[d];
		if (sv && check_symbolic(c, rd, d, sv) != TS_OK)
			return TS_ERR_INVALID;
		ir_interval iv;
		bool is_exact, wraps;
		if (!bound_index(c, rd->u.read.idx[d], &iv, &is_exact, &wraps))
			return ts_last_status(c->ctx);
		if (is_exact && wraps && !c->wide)
			return refuse_wrap(c, rd, d);
		int64_t ext = rd->u.read.tensor->shape[d];
		if (iv.min >= 0 && iv.max < ext)
			continue;
		if (is_exact || iv.max < 0 || iv.min >= ext)
			return refuse(c, rd, d, iv);
		if (ir_expr_any(rd->u.read.idx[d], is_read, NULL))
			return refuse_gather(c, rd, d);
	}
	return TS_OK;
}

static bool visit_fn(ts_expr *e, void *data)
{
	reads *c = data;
	if (c->status != TS_OK)
		return false;
	if (e->kind == IR_SELECT && !c->in_select) {
		ir_expr_visit(e->u.select.cond, visit_fn, c);
		c->in_select = true;
		ir_expr_visit(e->u.select.t, visit_fn, c);
		ir_expr_visit(e->u.select.f, visit_fn, c);
		c->in_select = false;
		return false;
	}
	if (e->kind == IR_READ)
		c->status = check_read(c, e);
	return c->status == TS_OK;
}

static ts_status check_stage(ts_ctx *ctx, const ts_stage *st, bool wide)
{
	if (!st->body)
		return TS_OK;
	int nsv = ts_ctx_size_var_count(ctx);
	reads c = {.ctx = ctx, .st = st, .n = st->nroot + nsv, .nroot = st->nroot, .wide = wide};
	c.r = ts_alloc_array(ctx, (size_t)(c.n ? c.n : 1), sizeof(*c.r));
	if (!c.r)
		return ts_last_status(ctx);
	for (int i = 0; i < nsv; i++) {
		int64_t max = 1;
		ts_expr *v = ts_ctx_size_var(ctx, i, &max);
		c.r[st->nroot + i] = (ir_range){v, 1, max};
	}
	for (int i = 0; i < st->nroot; i++) {
		const ts_iter *it = st->root[i]->root;
		TS_ASSERT(ctx, it && it->var == st->root[i]->var);
		if (!it)
			return ts_last_status(ctx);
		c.r[i] = (ir_range){it->var, it->min, it->extent};
	}
	ir_expr_visit(st->body, visit_fn, &c);
	return c.status;
}

/* Whether lowering will give the function int64 indices (as schedule_ops
 * chooses: a tensor of 2^31 elements or more, or a domain beyond int32),
 * under which index arithmetic does not wrap. */
static bool wide_indices(const ts_schedule *s)
{
	for (int i = 0; i < s->nstages; i++) {
		const ts_stage *st = s->stages[i];
		bool wide = ts_tensor_numel(st->tensor) > INT32_MAX;
		for (int k = 0; k < st->tensor->ninputs; k++)
			wide |= ts_tensor_numel(st->tensor->inputs[k]) > INT32_MAX;
		for (int r = 0; r < st->nroot; r++) {
			const ts_iter *it = st->root[r]->root;
			wide |= it && (it->min < INT32_MIN || it->extent > INT32_MAX - it->min);
		}
		if (wide)
			return true;
	}
	return false;
}

ts_status sch_check_reads(ts_ctx *ctx, ts_schedule *s)
{
	bool wide = wide_indices(s);
	for (int i = 0; i < s->nstages; i++) {
		ts_status st = check_stage(ctx, s->stages[i], wide);
		if (st != TS_OK)
			return st;
	}
	return TS_OK;
}
