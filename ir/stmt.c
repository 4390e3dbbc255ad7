/*
 * stmt.c - checked constructors for loop-IR statements.
 *
 * Loop extents and conditions must be integer/bool scalars; a store's value
 * must match the buffer's element dtype (with the index's lanes).  A loop
 * with constant bounds must stay inside its variable's dtype, end included,
 * so that no backend has to compute a wrapping `min + extent`.  A NULL
 * operand gives NULL with "for: body is NULL" recorded (an earlier failure
 * that produced the NULL keeps its own message); a NULL context gives NULL.
 * Operands, buffers and tensors must come from the context given, and no
 * statement nests deeper than TS_MAX_STMT_DEPTH.
 */
#include "ir.h"

#include <string.h>

/* Records that an operand is NULL; a failed constructor that produced the
 * NULL recorded its own message first, and that one is kept. */
static ts_stmt *missing(ts_ctx *ctx, const char *what, const char *which)
{
	ts_error(ctx, TS_ERR_INVALID, "%s: %s is NULL", what, which);
	return NULL;
}

/* A statement one level above children at most `below` deep.  Refusing
 * depth here, where every statement is made, bounds the stack of every
 * recursive walk over the loop IR, as node() in expr.c does for
 * expressions. */
static ts_stmt *node(ts_ctx *ctx, ir_stmt_kind k, const char *what, int below)
{
	if (below >= TS_MAX_STMT_DEPTH) {
		ts_error(ctx, TS_ERR_INVALID,
			 "%s: statement nesting deeper than %d (TS_MAX_STMT_DEPTH; build long "
			 "lists as one flat seq)", what, TS_MAX_STMT_DEPTH);
		return NULL;
	}
	ts_stmt *s = ts_alloc(ctx, sizeof(*s));
	if (s) {
		s->kind = k;
		s->ctx = ctx;
		s->depth = below + 1;
	}
	return s;
}

static int deeper(const ts_stmt *a, const ts_stmt *b)
{
	int da = a ? a->depth : 0, db = b ? b->depth : 0;
	return da > db ? da : db;
}

/* Whether the operands given (NULL passes) live in ctx: a statement and
 * its parts come from one context, another's die with it. */
static bool owned(ts_ctx *ctx, const char *what, const ts_expr *a, const ts_expr *b)
{
	return ir_expr_owned(ctx, what, "an operand", a) && ir_expr_owned(ctx, what, "an operand", b);
}

static bool owned_stmts(ts_ctx *ctx, const char *what, const ts_stmt *a, const ts_stmt *b)
{
	if ((!a || a->ctx == ctx) && (!b || b->ctx == ctx))
		return true;
	ts_error(ctx, TS_ERR_INVALID, "%s: a statement belongs to another context (a statement is "
		 "used only with the context that made it)", what);
	return false;
}

/* Whether the buffer or tensor (one of them given) lives in ctx: another
 * context's dies with it, leaving the statement pointing into freed
 * memory.  One built by hand, with no context, passes. */
static bool owned_data(ts_ctx *ctx, const char *what, const ts_buffer *b, const ts_tensor *t)
{
	const ts_ctx *owner = b ? b->ctx : t->ctx;
	if (!owner || owner == ctx)
		return true;
	ts_error(ctx, TS_ERR_INVALID, "%s %s: %s belongs to another context", what,
		 b ? b->name : t->name, b ? "buffer" : "tensor");
	return false;
}

static bool int_scalar(ts_ctx *ctx, const char *what, const ts_expr *e)
{
	if (!e) {
		ts_error(ctx, TS_ERR_INVALID, "%s is NULL", what);
		return false;
	}
	if (!ir_expr_owned(ctx, what, "the expression", e))
		return false;
	if (!ts_dtype_is_int(e->dtype) || e->dtype.lanes != 1) {
		char b[24];
		ts_error(ctx, TS_ERR_INVALID, "%s must be an integer scalar, got %s", what,
			 ts_dtype_str(e->dtype, b));
		return false;
	}
	return true;
}

/* Do [min, min + extent) of a loop over var, and its end min + extent
 * (which backends compute to compare with), fit var's dtype? */
static bool range_fits(ts_ctx *ctx, const ts_expr *var, const ts_expr *min, const ts_expr *extent)
{
	int64_t m, e, end;
	ts_dtype t = var->dtype;
	if (!ir_is_const_int(min, &m) || !ir_is_const_int(extent, &e) || e <= 0 ||
	    !ts_dtype_is_int(t) || (t.code == TS_TYPE_UINT && t.bits >= 64))
		return true;
	int64_t lo = t.code == TS_TYPE_UINT ? 0
		     : t.bits >= 64 ? INT64_MIN : -((int64_t)1 << (t.bits - 1));
	int64_t hi = t.code == TS_TYPE_UINT ? ((int64_t)1 << t.bits) - 1
		     : t.bits >= 64 ? INT64_MAX : -lo - 1;
	if (!__builtin_add_overflow(m, e, &end) && m >= lo && end <= hi)
		return true;
	char b[24];
	ts_error(ctx, TS_ERR_INVALID,
		 "for %s: range [%lld, %lld + %lld) does not fit its dtype %s (use an int64 variable)",
		 var->u.var.name, (long long)m, (long long)m, (long long)e, ts_dtype_str(t, b));
	return false;
}

