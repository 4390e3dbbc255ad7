/*
 * specialize.c - a symbolic function's twin with some size variables fixed
 * (ts_lower_specialize, see passes.h).
 *
 * flatten binds the size variables at the top of the body from the sizes
 * parameter, one LET each in size_vars order.  Here the LETs of the fixed
 * variables go and their values replace them in the body; the others are
 * bound again from a sizes parameter of their own (none when every one is
 * fixed); each parameter dimension of a fixed variable becomes that
 * constant extent, with constant strides.  Applied after version_guards, so
 * the twin runs the symbolic kernel's code with constants in it, which
 * simplify, loop_partition and LLVM then fold.
 */
#include "passes.h"

static int spec_value(const sch_spec *spec, const ts_expr *v, int64_t *value)
{
	for (int i = 0; i < spec->n; i++)
		if (spec->var[i] == v) {
			*value = spec->value[i];
			return 1;
		}
	return 0;
}

/* Gives b the fixed extents, recomputing strides and size. */
static void fix_param(ts_buffer *b, const sch_spec *spec)
{
	int64_t size = 1, v;
	for (int d = b->ndim - 1; d >= 0; d--) {
		if (b->dim_var[d] && spec_value(spec, b->dim_var[d], &v)) {
			b->shape[d] = v;
			b->dim_var[d] = NULL;
		}
		b->strides[d] = size;
		size *= b->shape[d]; /* at most the bound's product, which fits */
	}
	b->size = size;
}

ts_func *sch_specialize(ts_ctx *ctx, ts_func *f, const sch_spec *spec)
{
	if (!f || !spec || spec->n == 0 || f->nsizes == 0)
		return f;
	/* peel flatten's bindings */
	ts_stmt *body = f->body;
	for (int k = 0; k < f->nsizes; k++) {
		TS_ASSERT(ctx, body && body->kind == IR_S_LET && body->u.let.var == f->size_vars[k]);
		if (!body || body->kind != IR_S_LET || body->u.let.var != f->size_vars[k])
			return NULL;
		body = body->u.let.body;
	}
	ts_expr *vars[TS_MAX_SIZE_VARS], *vals[TS_MAX_SIZE_VARS];
	int nfixed = 0, nleft = 0;
	for (int k = 0; k < f->nsizes; k++) {
		int64_t v;
		ts_expr *var = f->size_vars[k];
		if (spec_value(spec, var, &v)) {
			vars[nfixed] = var;
			vals[nfixed++] = ts_const(ctx, var->dtype, v);
		} else {
			f->size_max[nleft] = f->size_max[k];
			f->size_vars[nleft++] = var;
		}
	}
	body = nfixed ? ir_stmt_substitute(ctx, body, nfixed, vars, vals) : body;
	ts_buffer *old = f->params[--f->nparams];
	for (int i = 0; i < f->nparams; i++)
		fix_param(f->params[i], spec);
	f->nsizes = nleft;
	if (body && nleft) {
		int64_t n = nleft;
		ts_buffer *sb = ir_buffer_new(ctx, old->name, ts_int64, 1, &n, TS_SCOPE_GLOBAL);
		body = sb ? sch_bind_sizes(ctx, nleft, f->size_vars, sb, body) : NULL;
		f->params[f->nparams++] = sb;
	}
	f->body = body;
	return body ? f : NULL;
}
