/*
 * visit.c - generic traversal, rebuilding and substitution.
 *
 * The map functions rebuild a node through its checked constructor only when
 * a child changed, so unchanged subtrees keep their pointers and a child
 * whose dtype changed (a scalar replaced by a vector) gets a correctly typed
 * parent.
 */
#include "ir.h"
#include "arith_impl.h"

#include <math.h>
#include <string.h>

void ir_expr_visit(ts_expr *e, ir_expr_visit_fn fn, void *data)
{
	if (!e || !fn || !fn(e, data))
		return;
	switch (e->kind) {
	case IR_INT_IMM:
	case IR_FLOAT_IMM:
	case IR_VAR:
		return;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV:
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
	case IR_MIN: case IR_MAX: case IR_EQ: case IR_NE: case IR_LT: case IR_LE:
	case IR_GT: case IR_GE: case IR_AND: case IR_OR:
		ir_expr_visit(e->u.bin.a, fn, data);
		ir_expr_visit(e->u.bin.b, fn, data);
		return;
	case IR_NOT:
	case IR_CAST:
		ir_expr_visit(e->u.un.a, fn, data);
		return;
	case IR_SELECT:
		ir_expr_visit(e->u.select.cond, fn, data);
		ir_expr_visit(e->u.select.t, fn, data);
		ir_expr_visit(e->u.select.f, fn, data);
		return;
	case IR_CALL:
		for (int i = 0; i < e->u.call.nargs; i++)
			ir_expr_visit(e->u.call.args[i], fn, data);
		return;
	case IR_READ:
		for (int i = 0; i < e->u.read.n; i++)
			ir_expr_visit(e->u.read.idx[i], fn, data);
		return;
	case IR_LOAD:
		ir_expr_visit(e->u.load.index, fn, data);
		return;
	case IR_RAMP:
		ir_expr_visit(e->u.ramp.base, fn, data);
		return;
	case IR_BROADCAST:
		ir_expr_visit(e->u.bcast.value, fn, data);
		return;
	case IR_REDUCE:
		ir_expr_visit(e->u.reduce.source, fn, data);
		ir_expr_visit(e->u.reduce.init, fn, data);
		return;
	case IR_EXPR_KIND_COUNT:
		return;
	}
}

void ir_stmt_visit(ts_stmt *s, ir_stmt_visit_fn sfn, ir_expr_visit_fn efn, void *data)
{
	if (!s || (sfn && !sfn(s, data)))
		return;
#define E(x) do { if (efn) ir_expr_visit((x), efn, data); } while (0)
	switch (s->kind) {
	case IR_S_FOR:
		E(s->u.for_.min);
		E(s->u.for_.extent);
		ir_stmt_visit(s->u.for_.body, sfn, efn, data);
		return;
	case IR_S_STORE:
		E(s->u.store.index);
		E(s->u.store.value);
		return;
	case IR_S_PROVIDE:
		for (int i = 0; i < s->u.provide.n; i++)
			E(s->u.provide.idx[i]);
		E(s->u.provide.value);
		return;
	case IR_S_REALIZE:
		for (int i = 0; i < s->u.realize.n; i++)
			E(s->u.realize.min[i]);
		ir_stmt_visit(s->u.realize.body, sfn, efn, data);
		return;
	case IR_S_ALLOCATE:
		ir_stmt_visit(s->u.alloc.body, sfn, efn, data);
		return;
	case IR_S_IF:
		E(s->u.if_.cond);
		ir_stmt_visit(s->u.if_.then_s, sfn, efn, data);
		ir_stmt_visit(s->u.if_.else_s, sfn, efn, data);
		return;
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			ir_stmt_visit(s->u.seq.s[i], sfn, efn, data);
		return;
	case IR_S_LET:
		E(s->u.let.value);
		ir_stmt_visit(s->u.let.body, sfn, efn, data);
		return;
	case IR_S_EVALUATE:
		E(s->u.eval.value);
		return;
	case IR_S_PREFETCH:
		E(s->u.prefetch.value);
		return;
	case IR_S_BARRIER:
	case IR_STMT_KIND_COUNT:
		return;
	}
#undef E
}

