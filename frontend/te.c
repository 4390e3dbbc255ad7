/*
 * te.c - placeholders, reduction axes and computes: the tensor-expression
 * frontend.
 *
 * ts_compute is where a body becomes a tensor, so it is where the body is
 * checked: one pre-order walk collects the tensors it reads (each once, in
 * order of first appearance) and verifies that every variable is in scope.
 * The scope is the compute's own axis variables, plus, inside the source of
 * a top-level reduction, that reduction's axes.  A reduction anywhere else
 * is rejected, which is what lets scheduling treat a compute as "one
 * reduction at most, at the top".  Errors name the compute and the rule.
 */
#include "te.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool check_name(ts_ctx *ctx, const char *what, const char *name)
{
	if (name && name[0])
		return true;
	ts_error(ctx, TS_ERR_INVALID, "%s: empty name", what);
	return false;
}

/* ---- size variables -------------------------------------------------------- */

/* Whether v lies where handles do: a handle, or arithmetic on one. */
static bool near_handle(int64_t v)
{
	return v >= TS_SIZE_VAR_BASE && v < TS_SIZE_VAR_BASE + TS_SIZE_VAR_SPAN;
}

int ts_is_size_var(int64_t v)
{
	return near_handle(v) && (v - TS_SIZE_VAR_BASE) % TS_SIZE_VAR_STRIDE == 0;
}

int64_t ts_size_var(ts_ctx *ctx, const char *name, int64_t max)
{
	if (!ctx || !check_name(ctx, "size_var", name))
		return 0;
	/* the bound and the name are checked as the variable is registered */
	ts_expr *v = ts_var_typed(ctx, name, max > INT32_MAX ? ts_int64 : ts_int32);
	int i = v ? ts_ctx_add_size_var(ctx, v, max) : -1;
	return i < 0 ? 0 : ts_ctx_size_handle(ctx, i);
}

/* The variable and bound of a handle of ctx, or NULL with an error. */
static ts_expr *size_var_of(ts_ctx *ctx, const char *what, const char *name, int64_t h,
			    int64_t *max)
{
	int i = ts_ctx_size_handle_index(ctx, h);
	ts_expr *v = i >= 0 ? ts_ctx_size_var(ctx, i, max) : NULL;
	if (!v)
		ts_error(ctx, TS_ERR_INVALID, "%s%s%s: extent %lld is %s", what, *name ? " " : "", name,
			 (long long)h,
			 !near_handle(h) ? "neither positive nor a size variable"
			 : ts_is_size_var(h) ? "a size variable of another context"
					     : "arithmetic on a size variable (a handle, not a number)");
	return v;
}

ts_expr *ts_size_expr(ts_ctx *ctx, int64_t size)
{
	if (!ctx)
		return NULL;
	if (size > 0)
		return ts_const(ctx, size > INT32_MAX ? ts_int64 : ts_int32, size);
	return size_var_of(ctx, "size_expr", "", size, NULL);
}

int64_t ts_tensor_dim(const ts_tensor *t, int d)
{
	if (!t || d < 0 || d >= t->ndim)
		return 0;
	if (t->dim_var[d] && t->ctx) {
		int i = ts_ctx_size_var_index(t->ctx, t->dim_var[d]);
		if (i >= 0)
			return ts_ctx_size_handle(t->ctx, i);
	}
	return t->shape[d];
}

/* Checks 1..TS_MAX_DIMS extents, each positive or a size variable, and
 * splits them into bounds and variables; `what` is e.g. "placeholder A". */
static bool check_shape(ts_ctx *ctx, const char *what, const char *name, int ndim,
			const int64_t *given, int64_t *shape, ts_expr **vars)
{
	if (ndim < 1 || ndim > TS_MAX_DIMS) {
		ts_error(ctx, TS_ERR_INVALID, "%s %s: %d dimensions (1 to %d allowed)", what, name,
			 ndim, TS_MAX_DIMS);
		return false;
	}
	if (!given) {
		ts_error(ctx, TS_ERR_INVALID, "%s %s: the shape is NULL (%d extents expected)", what,
			 name, ndim);
		return false;
	}
	int64_t n = 1;
	for (int d = 0; d < ndim; d++) {
		shape[d] = given[d];
		vars[d] = NULL;
		if (given[d] < 0 && near_handle(given[d]) &&
		    !(vars[d] = size_var_of(ctx, what, name, given[d], &shape[d])))
			return false;
		if (shape[d] <= 0) {
			ts_error(ctx, TS_ERR_INVALID,
				 "%s %s: extent %lld of dimension %d is not positive", what, name,
				 (long long)shape[d], d);
			return false;
		}
		if (n > INT64_MAX / shape[d]) {
			ts_error(ctx, TS_ERR_INVALID, "%s %s: number of elements overflows", what,
				 name);
			return false;
		}
		n *= shape[d];
	}
	return true;
}