ts_stmt *ir_for(ts_ctx *ctx, ts_expr *var, ts_expr *min, ts_expr *extent,
		ts_for_kind kind, ts_thread_tag thread, ts_stmt *body)
{
	if (!ctx)
		return NULL;
	if (!var || !body)
		return missing(ctx, "for", !var ? "loop variable" : "body");
	if (!int_scalar(ctx, "for: min", min) || !int_scalar(ctx, "for: extent", extent) ||
	    !owned(ctx, "for", var, NULL) || !owned_stmts(ctx, "for", body, NULL))
		return NULL;
	if (var->kind != IR_VAR) {
		ts_error(ctx, TS_ERR_INVALID, "for: loop variable is not a variable");
		return NULL;
	}
	/* every walk counts the variable as an integer (evaluators, bounds,
	 * the emitters' induction variables) */
	if (!ts_dtype_is_int(var->dtype) || var->dtype.lanes != 1) {
		char b[24];
		ts_error(ctx, TS_ERR_INVALID, "for %s: loop variable has dtype %s; it must be an integer scalar",
			 var->u.var.name, ts_dtype_str(var->dtype, b));
		return NULL;
	}
	if ((unsigned)kind > TS_FOR_TENSORIZED) {
		ts_error(ctx, TS_ERR_INVALID, "for %s: unknown loop kind %d", var->u.var.name,
			 (int)kind);
		return NULL;
	}
	if ((unsigned)thread > TS_THREAD_Z) {
		ts_error(ctx, TS_ERR_INVALID, "for %s: unknown thread tag %d", var->u.var.name,
			 (int)thread);
		return NULL;
	}
	int64_t c;
	if (ir_is_const_int(extent, &c) && c <= 0) {
		ts_error(ctx, TS_ERR_INVALID, "for %s: extent must be positive, got %lld",
			 var->u.var.name, (long long)c);
		return NULL;
	}
	if (!range_fits(ctx, var, min, extent))
		return NULL;
	ts_stmt *s = node(ctx, IR_S_FOR, "for", body->depth);
	if (s) {
		s->u.for_.var = var;
		s->u.for_.min = min;
		s->u.for_.extent = extent;
		s->u.for_.kind = kind;
		s->u.for_.thread = kind == TS_FOR_THREAD ? thread : TS_THREAD_NONE;
		s->u.for_.body = body;
	}
	return s;
}

ts_stmt *ir_store(ts_ctx *ctx, ts_buffer *buf, ts_expr *index, ts_expr *value)
{
	if (!ctx)
		return NULL;
	if (!buf)
		return missing(ctx, "store", "buffer");
	if (!owned_data(ctx, "store", buf, NULL))
		return NULL;
	if (!index || !value) {
		ts_error(ctx, TS_ERR_INVALID, "store %s: %s is NULL", buf->name,
			 !index ? "index" : "value");
		return NULL;
	}
	if (!owned(ctx, "store", index, value))
		return NULL;
	ts_dtype want = ts_dtype_with_lanes(buf->dtype, index->dtype.lanes);
	if (!ts_dtype_is_int(index->dtype) || !ts_dtype_eq(want, value->dtype)) {
		char b1[24], b2[24];
		ts_error(ctx, TS_ERR_INVALID, "store %s: value is %s, buffer holds %s", buf->name,
			 ts_dtype_str(value->dtype, b1), ts_dtype_str(want, b2));
		return NULL;
	}
	ts_stmt *s = node(ctx, IR_S_STORE, "store", 0);
	if (s) {
		s->u.store.buf = buf;
		s->u.store.index = index;
		s->u.store.value = value;
	}
	return s;
}