/* Applies fn to each of n children; returns 1 if any changed, -1 on NULL. */
static int map_list(ts_ctx *ctx, int n, ts_expr *const *in, ts_expr **out,
		    ir_expr_fn fn, void *data)
{
	int changed = 0;
	for (int i = 0; i < n; i++) {
		out[i] = in[i] ? fn(ctx, in[i], data) : NULL;
		if (in[i] && !out[i])
			return -1;
		changed |= out[i] != in[i];
	}
	return changed;
}

ts_expr *ir_expr_map_children(ts_ctx *ctx, ts_expr *e, ir_expr_fn fn, void *data)
{
	ts_expr *k[TS_MAX_DIMS + 3];
	int r;
	if (!ctx)
		return NULL;
	if (!e || !fn) {
		ts_error(ctx, TS_ERR_INVALID, "map_children: %s is NULL",
			 !e ? "expression" : "function");
		return NULL;
	}
	switch (e->kind) {
	case IR_INT_IMM:
	case IR_FLOAT_IMM:
	case IR_VAR:
		return e;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV:
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
	case IR_MIN: case IR_MAX: case IR_EQ: case IR_NE: case IR_LT: case IR_LE:
	case IR_GT: case IR_GE: case IR_AND: case IR_OR:
		r = map_list(ctx, 2, (ts_expr *[]){e->u.bin.a, e->u.bin.b}, k, fn, data);
		return r < 0 ? NULL : r ? ts_binary(ctx, e->kind, k[0], k[1]) : e;
	case IR_NOT:
		r = map_list(ctx, 1, &e->u.un.a, k, fn, data);
		return r < 0 ? NULL : r ? ts_not(ctx, k[0]) : e;
	case IR_CAST:
		r = map_list(ctx, 1, &e->u.un.a, k, fn, data);
		return r < 0 ? NULL : r ? ts_cast(ctx, ts_dtype_with_lanes(e->dtype, k[0]->dtype.lanes), k[0]) : e;
	case IR_SELECT:
		r = map_list(ctx, 3, (ts_expr *[]){e->u.select.cond, e->u.select.t, e->u.select.f},
			     k, fn, data);
		return r < 0 ? NULL : r ? ts_select(ctx, k[0], k[1], k[2]) : e;
	case IR_CALL:
		r = map_list(ctx, e->u.call.nargs, e->u.call.args, k, fn, data);
		return r < 0 ? NULL : r ? ts_call(ctx, e->u.call.op, e->u.call.nargs, k) : e;
	case IR_READ:
		r = map_list(ctx, e->u.read.n, e->u.read.idx, k, fn, data);
		return r < 0 ? NULL : r ? ts_read(ctx, e->u.read.tensor, e->u.read.n, k) : e;
	case IR_LOAD:
		r = map_list(ctx, 1, &e->u.load.index, k, fn, data);
		return r < 0 ? NULL : r ? ts_load(ctx, e->u.load.buf, k[0]) : e;
	case IR_RAMP:
		r = map_list(ctx, 1, &e->u.ramp.base, k, fn, data);
		return r < 0 ? NULL : r ? ts_ramp(ctx, k[0], e->u.ramp.stride, e->u.ramp.lanes) : e;
	case IR_BROADCAST:
		r = map_list(ctx, 1, &e->u.bcast.value, k, fn, data);
		return r < 0 ? NULL : r ? ts_broadcast(ctx, k[0], e->u.bcast.lanes) : e;
	case IR_REDUCE:
		r = map_list(ctx, 2, (ts_expr *[]){e->u.reduce.source, e->u.reduce.init}, k, fn, data);
		return r < 0 ? NULL : r ? ts_reduce(ctx, e->u.reduce.op, k[0], e->u.reduce.naxes,
						    e->u.reduce.axes, k[1]) : e;
	case IR_EXPR_KIND_COUNT:
		break;
	}
	TS_ASSERT(ctx, !"unknown expression kind");
	return NULL;
}

