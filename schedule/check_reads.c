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
 * extent), or lies entirely outside it, is refused; any other is accepted,
 * since the reach past the shape may be an artefact of the analysis.  An
 * interval is exact when every domain variable occurs at most once in the
 * index and the index is built only from constants, variables, +, -, *,
 * min, max and division by a positive constant, with no intermediate value
 * that might wrap: each of these is monotone in each operand and its
 * operands depend on disjoint variables, so both ends are attained.
 *
 * A select does not protect a read: both arms are evaluated (ir.h), so the
 * untaken arm's index must be inside the shape too.  Refusals under a select
 * say so and point at the clamped index the pad operator uses.
 */
#include "check_reads.h"

#include "arith.h"
#include "printer.h"

typedef struct reads {
	ts_ctx *ctx;
	const ts_stage *st;
	int n;
	ir_range *r;     /* the stage's domain */
	bool in_select;  /* the expression visited is an arm of a select */
	ts_status status;
} reads;

static int domain_index(const reads *c, const ts_expr *v)
{
	for (int i = 0; i < c->n; i++)
		if (c->r[i].var == v)
			return i;
	return -1;
}

/* Is the interval of e exact (see the rule above)?  used marks the domain
 * variables already seen. */
static bool exact(const reads *c, const ts_expr *e, uint64_t *used)
{
	ir_interval iv = ir_bound_of(e, c->n, c->r);
	/* an infinite end of a wide dtype, or any narrow dtype, may hide a wrap */
	if (iv.min == IR_NEG_INF || iv.max == IR_POS_INF || e->dtype.bits < 32 ||
	    e->dtype.lanes != 1)
		return false;
	int64_t k;
	int i;
	switch (e->kind) {
	case IR_INT_IMM:
		return true;
	case IR_VAR:
		i = domain_index(c, e);
		if (i < 0 || i >= 64 || ((*used >> i) & 1))
			return false;
		*used |= UINT64_C(1) << i;
		return true;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_MIN: case IR_MAX:
		return exact(c, e->u.bin.a, used) && exact(c, e->u.bin.b, used);
	case IR_FLOORDIV: case IR_TRUNCDIV:
		return ir_is_const_int(e->u.bin.b, &k) && k > 0 && exact(c, e->u.bin.a, used);
	default:
		return false;
	}
}

static bool exact_bound(const reads *c, const ts_expr *e, ir_interval *iv)
{
	uint64_t used = 0;
	*iv = ir_bound_of(e, c->n, c->r);
	return exact(c, e, &used);
}

/* The interval of idx over the domain, and whether it is exact; false on
 * allocation failure. */
static bool bound_index(const reads *c, ts_expr *idx, ir_interval *iv, bool *is_exact)
{
	*is_exact = exact_bound(c, idx, iv);
	if (*is_exact)
		return true;
	/* the simplifier merges repeated terms (i*2 - i is i), which may make
	 * the bound exact or at least tighter */
	ts_expr *simple = ir_simplify(c->ctx, idx, c->n, c->r);
	if (!simple)
		return false;
	ir_interval b;
	*is_exact = exact_bound(c, simple, &b);
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

static ts_status check_read(const reads *c, const ts_expr *rd)
{
	for (int d = 0; d < rd->u.read.n; d++) {
		ir_interval iv;
		bool is_exact;
		if (!bound_index(c, rd->u.read.idx[d], &iv, &is_exact))
			return ts_last_status(c->ctx);
		int64_t ext = rd->u.read.tensor->shape[d];
		if (iv.min >= 0 && iv.max < ext)
			continue;
		if (is_exact || iv.max < 0 || iv.min >= ext)
			return refuse(c, rd, d, iv);
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

static ts_status check_stage(ts_ctx *ctx, const ts_stage *st)
{
	if (!st->body)
		return TS_OK;
	reads c = {.ctx = ctx, .st = st, .n = st->nroot};
	c.r = ts_alloc_array(ctx, (size_t)(st->nroot ? st->nroot : 1), sizeof(*c.r));
	if (!c.r)
		return ts_last_status(ctx);
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

ts_status sch_check_reads(ts_ctx *ctx, ts_schedule *s)
{
	for (int i = 0; i < s->nstages; i++) {
		ts_status st = check_stage(ctx, s->stages[i]);
		if (st != TS_OK)
			return st;
	}
	return TS_OK;
}