/* Whether the bytes of a tensor of these extents and dtype fit int64: no
 * array could hold more, and a compiled function's offsets would wrap.  A
 * size variable's extent counts as 1: its bound is no size, and the array
 * of each call is checked when it is made. */
static bool check_bytes(ts_ctx *ctx, const char *what, const char *name, int ndim,
			const int64_t *shape, ts_expr *const *vars, ts_dtype dtype)
{
	int64_t n = ts_dtype_bytes(dtype);
	for (int d = 0; d < ndim; d++)
		if (!vars[d] && __builtin_mul_overflow(n, shape[d], &n)) {
			char b[24];
			ts_error(ctx, TS_ERR_INVALID, "%s %s: its size in bytes overflows (%s elements)",
				 what, name, ts_dtype_str(dtype, b));
			return false;
		}
	return true;
}

static ts_tensor *tensor_new(ts_ctx *ctx, const char *name, int ndim, const int64_t *shape,
			     ts_expr *const *vars, ts_dtype dtype, ts_op_kind op)
{
	ts_tensor *t = ts_alloc(ctx, sizeof(*t));
	if (!t)
		return NULL;
	t->name = ts_strdup(ctx, name);
	t->dtype = dtype;
	t->ndim = ndim;
	memcpy(t->shape, shape, (size_t)ndim * sizeof(*shape));
	memcpy(t->dim_var, vars, (size_t)ndim * sizeof(*vars));
	t->op = op;
	t->id = ts_ctx_next_id(ctx);
	t->ctx = ctx;
	return t->name ? t : NULL;
}

ts_tensor *ts_placeholder(ts_ctx *ctx, const char *name, int ndim, const int64_t *shape,
			  ts_dtype dtype)
{
	if (!ctx)
		return NULL;
	int64_t ext[TS_MAX_DIMS];
	ts_expr *vars[TS_MAX_DIMS];
	if (!check_name(ctx, "placeholder", name) ||
	    !check_shape(ctx, "placeholder", name, ndim, shape, ext, vars))
		return NULL;
	if (!ts_dtype_is_valid(dtype) || dtype.lanes != 1 || dtype.code == TS_TYPE_HANDLE) {
		char b[24];
		ts_error(ctx, TS_ERR_INVALID, "placeholder %s: dtype %s is not a scalar element type"
			 " (int/uint 8-64, float 16/32/64, bfloat16 or bool)",
			 name, ts_dtype_str(dtype, b));
		return NULL;
	}
	if (!check_bytes(ctx, "placeholder", name, ndim, ext, vars, dtype))
		return NULL;
	return tensor_new(ctx, name, ndim, ext, vars, dtype, TS_OP_PLACEHOLDER);
}

ts_iter *ts_reduce_axis(ts_ctx *ctx, const char *name, int64_t min, int64_t extent)
{
	if (!ctx)
		return NULL;
	if (!check_name(ctx, "reduce_axis", name))
		return NULL;
	ts_expr *var = NULL;
	if (extent < 0 && near_handle(extent) &&
	    !(var = size_var_of(ctx, "reduce_axis", name, extent, &extent)))
		return NULL;
	if (extent <= 0) {
		ts_error(ctx, TS_ERR_INVALID, "reduce_axis %s: extent %lld is not positive", name,
			 (long long)extent);
		return NULL;
	}
	/* the end of the range, min + extent, must be an int64: loops and guards
	 * compute min + index and compare with the end without overflow */
	int64_t end;
	if (__builtin_add_overflow(min, extent, &end) || min == INT64_MIN) {
		ts_error(ctx, TS_ERR_INVALID,
			 "reduce_axis %s: range [%lld, %lld + %lld) does not fit int64", name,
			 (long long)min, (long long)min, (long long)extent);
		return NULL;
	}
	ts_iter *it = ir_iter_new(ctx, name, min, extent, TS_ITER_REDUCE);
	if (it)
		it->extent_var = var;
	return it;
}