static ts_expr *ex(ts_ctx *ctx, ts_expr *e, ir_expr_fn efn, void *data, bool *changed, bool *fail)
{
	if (!e || !efn)
		return e;
	ts_expr *r = efn(ctx, e, data);
	if (!r)
		*fail = true;
	*changed |= r != e;
	return r;
}

static ts_stmt *st(ts_ctx *ctx, ts_stmt *s, ir_stmt_fn sfn, void *data, bool *changed, bool *fail)
{
	if (!s || !sfn)
		return s;
	ts_stmt *r = sfn(ctx, s, data);
	if (!r)
		*fail = true;
	*changed |= r != s;
	return r;
}

ts_stmt *ir_stmt_map_children(ts_ctx *ctx, ts_stmt *s, ir_stmt_fn sfn,
			      ir_expr_fn efn, void *data)
{
	bool ch = false, fail = false;
	if (!ctx)
		return NULL;
	if (!s) {
		ts_error(ctx, TS_ERR_INVALID, "map_children: statement is NULL");
		return NULL;
	}
#define EX(x) ex(ctx, (x), efn, data, &ch, &fail)
#define ST(x) st(ctx, (x), sfn, data, &ch, &fail)
	switch (s->kind) {
	case IR_S_FOR: {
		ts_expr *min = EX(s->u.for_.min), *ext = EX(s->u.for_.extent);
		ts_stmt *body = ST(s->u.for_.body);
		if (fail)
			return NULL;
		return ch ? ir_for(ctx, s->u.for_.var, min, ext, s->u.for_.kind, s->u.for_.thread, body) : s;
	}
	case IR_S_STORE: {
		ts_expr *idx = EX(s->u.store.index), *val = EX(s->u.store.value);
		if (fail)
			return NULL;
		return ch ? ir_store(ctx, s->u.store.buf, idx, val) : s;
	}
	case IR_S_PROVIDE: {
		ts_expr *idx[TS_MAX_DIMS];
		for (int i = 0; i < s->u.provide.n; i++)
			idx[i] = EX(s->u.provide.idx[i]);
		ts_expr *val = EX(s->u.provide.value);
		if (fail)
			return NULL;
		return ch ? ir_provide(ctx, s->u.provide.tensor, s->u.provide.n, idx, val) : s;
	}
	case IR_S_REALIZE: {
		ts_expr *min[TS_MAX_DIMS];
		for (int i = 0; i < s->u.realize.n; i++)
			min[i] = EX(s->u.realize.min[i]);
		ts_stmt *body = ST(s->u.realize.body);
		if (fail)
			return NULL;
		return ch ? ir_realize(ctx, s->u.realize.tensor, s->u.realize.n, min,
				       s->u.realize.extent, s->u.realize.scope, body) : s;
	}
	case IR_S_ALLOCATE: {
		ts_stmt *body = ST(s->u.alloc.body);
		if (fail)
			return NULL;
		return ch ? ir_allocate(ctx, s->u.alloc.buf, body) : s;
	}
	case IR_S_IF: {
		ts_expr *c = EX(s->u.if_.cond);
		ts_stmt *t = ST(s->u.if_.then_s), *e = ST(s->u.if_.else_s);
		if (fail)
			return NULL;
		return ch ? ir_if(ctx, c, t, e) : s;
	}
	case IR_S_SEQ: {
		ts_stmt **arr = ts_alloc_array(ctx, (size_t)s->u.seq.n, sizeof(*arr));
		if (!arr)
			return NULL;
		for (int i = 0; i < s->u.seq.n; i++)
			arr[i] = ST(s->u.seq.s[i]);
		if (fail)
			return NULL;
		return ch ? ir_seq(ctx, s->u.seq.n, arr) : s;
	}
	case IR_S_LET: {
		ts_expr *v = EX(s->u.let.value);
		ts_stmt *body = ST(s->u.let.body);
		if (fail)
			return NULL;
		return ch ? ir_let(ctx, s->u.let.var, v, body) : s;
	}
	case IR_S_EVALUATE: {
		ts_expr *v = EX(s->u.eval.value);
		if (fail)
			return NULL;
		return ch ? ir_evaluate(ctx, v) : s;
	}
	case IR_S_PREFETCH: {
		ts_expr *v = EX(s->u.prefetch.value);
		if (fail)
			return NULL;
		return ch ? ir_prefetch(ctx, v) : s;
	}
	case IR_S_BARRIER:
	case IR_STMT_KIND_COUNT:
		return s;
	}
#undef EX
#undef ST
	return s;
}

