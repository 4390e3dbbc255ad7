/*
 * flatten.c - tensors become flat buffers.
 *
 * Argument tensors become the function's parameters (global buffers of
 * their full shape).  A REALIZE of tensor t over region [min, min + extent)
 * becomes an ALLOCATE of a buffer shaped like the region, and every
 * PROVIDE/READ of t inside it addresses element
 *     sum_d (idx_d - min_d) * stride_d      (row-major strides)
 * Offsets are int32 when the indices are and the buffer has fewer than 2^31
 * elements; otherwise int64 (schedule_ops chose int64 indices for the whole
 * function in that case, so this only widens a region's int32 start).
 *
 * A stage given ts_storage_align gets padded strides (and a larger
 * buffer) for the dimensions it names; offsets use the buffer's strides.
 *
 * A parameter with a size-variable extent is addressed with strides built
 * from the run-time extents (i*n + j); temporaries keep the bound's
 * constant strides.  The size variables the function uses are bound at its
 * top from a last int64 parameter, in order of first appearance among the
 * arguments' dimensions; a size variable no argument has cannot be known
 * at a call and is refused.
 */
#include <string.h>

#include "passes.h"

typedef struct binding {
	const ts_tensor *t;
	ts_buffer *buf;
	ts_expr **min; /* NULL for parameters: region starts at 0 */
} binding;

typedef struct flat {
	const ts_schedule *s; /* its stages' storage_align; NULL: none */
	binding b[512];
	int n;
	const char *names[1024]; /* every buffer name handed out */
	int nnames;
} flat;

/* Buffer names must be unique in a function (emitters use them as
 * identifiers) while tensor names need not be: "pad", "pad_1", ... */
static const char *unique_name(ts_ctx *ctx, flat *f, const char *name)
{
	const char *cand = name;
	for (int k = 1; cand; k++) {
		bool taken = false;
		for (int i = 0; i < f->nnames && !taken; i++)
			taken = strcmp(f->names[i], cand) == 0;
		if (!taken)
			break;
		cand = ts_sprintf(ctx, "%s_%d", name, k);
	}
	if (cand && f->nnames < (int)TS_COUNT_OF(f->names))
		f->names[f->nnames++] = cand;
	return cand;
}

static binding *lookup(flat *f, const ts_tensor *t)
{
	for (int i = f->n - 1; i >= 0; i--)
		if (f->b[i].t == t)
			return &f->b[i];
	return NULL;
}

/* The dtype of b's offsets: int64 when the buffer or any index needs it. */
static ts_dtype offset_type(const binding *b, int n, ts_expr *const *idx)
{
	bool wide = b->buf->size > INT32_MAX;
	for (int d = 0; d < n; d++)
		wide |= idx[d]->dtype.bits > 32 || (b->min && b->min[d]->dtype.bits > 32);
	return wide ? ts_int64 : ts_int32;
}

/* The stride of dimension d: the product of the later extents, run-time
 * ones included. */
static ts_expr *stride(ts_ctx *ctx, const ts_buffer *buf, int d, ts_dtype t)
{
	ts_expr *sym = NULL;
	int64_t k = 1;
	for (int e = d + 1; e < buf->ndim; e++) {
		if (!buf->dim_var[e]) {
			k *= buf->shape[e];
			continue;
		}
		ts_expr *v = ir_index_cast(ctx, buf->dim_var[e], t);
		sym = sym ? ts_mul(ctx, sym, v) : v;
	}
	if (!sym) /* the buffer's own strides: storage_align may pad them */
		return buf->strides[d] == 1 ? NULL : ts_const(ctx, t, buf->strides[d]);
	return k == 1 ? sym : ts_mul(ctx, sym, ts_const(ctx, t, k));
}

static ts_expr *offset(ts_ctx *ctx, const binding *b, int n, ts_expr *const *idx)
{
	ts_dtype t = offset_type(b, n, idx);
	ts_expr *off = NULL;
	for (int d = 0; d < n; d++) {
		ts_expr *i = ir_index_cast(ctx, idx[d], t);
		if (b->min)
			i = ts_sub(ctx, i, ir_index_cast(ctx, b->min[d], t));
		ts_expr *s = stride(ctx, b->buf, d, t);
		ts_expr *term = s ? ts_mul(ctx, i, s) : i;
		off = off ? ts_add(ctx, off, term) : term;
	}
	return off ? off : ts_const(ctx, t, 0);
}