ts_stmt *ir_provide(ts_ctx *ctx, ts_tensor *t, int n, ts_expr *const *idx, ts_expr *value)
{
	if (!ctx)
		return NULL;
	if (!t)
		return missing(ctx, "provide", "tensor");
	if (!owned_data(ctx, "provide", NULL, t))
		return NULL;
	if (!value || (n > 0 && !idx)) {
		ts_error(ctx, TS_ERR_INVALID, "provide %s: %s is NULL", t->name,
			 !value ? "value" : "the index list");
		return NULL;
	}
	if (!owned(ctx, "provide", value, NULL))
		return NULL;
	if (n != t->ndim || !ts_dtype_eq(t->dtype, value->dtype)) {
		ts_error(ctx, TS_ERR_INVALID, "provide %s: wrong arity or dtype", t->name);
		return NULL;
	}
	ts_stmt *s = node(ctx, IR_S_PROVIDE, "provide", 0);
	ts_expr **copy = ts_alloc_array(ctx, (size_t)(n ? n : 1), sizeof(*copy));
	if (!s || !copy)
		return NULL;
	for (int i = 0; i < n; i++) {
		if (!idx[i]) {
			ts_error(ctx, TS_ERR_INVALID, "provide %s: index %d is NULL", t->name, i);
			return NULL;
		}
		if (!int_scalar(ctx, "provide: index", idx[i]))
			return NULL;
		copy[i] = idx[i];
	}
	s->u.provide.tensor = t;
	s->u.provide.n = n;
	s->u.provide.idx = copy;
	s->u.provide.value = value;
	return s;
}

ts_stmt *ir_realize(ts_ctx *ctx, ts_tensor *t, int n, ts_expr *const *min,
		    const int64_t *extent, ts_scope scope, ts_stmt *body)
{
	if (!ctx)
		return NULL;
	if (!t)
		return missing(ctx, "realize", "tensor");
	if (!owned_data(ctx, "realize", NULL, t))
		return NULL;
	if (!body || (n > 0 && (!min || !extent))) {
		ts_error(ctx, TS_ERR_INVALID, "realize %s: %s is NULL", t->name,
			 !body ? "body" : !min ? "the min list" : "the extent list");
		return NULL;
	}
	if (!owned_stmts(ctx, "realize", body, NULL))
		return NULL;
	if (n < 0 || n > TS_MAX_DIMS || (unsigned)scope > TS_SCOPE_LOCAL) {
		if (n < 0 || n > TS_MAX_DIMS)
			ts_error(ctx, TS_ERR_INVALID, "realize %s: %d dimensions (0 to %d allowed)",
				 t->name, n, TS_MAX_DIMS);
		else
			ts_error(ctx, TS_ERR_INVALID, "realize %s: unknown scope %d", t->name,
				 (int)scope);
		return NULL;
	}
	/* every reader of a realize takes one range per dimension */
	if (n != t->ndim) {
		ts_error(ctx, TS_ERR_INVALID,
			 "realize %s: tensor has %d dimension(s), got %d range(s)", t->name,
			 t->ndim, n);
		return NULL;
	}
	ts_stmt *s = node(ctx, IR_S_REALIZE, "realize", body->depth);
	ts_expr **mins = ts_alloc_array(ctx, (size_t)(n ? n : 1), sizeof(*mins));
	int64_t *ext = ts_alloc_array(ctx, (size_t)(n ? n : 1), sizeof(*ext));
	if (!s || !mins || !ext)
		return NULL;
	for (int i = 0; i < n; i++) {
		if (!min[i]) {
			ts_error(ctx, TS_ERR_INVALID, "realize %s: min %d is NULL", t->name, i);
			return NULL;
		}
		if (!int_scalar(ctx, "realize: min", min[i]))
			return NULL;
		if (extent[i] <= 0) {
			ts_error(ctx, TS_ERR_INVALID, "realize %s: extent %lld of dimension %d is not positive",
				 t->name, (long long)extent[i], i);
			return NULL;
		}
		mins[i] = min[i];
		ext[i] = extent[i];
	}
	s->u.realize.tensor = t;
	s->u.realize.n = n;
	s->u.realize.min = mins;
	s->u.realize.extent = ext;
	s->u.realize.scope = scope;
	s->u.realize.body = body;
	return s;
}

ts_stmt *ir_allocate(ts_ctx *ctx, ts_buffer *buf, ts_stmt *body)
{
	if (!ctx)
		return NULL;
	if (!buf)
		return missing(ctx, "allocate", "buffer");
	if (!owned_data(ctx, "allocate", buf, NULL))
		return NULL;
	if (!body) {
		ts_error(ctx, TS_ERR_INVALID, "allocate %s: body is NULL", buf->name);
		return NULL;
	}
	if (!owned_stmts(ctx, "allocate", body, NULL))
		return NULL;
	ts_stmt *s = node(ctx, IR_S_ALLOCATE, "allocate", body->depth);
	if (s) {
		s->u.alloc.buf = buf;
		s->u.alloc.body = body;
	}
	return s;
}