typedef struct {
	int n;
	ts_expr *const *vars;
	ts_expr *const *values;
} subst;

static ts_expr *subst_expr(ts_ctx *ctx, ts_expr *e, void *data)
{
	subst *sb = data;
	if (e->kind == IR_VAR) {
		for (int i = 0; i < sb->n; i++) {
			if (sb->vars[i] != e)
				continue;
			/* a value narrower than the variable (int32 axis values for an
			 * int64 variable: rfactor's k = ko*8 + ki) is widened to it,
			 * so the expressions around keep their dtypes */
			ts_expr *v = sb->values[i];
			bool widen = v && ts_dtype_is_int(e->dtype) && ts_dtype_is_int(v->dtype) &&
				     v->dtype.lanes == e->dtype.lanes && v->dtype.bits < e->dtype.bits;
			return widen ? ts_cast(ctx, e->dtype, v) : v;
		}
		return e;
	}
	return ir_expr_map_children(ctx, e, subst_expr, data);
}

static ts_stmt *subst_stmt(ts_ctx *ctx, ts_stmt *s, void *data)
{
	return ir_stmt_map_children(ctx, s, subst_stmt, subst_expr, data);
}

bool ir_check_subst(ts_ctx *ctx, const char *what, const void *node, int n, ts_expr *const *vars,
		    ts_expr *const *values)
{
	const char *bad = !node ? "nothing to substitute in (NULL)"
			  : n < 0 ? "a negative count"
			  : n > 0 && (!vars || !values) ? "a NULL variable or value list"
							 : NULL;
	for (int i = 0; !bad && i < n; i++)
		if (!vars[i] || !values[i])
			bad = "a NULL variable or value";
	if (bad)
		ts_error(ctx, TS_ERR_INVALID, "%s: %s", what, bad);
	return !bad;
}

ts_expr *ir_substitute(ts_ctx *ctx, ts_expr *e, int n, ts_expr *const *vars,
		       ts_expr *const *values)
{
	if (!ctx || !ir_check_subst(ctx, "substitute", e, n, vars, values))
		return NULL;
	subst sb = {n, vars, values};
	return subst_expr(ctx, e, &sb);
}

ts_stmt *ir_stmt_substitute(ts_ctx *ctx, ts_stmt *s, int n, ts_expr *const *vars,
			    ts_expr *const *values)
{
	if (!ctx || !ir_check_subst(ctx, "substitute", s, n, vars, values))
		return NULL;
	subst sb = {n, vars, values};
	return subst_stmt(ctx, s, &sb);
}

typedef struct {
	ir_expr_pred pred;
	const void *data;
	bool found;
} any_probe;

static bool any_fn(ts_expr *e, void *data)
{
	any_probe *p = data;
	p->found = p->found || p->pred(e, p->data);
	return !p->found;
}

bool ir_expr_any(ts_expr *e, ir_expr_pred pred, const void *data)
{
	any_probe p = {pred, data, false};
	if (e && pred)
		ir_expr_visit(e, any_fn, &p);
	return p.found;
}

static bool is_var(const ts_expr *e, const void *var)
{
	return e == var;
}

static bool reads_tensor(const ts_expr *e, const void *t)
{
	return e->kind == IR_READ && e->u.read.tensor == t;
}

static bool loads_buffer(const ts_expr *e, const void *b)
{
	return e->kind == IR_LOAD && e->u.load.buf == b;
}

