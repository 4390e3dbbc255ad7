/*
 * graph.c - building a graph: values, nodes, shape inference, printing.
 *
 * Every node's output shape is inferred when it is added, so an importer
 * learns of a bad model at the node that makes it bad, with the node's
 * name, and the compiler only ever sees well-formed graphs.
 */
#include "graph_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "ctx.h"

/* The most elements a value may hold, and the largest extent: 2^31 - 1, so
 * that every size and index of a value fits in 32 bits and products of
 * two of them in 64.  Convolution and pooling attributes must fit in 32
 * bits too (the kernel builder passes them on as int). */
#define G_MAX_NUMEL (((int64_t)1 << 31) - 1)

static const char *const gop_names[TS_GOP_COUNT] = {
	[TS_GOP_CONV] = "Conv",
	[TS_GOP_GEMM] = "Gemm",
	[TS_GOP_MATMUL] = "MatMul",
	[TS_GOP_MAXPOOL] = "MaxPool",
	[TS_GOP_AVGPOOL] = "AveragePool",
	[TS_GOP_GLOBALAVGPOOL] = "GlobalAveragePool",
	[TS_GOP_SOFTMAX] = "Softmax",
	[TS_GOP_LAYERNORM] = "LayerNormalization",
	[TS_GOP_BATCHNORM] = "BatchNormalization",
	[TS_GOP_TRANSPOSE] = "Transpose",
	[TS_GOP_CONCAT] = "Concat",
	[TS_GOP_RESHAPE] = "Reshape",
	[TS_GOP_FLATTEN] = "Flatten",
	[TS_GOP_IDENTITY] = "Identity",
	[TS_GOP_ADD] = "Add",
	[TS_GOP_SUB] = "Sub",
	[TS_GOP_MUL] = "Mul",
	[TS_GOP_DIV] = "Div",
	[TS_GOP_POW] = "Pow",
	[TS_GOP_RELU] = "Relu",
	[TS_GOP_SIGMOID] = "Sigmoid",
	[TS_GOP_TANH] = "Tanh",
	[TS_GOP_ERF] = "Erf",
	[TS_GOP_SQRT] = "Sqrt",
	[TS_GOP_EXP] = "Exp",
	[TS_GOP_NEG] = "Neg",
	[TS_GOP_GELU] = "Gelu",
	[TS_GOP_CLIP] = "Clip",
};

const char *ts_gop_name(ts_gop op)
{
	return (unsigned)op < TS_GOP_COUNT ? gop_names[op] : "(not an operator)";
}

bool g_is_elementwise(ts_gop op)
{
	return op >= TS_GOP_ADD && op < TS_GOP_COUNT;
}

ts_gattrs ts_gattrs_default(void)
{
	return (ts_gattrs){.stride = {1, 1}, .dilation = {1, 1}, .group = 1, .axis = -1,
			   .alpha = 1.0, .beta = 1.0, .epsilon = 1e-5};
}

int64_t gv_numel(const gvalue *v)
{
	int64_t n = 1;
	for (int d = 0; d < v->ndim; d++)
		n *= v->shape[d];
	return n;
}

const char *g_shape_str(ts_ctx *ctx, int ndim, const int64_t *shape)
{
	/* room for TS_MAX_DIMS extents of 20 digits and their separators:
	 * an array's shape (ts_graph_run's messages) has up to 8 */
	char buf[TS_MAX_DIMS * 24 + 8];
	size_t k = 1;
	buf[0] = '[';
	for (int d = 0; d < ndim && d < TS_MAX_DIMS; d++)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%s%lld", d ? ", " : "", (long long)shape[d]);
	snprintf(buf + k, sizeof(buf) - k, "%s]", ndim > TS_MAX_DIMS ? ", ..." : "");
	return ts_strdup(ctx, buf);
}

ts_graph *ts_graph_new(ts_ctx *ctx)
{
	if (!ctx)
		return NULL;
	ts_graph *g = calloc(1, sizeof(*g));
	if (!g) {
		ts_error(ctx, TS_ERR_NOMEM, "graph_new: out of memory");
		return NULL;
	}
	g->ctx = ts_ctx_retain(ctx);
	return g;
}

void ts_graph_free(ts_graph *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->nv; i++) {
		free(g->v[i].name);
		free(g->v[i].data);
	}
	for (int i = 0; i < g->nn; i++)
		free(g->n[i].name);
	free(g->v);
	free(g->n);
	free(g->in);
	free(g->out);
	ts_ctx_free(g->ctx);
	free(g);
}

ts_ctx *ts_graph_ctx(const ts_graph *g)
{
	return g ? g->ctx : NULL;
}