static binding *need(ts_ctx *ctx, flat *f, const ts_tensor *t)
{
	binding *b = lookup(f, t);
	if (!b)
		ts_error(ctx, TS_ERR_INVALID,
			 "lower: tensor %s is read but is neither an argument nor computed here (pass it in the argument list)",
			 t->name);
	return b;
}

static ts_expr *flat_expr(ts_ctx *ctx, ts_expr *e, void *data)
{
	ts_expr *m = ir_expr_map_children(ctx, e, flat_expr, data);
	if (!m || m->kind != IR_READ)
		return m;
	binding *b = need(ctx, data, m->u.read.tensor);
	return b ? ts_load(ctx, b->buf, offset(ctx, b, m->u.read.n, m->u.read.idx)) : NULL;
}

/* ts_storage_align of t's stage on buf: each aligned stride rounded up
 * to k * factor + offset, the outer strides and the size following; and
 * its ts_double_buffer, for the double_buffer pass. */
static ts_status align(ts_ctx *ctx, const flat *f, const ts_tensor *t, ts_buffer *buf)
{
	const ts_stage *st = NULL;
	for (int i = 0; f->s && i < f->s->nstages && !st; i++)
		if (f->s->stages[i]->tensor == t)
			st = f->s->stages[i];
	if (!st)
		return TS_OK;
	buf->double_buffer = st->double_buffer;
	int64_t stride = 1;
	bool padded = false;
	for (int d = buf->ndim - 1; d >= 0; d--) {
		int64_t fa = st->align_factor[d], of = st->align_offset[d];
		if (fa && stride % fa != of) {
			stride += ((of - stride % fa) + fa) % fa; /* factors are at most 2^20 */
			padded = true;
		}
		buf->strides[d] = stride;
		if (buf->shape[d] > INT64_MAX / stride)
			return ts_error(ctx, TS_ERR_INVALID, "lower: storage_align of %s: the padded "
					"buffer's size overflows", t->name);
		stride *= buf->shape[d];
	}
	if (padded)
		buf->size = stride;
	return TS_OK;
}

static ts_stmt *flat_stmt(ts_ctx *ctx, ts_stmt *s, void *data)
{
	flat *f = data;
	if (s->kind == IR_S_PROVIDE) {
		binding *b = need(ctx, f, s->u.provide.tensor);
		ts_expr *v = flat_expr(ctx, s->u.provide.value, f);
		if (!b || !v)
			return NULL;
		return ir_store(ctx, b->buf, offset(ctx, b, s->u.provide.n, s->u.provide.idx), v);
	}
	if (s->kind != IR_S_REALIZE)
		return ir_stmt_map_children(ctx, s, flat_stmt, flat_expr, data);
	const ts_tensor *t = s->u.realize.tensor;
	if (f->n >= (int)TS_COUNT_OF(f->b)) {
		ts_error(ctx, TS_ERR_INVALID, "lower: too many buffers");
		return NULL;
	}
	const char *bname = unique_name(ctx, f, t->name);
	ts_buffer *buf = bname ? ir_buffer_new(ctx, bname, t->dtype, s->u.realize.n,
					       s->u.realize.extent, s->u.realize.scope)
			       : NULL;
	if (!buf)
		return NULL;
	if (align(ctx, f, t, buf) != TS_OK)
		return NULL;
	f->b[f->n++] = (binding){t, buf, s->u.realize.min};
	ts_stmt *body = flat_stmt(ctx, s->u.realize.body, f);
	f->n--;
	return body ? ir_allocate(ctx, buf, body) : NULL;
}

/* ---- size variables ---------------------------------------------------------- */

/* The parameter buffer of t: a size variable stays one (dim_var) over the
 * bound's extent. */
static ts_buffer *param_buffer(ts_ctx *ctx, flat *f, const ts_tensor *t)
{
	const char *bname = unique_name(ctx, f, t->name);
	ts_buffer *b = bname ? ir_buffer_new(ctx, bname, t->dtype, t->ndim, t->shape,
					     TS_SCOPE_GLOBAL)
			     : NULL;
	for (int d = 0; b && d < t->ndim; d++)
		b->dim_var[d] = t->dim_var[d];
	return b;
}