bool ir_expr_uses_var(ts_expr *e, const ts_expr *var)
{
	return ir_expr_any(e, is_var, var);
}

bool ir_expr_reads(ts_expr *e, const ts_tensor *t)
{
	return ir_expr_any(e, reads_tensor, t);
}

bool ir_expr_loads(ts_expr *e, const ts_buffer *b)
{
	return ir_expr_any(e, loads_buffer, b);
}

bool ir_is_const_int(const ts_expr *e, int64_t *out)
{
	if (!e || e->kind != IR_INT_IMM)
		return false;
	if (out)
		*out = e->u.int_imm;
	return true;
}

bool ir_is_neg_zero(const ts_expr *e)
{
	return e && e->kind == IR_FLOAT_IMM && e->u.float_imm == 0.0 && signbit(e->u.float_imm);
}

bool ir_expr_equal(const ts_expr *a, const ts_expr *b)
{
	if (a == b)
		return true;
	if (!a || !b || a->kind != b->kind || !ts_dtype_eq(a->dtype, b->dtype))
		return false;
	switch (a->kind) {
	case IR_INT_IMM:
		return a->u.int_imm == b->u.int_imm;
	case IR_FLOAT_IMM:
		/* the same bits: 0.0 and -0.0 compare equal but are not one
		 * value (1 / x tells them apart), and a NaN is itself */
		return !memcmp(&a->u.float_imm, &b->u.float_imm, sizeof a->u.float_imm);
	case IR_VAR:
		return false; /* distinct pointers are distinct variables */
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV:
	case IR_TRUNCDIV: case IR_TRUNCMOD: case IR_FLOORDIV: case IR_FLOORMOD:
	case IR_MIN: case IR_MAX: case IR_EQ: case IR_NE: case IR_LT: case IR_LE:
	case IR_GT: case IR_GE: case IR_AND: case IR_OR:
		return ir_expr_equal(a->u.bin.a, b->u.bin.a) && ir_expr_equal(a->u.bin.b, b->u.bin.b);
	case IR_NOT:
	case IR_CAST:
		return ir_expr_equal(a->u.un.a, b->u.un.a);
	case IR_SELECT:
		return ir_expr_equal(a->u.select.cond, b->u.select.cond) &&
		       ir_expr_equal(a->u.select.t, b->u.select.t) &&
		       ir_expr_equal(a->u.select.f, b->u.select.f);
	case IR_CALL:
		if (a->u.call.op != b->u.call.op)
			return false;
		for (int i = 0; i < a->u.call.nargs; i++)
			if (!ir_expr_equal(a->u.call.args[i], b->u.call.args[i]))
				return false;
		return true;
	case IR_READ:
		if (a->u.read.tensor != b->u.read.tensor)
			return false;
		for (int i = 0; i < a->u.read.n; i++)
			if (!ir_expr_equal(a->u.read.idx[i], b->u.read.idx[i]))
				return false;
		return true;
	case IR_LOAD:
		return a->u.load.buf == b->u.load.buf &&
		       ir_expr_equal(a->u.load.index, b->u.load.index);
	case IR_RAMP:
		return a->u.ramp.stride == b->u.ramp.stride &&
		       ir_expr_equal(a->u.ramp.base, b->u.ramp.base);
	case IR_BROADCAST:
		return ir_expr_equal(a->u.bcast.value, b->u.bcast.value);
	case IR_REDUCE:
		return a->u.reduce.op == b->u.reduce.op && a->u.reduce.naxes == b->u.reduce.naxes &&
		       !memcmp(a->u.reduce.axes, b->u.reduce.axes,
			       (size_t)a->u.reduce.naxes * sizeof(ts_iter *)) &&
		       ir_expr_equal(a->u.reduce.source, b->u.reduce.source) &&
		       ir_expr_equal(a->u.reduce.init, b->u.reduce.init);
	case IR_EXPR_KIND_COUNT:
		break;
	}
	return false;
}