/* Grows *p (n used of *cap elements of size elem) for one more. */
bool g_grow(void **p, int n, int *cap, size_t elem)
{
	if (n < *cap)
		return true;
	int c = *cap ? *cap * 2 : 16;
	void *q = realloc(*p, (size_t)c * elem);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

static bool valid_value(const ts_graph *g, int v)
{
	return g && v >= 0 && v < g->nv;
}

/* Whether name is taken by an input or an output of g. */
static bool name_taken(const ts_graph *g, const char *name)
{
	for (int i = 0; i < g->nin; i++)
		if (!strcmp(g->v[g->in[i]].name, name))
			return true;
	for (int i = 0; i < g->nout; i++)
		if (!strcmp(g->v[g->out[i]].name, name))
			return true;
	return false;
}

/* Whether n extents in shape are each 1..G_MAX_NUMEL with a product of
 * at most G_MAX_NUMEL; *bad is the first dimension that breaks it. */
static bool shape_fits(int ndim, const int64_t *shape, int *bad)
{
	int64_t n = 1;
	for (int d = 0; d < ndim; d++) {
		if (shape[d] < 1 || shape[d] > G_MAX_NUMEL || n > G_MAX_NUMEL / shape[d]) {
			*bad = d;
			return false;
		}
		n *= shape[d];
	}
	return true;
}

/* The shape argument of fn (graph_input or graph_constant) for value name. */
static bool check_shape(ts_graph *g, const char *fn, const char *name, int ndim,
			const int64_t *shape)
{
	int d = 0;
	if (ndim < 0 || ndim > TS_GRAPH_MAX_DIMS)
		return ts_error(g->ctx, TS_ERR_INVALID, "%s '%s': ndim %d is out of range (0..%d)", fn, name,
				ndim, TS_GRAPH_MAX_DIMS), false;
	if (ndim && !shape)
		return ts_error(g->ctx, TS_ERR_INVALID, "%s '%s': shape is NULL for %d dimensions", fn, name,
				ndim), false;
	if (shape_fits(ndim, shape, &d))
		return true;
	if (shape[d] < 1 || shape[d] > G_MAX_NUMEL)
		return ts_error(g->ctx, TS_ERR_INVALID, "%s '%s': extent %lld in dimension %d is out of range (1..2^31 - 1)",
				fn, name, (long long)shape[d], d), false;
	return ts_error(g->ctx, TS_ERR_INVALID, "%s '%s': %s has more than 2^31 - 1 elements", fn, name,
			g_shape_str(g->ctx, ndim, shape)), false;
}

/* A new value (its name copied); -1 on no memory. */
static int add_value(ts_graph *g, const char *name, gv_kind kind, ts_dtype dt, int ndim,
		     const int64_t *shape)
{
	if (!g_grow((void **)&g->v, g->nv, &g->capv, sizeof(*g->v))) {
		ts_error(g->ctx, TS_ERR_NOMEM, "graph: out of memory");
		return -1;
	}
	gvalue *v = &g->v[g->nv];
	memset(v, 0, sizeof(*v));
	v->name = strdup(name);
	if (!v->name) {
		ts_error(g->ctx, TS_ERR_NOMEM, "graph: out of memory");
		return -1;
	}
	v->kind = kind;
	v->dtype = dt;
	v->ndim = ndim;
	v->node = -1;
	if (ndim)
		memcpy(v->shape, shape, (size_t)ndim * sizeof(*shape));
	return g->nv++;
}

static bool is_f32(ts_dtype t)
{
	return t.code == ts_float32.code && t.bits == 32 && t.lanes == 1;
}

static bool is_i64(ts_dtype t)
{
	return t.code == ts_int64.code && t.bits == 64 && t.lanes == 1;
}

int ts_graph_input(ts_graph *g, const char *name, ts_dtype dtype, int ndim, const int64_t *shape)
{
	if (!g)
		return -1;
	if (!name || !*name)
		return ts_error(g->ctx, TS_ERR_INVALID, "graph_input: name is %s", name ? "empty" : "NULL"), -1;
	if (!is_f32(dtype))
		return ts_error(g->ctx, TS_ERR_UNSUPPORTED, "graph_input '%s': only float32 inputs are supported", name), -1;
	if (name_taken(g, name))
		return ts_error(g->ctx, TS_ERR_INVALID, "graph_input: the name '%s' is taken", name), -1;
	if (!check_shape(g, "graph_input", name, ndim, shape))
		return -1;
	if (!g_grow((void **)&g->in, g->nin, &g->capin, sizeof(*g->in)))
		return ts_error(g->ctx, TS_ERR_NOMEM, "graph_input '%s': out of memory", name), -1;
	int v = add_value(g, name, GV_INPUT, dtype, ndim, shape);
	if (v >= 0)
		g->in[g->nin++] = v;
	return v;
}

int ts_graph_constant(ts_graph *g, const char *name, ts_dtype dtype, int ndim,
		      const int64_t *shape, const void *data)
{
	if (!g)
		return -1;
	char auto_name[32];
	if (!name || !*name) {
		snprintf(auto_name, sizeof(auto_name), "c%d", g->nv);
		name = auto_name;
	}
	if (!is_f32(dtype) && !is_i64(dtype))
		return ts_error(g->ctx, TS_ERR_UNSUPPORTED,
				"graph_constant '%s': only float32 and int64 constants are supported", name), -1;
	if (!check_shape(g, "graph_constant", name, ndim, shape))
		return -1;
	if (!data)
		return ts_error(g->ctx, TS_ERR_INVALID, "graph_constant '%s': data is NULL", name), -1;
	int64_t n = 1;
	for (int d = 0; d < ndim; d++)
		n *= shape[d];
	size_t bytes = (size_t)n * (dtype.bits / 8);
	void *copy = malloc(bytes ? bytes : 1);
	if (!copy)
		return ts_error(g->ctx, TS_ERR_NOMEM, "graph_constant '%s': out of memory (%zu bytes)", name, bytes), -1;
	memcpy(copy, data, bytes);
	int v = add_value(g, name, GV_CONST, dtype, ndim, shape);
	if (v < 0) {
		free(copy);
		return -1;
	}
	g->v[v].data = copy;
	return v;
}

/* ---- shape inference -------------------------------------------------------------- */

typedef struct infer {
	ts_graph *g;
	const char *node, *op;
	int nin;
	const int *in;
	const ts_gattrs *a;
} infer;

static bool fail_v(const infer *c, ts_status st, const char *fmt, va_list ap)
{
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	ts_error(c->g->ctx, st, "node '%s' (%s): %s", c->node, c->op, msg);
	return false;
}

/* A node the operator's definition does not allow (TS_ERR_INVALID). */
static bool fail(const infer *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(const infer *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fail_v(c, TS_ERR_INVALID, fmt, ap);
	va_end(ap);
	return false;
}

/* A legal node tessera does not compute (TS_ERR_UNSUPPORTED). */
static bool unsupported(const infer *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool unsupported(const infer *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fail_v(c, TS_ERR_UNSUPPORTED, fmt, ap);
	va_end(ap);
	return false;
}

static const gvalue *arg(const infer *c, int i)
{
	return &c->g->v[c->in[i]];
}

static const char *shp(const infer *c, int i)
{
	const gvalue *v = arg(c, i);
	return ts_sprintf(c->g->ctx, "%s%s", v->name, g_shape_str(c->g->ctx, v->ndim, v->shape));
}

static bool want_inputs(const infer *c, int lo, int hi)
{
	if (c->nin >= lo && c->nin <= hi)
		return true;
	if (lo == hi)
		return fail(c, "takes %d inputs, got %d", lo, c->nin);
	return fail(c, "takes %d to %d inputs, got %d", lo, hi, c->nin);
}

static bool want_ndim(const infer *c, int i, int ndim)
{
	return arg(c, i)->ndim == ndim ||
	       fail(c, "input %d must have %d dimensions: %s", i, ndim, shp(c, i));
}

/* numpy broadcasting of a and b into out. */
static bool broadcast(const infer *c, const gvalue *a, const gvalue *b, int *ndim, int64_t *out)
{
	int n = a->ndim > b->ndim ? a->ndim : b->ndim;
	for (int d = 0; d < n; d++) {
		int da = d - (n - a->ndim), db = d - (n - b->ndim);
		int64_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
		if (x != y && x != 1 && y != 1)
			return fail(c, "shapes do not broadcast: %s%s and %s%s (dimension %d: %lld vs %lld)",
				    a->name, g_shape_str(c->g->ctx, a->ndim, a->shape), b->name,
				    g_shape_str(c->g->ctx, b->ndim, b->shape), d, (long long)x, (long long)y);
		out[d] = x == 1 ? y : x;
	}
	*ndim = n;
	return true;
}

/* The attributes of a convolution or pooling node fit in 32 bits: the
 * kernel builder narrows them to int.  Negative values pass here and are
 * refused by window() with the rule they break. */
static bool int32_attrs(const infer *c, bool pool)
{
	const ts_gattrs *a = c->a;
	static const char *const pads[] = {"top", "left", "bottom", "right"};
	const struct { const char *what; int64_t v; } at[] = {
		{"stride (height)", a->stride[0]}, {"stride (width)", a->stride[1]},
		{"dilation (height)", a->dilation[0]}, {"dilation (width)", a->dilation[1]},
		{"kernel (height)", pool ? a->kernel[0] : 0}, {"kernel (width)", pool ? a->kernel[1] : 0},
		{"group", pool ? 1 : a->group},
	};
	for (size_t i = 0; i < TS_COUNT_OF(at); i++)
		if (at[i].v > INT32_MAX || at[i].v < -INT32_MAX)
			return fail(c, "%s %lld does not fit in 32 bits", at[i].what, (long long)at[i].v);
	for (int i = 0; i < 4; i++)
		if (a->pad[i] > INT32_MAX || a->pad[i] < -INT32_MAX)
			return fail(c, "pad (%s) %lld does not fit in 32 bits", pads[i], (long long)a->pad[i]);
	return true;
}

/* The output extent of a window over `in`; every operand is below 2^31
 * (int32_attrs and the value limit), so nothing here overflows. */
static bool window(const infer *c, const char *dim, int64_t in, int64_t k, int64_t stride,
		   int64_t pb, int64_t pa, int64_t dil, int64_t *out)
{
	if (stride < 1 || dil < 1 || pb < 0 || pa < 0 || k < 1)
		return fail(c, "bad %s window: kernel %lld, stride %lld, pads %lld/%lld, dilation %lld",
			    dim, (long long)k, (long long)stride, (long long)pb, (long long)pa, (long long)dil);
	int64_t span = dil * (k - 1) + 1;
	if (in + pb + pa < span)
		return fail(c, "the %s window (%lld) is larger than the padded input (%lld)", dim,
			    (long long)span, (long long)(in + pb + pa));
	*out = (in + pb + pa - span) / stride + 1;
	return true;
}

static bool infer_conv(const infer *c, int *ndim, int64_t *s)
{
	if (!want_inputs(c, 2, 3) || !want_ndim(c, 0, 4) || !want_ndim(c, 1, 4))
		return false;
	const gvalue *x = arg(c, 0), *w = arg(c, 1);
	const ts_gattrs *a = c->a;
	if (!int32_attrs(c, false))
		return false;
	if (a->group < 1 || x->shape[1] % a->group || w->shape[0] % a->group)
		return fail(c, "group %lld must divide the input channels of %s and the output channels of %s",
			    (long long)a->group, shp(c, 0), shp(c, 1));
	if (w->shape[1] * a->group != x->shape[1])
		return fail(c, "input channels differ: %s, %s (group %lld)", shp(c, 0), shp(c, 1),
			    (long long)a->group);
	if ((a->kernel[0] && a->kernel[0] != w->shape[2]) || (a->kernel[1] && a->kernel[1] != w->shape[3]))
		return fail(c, "kernel_shape %lldx%lld differs from the weights %s", (long long)a->kernel[0],
			    (long long)a->kernel[1], shp(c, 1));
	if (c->nin == 3 && (arg(c, 2)->ndim != 1 || arg(c, 2)->shape[0] != w->shape[0]))
		return fail(c, "the bias must be [%lld]: %s", (long long)w->shape[0], shp(c, 2));
	*ndim = 4;
	s[0] = x->shape[0];
	s[1] = w->shape[0];
	return window(c, "height", x->shape[2], w->shape[2], a->stride[0], a->pad[0], a->pad[2],
		      a->dilation[0], &s[2]) &&
	       window(c, "width", x->shape[3], w->shape[3], a->stride[1], a->pad[1], a->pad[3],
		      a->dilation[1], &s[3]);
}

static bool infer_gemm(const infer *c, int *ndim, int64_t *s)
{
	if (!want_inputs(c, 2, 3) || !want_ndim(c, 0, 2) || !want_ndim(c, 1, 2))
		return false;
	const gvalue *A = arg(c, 0), *B = arg(c, 1);
	int64_t M = A->shape[c->a->trans_a], K = A->shape[!c->a->trans_a];
	int64_t K2 = B->shape[c->a->trans_b], N = B->shape[!c->a->trans_b];
	if (K != K2)
		return fail(c, "inner extents differ: %s%s x %s%s (%lld vs %lld)", shp(c, 0),
			    c->a->trans_a ? "'" : "", shp(c, 1), c->a->trans_b ? "'" : "", (long long)K,
			    (long long)K2);
	*ndim = 2;
	s[0] = M;
	s[1] = N;
	if (c->nin == 3) {
		gvalue mn = {.name = "(A x B)", .ndim = 2, .shape = {M, N}};
		int nd;
		int64_t o[TS_GRAPH_MAX_DIMS];
		if (!broadcast(c, &mn, arg(c, 2), &nd, o))
			return false;
		if (nd != 2 || o[0] != M || o[1] != N)
			return fail(c, "C %s does not broadcast to [%lld, %lld]", shp(c, 2), (long long)M,
				    (long long)N);
	}
	return true;
}

static bool infer_matmul(const infer *c, int *ndim, int64_t *s)
{
	if (!want_inputs(c, 2, 2))
		return false;
	const gvalue *A = arg(c, 0), *B = arg(c, 1);
	if (A->ndim < 1 || B->ndim < 1)
		return fail(c, "a scalar operand has no rows or columns: %s x %s", shp(c, 0), shp(c, 1));
	if (A->ndim < 2 || B->ndim < 2)
		return unsupported(c, "two 1-D operands (a dot product) are not supported: %s x %s (a scalar "
			    "result has no kernel)", shp(c, 0), shp(c, 1));
	if (A->shape[A->ndim - 1] != B->shape[B->ndim - 2])
		return fail(c, "inner extents differ: %s x %s (%lld vs %lld)", shp(c, 0), shp(c, 1),
			    (long long)A->shape[A->ndim - 1], (long long)B->shape[B->ndim - 2]);
	gvalue ba = {.name = A->name, .ndim = A->ndim - 2}, bb = {.name = B->name, .ndim = B->ndim - 2};
	memcpy(ba.shape, A->shape, sizeof(int64_t) * (size_t)ba.ndim);
	memcpy(bb.shape, B->shape, sizeof(int64_t) * (size_t)bb.ndim);
	for (int d = 0, n = ba.ndim > bb.ndim ? ba.ndim : bb.ndim; d < n; d++) {
		int da = d - (n - ba.ndim), db = d - (n - bb.ndim);
		int64_t x = da >= 0 ? ba.shape[da] : 1, y = db >= 0 ? bb.shape[db] : 1;
		if (x != y && x != 1 && y != 1)
			return fail(c, "batch dimensions do not broadcast: %s x %s (batch dimension %d: %lld "
				    "vs %lld)", shp(c, 0), shp(c, 1), d, (long long)x, (long long)y);
	}
	if (!broadcast(c, &ba, &bb, ndim, s))
		return false;
	s[(*ndim)++] = A->shape[A->ndim - 2];
	s[(*ndim)++] = B->shape[B->ndim - 1];
	return true;
}

static bool infer_pool(const infer *c, int *ndim, int64_t *s)
{
	if (!want_inputs(c, 1, 1) || !want_ndim(c, 0, 4))
		return false;
	const gvalue *x = arg(c, 0);
	const ts_gattrs *a = c->a;
	if (!int32_attrs(c, true))
		return false;
	if (a->dilation[0] != 1 || a->dilation[1] != 1)
		return unsupported(c, "dilated pooling is not supported");
	if (a->pad[0] >= a->kernel[0] || a->pad[2] >= a->kernel[0] || a->pad[1] >= a->kernel[1] ||
	    a->pad[3] >= a->kernel[1])
		return fail(c, "pads (%lld, %lld, %lld, %lld) must be smaller than the kernel %lldx%lld",
			    (long long)a->pad[0], (long long)a->pad[1], (long long)a->pad[2],
			    (long long)a->pad[3], (long long)a->kernel[0], (long long)a->kernel[1]);
	*ndim = 4;
	s[0] = x->shape[0];
	s[1] = x->shape[1];
	return window(c, "height", x->shape[2], a->kernel[0], a->stride[0], a->pad[0], a->pad[2], 1, &s[2]) &&
	       window(c, "width", x->shape[3], a->kernel[1], a->stride[1], a->pad[1], a->pad[3], 1, &s[3]);
}

/* axis normalized into [0, ndim) (or [0, ndim] when end_ok). */
static bool norm_axis(const infer *c, int64_t axis, int ndim, bool end_ok, int *out)
{
	int64_t hi = ndim + end_ok;
	if (axis < 0)
		axis += ndim;
	if (axis < 0 || axis >= hi)
		return fail(c, "axis %lld is out of range for %d dimensions", (long long)c->a->axis, ndim);
	*out = (int)axis;
	return true;
}

static bool same_shape_as(const infer *c, int i, int *ndim, int64_t *s)
{
	const gvalue *x = arg(c, i);
	*ndim = x->ndim;
	memcpy(s, x->shape, sizeof(int64_t) * (size_t)x->ndim);
	return true;
}

static bool want_vector(const infer *c, int i, int64_t n, const char *what)
{
	const gvalue *v = arg(c, i);
	int64_t numel = gv_numel(v);
	/* [C] or [C, 1, 1] and the like */
	if (numel == n && v->ndim >= 1 && v->shape[0] == n)
		return true;
	return fail(c, "%s must have %lld elements along its first dimension: %s", what, (long long)n,
		    shp(c, i));
}

static bool infer_norm(const infer *c, int *ndim, int64_t *s)
{
	const gvalue *x = arg(c, 0);
	int ax = 0;
	bool layer = !strcmp(c->op, "LayerNormalization");
	/* BatchNormalization normalizes over dimension 1 whatever attrs.axis
	 * says (ONNX gives it no axis) */
	if (c->nin < 1 || (layer && !norm_axis(c, c->a->axis, x->ndim, false, &ax)))
		return false;
	if (!(c->a->epsilon > 0) || !isfinite(c->a->epsilon))
		return fail(c, "epsilon must be positive, got %g", c->a->epsilon);
	/* a layer norm adds it in float32, where a smaller one is 0 and a
	 * larger one than float32's largest infinite */
	double r = layer ? ir_round_float(ts_float32, c->a->epsilon) : 1;
	if (!(r > 0) || isinf(r))
		return fail(c, "epsilon %g rounds to %s in float32", c->a->epsilon,
			    isinf(r) ? "infinity" : "0");
	if (layer) {
		if (!want_inputs(c, 2, 3))
			return false;
		if (ax != x->ndim - 1)
			return unsupported(c, "only the last axis is supported (axis %lld of %s)",
				    (long long)c->a->axis, shp(c, 0));
		for (int i = 1; i < c->nin; i++)
			if (arg(c, i)->ndim < 1 || gv_numel(arg(c, i)) != x->shape[ax] ||
			    arg(c, i)->shape[arg(c, i)->ndim - 1] != x->shape[ax])
				return fail(c, "scale and bias must be [%lld]: %s", (long long)x->shape[ax], shp(c, i));
	} else {
		if (!want_inputs(c, 5, 5))
			return false;
		if (x->ndim < 2)
			return fail(c, "needs at least 2 dimensions: %s", shp(c, 0));
		static const char *const what[] = {"", "scale", "bias", "mean", "var"};
		for (int i = 1; i < 5; i++)
			if (!want_vector(c, i, x->shape[1], what[i]))
				return false;
		/* refused now rather than by graph_compile: the statistics are
		 * folded into constants there */
		for (int i = 1; i < 5; i++)
			if (arg(c, i)->kind != GV_CONST)
				return unsupported(c, "input %d (%s) is not a constant; only inference-mode batch "
					    "normalization with constant statistics is supported", i, arg(c, i)->name);
	}
	return same_shape_as(c, 0, ndim, s);
}

static bool infer_transpose(const infer *c, int *ndim, int64_t *s)
{
	const gvalue *x = arg(c, 0);
	int64_t perm[TS_GRAPH_MAX_DIMS];
	int n = c->a->nperm;
	if (!want_inputs(c, 1, 1))
		return false;
	if (n == 0)
		for (int d = 0; d < x->ndim; d++)
			perm[d] = x->ndim - 1 - d;
	else if (n != x->ndim)
		return fail(c, "perm has %d entries for %s", n, shp(c, 0));
	else
		memcpy(perm, c->a->perm, sizeof(perm));
	bool seen[TS_GRAPH_MAX_DIMS] = {0};
	for (int d = 0; d < x->ndim; d++) {
		if (perm[d] < 0 || perm[d] >= x->ndim || seen[perm[d]])
			return fail(c, "perm is not a permutation of 0..%d", x->ndim - 1);
		seen[perm[d]] = true;
		s[d] = x->shape[perm[d]];
	}
	*ndim = x->ndim;
	return true;
}

static bool infer_concat(const infer *c, int *ndim, int64_t *s)
{
	int ax = 0;
	if (c->nin < 1)
		return want_inputs(c, 1, TS_GRAPH_MAX_INPUTS);
	const gvalue *x = arg(c, 0);
	if (x->ndim == 0 || !norm_axis(c, c->a->axis, x->ndim, false, &ax))
		return x->ndim ? false : fail(c, "scalars cannot be concatenated");
	same_shape_as(c, 0, ndim, s);
	for (int i = 1; i < c->nin; i++) {
		const gvalue *y = arg(c, i);
		bool ok = y->ndim == x->ndim;
		for (int d = 0; ok && d < x->ndim; d++)
			ok = d == ax || y->shape[d] == x->shape[d];
		if (!ok)
			return fail(c, "%s and %s differ outside axis %d", shp(c, 0), shp(c, i), ax);
		s[ax] += y->shape[ax];
	}
	return true;
}

static bool infer_reshape(const infer *c, int *ndim, int64_t *s)
{
	const gvalue *x = arg(c, 0);
	int n = c->a->nshape, infer_at = -1;
	if (!want_inputs(c, 1, 1))
		return false;
	if (n < 0 || n > TS_GRAPH_MAX_DIMS)
		return fail(c, "the target shape has %d dimensions (at most %d)", n, TS_GRAPH_MAX_DIMS);
	int64_t known = 1;
	for (int d = 0; d < n; d++) {
		int64_t e = c->a->shape[d];
		if (e == 0 && d < x->ndim)
			e = x->shape[d];
		if (e == -1 && infer_at < 0) {
			infer_at = d;
			continue;
		}
		if (e == -1)
			return fail(c, "the target shape has -1 at dimensions %d and %d; only one extent can be "
				    "inferred", infer_at, d);
		if (e < 1 || known > G_MAX_NUMEL / e)
			return fail(c, "bad extent %lld at dimension %d of the target shape", (long long)c->a->shape[d], d);
		s[d] = e;
		known *= e;
	}
	int64_t total = gv_numel(x);
	if (infer_at >= 0) {
		if (total % known)
			return fail(c, "cannot infer dimension %d: %s has %lld elements, not a multiple of %lld",
				    infer_at, shp(c, 0), (long long)total, (long long)known);
		s[infer_at] = total / known;
		known = total;
	}
	if (known != total)
		return fail(c, "%s has %lld elements; the target %s has %lld", shp(c, 0), (long long)total,
			    g_shape_str(c->g->ctx, n, s), (long long)known);
	*ndim = n;
	return true;
}

static bool infer_flatten(const infer *c, int *ndim, int64_t *s)
{
	const gvalue *x = arg(c, 0);
	int ax = 0;
	if (!want_inputs(c, 1, 1) || !norm_axis(c, c->a->axis, x->ndim, true, &ax))
		return false;
	s[0] = s[1] = 1;
	for (int d = 0; d < x->ndim; d++)
		s[d >= ax] *= x->shape[d];
	*ndim = 2;
	return true;
}

static bool infer_elementwise(const infer *c, ts_gop op, int *ndim, int64_t *s)
{
	bool binary = op <= TS_GOP_POW;
	if (!want_inputs(c, binary ? 2 : 1, binary ? 2 : 1))
		return false;
	if (op == TS_GOP_CLIP && (isnan(c->a->alpha) || isnan(c->a->beta)))
		return fail(c, "min %g and max %g must not be NaN", c->a->alpha, c->a->beta);
	if (!binary)
		return same_shape_as(c, 0, ndim, s);
	return broadcast(c, arg(c, 0), arg(c, 1), ndim, s);
}

bool g_infer(ts_graph *g, const char *node, ts_gop op, int nin, const int *in,
	     const ts_gattrs *a, int *ndim, int64_t *s)
{
	infer c = {.g = g, .node = node, .op = ts_gop_name(op), .nin = nin, .in = in, .a = a};
	for (int i = 0; i < nin; i++)
		if (!is_f32(g->v[in[i]].dtype))
			return unsupported(&c, "input %d (%s) is not float32", i, g->v[in[i]].name);
	if (nin < 1 && op != TS_GOP_CONCAT)
		return fail(&c, "has no inputs");
	switch (op) {
	case TS_GOP_CONV:
		return infer_conv(&c, ndim, s);
	case TS_GOP_GEMM:
		return infer_gemm(&c, ndim, s);
	case TS_GOP_MATMUL:
		return infer_matmul(&c, ndim, s);
	case TS_GOP_MAXPOOL:
	case TS_GOP_AVGPOOL:
		return infer_pool(&c, ndim, s);
	case TS_GOP_GLOBALAVGPOOL:
		if (!want_inputs(&c, 1, 1) || !want_ndim(&c, 0, 4))
			return false;
		same_shape_as(&c, 0, ndim, s);
		s[2] = s[3] = 1;
		return true;
	case TS_GOP_SOFTMAX: {
		int ax = 0;
		if (!want_inputs(&c, 1, 1) || !norm_axis(&c, a->axis, arg(&c, 0)->ndim, false, &ax))
			return false;
		if (ax != arg(&c, 0)->ndim - 1)
			return unsupported(&c, "only the last axis is supported (axis %lld of %s)", (long long)a->axis,
				    shp(&c, 0));
		return same_shape_as(&c, 0, ndim, s);
	}
	case TS_GOP_LAYERNORM:
	case TS_GOP_BATCHNORM:
		return infer_norm(&c, ndim, s);
	case TS_GOP_TRANSPOSE:
		return infer_transpose(&c, ndim, s);
	case TS_GOP_CONCAT:
		return infer_concat(&c, ndim, s);
	case TS_GOP_RESHAPE:
		return infer_reshape(&c, ndim, s);
	case TS_GOP_FLATTEN:
		return infer_flatten(&c, ndim, s);
	case TS_GOP_IDENTITY:
		return want_inputs(&c, 1, 1) && same_shape_as(&c, 0, ndim, s);
	default:
		if (g_is_elementwise(op))
			return infer_elementwise(&c, op, ndim, s);
		return fail(&c, "not an operator (%d)", (int)op);
	}
}

/* The arguments of ts_graph_node before its attributes: the operator and
 * the input values. */
static bool check_node_args(ts_graph *g, const char *name, ts_gop op, int ninputs, const int *inputs)
{
	if ((unsigned)op >= TS_GOP_COUNT)
		return ts_error(g->ctx, TS_ERR_INVALID, "node '%s': %d is not an operator", name, (int)op), false;
	if (ninputs < 0 || ninputs > TS_GRAPH_MAX_INPUTS)
		return ts_error(g->ctx, TS_ERR_INVALID, "node '%s' (%s): ninputs %d is out of range (0..%d)",
				name, ts_gop_name(op), ninputs, TS_GRAPH_MAX_INPUTS), false;
	if (ninputs && !inputs)
		return ts_error(g->ctx, TS_ERR_INVALID, "node '%s' (%s): inputs is NULL for %d inputs", name,
				ts_gop_name(op), ninputs), false;
	for (int i = 0; i < ninputs; i++)
		if (!valid_value(g, inputs[i]))
			return ts_error(g->ctx, TS_ERR_INVALID, "node '%s' (%s): input %d is %d, not a value of the graph",
					name, ts_gop_name(op), i, inputs[i]), false;
	return true;
}

static bool any_byte(const bool *flag)
{
	unsigned char byte;
	memcpy(&byte, flag, 1);
	return byte != 0;
}

/* The attributes as given (or the defaults), their flags read as bytes:
 * a flag holding a byte other than 0 or 1 is true, not undefined. */
static ts_gattrs node_attrs(const ts_gattrs *attrs)
{
	ts_gattrs a = attrs ? *attrs : ts_gattrs_default();
	a.trans_a = any_byte(&a.trans_a), a.trans_b = any_byte(&a.trans_b);
	a.count_include_pad = any_byte(&a.count_include_pad), a.approximate = any_byte(&a.approximate);
	return a;
}

/* The inferred output shape is one nodes can compute. */
static bool check_node_output(ts_graph *g, const char *name, ts_gop op, int ndim, const int64_t *shape)
{
	int bad = 0;
	if (ndim == 0)
		return ts_error(g->ctx, TS_ERR_UNSUPPORTED,
				"node '%s' (%s): the output is a scalar; nodes compute values of 1 to %d dimensions",
				name, ts_gop_name(op), TS_GRAPH_MAX_DIMS), false;
	if (!shape_fits(ndim, shape, &bad))
		return ts_error(g->ctx, TS_ERR_INVALID, "node '%s' (%s): the output %s has more than 2^31 - 1 elements",
				name, ts_gop_name(op), g_shape_str(g->ctx, ndim, shape)), false;
	return true;
}

/* A Reshape node of x to [d0, d1] (or [d0] when d1 is 0). */
static int reshape_node(ts_graph *g, const char *name, int x, int64_t d0, int64_t d1)
{
	ts_gattrs a = ts_gattrs_default();
	a.nshape = d1 ? 2 : 1;
	a.shape[0] = d0;
	a.shape[1] = d1;
	return ts_graph_node(g, name, TS_GOP_RESHAPE, 1, &x, &a);
}

/* Removes the values from nv and the nodes from nn on (what a call that
 * added several and then failed had added), so that a refused call leaves
 * the graph as it was; -1. */
static int drop_since(ts_graph *g, int nv, int nn)
{
	while (g->nn > nn)
		free(g->n[--g->nn].name);
	while (g->nv > nv) {
		gvalue *v = &g->v[--g->nv];
		free(v->name);
		free(v->data);
	}
	return -1;
}

/* MatMul with one 1-D operand, as numpy: a vector a[K] is the matrix
 * [1, K] and b[K] is [K, 1], and the dimension they add is dropped from
 * the product.  Built from Reshape views around a MatMul of matrices, so
 * the kernels see only those; the last view is `name`. */
static int matmul_vector(ts_graph *g, const char *name, const int *in, const ts_gattrs *attrs)
{
	const gvalue *A = &g->v[in[0]], *B = &g->v[in[1]];
	bool va = A->ndim == 1;
	const gvalue *V = va ? A : B;
	for (int i = 0; i < 2; i++) /* named here, not by the views below */
		if (!is_f32(g->v[in[i]].dtype))
			return ts_error(g->ctx, TS_ERR_INVALID, "node '%s' (MatMul): input %d (%s) is not "
					"float32", name, i, g->v[in[i]].name), -1;
	int64_t ka = A->shape[A->ndim - 1], kb = B->ndim == 1 ? B->shape[0] : B->shape[B->ndim - 2];
	if (ka != kb)
		return ts_error(g->ctx, TS_ERR_INVALID, "node '%s' (MatMul): inner extents differ: %s%s x %s%s "
				"(%lld vs %lld)", name, A->name, g_shape_str(g->ctx, A->ndim, A->shape), B->name,
				g_shape_str(g->ctx, B->ndim, B->shape), (long long)ka, (long long)kb), -1;
	char vname[300], mname[300];
	snprintf(vname, sizeof(vname), "%s.%s2d", name, va ? "a" : "b");
	snprintf(mname, sizeof(mname), "%s.2d", name);
	/* three nodes: one refused takes the others back with it */
	int nv = g->nv, nn = g->nn;
	int v = reshape_node(g, vname, va ? in[0] : in[1], va ? 1 : V->shape[0], va ? V->shape[0] : 1);
	if (v < 0)
		return drop_since(g, nv, nn);
	int m = ts_graph_node(g, mname, TS_GOP_MATMUL, 2, va ? (int[]){v, in[1]} : (int[]){in[0], v},
			      attrs);
	if (m < 0)
		return drop_since(g, nv, nn);
	const gvalue *M = &g->v[m];
	ts_gattrs a = ts_gattrs_default();
	/* the product without the dimension the vector added */
	int drop = va ? M->ndim - 2 : M->ndim - 1;
	for (int d = 0; d < M->ndim; d++)
		if (d != drop)
			a.shape[a.nshape++] = M->shape[d];
	int r = ts_graph_node(g, name, TS_GOP_RESHAPE, 1, &m, &a);
	return r < 0 ? drop_since(g, nv, nn) : r;
}

int ts_graph_node(ts_graph *g, const char *name, ts_gop op, int ninputs, const int *inputs,
		  const ts_gattrs *attrs)
{
	if (!g)
		return -1;
	char auto_name[32];
	if (!name || !*name) {
		snprintf(auto_name, sizeof(auto_name), "n%d", g->nn);
		name = auto_name;
	}
	if (!check_node_args(g, name, op, ninputs, inputs))
		return -1;
	ts_gattrs a = node_attrs(attrs);
	if ((op == TS_GOP_MAXPOOL || op == TS_GOP_AVGPOOL) && (a.kernel[0] < 1 || a.kernel[1] < 1))
		return ts_error(g->ctx, TS_ERR_INVALID, "node '%s' (%s): kernel %lldx%lld must be positive", name,
				ts_gop_name(op), (long long)a.kernel[0], (long long)a.kernel[1]), -1;
	/* checked before a MatMul of a vector becomes three nodes, so that
	 * the error names this one */
	if (a.nperm < 0 || a.nperm > TS_GRAPH_MAX_DIMS)
		return ts_error(g->ctx, TS_ERR_INVALID, "node '%s' (%s): perm has %d entries", name,
				ts_gop_name(op), a.nperm), -1;
	if (op == TS_GOP_MATMUL && ninputs == 2 && g->v[inputs[0]].ndim >= 1 && g->v[inputs[1]].ndim >= 1 &&
	    (g->v[inputs[0]].ndim == 1) != (g->v[inputs[1]].ndim == 1))
		return matmul_vector(g, name, inputs, attrs);
	int ndim;
	int64_t shape[TS_GRAPH_MAX_DIMS] = {0};
	if (!g_infer(g, name, op, ninputs, inputs, &a, &ndim, shape) ||
	    !check_node_output(g, name, op, ndim, shape))
		return -1;
	if (!g_grow((void **)&g->n, g->nn, &g->capn, sizeof(*g->n)))
		return ts_error(g->ctx, TS_ERR_NOMEM, "graph: out of memory"), -1;
	gnode *n = &g->n[g->nn];
	memset(n, 0, sizeof(*n));
	n->name = strdup(name);
	if (!n->name)
		return ts_error(g->ctx, TS_ERR_NOMEM, "graph: out of memory"), -1;
	int v = add_value(g, name, GV_NODE, ts_float32, ndim, shape);
	if (v < 0) {
		free(n->name);
		return -1;
	}
	n->op = op;
	n->nin = ninputs;
	if (ninputs)
		memcpy(n->in, inputs, sizeof(int) * (size_t)ninputs);
	n->out = v;
	n->a = a;
	g->v[v].node = g->nn++;
	return v;
}

ts_status ts_graph_output(ts_graph *g, int value, const char *name)
{
	if (!g)
		return TS_ERR_INVALID;
	if (!valid_value(g, value))
		return ts_error(g->ctx, TS_ERR_INVALID, "graph_output: %d is not a value of the graph", value);
	gvalue *v = &g->v[value];
	if (v->kind == GV_CONST && !is_f32(v->dtype))
		return ts_error(g->ctx, TS_ERR_UNSUPPORTED, "graph_output: '%s' is not float32", v->name);
	if (v->is_output)
		return ts_error(g->ctx, TS_ERR_INVALID, "graph_output: value %d ('%s') is already an output%s%s%s",
				value, v->name, name && *name && strcmp(name, v->name) ? "; it cannot also be '" : "",
				name && *name && strcmp(name, v->name) ? name : "",
				name && *name && strcmp(name, v->name) ? "'" : "");
	if (!g_grow((void **)&g->out, g->nout, &g->capout, sizeof(*g->out)))
		return ts_error(g->ctx, TS_ERR_NOMEM, "graph_output: out of memory");
	if (name && *name && strcmp(name, v->name) && v->kind == GV_INPUT)
		return ts_error(g->ctx, TS_ERR_INVALID, "graph_output: value %d is the input '%s'; an output of "
				"another name ('%s') takes an Identity node (TS_GOP_IDENTITY) on it", value, v->name,
				name);
	if (name && *name && strcmp(name, v->name)) {
		if (name_taken(g, name))
			return ts_error(g->ctx, TS_ERR_INVALID, "graph_output: the name '%s' is taken", name);
		char *copy = strdup(name);
		if (!copy)
			return ts_error(g->ctx, TS_ERR_NOMEM, "graph: out of memory");
		free(v->name);
		v->name = copy;
	} else if (name_taken(g, v->name) && v->kind != GV_INPUT) {
		return ts_error(g->ctx, TS_ERR_INVALID, "graph_output: the name '%s' is taken", v->name);
	}
	v->is_output = true;
	g->out[g->nout++] = value;
	return TS_OK;
}

bool ts_graph_value_shape(const ts_graph *g, int value, int *ndim, int64_t *shape)
{
	if (!valid_value(g, value))
		return false;
	const gvalue *v = &g->v[value];
	if (ndim)
		*ndim = v->ndim;
	if (shape)
		memcpy(shape, v->shape, sizeof(int64_t) * (size_t)v->ndim);
	return true;
}

int ts_graph_num_inputs(const ts_graph *g)
{
	return g ? g->nin : 0;
}

int ts_graph_num_outputs(const ts_graph *g)
{
	return g ? g->nout : 0;
}

int ts_graph_num_nodes(const ts_graph *g)
{
	return g ? g->nn : 0;
}

int ts_graph_input_value(const ts_graph *g, int i)
{
	return g && i >= 0 && i < g->nin ? g->in[i] : -1;
}

int ts_graph_output_value(const ts_graph *g, int i)
{
	return g && i >= 0 && i < g->nout ? g->out[i] : -1;
}

const char *ts_graph_value_name(const ts_graph *g, int value)
{
	return valid_value(g, value) ? g->v[value].name : NULL;
}

/* The attributes of n that differ from the defaults, for printing. */
static void print_attrs(FILE *f, const gnode *n)
{
	const ts_gattrs *a = &n->a;
	switch (n->op) {
	case TS_GOP_CONV:
	case TS_GOP_MAXPOOL:
	case TS_GOP_AVGPOOL:
		if (n->op != TS_GOP_CONV)
			fprintf(f, " kernel=%lldx%lld", (long long)a->kernel[0], (long long)a->kernel[1]);
		fprintf(f, " stride=%lldx%lld pad=%lld,%lld,%lld,%lld", (long long)a->stride[0],
			(long long)a->stride[1], (long long)a->pad[0], (long long)a->pad[1],
			(long long)a->pad[2], (long long)a->pad[3]);
		if (a->group != 1 && n->op == TS_GOP_CONV)
			fprintf(f, " group=%lld", (long long)a->group);
		if (a->dilation[0] != 1 || a->dilation[1] != 1)
			fprintf(f, " dilation=%lldx%lld", (long long)a->dilation[0], (long long)a->dilation[1]);
		break;
	case TS_GOP_GEMM:
		fprintf(f, " alpha=%g beta=%g transA=%d transB=%d", a->alpha, a->beta, a->trans_a, a->trans_b);
		break;
	case TS_GOP_TRANSPOSE:
		fprintf(f, " perm=");
		for (int d = 0; d < a->nperm; d++)
			fprintf(f, "%s%lld", d ? "," : "", (long long)a->perm[d]);
		break;
	case TS_GOP_CONCAT:
	case TS_GOP_SOFTMAX:
	case TS_GOP_FLATTEN:
		fprintf(f, " axis=%lld", (long long)a->axis);
		break;
	case TS_GOP_LAYERNORM:
	case TS_GOP_BATCHNORM:
		fprintf(f, " epsilon=%g", a->epsilon);
		break;
	case TS_GOP_CLIP:
		fprintf(f, " min=%g max=%g", a->alpha, a->beta);
		break;
	default:
		break;
	}
}

void ts_graph_print(FILE *f, const ts_graph *g)
{
	if (!f || !g)
		return;
	for (int i = 0; i < g->nin; i++) {
		const gvalue *v = &g->v[g->in[i]];
		fprintf(f, "input %%%d %s %s\n", g->in[i], v->name, g_shape_str(g->ctx, v->ndim, v->shape));
	}
	int nconst = 0;
	int64_t cbytes = 0;
	for (int i = 0; i < g->nv; i++)
		if (g->v[i].kind == GV_CONST)
			nconst++, cbytes += gv_numel(&g->v[i]) * (g->v[i].dtype.bits / 8);
	fprintf(f, "constants: %d (%.1f MB)\n", nconst, (double)cbytes / 1e6);
	for (int i = 0; i < g->nn; i++) {
		const gnode *n = &g->n[i];
		const gvalue *o = &g->v[n->out];
		fprintf(f, "%%%d = %s(", n->out, ts_gop_name(n->op));
		for (int k = 0; k < n->nin; k++)
			fprintf(f, "%s%%%d", k ? ", " : "", n->in[k]);
		fprintf(f, ")");
		print_attrs(f, n);
		fprintf(f, " -> %s  # %s\n", g_shape_str(g->ctx, o->ndim, o->shape), n->name);
	}
	for (int i = 0; i < g->nout; i++)
		fprintf(f, "output %%%d %s\n", g->out[i], g->v[g->out[i]].name);
}