/* fn's size variables: those of its parameters, first appearance first. */
static ts_status collect_sizes(ts_ctx *ctx, ts_func *fn)
{
	fn->size_vars = ts_alloc_array(ctx, TS_MAX_SIZE_VARS, sizeof(ts_expr *));
	fn->size_max = ts_alloc_array(ctx, TS_MAX_SIZE_VARS, sizeof(int64_t));
	if (!fn->size_vars || !fn->size_max)
		return ts_last_status(ctx);
	for (int i = 0; i < fn->nparams; i++)
		for (int d = 0; d < fn->params[i]->ndim; d++) {
			ts_expr *v = fn->params[i]->dim_var[d];
			bool seen = !v;
			for (int k = 0; k < fn->nsizes && !seen; k++)
				seen = fn->size_vars[k] == v;
			if (seen || fn->nsizes >= TS_MAX_SIZE_VARS)
				continue;
			fn->size_max[fn->nsizes] = fn->params[i]->shape[d];
			fn->size_vars[fn->nsizes++] = v;
		}
	return TS_OK;
}

typedef struct unbound {
	const ts_func *fn;
	const ts_expr *missing;
} unbound;

static bool unbound_fn(ts_expr *e, void *data)
{
	unbound *u = data;
	if (u->missing || e->kind != IR_VAR || ts_ctx_size_var_index(u->fn->ctx, e) < 0)
		return !u->missing;
	bool known = false;
	for (int k = 0; k < u->fn->nsizes && !known; k++)
		known = u->fn->size_vars[k] == e;
	if (!known)
		u->missing = e;
	return !u->missing;
}

/* The body with the size variables bound from the sizes parameter,
 * appended to the parameters. */
static ts_stmt *bind_sizes(ts_ctx *ctx, flat *f, ts_func *fn, ts_stmt *body)
{
	if (collect_sizes(ctx, fn) != TS_OK)
		return NULL;
	unbound u = {fn, NULL};
	ir_stmt_visit(body, NULL, unbound_fn, &u);
	if (u.missing) {
		ts_error(ctx, TS_ERR_INVALID,
			 "lower(%s): size variable %s is not the extent of any argument's dimension, "
			 "so a call cannot give its value (pass a tensor of that extent)",
			 fn->name, u.missing->u.var.name);
		return NULL;
	}
	if (!fn->nsizes)
		return body;
	int64_t n = fn->nsizes;
	const char *bname = unique_name(ctx, f, "sizes");
	ts_buffer *sb = bname ? ir_buffer_new(ctx, bname, ts_int64, 1, &n, TS_SCOPE_GLOBAL) : NULL;
	if (!sb)
		return NULL;
	fn->params[fn->nparams++] = sb;
	return sch_bind_sizes(ctx, fn->nsizes, fn->size_vars, sb, body);
}

ts_stmt *sch_bind_sizes(ts_ctx *ctx, int n, ts_expr *const *vars, ts_buffer *sizes, ts_stmt *body)
{
	for (int k = n - 1; k >= 0 && body; k--) {
		ts_expr *v = vars[k];
		ts_expr *load = ts_load(ctx, sizes, ts_const(ctx, ts_int32, k));
		body = ir_let(ctx, v, ts_dtype_eq(v->dtype, ts_int64) ? load : ts_cast(ctx, v->dtype, load),
			      body);
	}
	return body;
}

ts_func *pass_flatten(ts_ctx *ctx, ts_stmt *body, const char *name, int nargs,
		      ts_tensor *const *args, const ts_schedule *s)
{
	flat *f = ts_alloc(ctx, sizeof(*f));
	ts_func *fn = ts_alloc(ctx, sizeof(*fn));
	if (!f || !fn || !body)
		return NULL;
	f->s = s;
	fn->name = ts_strdup(ctx, name);
	fn->ctx = ctx;
	fn->nparams = nargs;
	/* one more for the sizes parameter */
	fn->params = ts_alloc_array(ctx, (size_t)nargs + 1, sizeof(ts_buffer *));
	fn->param_tensors = ts_alloc_array(ctx, (size_t)nargs + 1, sizeof(ts_tensor *));
	if (!fn->name || !fn->params || !fn->param_tensors || nargs > (int)TS_COUNT_OF(f->b))
		return NULL;
	for (int i = 0; i < nargs; i++) {
		ts_tensor *t = args[i];
		fn->param_tensors[i] = t;
		fn->params[i] = param_buffer(ctx, f, t);
		if (!fn->params[i])
			return NULL;
		f->b[f->n++] = (binding){t, fn->params[i], NULL};
	}
	fn->body = flat_stmt(ctx, body, f);
	if (fn->body)
		fn->body = bind_sizes(ctx, f, fn, fn->body);
	return fn->body ? fn : NULL;
}
