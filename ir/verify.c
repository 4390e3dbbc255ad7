/*
 * verify.c - the loop-IR verifier run between lowering passes.
 *
 * It checks what every later pass and code generator assumes: each variable
 * is bound (by an enclosing loop or let) before it is used, no loop or let
 * rebinds a variable already in scope, every buffer accessed is a parameter
 * or allocated around the access, stored values match the buffer's dtype,
 * and a loop's bounds have its variable's dtype (the function's index
 * width: an int32 bound on an int64 loop would truncate its extent).  A failure is a compiler bug, reported as TS_ERR_INTERNAL with the
 * pass that produced the IR.  The scopes are kept on malloc'd stacks that
 * grow with the nesting; running out of memory for them is TS_ERR_NOMEM.
 */
#include "verify.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* What is in scope: a stack that grows with the nesting, so that no body
 * goes unchecked however deep it is (a fixed one skipped what lay below
 * its 512th scope). */
typedef struct scope {
	const void **item;
	int n, cap;
} scope;

typedef struct vstate {
	ts_ctx *ctx;
	const char *pass;
	scope vars; /* const ts_expr * */
	scope bufs; /* const ts_buffer * */
	ts_status st; /* the first failure's */
} vstate;

static void bad(vstate *v, const char *what, const char *name)
{
	if (v->st == TS_OK)
		v->st = ts_error(v->ctx, TS_ERR_INTERNAL, "verify after %s: %s '%s'", v->pass, what,
				 name);
}

/* Pushes p; false (with the error recorded and the walk stopped) when
 * memory runs out. */
static bool push(vstate *v, scope *sc, const void *p)
{
	if (sc->n == sc->cap) {
		int cap = sc->cap ? 2 * sc->cap : 64;
		const void **item = sc->cap <= INT_MAX / 2
					    ? realloc(sc->item, (size_t)cap * sizeof(*item)) : NULL;
		if (!item) {
			if (v->st == TS_OK)
				v->st = ts_error(v->ctx, TS_ERR_NOMEM,
						 "verify after %s: out of memory", v->pass);
			return false;
		}
		sc->item = item;
		sc->cap = cap;
	}
	sc->item[sc->n++] = p;
	return true;
}

static bool in_scope(const scope *sc, const void *p)
{
	for (int i = sc->n - 1; i >= 0; i--)
		if (sc->item[i] == p)
			return true;
	return false;
}

static bool var_bound(const vstate *v, const ts_expr *e)
{
	return in_scope(&v->vars, e);
}

static bool buf_bound(const vstate *v, const ts_buffer *b)
{
	return in_scope(&v->bufs, b);
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
	return v->st == TS_OK;
}

static void expr(vstate *v, ts_expr *e)
{
	if (e && v->st == TS_OK)
		ir_expr_visit(e, check_expr, v);
}

static void stmt(vstate *v, ts_stmt *s);

static void bind(vstate *v, ts_expr *var, ts_stmt *body)
{
	if (var_bound(v, var)) {
		bad(v, "variable bound twice in nested scopes:", var->u.var.name);
		return;
	}
	if (!push(v, &v->vars, var))
		return;
	stmt(v, body);
	v->vars.n--;
}

static void stmt(vstate *v, ts_stmt *s)
{
	if (!s || v->st != TS_OK)
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
		if (push(v, &v->bufs, s->u.alloc.buf)) {
			stmt(v, s->u.alloc.body);
			v->bufs.n--;
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
	if (!ctx)
		return TS_ERR_INVALID; /* nowhere to say what failed */
	/* a caller's mistake, not broken IR: TS_ERR_INVALID */
	if (!f || !pass || f->nparams < 0 || (f->nparams > 0 && !f->params))
		return ts_error(ctx, TS_ERR_INVALID, "verify_func: %s",
				!f ? "function is NULL" : !pass ? "pass name is NULL"
							: "function has a bad parameter list");
	vstate v = {.ctx = ctx, .pass = pass};
	for (int i = 0; i < f->nparams && v.st == TS_OK; i++)
		push(&v, &v.bufs, f->params[i]);
	stmt(&v, f->body);
	free(v.vars.item);
	free(v.bufs.item);
	return v.st;
}