/* ---- body checks --------------------------------------------------------- */

/* A growable arena list of pointers. */
typedef struct plist {
	void **p;
	int n, cap;
} plist;

static bool plist_has(const plist *l, const void *x)
{
	for (int i = 0; i < l->n; i++)
		if (l->p[i] == x)
			return true;
	return false;
}

static bool plist_push(ts_ctx *ctx, plist *l, void *x)
{
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 8;
		void **p = ts_alloc_array(ctx, (size_t)cap, sizeof(*p));
		if (!p)
			return false;
		if (l->n)
			memcpy(p, l->p, (size_t)l->n * sizeof(*p));
		l->p = p;
		l->cap = cap;
	}
	l->p[l->n++] = x;
	return true;
}

typedef struct checker {
	ts_ctx *ctx;
	const char *name;      /* the compute's */
	plist scope;           /* variables usable here */
	plist reduce_vars;     /* axis variables of every reduction in the body */
	plist inputs;          /* tensors read, first appearance first */
	bool failed;
} checker;

static bool fail(checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records "compute C: <message>"; returns false to stop the walk. */
static bool fail(checker *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ts_error(c->ctx, TS_ERR_INVALID, "compute %s: %s", c->name, msg);
	c->failed = true;
	return false;
}

static bool collect_reduce_vars(ts_expr *e, void *data)
{
	checker *c = data;
	if (e->kind == IR_REDUCE)
		for (int i = 0; i < e->u.reduce.naxes && !c->failed; i++)
			if (!plist_push(c->ctx, &c->reduce_vars, e->u.reduce.axes[i]->var))
				c->failed = true;
	return !c->failed;
}

static bool check_var(checker *c, ts_expr *v)
{
	if (plist_has(&c->scope, v) || ts_ctx_size_var_index(c->ctx, v) >= 0)
		return true;
	if (v->u.var.reduction || plist_has(&c->reduce_vars, v))
		return fail(c, "reduction axis '%s' used outside its reduction", v->u.var.name);
	return fail(c, "unknown variable '%s'", v->u.var.name);
}

static bool check_node(ts_expr *e, void *data)
{
	checker *c = data;
	if (c->failed)
		return false;
	if (e->dtype.lanes != 1)
		return fail(c, "vector expression (%s) in the body", ir_expr_kind_name(e->kind));
	if (e->kind == IR_REDUCE)
		return fail(c, "a reduction must be the top of the body");
	if (e->kind == IR_LOAD)
		return fail(c, "the body loads from buffer %s; read tensors instead",
			    e->u.load.buf->name);
	if (e->kind == IR_VAR)
		return check_var(c, e);
	if (e->kind == IR_READ && !plist_has(&c->inputs, e->u.read.tensor) &&
	    !plist_push(c->ctx, &c->inputs, e->u.read.tensor))
		c->failed = true;
	return !c->failed;
}

/* Adds a top-level reduction's axes to the scope, rejecting repeats. */
static bool scope_reduce_axes(checker *c, const ts_expr *r)
{
	for (int i = 0; i < r->u.reduce.naxes; i++) {
		ts_expr *v = r->u.reduce.axes[i]->var;
		if (plist_has(&c->scope, v))
			return fail(c, "reduction axis '%s' appears twice or is a compute axis",
				    v->u.var.name);
		if (!plist_push(c->ctx, &c->scope, v))
			return false;
	}
	return true;
}

/* Walks the body; a top-level REDUCE's source sees its axes, its init not. */
static bool check_body(checker *c, ts_expr *body)
{
	ir_expr_visit(body, collect_reduce_vars, c);
	if (c->failed)
		return false;
	if (body->kind != IR_REDUCE) {
		ir_expr_visit(body, check_node, c);
		return !c->failed;
	}
	int ndata = c->scope.n;
	if (!scope_reduce_axes(c, body))
		return false;
	ir_expr_visit(body->u.reduce.source, check_node, c);
	c->scope.n = ndata;
	if (!c->failed && body->u.reduce.init)
		ir_expr_visit(body->u.reduce.init, check_node, c);
	return !c->failed;
}

/* ---- computes ------------------------------------------------------------- */

static bool check_vars(checker *c, int nvars, ts_expr *const *vars)
{
	for (int d = 0; d < nvars; d++) {
		ts_expr *v = vars[d];
		if (!v) {
			ts_error(c->ctx, TS_ERR_INVALID, "compute %s: index variable %d is NULL",
				 c->name, d);
			return false;
		}
		if (v->ctx != c->ctx)
			return fail(c, "index variable %d belongs to another context (an expression is "
				    "used only with the context that made it)", d);
		if (v->kind != IR_VAR || !ts_dtype_is_int(v->dtype) || v->dtype.lanes != 1) {
			return fail(c, "index %d is not an integer variable", d);
		}
		/* as in TVM, a reduction axis's variable stands for a point
		 * of its reduction only; as an index it would make one
		 * variable two axes, a data axis here and a reduction axis
		 * wherever the sum is */
		if (v->u.var.reduction)
			return fail(c, "index %d is the variable of reduction axis '%s'; "
				     "index variables come from ts_var", d, v->u.var.name);
		if (plist_has(&c->scope, v))
			return fail(c, "variable '%s' names two dimensions", v->u.var.name);
		if (!plist_push(c->ctx, &c->scope, v))
			return false;
	}
	return true;
}

static bool check_compute_args(checker *c, int ndim, const int64_t *shape, int nvars,
			       ts_expr *const *vars, ts_expr *body, int64_t *ext, ts_expr **dim_vars)
{
	if (!check_shape(c->ctx, "compute", c->name, ndim, shape, ext, dim_vars))
		return false;
	if (nvars != ndim) {
		ts_error(c->ctx, TS_ERR_INVALID,
			 "compute %s: %d index variable(s) for %d dimension(s)", c->name, nvars,
			 ndim);
		return false;
	}
	if (!vars) {
		ts_error(c->ctx, TS_ERR_INVALID, "compute %s: no index variables", c->name);
		return false;
	}
	if (!check_vars(c, nvars, vars))
		return false;
	/* an index variable holds every index of its axis: the evaluator
	 * binds it to the exact index and wraps what is computed from it in
	 * its dtype, while compiled loops count in a wider type.  int32 is
	 * widened to int64 where extents need it (widen.c); a narrower
	 * dtype is not, and is refused where its axis outgrows it. */
	for (int d = 0; d < nvars; d++) {
		ts_dtype t = vars[d]->dtype;
		int bits = t.bits < 64 ? t.bits : 64;
		int64_t max = t.code == TS_TYPE_UINT ? (bits == 64 ? INT64_MAX : (INT64_C(1) << bits) - 1)
						     : (bits == 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1);
		bool widened = t.code == TS_TYPE_INT && t.bits == 32;
		if (!widened && ext[d] - 1 > max) {
			char b[24];
			return fail(c, "index %d ('%s') is %s, which cannot hold the axis's indices up to %lld "
				    "(use ts_var, int32, or int64)", d, vars[d]->u.var.name,
				    ts_dtype_str(t, b), (long long)(ext[d] - 1));
		}
	}
	if (!body) {
		ts_error(c->ctx, TS_ERR_INVALID, "compute %s: body is NULL", c->name);
		return false;
	}
	/* its constructors refused operands of other contexts: the root's
	 * context is every node's */
	if (body->ctx != c->ctx)
		return fail(c, "the body belongs to another context (an expression is used only "
			    "with the context that made it)");
	if (body->dtype.lanes != 1 || body->dtype.code == TS_TYPE_HANDLE) {
		char b[24];
		return fail(c, "body has dtype %s; it must be a scalar", ts_dtype_str(body->dtype, b));
	}
	return check_body(c, body);
}

/* Fills the compute-only fields of t from the checked body. */
static bool fill_compute(ts_ctx *ctx, ts_tensor *t, ts_expr *const *vars, ts_expr *body,
			 const plist *inputs)
{
	t->axis = ts_alloc_array(ctx, (size_t)t->ndim, sizeof(*t->axis));
	t->inputs = ts_alloc_array(ctx, (size_t)(inputs->n ? inputs->n : 1), sizeof(*t->inputs));
	if (!t->axis || !t->inputs)
		return false;
	for (int d = 0; d < t->ndim; d++) {
		ts_iter *it = ts_alloc(ctx, sizeof(*it));
		if (!it)
			return false;
		*it = (ts_iter){vars[d], 0, t->shape[d], TS_ITER_DATA, t->dim_var[d]};
		t->axis[d] = it;
	}
	t->body = body;
	if (body->kind == IR_REDUCE) {
		t->nreduce = body->u.reduce.naxes;
		t->reduce_axis = body->u.reduce.axes;
	}
	t->ninputs = inputs->n;
	for (int i = 0; i < inputs->n; i++)
		t->inputs[i] = inputs->p[i];
	return true;
}

ts_tensor *ts_compute_n(ts_ctx *ctx, const char *name, int ndim, const int64_t *shape,
			int nvars, ts_expr *const *vars, ts_expr *body)
{
	if (!ctx || !check_name(ctx, "compute", name))
		return NULL;
	checker c = {.ctx = ctx, .name = name};
	int64_t ext[TS_MAX_DIMS];
	ts_expr *dim_vars[TS_MAX_DIMS];
	if (!check_compute_args(&c, ndim, shape, nvars, vars, body, ext, dim_vars))
		return NULL;
	/* a body built in another context reads tensors that die with it */
	for (int i = 0; i < c.inputs.n; i++) {
		const ts_tensor *in = c.inputs.p[i];
		if (in->ctx && in->ctx != ctx) {
			ts_error(ctx, TS_ERR_INVALID, "compute %s: reads tensor %s of another context",
				 name, in->name);
			return NULL;
		}
	}
	if (!check_bytes(ctx, "compute", name, ndim, ext, dim_vars, body->dtype))
		return NULL;
	ts_tensor *t = tensor_new(ctx, name, ndim, ext, dim_vars, body->dtype, TS_OP_COMPUTE);
	if (!t || !fill_compute(ctx, t, vars, body, &c.inputs))
		return NULL;
	return t;
}

ts_tensor *ts_compute(ts_ctx *ctx, const char *name, int ndim, const int64_t *shape,
		      ts_expr *const *vars, ts_expr *body)
{
	return ts_compute_n(ctx, name, ndim, shape, ndim, vars, body);
}

ts_tensor *ts_compute_lambda(ts_ctx *ctx, const char *name, int ndim, const int64_t *shape,
			     ts_compute_fn fn, void *user)
{
	static const char *const names[TS_MAX_DIMS] = {"i", "j", "k", "l", "m", "n", "o", "p"};
	if (!ctx)
		return NULL;
	int64_t ext[TS_MAX_DIMS];
	ts_expr *dim_vars[TS_MAX_DIMS];
	if (!check_name(ctx, "compute", name) ||
	    !check_shape(ctx, "compute", name, ndim, shape, ext, dim_vars))
		return NULL;
	if (!fn) {
		ts_error(ctx, TS_ERR_INVALID, "compute %s: no body function", name);
		return NULL;
	}
	ts_expr *vars[TS_MAX_DIMS];
	for (int d = 0; d < ndim; d++)
		if (!(vars[d] = ts_var(ctx, names[d])))
			return NULL;
	return ts_compute(ctx, name, ndim, shape, vars, fn(ctx, vars, user));
}

/* ---- reductions and helpers ------------------------------------------------ */

ts_expr *ts_sum(ts_ctx *ctx, ts_expr *source, int naxes, ts_iter *const *axes)
{
	return ts_reduce(ctx, TS_REDUCE_SUM, source, naxes, axes, NULL);
}

ts_expr *ts_reduce_max(ts_ctx *ctx, ts_expr *source, int naxes, ts_iter *const *axes)
{
	return ts_reduce(ctx, TS_REDUCE_MAX, source, naxes, axes, NULL);
}

ts_expr *ts_reduce_min(ts_ctx *ctx, ts_expr *source, int naxes, ts_iter *const *axes)
{
	return ts_reduce(ctx, TS_REDUCE_MIN, source, naxes, axes, NULL);
}

int64_t ts_tensor_numel(const ts_tensor *t)
{
	if (!t)
		return 0;
	int64_t n = 1;
	for (int d = 0; d < t->ndim; d++)
		n *= t->shape[d];
	return n;
}

ts_tensor *ts_rename(ts_ctx *ctx, ts_tensor *t, const char *name)
{
	if (!ctx)
		return NULL;
	if (!t) {
		ts_error(ctx, TS_ERR_INVALID, "rename: tensor is NULL");
		return NULL;
	}
	if (t->ctx && t->ctx != ctx) {
		ts_error(ctx, TS_ERR_INVALID, "rename: tensor %s belongs to another context", t->name);
		return NULL;
	}
	if (!check_name(ctx, "rename", name))
		return NULL;
	const char *copy = ts_strdup(ctx, name);
	if (!copy)
		return NULL;
	t->name = copy;
	return t;
}