ts_stmt *ir_if(ts_ctx *ctx, ts_expr *cond, ts_stmt *then_s, ts_stmt *else_s)
{
	if (!ctx)
		return NULL;
	if (!cond || !then_s)
		return missing(ctx, "if", !cond ? "condition" : "then branch");
	if (!owned(ctx, "if", cond, NULL) || !owned_stmts(ctx, "if", then_s, else_s))
		return NULL;
	if (!ts_dtype_is_bool(cond->dtype) || cond->dtype.lanes != 1) {
		char b[24];
		ts_error(ctx, TS_ERR_INVALID, "if: condition must be a bool scalar, got %s",
			 ts_dtype_str(cond->dtype, b));
		return NULL;
	}
	ts_stmt *s = node(ctx, IR_S_IF, "if", deeper(then_s, else_s));
	if (s) {
		s->u.if_.cond = cond;
		s->u.if_.then_s = then_s;
		s->u.if_.else_s = else_s;
	}
	return s;
}

ts_stmt *ir_seq(ts_ctx *ctx, int n, ts_stmt *const *in)
{
	if (!ctx)
		return NULL;
	if (n < 0 || (n > 0 && !in)) {
		ts_error(ctx, TS_ERR_INVALID, "seq: %d statements in %s", n,
			 in ? "a list" : "a NULL list");
		return NULL;
	}
	/* the entries sit side by side: a list is one level deep whatever its
	 * length */
	int m = 0, below = 0;
	for (int i = 0; i < n; i++) {
		if (!owned_stmts(ctx, "seq", in[i], NULL))
			return NULL;
		m += in[i] != NULL;
		if (in[i] && in[i]->depth > below)
			below = in[i]->depth;
	}
	if (m == 0) {
		/* an earlier failure keeps its own message: the first one wins */
		ts_error(ctx, TS_ERR_INVALID, "seq: no statement among %d (the empty statement is "
			 "EVALUATE(0))", n);
		return NULL;
	}
	if (m == 1)
		for (int i = 0; i < n; i++)
			if (in[i])
				return in[i];
	ts_stmt *s = node(ctx, IR_S_SEQ, "seq", below);
	ts_stmt **arr = ts_alloc_array(ctx, (size_t)m, sizeof(*arr));
	if (!s || !arr)
		return NULL;
	m = 0;
	for (int i = 0; i < n; i++)
		if (in[i])
			arr[m++] = in[i];
	s->u.seq.n = m;
	s->u.seq.s = arr;
	return s;
}

ts_stmt *ir_seq2(ts_ctx *ctx, ts_stmt *a, ts_stmt *b)
{
	ts_stmt *arr[2] = {a, b};
	return ir_seq(ctx, 2, arr);
}

ts_stmt *ir_let(ts_ctx *ctx, ts_expr *var, ts_expr *value, ts_stmt *body)
{
	if (!ctx)
		return NULL;
	if (!var || !value || !body)
		return missing(ctx, "let", !var ? "variable" : !value ? "value" : "body");
	if (!owned(ctx, "let", var, value) || !owned_stmts(ctx, "let", body, NULL))
		return NULL;
	if (var->kind != IR_VAR) {
		ts_error(ctx, TS_ERR_INVALID, "let: the bound name is %s, not a variable",
			 ir_expr_kind_name(var->kind));
		return NULL;
	}
	if (!ts_dtype_eq(var->dtype, value->dtype)) {
		char b1[24], b2[24];
		ts_error(ctx, TS_ERR_INVALID, "let %s: variable and value disagree in dtype (%s vs %s)",
			 var->u.var.name, ts_dtype_str(var->dtype, b1), ts_dtype_str(value->dtype, b2));
		return NULL;
	}
	ts_stmt *s = node(ctx, IR_S_LET, "let", body->depth);
	if (s) {
		s->u.let.var = var;
		s->u.let.value = value;
		s->u.let.body = body;
	}
	return s;
}

ts_stmt *ir_evaluate(ts_ctx *ctx, ts_expr *value)
{
	if (!ctx)
		return NULL;
	if (!value)
		return missing(ctx, "evaluate", "value");
	if (!owned(ctx, "evaluate", value, NULL))
		return NULL;
	ts_stmt *s = node(ctx, IR_S_EVALUATE, "evaluate", 0);
	if (s)
		s->u.eval.value = value;
	return s;
}

ts_stmt *ir_prefetch(ts_ctx *ctx, ts_expr *value)
{
	if (!ctx)
		return NULL;
	if (!value)
		return missing(ctx, "prefetch", "value");
	if (!owned(ctx, "prefetch", value, NULL))
		return NULL;
	if ((value->kind != IR_READ && value->kind != IR_LOAD) || value->dtype.lanes != 1) {
		ts_error(ctx, TS_ERR_INVALID, "prefetch: the value must be a scalar READ or LOAD, got %s",
			 ir_expr_kind_name(value->kind));
		return NULL;
	}
	ts_stmt *s = node(ctx, IR_S_PREFETCH, "prefetch", 0);
	if (s)
		s->u.prefetch.value = value;
	return s;
}

ts_stmt *ir_barrier(ts_ctx *ctx)
{
	return ctx ? node(ctx, IR_S_BARRIER, "barrier", 0) : NULL;
}
