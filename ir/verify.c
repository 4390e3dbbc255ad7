/*
 * verify.c - the loop-IR verifier run between lowering passes.
 *
 * It checks what every later pass and code generator assumes: each variable
 * is bound (by an enclosing loop or let) before it is used, no loop or let
 * rebinds a variable already in scope, every buffer accessed is a parameter
 * or allocated around the access, stored values match the buffer's dtype,
 * and a loop's bounds have its variable's dtype (the function's index
 * width: an int32 bound on an int64 loop would truncate its extent).  A failure is a compiler bug, reported as TS_ERR_INTERNAL with the
 * pass that produced the IR.
 */
#include "verify.h"

#include <string.h>

#define MAX_SCOPE 512

typedef struct vstate {
	ts_ctx *ctx;
	const char *pass;
	const ts_expr *vars[MAX_SCOPE];
	int nvars;
	const ts_buffer *bufs[MAX_SCOPE];
	int nbufs;
	bool failed;
} vstate;

static void bad(vstate *v, const char *what, const char *name)
{
	if (!v->failed)
		ts_error(v->ctx, TS_ERR_INTERNAL, "verify after %s: %s '%s'", v->pass, what, name);
	v->failed = true;
}

static bool var_bound(const vstate *v, const ts_expr *e)
{
	for (int i = v->nvars - 1; i >= 0; i--)
		if (v->vars[i] == e)
			return true;
	return false;
}

static bool buf_bound(const vstate *v, const ts_buffer *b)
{
	for (int i = v->nbufs - 1; i >= 0; i--)
		if (v->bufs[i] == b)
			return true;
	return false;
}

static bool check_expr(ts_expr *e, void *data)
{
	vstate *v = data;
	if (e->kind == IR_VAR && e->dtype.code != TS_TYPE_HANDLE && !var_bound(v, e))
		bad(v, "variable used outside its scope:", e->u.var.name);
	if (e->kind == IR_LOAD && !buf_bound(v, e->u.load.buf))
		bad(v, "load from a buffer not in scope:", e->u.load.buf->name);
	if (e->kind == IR_REDUCE)
		bad(v, "reduction left in the loop nest:", ir_expr_kind_name(e->kind));
	return !v->failed;
}

static void expr(vstate *v, ts_expr *e)
{
	if (e && !v->failed)
		ir_expr_visit(e, check_expr, v);
}

static void stmt(vstate *v, ts_stmt *s);

static void bind(vstate *v, ts_expr *var, ts_stmt *body)
{
	if (var_bound(v, var)) {
		bad(v, "variable bound twice in nested scopes:", var->u.var.name);
		return;
	}
	if (v->nvars >= MAX_SCOPE)
		return;
	v->vars[v->nvars++] = var;
	stmt(v, body);
	v->nvars--;
}

static void stmt(vstate *v, ts_stmt *s)
{
	if (!s || v->failed)
		return;
	switch (s->kind) {
	case IR_S_FOR:
		if (!ts_dtype_eq(s->u.for_.min->dtype, s->u.for_.var->dtype) ||
		    !ts_dtype_eq(s->u.for_.extent->dtype, s->u.for_.var->dtype))
			bad(v, "loop bounds of another dtype than the variable", s->u.for_.var->u.var.name);
		expr(v, s->u.for_.min);
		expr(v, s->u.for_.extent);
		bind(v, s->u.for_.var, s->u.for_.body);
		return;
	case IR_S_LET:
		expr(v, s->u.let.value);
		bind(v, s->u.let.var, s->u.let.body);
		return;
	case IR_S_STORE:
		if (!buf_bound(v, s->u.store.buf))
			bad(v, "store to a buffer not in scope:", s->u.store.buf->name);
		expr(v, s->u.store.index);
		expr(v, s->u.store.value);
		return;
	case IR_S_ALLOCATE:
		if (v->nbufs < MAX_SCOPE) {
			v->bufs[v->nbufs++] = s->u.alloc.buf;
			stmt(v, s->u.alloc.body);
			v->nbufs--;
		}
		return;
	case IR_S_PROVIDE:
		for (int i = 0; i < s->u.provide.n; i++)
			expr(v, s->u.provide.idx[i]);
		expr(v, s->u.provide.value);
		return;
	case IR_S_REALIZE:
		for (int i = 0; i < s->u.realize.n; i++)
			expr(v, s->u.realize.min[i]);
		stmt(v, s->u.realize.body);
		return;
	case IR_S_IF:
		expr(v, s->u.if_.cond);
		stmt(v, s->u.if_.then_s);
		stmt(v, s->u.if_.else_s);
		return;
	case IR_S_SEQ:
		for (int i = 0; i < s->u.seq.n; i++)
			stmt(v, s->u.seq.s[i]);
		return;
	case IR_S_EVALUATE:
		expr(v, s->u.eval.value);
		return;
	case IR_S_PREFETCH:
		expr(v, s->u.prefetch.value);
		return;
	case IR_S_BARRIER:
	case IR_STMT_KIND_COUNT:
		return;
	}
}

ts_status ir_verify_func(ts_ctx *ctx, const ts_func *f, const char *pass)
{
	/* a caller's mistake, not broken IR: TS_ERR_INVALID */
	if (!f || !pass || f->nparams < 0 || (f->nparams > 0 && !f->params))
		return ts_error(ctx, TS_ERR_INVALID, "verify_func: %s",
				!f ? "function is NULL" : !pass ? "pass name is NULL"
							: "function has a bad parameter list");
	vstate *v = ts_alloc(ctx, sizeof(*v));
	if (!v)
		return ts_last_status(ctx);
	v->ctx = ctx;
	v->pass = pass;
	for (int i = 0; i < f->nparams && v->nbufs < MAX_SCOPE; i++)
		v->bufs[v->nbufs++] = f->params[i];
	stmt(v, f->body);
	return v->failed ? TS_ERR_INTERNAL : TS_OK;
}
