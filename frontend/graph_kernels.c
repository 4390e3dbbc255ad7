/*
 * graph_kernels.c - one kernel per fusion group: the anchor built with the
 * operator library on placeholders of the kernel's arguments, the fused
 * elementwise nodes folded into one expression over the anchor's output
 * element, a schedule from op_schedules.h, then ts_lower; once all kernels
 * are planned, ts_build_all builds their code, several at once.
 *
 * Indices.  The kernel iterates over the output's physical shape; for
 * every point it knows the logical (ONNX) index of the element.  An
 * operand of the same shape and layout is read at the same physical
 * index; any other operand (a bias, a broadcast scale, a value in another
 * layout) is read at its own physical offset of the logical index, with
 * numpy broadcasting.  So a blocked convolution reads its per-channel bias
 * at c = cb * b + ci and a residual in its own layout at the same point.
 *
 * Equal kernels (same operators, shapes, layouts and attributes) share
 * one module: the builder writes a key of every choice it makes, and the
 * key of a kernel built before is reused without lowering.
 */
#include "graph_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "ctx.h"
#include "lower.h"
#include "op_schedules.h"
#include "ops.h"
#include "schedule.h"
#include "timer.h"
#include "tune.h"

typedef struct kb {
	ts_graph_exec *e;
	ts_graph *g;
	const gpass *p;
	ts_ctx *ctx;
	xkernel *k;
	const int *gv2x;
	ts_tensor *ph[G_MAX_ARGS];
	char *key;
	size_t keylen, keycap;
	/* the output: xval, physical iteration shape, and for plain
	 * outputs which logical dimensions each physical one covers */
	int y;
	int pndim;
	int64_t pshape[TS_MAX_DIMS];
	int pfirst[TS_MAX_DIMS], pend[TS_MAX_DIMS];
	/* a convolution's logical row width and the rows viewed as one
	 * (gx_conv_row_width); 0 otherwise */
	int64_t flat_w, flat_k;
	/* an input argument read in place of the output (-1: none) */
	int inplace;
	/* values of the fused nodes at the current element */
	int nmemo;
	int memo_v[80];
	ts_expr *memo_e[80];
} kb;

static void key(kb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void key(kb *b, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(b->key ? b->key + b->keylen : NULL, b->key ? b->keycap - b->keylen : 0,
				  fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->key && b->keylen + (size_t)n < b->keycap) {
			b->keylen += (size_t)n;
			return;
		}
		size_t cap = (b->keycap + (size_t)n + 1) * 2;
		char *k = ts_alloc(b->ctx, cap);
		if (!k)
			return;
		if (b->key)
			memcpy(k, b->key, b->keylen + 1);
		b->key = k;
		b->keycap = cap;
	}
}

static void key_shape(kb *b, int ndim, const int64_t *s)
{
	key(b, "[");
	for (int d = 0; d < ndim; d++)
		key(b, "%lld,", (long long)s[d]);
	key(b, "]");
}

static int lanes(void)
{
	return ts_cpu_vector_lanes();
}

int64_t gx_conv_row_width(const ts_graph *g, const gnode *n, int64_t in_block)
{
	const gvalue *w = &g->v[n->in[1]], *y = &g->v[n->out];
	const ts_gattrs *a = &n->a;
	return ts_conv2d_cpu_row_width_for(w->shape[2], w->shape[3], a->stride[0], a->stride[1],
					   a->pad[0] + a->pad[2], a->pad[1] + a->pad[3], y->shape[2], y->shape[3],
					   w->shape[1], in_block, w->shape[0]);
}

int64_t gx_conv_in_block(int64_t channels, int producer_block)
{
	if (producer_block > 0 && channels % producer_block == 0)
		return producer_block;
	return ts_conv2d_cpu_in_block(channels);
}

bool gx_is_depthwise(const ts_graph *g, const gnode *n)
{
	const gvalue *x = &g->v[n->in[0]], *w = &g->v[n->in[1]];
	return n->op == TS_GOP_CONV && n->a.group > 1 && n->a.group == x->shape[1] &&
	       w->shape[0] == x->shape[1] && w->shape[1] == 1;
}

int64_t gx_depthwise_block(int64_t channels, int producer_block)
{
	if (producer_block > 0 && channels % producer_block == 0 && producer_block <= 2 * lanes())
		return producer_block;
	return ts_depthwise_cpu_block(channels);
}

int gx_phys_shape(const xval *v, int64_t *s)
{
	if (v->block > 0) {
		s[0] = v->shape[0], s[1] = v->shape[1] / v->block, s[2] = v->shape[2];
		s[3] = v->shape[3], s[4] = v->block;
		return 5;
	}
	memcpy(s, v->shape, sizeof(int64_t) * (size_t)v->ndim);
	return v->ndim;
}

static int64_t numel(const xval *v)
{
	int64_t n = 1;
	for (int d = 0; d < v->ndim; d++)
		n *= v->shape[d];
	return n;
}

/* The placeholder of xval v declared with shape s (its elements in
 * row-major order); one per (value, shape) in a kernel. */
static ts_tensor *arg(kb *b, int v, int ndim, const int64_t *s)
{
	xkernel *k = b->k;
	for (int i = 0; i < k->nargs; i++)
		if (k->arg[i].val == v && k->arg[i].ndim == ndim &&
		    !memcmp(k->arg[i].shape, s, sizeof(int64_t) * (size_t)ndim)) {
			key(b, "a%d", i);
			return b->ph[i];
		}
	if (k->nargs == G_MAX_ARGS - 1) {
		ts_error(b->ctx, TS_ERR_UNSUPPORTED, "graph_compile: kernel %s reads more than %d values",
			 k->desc, G_MAX_ARGS - 1);
		return NULL;
	}
	int i = k->nargs++;
	k->arg[i].val = v;
	k->arg[i].ndim = ndim;
	memcpy(k->arg[i].shape, s, sizeof(int64_t) * (size_t)ndim);
	b->ph[i] = ts_placeholder(b->ctx, ts_sprintf(b->ctx, "in%d", i), ndim, s, ts_float32);
	key(b, "a%d", i);
	key_shape(b, ndim, s);
	return b->ph[i];
}

static ts_tensor *arg_phys(kb *b, int v)
{
	int64_t s[TS_MAX_DIMS];
	int n = gx_phys_shape(&b->e->xv[v], s);
	return arg(b, v, n, s);
}

static ts_expr *idx(kb *b, int64_t v)
{
	return v <= INT32_MAX ? ts_int(b->ctx, (int32_t)v) : ts_const(b->ctx, ts_int64, v);
}

/* ---- logical indices ------------------------------------------------------------ */

/* Iterates over Y's physical shape; a plain Y may be collapsed: physical
 * dimension p covers logical dimensions [first[p], end[p]). */
static void set_output(kb *b, int y, int pndim, const int *first, const int *end)
{
	const xval *v = &b->e->xv[y];
	b->y = y;
	if (v->block > 0 || !pndim) {
		b->pndim = gx_phys_shape(v, b->pshape);
		for (int d = 0; d < b->pndim; d++)
			b->pfirst[d] = d, b->pend[d] = d + 1;
		return;
	}
	b->pndim = pndim;
	for (int p = 0; p < pndim; p++) {
		b->pfirst[p] = first[p], b->pend[p] = end[p];
		b->pshape[p] = 1;
		for (int d = first[p]; d < end[p]; d++)
			b->pshape[p] *= v->shape[d];
	}
}

/* The collapse of Y into physical dimensions: the last `keep` logical
 * dimensions stay, the ones before become one. */
static void collapse_leading(kb *b, int y, int keep)
{
	const xval *v = &b->e->xv[y];
	int first[TS_MAX_DIMS], end[TS_MAX_DIMS], n = 0;
	first[n] = 0, end[n++] = v->ndim - keep;
	for (int d = v->ndim - keep; d < v->ndim; d++)
		first[n] = d, end[n++] = d + 1;
	set_output(b, y, n, first, end);
}

static void logical(kb *b, ts_expr *const *ax, ts_expr **L)
{
	const xval *v = &b->e->xv[b->y];
	ts_ctx *c = b->ctx;
	if (v->block > 0) {
		L[0] = ax[0], L[2] = ax[2], L[3] = ax[3];
		L[1] = ts_add(c, ts_mul(c, ax[1], idx(b, v->block)), ax[4]);
		if (b->flat_w > 0) { /* rows of flat_k x flat_w columns */
			L[2] = ts_add(c, ts_mul(c, ax[2], idx(b, b->flat_k)),
				      ts_floordiv(c, ax[3], idx(b, b->flat_w)));
			L[3] = ts_floormod(c, ax[3], idx(b, b->flat_w));
		}
		return;
	}
	for (int p = 0; p < b->pndim; p++) {
		int nbig = 0;
		for (int d = b->pfirst[p]; d < b->pend[p]; d++)
			nbig += v->shape[d] > 1;
		ts_expr *rem = ax[p];
		for (int d = b->pend[p] - 1; d >= b->pfirst[p]; d--) {
			if (v->shape[d] == 1)
				L[d] = idx(b, 0);
			else if (nbig == 1)
				L[d] = ax[p];
			else {
				L[d] = ts_floormod(c, rem, idx(b, v->shape[d]));
				rem = ts_floordiv(c, rem, idx(b, v->shape[d]));
			}
		}
	}
}

/* Operand v read at the output's element (physical ax, logical L). */
static ts_expr *operand(kb *b, int v, ts_expr *const *ax, ts_expr *const *L)
{
	const xval *x = &b->e->xv[v], *y = &b->e->xv[b->y];
	ts_ctx *c = b->ctx;
	if (x->is_const && numel(x) == 1) {
		key(b, "k%a", (double)x->scalar);
		return ts_float(c, x->scalar);
	}
	bool same = x->ndim == y->ndim && x->block == y->block &&
		    !memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim);
	if (same) {
		ts_tensor *t = arg(b, v, b->pndim, b->pshape);
		return t ? ts_read(c, t, b->pndim, ax) : NULL;
	}
	/* numpy broadcasting: x's dimensions align with y's last ones.  The
	 * element read depends on both logical shapes, which the arguments'
	 * shapes do not tell apart ([C, 1, 1] and [C] are both a plain
	 * argument of C elements; [3, 2, 2, N] and [2, 2, 3, N] both iterate
	 * as [12, N] rows): kernels that differ there share no code. */
	key(b, "bc");
	key_shape(b, x->ndim, x->shape);
	key_shape(b, y->ndim, y->shape);
	ts_expr *Lx[TS_GRAPH_MAX_DIMS];
	for (int d = 0; d < x->ndim; d++) {
		int yd = d + y->ndim - x->ndim;
		Lx[d] = x->shape[d] == 1 ? idx(b, 0) : L[yd];
	}
	if (x->block > 0) {
		ts_tensor *t = arg_phys(b, v);
		ts_expr *cb = ts_floordiv(c, Lx[1], idx(b, x->block));
		ts_expr *ci = ts_floormod(c, Lx[1], idx(b, x->block));
		return t ? ts_read(c, t, 5, (ts_expr *[]){Lx[0], cb, Lx[2], Lx[3], ci}) : NULL;
	}
	ts_expr *off = NULL;
	int64_t stride = 1;
	for (int d = x->ndim - 1; d >= 0; d--) {
		if (x->shape[d] > 1) {
			ts_expr *term = stride == 1 ? Lx[d] : ts_mul(c, Lx[d], idx(b, stride));
			off = off ? ts_add(c, term, off) : term;
		}
		stride *= x->shape[d];
	}
	int64_t n = numel(x);
	ts_tensor *t = arg(b, v, 1, &n);
	return t ? ts_read(c, t, 1, (ts_expr *[]){off ? off : idx(b, 0)}) : NULL;
}

/* ---- fused elementwise nodes ------------------------------------------------------ */

static ts_expr *memo(kb *b, int v)
{
	for (int i = 0; i < b->nmemo; i++)
		if (b->memo_v[i] == v)
			return b->memo_e[i];
	return NULL;
}

static ts_expr *input(kb *b, int v, ts_expr *const *ax, ts_expr *const *L)
{
	ts_expr *m = memo(b, v);
	if (m) {
		for (int i = 0; i < b->nmemo; i++)
			if (b->memo_v[i] == v)
				key(b, "m%d", i);
		return m;
	}
	int x = b->gv2x[v];
	if (x < 0) {
		ts_error(b->ctx, TS_ERR_INTERNAL, "graph_compile: value '%s' has no storage",
			 b->g->v[v].name);
		return NULL;
	}
	return operand(b, x, ax, L);
}

static bool scalar_const(kb *b, int v, double *out)
{
	int x = b->gv2x[v];
	if (x < 0 || !b->e->xv[x].is_const || numel(&b->e->xv[x]) != 1)
		return false;
	*out = b->e->xv[x].scalar;
	return true;
}

static ts_expr *gelu(ts_ctx *c, ts_expr *x, bool approximate)
{
	ts_expr *half_x = ts_mul(c, ts_float(c, 0.5f), x);
	if (!approximate)
		return ts_mul(c, half_x, ts_add(c, ts_float(c, 1.0f),
						ts_erf(c, ts_mul(c, x, ts_float(c, (float)M_SQRT1_2)))));
	ts_expr *x3 = ts_mul(c, ts_mul(c, x, x), x);
	ts_expr *inner = ts_mul(c, ts_float(c, (float)sqrt(2.0 / M_PI)),
				ts_add(c, x, ts_mul(c, ts_float(c, 0.044715f), x3)));
	return ts_mul(c, half_x, ts_add(c, ts_float(c, 1.0f), ts_tanh(c, inner)));
}

static ts_expr *power(kb *b, int exponent_value, ts_expr *x, ts_expr *y)
{
	ts_ctx *c = b->ctx;
	double e;
	if (scalar_const(b, exponent_value, &e)) {
		if (e == 1)
			return x;
		if (e == 2)
			return ts_mul(c, x, x);
		if (e == 3)
			return ts_mul(c, ts_mul(c, x, x), x);
		/* pow(x, 0.5) is sqrt(x) but at -0 (+0, where sqrt keeps the
		 * sign: fabs) and at -infinity (+infinity, where sqrt is NaN) */
		if (e == 0.5)
			return ts_select(c, ts_eq(c, x, ts_float(c, -INFINITY)), ts_float(c, INFINITY),
					 ts_fabs(c, ts_sqrt(c, x)));
	}
	return ts_pow(c, x, y);
}

/* Node n's value at the element, its inputs read or looked up. */
static ts_expr *node_expr(kb *b, int node, ts_expr *const *ax, ts_expr *const *L)
{
	const gnode *n = &b->g->n[node];
	ts_ctx *c = b->ctx;
	ts_expr *in[3] = {0};
	key(b, "(%s", ts_gop_name(n->op));
	for (int i = 0; i < n->nin && i < 3; i++)
		if (!(in[i] = input(b, n->in[i], ax, L)))
			return NULL;
	key(b, ")");
	if (b->p->ns[node].affine)
		return ts_add(c, ts_mul(c, in[0], in[1]), in[2]);
	switch (n->op) {
	case TS_GOP_ADD:
		return ts_add(c, in[0], in[1]);
	case TS_GOP_SUB:
		return ts_sub(c, in[0], in[1]);
	case TS_GOP_MUL:
		return ts_mul(c, in[0], in[1]);
	case TS_GOP_DIV:
		return ts_div(c, in[0], in[1]);
	case TS_GOP_POW:
		return power(b, n->in[1], in[0], in[1]);
	case TS_GOP_RELU:
		return ts_max(c, in[0], ts_float(c, 0.0f));
	case TS_GOP_SIGMOID:
		return ts_sigmoid(c, in[0]);
	case TS_GOP_TANH:
		return ts_tanh(c, in[0]);
	case TS_GOP_ERF:
		return ts_erf(c, in[0]);
	case TS_GOP_SQRT:
		return ts_sqrt(c, in[0]);
	case TS_GOP_EXP:
		return ts_exp(c, in[0]);
	case TS_GOP_NEG: /* -x, with -0 for +0 (0 - x gives +0) */
		return ts_mul(c, in[0], ts_float(c, -1.0f));
	case TS_GOP_GELU:
		key(b, "%d", n->a.approximate);
		return gelu(c, in[0], n->a.approximate);
	case TS_GOP_CLIP:
		/* min(max(x, lo), hi) whatever the bounds: an infinite one is
		 * no bound to leave out (lo = +inf makes every element hi,
		 * hi = -inf every element -inf) */
		key(b, "%a,%a", n->a.alpha, n->a.beta);
		return ts_min(c, ts_max(c, in[0], ts_float(c, (float)n->a.alpha)), ts_float(c, (float)n->a.beta));
	default:
		ts_error(c, TS_ERR_INTERNAL, "graph_compile: %s is not elementwise", ts_gop_name(n->op));
		return NULL;
	}
}

typedef struct epi {
	kb *b;
	const ggroup *gr;
	/* the anchor's value at the element: anchor(ax, L, user) */
	ts_expr *(*anchor)(struct epi *, ts_expr *const *, ts_expr *const *);
	ts_tensor *T;
	/* anchor extras */
	int bias;             /* conv bias xval, or -1 */
	int gemm_c;           /* Gemm's C value, or -1 */
	double alpha, beta;
} epi;

static ts_expr *epilogue_body(ts_ctx *ctx, ts_expr *const *ax, void *user)
{
	epi *ep = user;
	kb *b = ep->b;
	ts_expr *L[TS_GRAPH_MAX_DIMS];
	logical(b, ax, L);
	b->nmemo = 0;
	if (ep->anchor) {
		ts_expr *a = ep->anchor(ep, ax, L);
		if (!a)
			return NULL;
		b->memo_v[b->nmemo] = b->g->n[ep->gr->anchor].out;
		b->memo_e[b->nmemo++] = a;
	}
	ts_expr *last = NULL;
	for (int r = 0; r < ep->gr->nreg; r++) {
		int node = ep->gr->reg[r];
		if (!(last = node_expr(b, node, ax, L)))
			return NULL;
		b->memo_v[b->nmemo] = b->g->n[node].out;
		b->memo_e[b->nmemo++] = last;
	}
	(void)ctx;
	return last ? last : b->memo_e[0];
}

/* The anchor's output read at the element (it has Y's physical shape). */
static ts_expr *anchor_read(epi *ep, ts_expr *const *ax, ts_expr *const *L)
{
	kb *b = ep->b;
	ts_ctx *c = b->ctx;
	ts_expr *v = ts_read(c, ep->T, b->pndim, ax);
	if (ep->bias >= 0) {
		int64_t O = b->e->xv[ep->bias].shape[0];
		ts_tensor *t = arg(b, ep->bias, 1, &O);
		if (!t)
			return NULL;
		v = ts_add(c, v, ts_read(c, t, 1, &L[1]));
	}
	if (ep->alpha != 1.0)
		v = ts_mul(c, ts_float(c, (float)ep->alpha), v);
	if (ep->gemm_c >= 0 && ep->beta != 0.0) {
		ts_expr *cv = input(b, ep->gemm_c, ax, L);
		if (!cv)
			return NULL;
		v = ts_add(c, v, ep->beta == 1.0 ? cv : ts_mul(c, ts_float(c, (float)ep->beta), cv));
	}
	key(b, "anchor%a,%a,%d", ep->alpha, ep->beta, ep->bias >= 0);
	return v;
}

/* Y: the anchor's tensor itself when nothing is fused and nothing is
 * added, else a compute over Y's physical shape. */
static ts_tensor *output_tensor(epi *ep, const char *name)
{
	kb *b = ep->b;
	if (ep->T && !ep->gr->nreg && ep->bias < 0 && ep->gemm_c < 0 && ep->alpha == 1.0)
		return ep->T;
	return ts_compute_lambda(b->ctx, name, b->pndim, b->pshape, epilogue_body, ep);
}

/* ---- anchors ---------------------------------------------------------------------- */

/* Y under the default CPU schedule; NULL for a NULL Y (a failure before). */
static ts_schedule *default_schedule(ts_ctx *c, ts_tensor *Y)
{
	ts_schedule *s = Y ? ts_create_schedule(c, 1, &Y) : NULL;
	return s && ts_schedule_default_cpu(s, lanes()) == TS_OK ? s : NULL;
}

static const xval *xin(kb *b, const gnode *n, int i)
{
	return &b->e->xv[b->gv2x[n->in[i]]];
}

/* A constant xval made at compile time; data is taken over.  It may move
 * e->xv: xval pointers taken before are stale after it. */
static int new_const(kb *b, const char *name, int ndim, const int64_t *shape, float *data)
{
	int v = gx_new_value(b->e, name, ndim, shape, 0);
	if (v < 0) {
		free(data);
		return -1;
	}
	b->e->xv[v].is_const = true;
	b->e->xv[v].data = data;
	return v;
}

static float *alloc_floats(kb *b, int64_t n)
{
	float *p = g_alloc((size_t)(n ? n : 1) * sizeof(float));
	if (!p)
		ts_error(b->ctx, TS_ERR_NOMEM, "graph_compile: out of memory (%lld floats)", (long long)n);
	return p;
}

/* X padded by (top, left, bottom, right) in spatial dimensions 2 and 3. */
static ts_tensor *pad_spatial(kb *b, ts_tensor *X, const int64_t *pad, double value)
{
	if (!pad[0] && !pad[1] && !pad[2] && !pad[3])
		return X;
	int64_t before[TS_MAX_DIMS] = {0}, after[TS_MAX_DIMS] = {0};
	before[2] = pad[0], before[3] = pad[1], after[2] = pad[2], after[3] = pad[3];
	return ts_op_pad(b->ctx, X, before, after, value);
}

/* The window of convolution node n over X, as the operators take it: one
 * pad per dimension, so asymmetric pads become a padding stage here. */
typedef struct window {
	ts_tensor *X;
	int sh, sw, ph, pw, dh, dw;
} window;

static window conv_window(kb *b, const gnode *n, ts_tensor *X, const char *kind)
{
	const ts_gattrs *a = &n->a;
	bool sym = a->pad[0] == a->pad[2] && a->pad[1] == a->pad[3];
	key(b, "%s%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,", kind, (long long)a->stride[0],
	    (long long)a->stride[1], (long long)a->pad[0], (long long)a->pad[1], (long long)a->pad[2],
	    (long long)a->pad[3], (long long)a->dilation[0], (long long)a->dilation[1], (long long)a->group);
	return (window){.X = sym ? X : pad_spatial(b, X, a->pad, 0.0), .sh = (int)a->stride[0],
			.sw = (int)a->stride[1], .ph = sym ? (int)a->pad[0] : 0, .pw = sym ? (int)a->pad[1] : 0,
			.dh = (int)a->dilation[0], .dw = (int)a->dilation[1]};
}

/* Y of convolution node n, its bias (a per-channel read) and fused nodes
 * included, once ep->T is built. */
static ts_tensor *conv_output(epi *ep, const gnode *n)
{
	ep->bias = n->nin == 3 ? ep->b->gv2x[n->in[2]] : -1;
	return ep->T ? output_tensor(ep, n->name) : NULL;
}

/* The "conv2d" tuning task of convolution node n (input x, weights w) on
 * channel blocks xb and yb, the space's channel blocks held at them, kept
 * in the kernel (ts_graph_exec_tune_tasks); with a log, *p takes its
 * record's parameters.  A convolution the task cannot describe keeps *p.
 * An error only for a record the log refuses. */
static ts_status tuned_conv(kb *b, const gnode *n, const xval *x, const xval *w, int64_t xb,
			    int64_t yb, ts_conv2d_cpu_params *p)
{
	const ts_gattrs *a = &n->a;
	if (a->group != 1 || a->dilation[0] != 1 || a->dilation[1] != 1 || a->stride[0] != a->stride[1] ||
	    w->shape[2] != w->shape[3] || a->pad[0] != a->pad[1] || a->pad[0] != a->pad[2] ||
	    a->pad[0] != a->pad[3])
		return TS_OK;
	if (ts_last_status(b->ctx) != TS_OK) /* not to be cleared below */
		return ts_last_status(b->ctx);
	ts_tune_task *t = ts_alloc(b->ctx, sizeof *t);
	if (!t)
		return ts_last_status(b->ctx);
	int64_t shape[9] = {x->shape[0], x->shape[1], x->shape[2], x->shape[3], w->shape[0],
			    w->shape[2], w->shape[3], a->stride[0], a->pad[0]};
	ts_status st = ts_tune_task_init(b->ctx, t, "conv2d", 9, shape);
	if (st == TS_ERR_NOMEM)
		return st;
	if (st != TS_OK) {
		ts_clear_error(b->ctx); /* a shape the tuner does not take: the defaults */
		return TS_OK;
	}
	for (int i = 0; i < t->space.nparams; i++)
		if (!strcmp(t->space.name[i], "ic_block") || !strcmp(t->space.name[i], "oc_block")) {
			t->space.nchoice[i] = 1;
			t->space.choice[i][0] = !strcmp(t->space.name[i], "ic_block") ? xb : yb;
		}
	b->k->task = t;
	ts_tune_cand c;
	const ts_tune_record *rec = NULL;
	if (!b->e->tuned)
		return TS_OK;
	TS_TRY(ts_tune_log_lookup(b->ctx, b->e->tuned, t, &c, &rec));
	if (!rec)
		return TS_OK;
	*p = ts_tune_conv2d_params(t, &c);
	b->k->tuned = ts_sprintf(b->ctx, "%s:%d", b->e->tuned->path, rec->line);
	/* the same code only for the same parameters */
	key(b, "tuned%lld,%lld,%d,%d,%lld", (long long)p->ow_block, (long long)p->oh_block, p->parallel,
	    (int)p->pad, (long long)p->rc_block);
	return TS_OK;
}

/* Convolution on NCHW[x]c: the weights are blocked here, once. */
static ts_schedule *conv_blocked(kb *b, epi *ep, const gnode *n)
{
	const xval *x = xin(b, n, 0), *w = xin(b, n, 1);
	int64_t O = w->shape[0], C = w->shape[1], KH = w->shape[2], KW = w->shape[3];
	int64_t xb = x->block, yb = b->e->xv[b->y].block;
	ts_conv2d_cpu_params cp = ts_conv2d_cpu_default();
	if (tuned_conv(b, n, x, w, xb, yb, &cp) != TS_OK) /* before new_const moves x and w */
		return NULL;
	float *wc = alloc_floats(b, O * C * KH * KW);
	if (!wc)
		return NULL;
	const float *w0 = w->data;
	for (int64_t o = 0; o < O; o++)
		for (int64_t i = 0; i < C; i++)
			for (int64_t r = 0; r < KH * KW; r++)
				wc[((((o / yb) * (C / xb) + i / xb) * KH * KW + r) * xb + i % xb) * yb + o % yb] =
					w0[(o * C + i) * KH * KW + r];
	int64_t wshape[6] = {O / yb, C / xb, KH, KW, xb, yb};
	int wv = new_const(b, ts_sprintf(b->ctx, "%s.blocked_weight", n->name), 6, wshape, wc);
	if (wv < 0)
		return NULL;
	int64_t xs[TS_MAX_DIMS];
	int xn = gx_phys_shape(&b->e->xv[b->gv2x[n->in[0]]], xs);
	int64_t rw = gx_conv_row_width(b->g, n, xb);
	if (xn == 5 && b->pndim == 5 && rw > b->pshape[3]) {
		/* position for position: k of the input's and the output's
		 * rows viewed as one row */
		int64_t k = rw / b->pshape[3];
		xs[3] *= k, xs[2] /= k;
		b->flat_w = b->pshape[3];
		b->pshape[3] *= k, b->pshape[2] /= k;
		b->flat_k = b->k->rows_as_one = k;
	}
	ts_tensor *X = arg(b, b->gv2x[n->in[0]], xn, xs), *W = X ? arg(b, wv, 6, wshape) : NULL;
	if (!W)
		return NULL;
	window wd = conv_window(b, n, X, "conv");
	key(b, "%lld,%lld", (long long)xb, (long long)yb);
	ep->T = ts_op_conv2d_nchwc(b->ctx, wd.X, W, wd.sh, wd.sw, wd.ph, wd.pw, wd.dh, wd.dw);
	ts_tensor *Y = conv_output(ep, n);
	ts_schedule *s = Y ? ts_create_schedule(b->ctx, 1, &Y) : NULL;
	if (!s)
		return NULL;
	if (ts_schedule_conv2d_nchwc_cpu(s, Y, &cp) != TS_OK) {
		if (b->k->tuned) /* the record's values: say which record */
			ts_error_within(b->ctx, TS_ERR_INVALID, "graph_compile: node '%s': the tuning record %s",
					n->name, b->k->tuned);
		return NULL;
	}
	return s;
}

/* Depthwise convolution on NCHW[x]c: W[C, 1, KH, KW] blocked here, once,
 * into Wc[C/x, KH, KW, x]. */
static ts_schedule *depthwise_blocked(kb *b, epi *ep, const gnode *n)
{
	const xval *w = xin(b, n, 1);
	int64_t C = w->shape[0], KH = w->shape[2], KW = w->shape[3], xb = b->e->xv[b->y].block;
	float *wc = alloc_floats(b, C * KH * KW);
	if (!wc)
		return NULL;
	const float *w0 = w->data;
	for (int64_t c = 0; c < C; c++)
		for (int64_t r = 0; r < KH * KW; r++)
			wc[((c / xb) * KH * KW + r) * xb + c % xb] = w0[c * KH * KW + r];
	int64_t wshape[4] = {C / xb, KH, KW, xb};
	int wv = new_const(b, ts_sprintf(b->ctx, "%s.blocked_weight", n->name), 4, wshape, wc);
	if (wv < 0)
		return NULL;
	ts_tensor *X = arg_phys(b, b->gv2x[n->in[0]]), *W = X ? arg(b, wv, 4, wshape) : NULL;
	if (!W)
		return NULL;
	window wd = conv_window(b, n, X, "dwconv");
	key(b, "%lld", (long long)xb);
	ep->T = ts_op_depthwise_conv2d_nchwc(b->ctx, wd.X, W, wd.sh, wd.sw, wd.ph, wd.pw, wd.dh, wd.dw);
	ts_tensor *Y = conv_output(ep, n);
	ts_schedule *s = Y ? ts_create_schedule(b->ctx, 1, &Y) : NULL;
	return s && ts_schedule_depthwise_nchwc_cpu(s, Y, NULL) == TS_OK ? s : NULL;
}

/* Grouped convolution on NCHW (depthwise and the like). */
static ts_schedule *conv_plain(kb *b, epi *ep, const gnode *n)
{
	ts_tensor *X = arg_phys(b, b->gv2x[n->in[0]]), *W = X ? arg_phys(b, b->gv2x[n->in[1]]) : NULL;
	if (!W)
		return NULL;
	window wd = conv_window(b, n, X, "gconv");
	ep->T = ts_op_conv2d_nchw(b->ctx, wd.X, W, wd.sh, wd.sw, wd.ph, wd.pw, wd.dh, wd.dw, (int)n->a.group);
	return default_schedule(b->ctx, conv_output(ep, n));
}

/* A[M, K] x B with B a constant: B is packed into panels of nr columns
 * here, once, as Bp[n / nr, k, n % nr] (zero past N), the layout
 * ts_op_matmul_packed builds at run time. */
static ts_tensor *matmul_const_b(kb *b, ts_tensor *A, const xval *B, bool trans_b, int64_t nr,
				 const char *name)
{
	int64_t K = trans_b ? B->shape[1] : B->shape[0], N = trans_b ? B->shape[0] : B->shape[1];
	int64_t panels = (N + nr - 1) / nr;
	float *bp = alloc_floats(b, panels * K * nr);
	if (!bp)
		return NULL;
	const float *b0 = B->data;
	for (int64_t p = 0; p < panels; p++)
		for (int64_t k = 0; k < K; k++)
			for (int64_t j = 0; j < nr; j++) {
				int64_t col = p * nr + j;
				bp[(p * K + k) * nr + j] = col >= N ? 0.0f : trans_b ? b0[col * K + k] : b0[k * N + col];
			}
	int64_t shape[3] = {panels, K, nr};
	int v = new_const(b, ts_sprintf(b->ctx, "%s.packed_weight", name), 3, shape, bp);
	ts_tensor *Bp = v >= 0 ? arg(b, v, 3, shape) : NULL;
	if (!Bp)
		return NULL;
	ts_ctx *c = b->ctx;
	ts_iter *k = ts_reduce_axis(c, "k", 0, K);
	ts_expr *i = ts_var(c, "i"), *j = ts_var(c, "j");
	ts_expr *bv = TS_READ(c, Bp, ts_floordiv(c, j, idx(b, nr)), k->var, ts_floormod(c, j, idx(b, nr)));
	ts_expr *prod = ts_mul(c, TS_READ(c, A, i, k->var), bv);
	return ts_compute(c, name, TS_SHAPE(A->shape[0], N), TS_VARS(i, j), TS_SUM(c, prod, k));
}

/* The collapsed batch index into operand x (its batch dimensions aligned
 * with the last of Y's, an extent of 1 broadcast) at Y's collapsed batch
 * index bv. */
static ts_expr *batch_of(kb *b, ts_expr *bv, const xval *Y, const xval *x)
{
	ts_ctx *c = b->ctx;
	int bd = Y->ndim - 2, xd = x->ndim - 2;
	ts_expr *at = idx(b, 0);
	int64_t ystride = 1, xstride = 1;
	for (int d = bd - 1; d >= 0 && at; d--) {
		int e = d - (bd - xd); /* x's dimension under Y's d, if any */
		if (e >= 0 && x->shape[e] != 1) {
			ts_expr *i = ts_floormod(c, ts_floordiv(c, bv, idx(b, ystride)), idx(b, Y->shape[d]));
			at = ts_add(c, at, ts_mul(c, i, idx(b, xstride)));
		}
		if (e >= 0)
			xstride *= x->shape[e];
		ystride *= Y->shape[d];
	}
	return at;
}

/* C[bv, i, j] = sum_k A[a(bv), i, k] B[b(bv), k, j] over Y's collapsed
 * batch, A and B collapsed to [batch, rows, columns] with their own
 * batches, broadcast by batch_of: a 3-D product with one reduction, so
 * ts_schedule_batch_matmul_cpu schedules it as it does equal batches. */
static ts_tensor *broadcast_matmul(kb *b, ts_tensor *At, const xval *A, ts_tensor *Bt, const xval *B,
				   const xval *Y)
{
	ts_ctx *c = b->ctx;
	int bd = Y->ndim - 2;
	int64_t batch = 1;
	for (int d = 0; d < bd; d++)
		batch *= Y->shape[d];
	/* which dimensions broadcast is part of what the kernel computes */
	key(b, "bcast");
	key_shape(b, A->ndim - 2, A->shape);
	key_shape(b, B->ndim - 2, B->shape);
	key_shape(b, bd, Y->shape);
	int64_t M = At->shape[1], K = At->shape[2], N = Bt->shape[2];
	ts_iter *k = ts_reduce_axis(c, "k", 0, K);
	ts_expr *bv = ts_var(c, "b"), *i = ts_var(c, "i"), *j = ts_var(c, "j");
	ts_expr *a = TS_READ(c, At, batch_of(b, bv, Y, A), i, k->var);
	ts_expr *w = TS_READ(c, Bt, batch_of(b, bv, Y, B), k->var, j);
	return ts_compute(c, "batch_matmul", TS_SHAPE(batch, M, N), TS_VARS(bv, i, j),
			  TS_SUM(c, ts_mul(c, a, w), k));
}

/* Gemm and MatMul: a 2-D (or collapsed) product with the dense schedule
 * and its epilogue, or a batched product. */
static ts_schedule *matmul(kb *b, epi *ep, const gnode *n)
{
	const xval *A = xin(b, n, 0), *B = xin(b, n, 1), *Y = &b->e->xv[b->y];
	bool gemm = n->op == TS_GOP_GEMM;
	bool ta = gemm && n->a.trans_a, tb = gemm && n->a.trans_b;
	int64_t K = ta ? A->shape[0] : A->shape[A->ndim - 1];
	/* B packed at compile time leaves the kernel only the product: with
	 * AVX-512 the 8 x 48 blocks of ts_matmul_cpu_default_for beat 12 x 32
	 * by 6-9% on the BERT layer at 1 and 2 threads (12 x 32 beat 6 x 32 by
	 * 4-6%) */
	ts_matmul_cpu_params mp = ts_matmul_cpu_default_for(Y->shape[Y->ndim - 1]);
	/* read now: packing B adds a constant, which may move e->xv */
	bool b2d = B->ndim == 2, b_const = B->is_const;
	if (gemm) {
		ep->alpha = n->a.alpha;
		ep->beta = n->a.beta;
		ep->gemm_c = n->nin == 3 ? n->in[2] : -1;
	}
	key(b, "mm%d,%d,%a,%a", ta, tb, ep->alpha, ep->beta);
	ts_ctx *c = b->ctx;
	if (b2d && !ta) {
		/* [..., M, K] x [K, N]: the leading dimensions are rows */
		collapse_leading(b, b->y, 1);
		int64_t as[2] = {numel(A) / K, K};
		ts_tensor *At = arg(b, b->gv2x[n->in[0]], 2, as);
		if (!At)
			return NULL;
		if (b_const) {
			ep->T = matmul_const_b(b, At, B, tb, mp.nr, n->name);
		} else {
			ts_tensor *Bt = arg_phys(b, b->gv2x[n->in[1]]);
			ep->T = Bt ? ts_op_matmul(c, At, Bt, false, tb) : NULL;
			key(b, "dyn");
		}
		ts_tensor *Yt = ep->T ? output_tensor(ep, n->name) : NULL;
		ts_schedule *s = Yt ? ts_create_schedule(c, 1, &Yt) : NULL;
		if (!s)
			return NULL;
		if (tb && !b_const)
			return ts_schedule_default_cpu(s, lanes()) == TS_OK ? s : NULL;
		return ts_schedule_dense_cpu(s, Yt, &mp) == TS_OK ? s : NULL;
	}
	if (gemm) { /* transposed A */
		set_output(b, b->y, 0, NULL, NULL);
		ts_tensor *At = arg_phys(b, b->gv2x[n->in[0]]), *Bt = At ? arg_phys(b, b->gv2x[n->in[1]]) : NULL;
		ep->T = Bt ? ts_op_matmul(c, At, Bt, ta, tb) : NULL;
		ts_tensor *Yt = ep->T ? output_tensor(ep, n->name) : NULL;
		return default_schedule(c, Yt);
	}
	/* batched: the batch dimensions of Y, collapsed into one */
	int bd = Y->ndim - 2;
	int64_t batch = 1;
	for (int d = 0; d < bd; d++)
		batch *= Y->shape[d];
	collapse_leading(b, b->y, 2);
	int64_t as[3] = {numel(A) / (A->shape[A->ndim - 2] * K), A->shape[A->ndim - 2], K};
	int64_t bs[3] = {numel(B) / (K * Y->shape[bd + 1]), K, Y->shape[bd + 1]};
	ts_tensor *At = arg(b, b->gv2x[n->in[0]], 3, as), *Bt = At ? arg(b, b->gv2x[n->in[1]], 3, bs) : NULL;
	if (as[0] == batch && bs[0] == batch)
		ep->T = Bt ? ts_op_batch_matmul(c, At, Bt, false, false) : NULL;
	else /* numpy broadcasting of the batch dimensions */
		ep->T = Bt ? broadcast_matmul(b, At, A, Bt, B, Y) : NULL;
	ts_tensor *Yt = ep->T ? output_tensor(ep, n->name) : NULL;
	ts_schedule *s = Yt ? ts_create_schedule(c, 1, &Yt) : NULL;
	return s && ts_schedule_batch_matmul_cpu(s, Yt, NULL) == TS_OK ? s : NULL;
}

typedef struct pool_ctx {
	kb *b;
	const gnode *n;
	ts_tensor *P;
	ts_iter *kh, *kw;
	int64_t H, W;
	bool blocked, max;
} pool_ctx;

static ts_expr *pool_body(ts_ctx *c, ts_expr *const *ax, void *user)
{
	pool_ctx *pc = user;
	const ts_gattrs *a = &pc->n->a;
	kb *b = pc->b;
	ts_expr *i[5] = {ax[0], ax[1],
			 ts_add(c, ts_mul(c, ax[2], idx(b, a->stride[0])), pc->kh->var),
			 ts_add(c, ts_mul(c, ax[3], idx(b, a->stride[1])), pc->kw->var), pc->blocked ? ax[4] : NULL};
	ts_expr *x = ts_read(c, pc->P, pc->blocked ? 5 : 4, i);
	if (pc->max)
		return TS_MAX(c, x, pc->kh, pc->kw);
	return TS_SUM(c, x, pc->kh, pc->kw);
}

/* avg_pool's divisor at output row/column o: the window's elements inside
 * the image, or the whole window. */
static ts_expr *window_count(kb *b, ts_expr *o, int64_t stride, int64_t pad, int64_t k, int64_t in)
{
	ts_ctx *c = b->ctx;
	ts_expr *lo = ts_sub(c, ts_mul(c, o, idx(b, stride)), idx(b, pad));
	ts_expr *hi = ts_min(c, ts_add(c, lo, idx(b, k)), idx(b, in));
	return ts_sub(c, hi, ts_max(c, lo, idx(b, 0)));
}

typedef struct avg_ctx {
	kb *b;
	const gnode *n;
	ts_tensor *S;
	int64_t H, W;
} avg_ctx;

static ts_expr *avg_body(ts_ctx *c, ts_expr *const *ax, void *user)
{
	avg_ctx *ac = user;
	const ts_gattrs *a = &ac->n->a;
	ts_expr *s = ts_read(c, ac->S, ac->S->ndim, ax);
	ts_expr *cnt;
	if (a->count_include_pad)
		return ts_mul(c, s, ts_float(c, (float)(1.0 / (double)(a->kernel[0] * a->kernel[1]))));
	cnt = ts_mul(c, window_count(ac->b, ax[2], a->stride[0], a->pad[0], a->kernel[0], ac->H),
		     window_count(ac->b, ax[3], a->stride[1], a->pad[1], a->kernel[1], ac->W));
	return ts_div(c, s, ts_cast(c, ts_float32, cnt));
}

/* Max and average pooling on NCHW or NCHW[x]c (the lanes dimension rides
 * along). */
static ts_schedule *pool(kb *b, epi *ep, const gnode *n)
{
	const xval *x = xin(b, n, 0);
	const ts_gattrs *a = &n->a;
	ts_ctx *c = b->ctx;
	bool max = n->op == TS_GOP_MAXPOOL;
	ts_tensor *X = arg_phys(b, b->gv2x[n->in[0]]);
	if (!X)
		return NULL;
	key(b, "pool%d,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d", max, (long long)a->kernel[0],
	    (long long)a->kernel[1], (long long)a->stride[0], (long long)a->stride[1], (long long)a->pad[0],
	    (long long)a->pad[1], (long long)a->pad[2], (long long)a->pad[3], a->count_include_pad);
	pool_ctx pc = {.b = b, .n = n, .blocked = x->block > 0, .max = max, .H = x->shape[2], .W = x->shape[3]};
	pc.P = pad_spatial(b, X, a->pad, max ? -INFINITY : 0.0);
	pc.kh = ts_reduce_axis(c, "kh", 0, a->kernel[0]);
	pc.kw = ts_reduce_axis(c, "kw", 0, a->kernel[1]);
	int64_t ys[TS_MAX_DIMS];
	int yn = gx_phys_shape(&b->e->xv[b->y], ys);
	ts_tensor *T = pc.P ? ts_compute_lambda(c, max ? "max_pool" : "avg_pool_sum", yn, ys, pool_body, &pc) : NULL;
	if (T && !max) {
		avg_ctx ac = {.b = b, .n = n, .S = T, .H = x->shape[2], .W = x->shape[3]};
		T = ts_compute_lambda(c, "avg_pool", yn, ys, avg_body, &ac);
	}
	ep->T = T;
	ts_tensor *Y = T ? output_tensor(ep, n->name) : NULL;
	return default_schedule(c, Y);
}

typedef struct gap_ctx {
	kb *b;
	ts_tensor *X;
	ts_iter *h, *w;
	int64_t block, HW;
} gap_ctx;

static ts_expr *gap_body(ts_ctx *c, ts_expr *const *ax, void *user)
{
	gap_ctx *gc = user;
	ts_expr *x;
	if (gc->block > 0)
		x = TS_READ(c, gc->X, ax[0], ts_floordiv(c, ax[1], idx(gc->b, gc->block)), gc->h->var, gc->w->var,
			    ts_floormod(c, ax[1], idx(gc->b, gc->block)));
	else
		x = TS_READ(c, gc->X, ax[0], ax[1], gc->h->var, gc->w->var);
	return TS_SUM(c, ts_mul(c, x, ts_float(c, (float)(1.0 / (double)gc->HW))), gc->h, gc->w);
}

/* GlobalAveragePool: the output is plain [N, C, 1, 1] whatever X's layout. */
static ts_schedule *global_pool(kb *b, epi *ep, const gnode *n)
{
	const xval *x = xin(b, n, 0);
	ts_ctx *c = b->ctx;
	gap_ctx gc = {.b = b, .block = x->block, .HW = x->shape[2] * x->shape[3]};
	gc.X = arg_phys(b, b->gv2x[n->in[0]]);
	gc.h = ts_reduce_axis(c, "h", 0, x->shape[2]);
	gc.w = ts_reduce_axis(c, "w", 0, x->shape[3]);
	key(b, "gap");
	ep->T = gc.X ? ts_compute_lambda(c, "global_avg_pool", b->pndim, b->pshape, gap_body, &gc) : NULL;
	ts_tensor *Y = ep->T ? output_tensor(ep, n->name) : NULL;
	return default_schedule(c, Y);
}

/* Softmax and LayerNormalization over rows of the last axis. */
static ts_schedule *rows(kb *b, epi *ep, const gnode *n)
{
	ts_ctx *c = b->ctx;
	const xval *x = xin(b, n, 0);
	int64_t D = x->shape[x->ndim - 1], xs[2] = {numel(x) / D, D};
	collapse_leading(b, b->y, 1);
	ts_tensor *X = arg(b, b->gv2x[n->in[0]], 2, xs);
	if (!X)
		return NULL;
	ts_schedule *s;
	if (n->op == TS_GOP_SOFTMAX) {
		key(b, "softmax");
		ep->T = ts_op_softmax(c, X);
		s = ep->T ? ts_create_schedule(c, 1, &ep->T) : NULL;
		return s && ts_schedule_softmax_cpu(s, ep->T, lanes()) == TS_OK ? s : NULL;
	}
	ts_tensor *gamma = arg(b, b->gv2x[n->in[1]], 1, &D);
	ts_tensor *beta = n->nin == 3 && gamma ? arg(b, b->gv2x[n->in[2]], 1, &D) : NULL;
	key(b, "layernorm%a", n->a.epsilon);
	ep->T = gamma ? ts_op_layer_norm(c, X, gamma, beta, n->a.epsilon) : NULL;
	s = ep->T ? ts_create_schedule(c, 1, &ep->T) : NULL;
	return s && ts_schedule_layer_norm_cpu(s, ep->T, lanes()) == TS_OK ? s : NULL;
}

typedef struct perm_ctx {
	ts_tensor *X;
	const int64_t *perm;
	int ndim;
} perm_ctx;

static ts_expr *transpose_body(ts_ctx *c, ts_expr *const *ax, void *user)
{
	perm_ctx *pc = user;
	ts_expr *i[TS_GRAPH_MAX_DIMS];
	for (int d = 0; d < pc->ndim; d++)
		i[pc->perm[d]] = ax[d];
	return ts_read(c, pc->X, pc->ndim, i);
}

typedef struct concat_ctx {
	kb *b;
	const gnode *n;
	ts_tensor *X[TS_GRAPH_MAX_INPUTS];
	int axis;
} concat_ctx;

static ts_expr *concat_body(ts_ctx *c, ts_expr *const *ax, void *user)
{
	concat_ctx *cc = user;
	const gnode *n = cc->n;
	int nd = cc->X[0]->ndim;
	ts_expr *v = NULL;
	int64_t start[TS_GRAPH_MAX_INPUTS], off = 0;
	for (int k = 0; k < n->nin; k++)
		start[k] = off, off += cc->X[k]->shape[cc->axis];
	/* the last input first, each earlier one selected below its end; the
	 * index of every read clamped into its input so that both arms of a
	 * select stay in bounds */
	for (int k = n->nin - 1; k >= 0; k--) {
		ts_expr *i[TS_GRAPH_MAX_DIMS];
		memcpy(i, ax, sizeof(ts_expr *) * (size_t)nd);
		ts_expr *local = ts_sub(c, ax[cc->axis], idx(cc->b, start[k]));
		i[cc->axis] = ts_min(c, ts_max(c, local, idx(cc->b, 0)), idx(cc->b, cc->X[k]->shape[cc->axis] - 1));
		ts_expr *r = ts_read(c, cc->X[k], nd, i);
		v = k == n->nin - 1 ? r : ts_select(c, ts_lt(c, ax[cc->axis], idx(cc->b, start[k] + cc->X[k]->shape[cc->axis])), r, v);
		if (!v) /* not the later inputs alone */
			return NULL;
	}
	return v;
}

static ts_schedule *layout_ops(kb *b, epi *ep, const gnode *n)
{
	ts_ctx *c = b->ctx;
	const xval *y = &b->e->xv[b->y];
	if (n->op == TS_GOP_TRANSPOSE) {
		int64_t perm[TS_GRAPH_MAX_DIMS];
		for (int d = 0; d < y->ndim; d++)
			perm[d] = n->a.nperm ? n->a.perm[d] : y->ndim - 1 - d;
		perm_ctx pc = {.X = arg_phys(b, b->gv2x[n->in[0]]), .perm = perm, .ndim = y->ndim};
		key(b, "transpose");
		for (int d = 0; d < y->ndim; d++)
			key(b, "%lld,", (long long)perm[d]);
		ep->T = pc.X ? ts_compute_lambda(c, "transpose", b->pndim, b->pshape, transpose_body, &pc) : NULL;
	} else {
		concat_ctx cc = {.b = b, .n = n};
		int ax = (int)(n->a.axis < 0 ? n->a.axis + y->ndim : n->a.axis);
		cc.axis = ax;
		key(b, "concat%d", ax);
		for (int k = 0; k < n->nin; k++)
			if (!(cc.X[k] = arg_phys(b, b->gv2x[n->in[k]])))
				return NULL;
		ep->T = ts_compute_lambda(c, "concat", b->pndim, b->pshape, concat_body, &cc);
	}
	ts_tensor *Y = ep->T ? output_tensor(ep, n->name) : NULL;
	return default_schedule(c, Y);
}

/* ---- driver ----------------------------------------------------------------------- */

/* Drops argument a of kernel b (read in place of the output). */
static void drop_arg(kb *b, int a)
{
	xkernel *k = b->k;
	for (int i = a; i + 1 < k->nargs; i++) {
		k->arg[i] = k->arg[i + 1];
		b->ph[i] = b->ph[i + 1];
	}
	k->nargs--;
}

/* The output of kernel b takes the storage of its argument b->inplace,
 * which is no longer an argument. */
static void in_place(kb *b)
{
	xval *y = &b->e->xv[b->y];
	int x = b->k->arg[b->inplace].val;
	y->base = gx_root(b->e, x);
	y->over = true;
	if (b->p && b->p->trace)
		fprintf(b->p->trace, "memory: %s written over %s, which nothing reads after it\n", y->name,
			b->e->xv[x].name);
	drop_arg(b, b->inplace);
}

typedef struct rebind {
	const ts_buffer *from;
	ts_buffer *to;
} rebind;

static bool rebind_load(ts_expr *e, void *data)
{
	rebind *r = data;
	if (e->kind == IR_LOAD && e->u.load.buf == r->from)
		e->u.load.buf = r->to;
	return true;
}

/* f with its parameter a read from the output's buffer (the last
 * parameter) instead, and a no longer a parameter: the value of a, which
 * no later kernel reads, is where the output is written, each element
 * read before its own is stored (an elementwise epilogue), so the sum of
 * a residual costs no second buffer's traffic (an input is only
 * loaded).  false, with nothing changed, for a function of size
 * variables or out of memory. */
static bool read_in_place(ts_ctx *ctx, ts_func *f, int a)
{
	int out = f->nparams - 1;
	if (f->nsizes || a < 0 || a >= out)
		return false;
	ts_buffer **params = ts_alloc(ctx, sizeof *params * (size_t)out);
	ts_tensor **tensors = ts_alloc(ctx, sizeof *tensors * (size_t)out);
	if (!params || !tensors)
		return false;
	for (int i = 0, j = 0; i <= out; i++)
		if (i != a) {
			params[j] = f->params[i];
			tensors[j++] = f->param_tensors[i];
		}
	rebind r = {.from = f->params[a], .to = f->params[out]};
	ir_stmt_visit(f->body, NULL, rebind_load, &r);
	f->params = params;
	f->param_tensors = tensors;
	f->nparams = out;
	return true;
}

/* Lowers and builds the kernel, or takes the module of an equal one. */
static ts_status finish(kb *b, ts_schedule *s, ts_tensor *Y)
{
	xkernel *k = b->k;
	ts_graph_exec *e = b->e;
	/* an error recorded while building (an allocation that failed inside
	 * an expression, or in the kernel's key, which would then match
	 * another kernel's) fails the kernel even with a schedule: ts_lower
	 * clears errors on entry, and would build what was left */
	if (s) {
		key(b, "->");
		key_shape(b, b->pndim, b->pshape);
	}
	if (ts_last_status(b->ctx) != TS_OK)
		return ts_last_status(b->ctx);
	if (!s)
		return ts_error(b->ctx, TS_ERR_INTERNAL, "graph_compile: kernel %s failed", k->desc);
	k->key = b->key ? b->key : "";
	/* the output is the last argument */
	int i = k->nargs++;
	k->arg[i].val = b->y;
	k->arg[i].ndim = b->pndim;
	memcpy(k->arg[i].shape, b->pshape, sizeof(int64_t) * (size_t)b->pndim);
	b->ph[i] = Y;
	for (int j = 0; j < e->nk; j++)
		if (e->k[j].owns_mod && !strcmp(e->k[j].key, k->key)) {
			k->same_as = j;
			if (b->inplace >= 0)
				in_place(b);
			return TS_OK;
		}
	uint64_t t0 = ts_now_ns();
	ts_func *f = ts_lower(s, ts_sprintf(b->ctx, "k%d", e->nk), k->nargs, b->ph);
	if (!f)
		return ts_last_status(b->ctx);
	if (b->inplace >= 0) {
		if (!read_in_place(b->ctx, f, b->inplace))
			return ts_error(b->ctx, TS_ERR_INTERNAL, "graph_compile: kernel %s: argument %d cannot be "
					"read in place of the output", k->desc, b->inplace);
		in_place(b);
	}
	k->func = f; /* built with the others, gx_build_all */
	k->owns_mod = true;
	e->st.codegen_ms += ts_ms_since(t0);
	e->st.modules++;
	return TS_OK;
}

ts_status gx_build_all(ts_graph_exec *e)
{
	uint64_t t0 = ts_now_ns();
	int n = 0;
	for (int i = 0; i < e->nk; i++)
		n += e->k[i].owns_mod;
	const ts_func **funcs = malloc(sizeof(*funcs) * ((size_t)n + 1));
	ts_module **mods = malloc(sizeof(*mods) * ((size_t)n + 1));
	if (!funcs || !mods) {
		free(funcs);
		free(mods);
		return ts_error(e->ctx, TS_ERR_NOMEM, "graph_compile: out of memory");
	}
	for (int i = 0, j = 0; i < e->nk; i++)
		if (e->k[i].owns_mod)
			funcs[j++] = e->k[i].func;
	ts_status st = ts_build_all(e->ctx, n, funcs, "llvm", mods);
	for (int i = 0, j = 0; !st && i < e->nk; i++)
		if (e->k[i].owns_mod)
			e->k[i].mod = mods[j++];
	for (int i = 0; !st && i < e->nk; i++)
		if (!e->k[i].owns_mod)
			e->k[i].mod = e->k[e->k[i].same_as].mod;
	free(funcs);
	free(mods);
	e->st.codegen_ms += ts_ms_since(t0);
	return st;
}

/* The output tensor a schedule was made for: its single output. */
static ts_tensor *scheduled_output(epi *ep, ts_schedule *s)
{
	return s && s->nout ? s->outputs[0] : ep->T;
}

/* Whether xval x holds only values of nodes that no kernel after group
 * `here` reads and that are no outputs of the graph (false for an xval no
 * node value names: an input, a constant, a converted copy). */
static bool dead_after(const kb *b, int x, int here)
{
	const ts_graph *g = b->g;
	bool named = false;
	for (int v = 0; v < g->nv; v++) {
		if (b->gv2x[v] != x)
			continue;
		if (g->v[v].kind != GV_NODE || g->v[v].is_output)
			return false;
		named = true;
		for (int m = 0; m < g->nn; m++)
			for (int k = 0; k < g->n[m].nin && !b->p->ns[m].dead; k++)
				if (g->n[m].in[k] == v && b->p->ns[m].group > here)
					return false;
	}
	return named;
}

/* The argument of kernel b (of group gr, anchor n) that its output may be
 * written over, or -1: an argument of the output's shape and layout, read
 * here only by the fused elementwise nodes (each at its own element, as
 * the same-layout reads are) and not by the anchor, whose storage no other
 * argument shares and holds only values that no later kernel reads (a
 * chain of residual blocks passes one buffer on: each block's sum is
 * written over the sum before it). */
static int inplace_arg(kb *b, const ggroup *gr, const gnode *n)
{
	const ts_graph_exec *e = b->e;
	const xval *y = &e->xv[b->y];
	int here = (int)(gr - b->p->groups);
	for (int i = 0; i < b->k->nargs; i++) {
		int x = b->k->arg[i].val, r = gx_root(e, x);
		const xval *xv = &e->xv[x];
		if (xv->is_const || e->xv[r].is_const || xv->block != y->block || xv->ndim != y->ndim ||
		    xv->bytes != y->bytes || memcmp(xv->shape, y->shape, sizeof(int64_t) * (size_t)y->ndim))
			continue;
		bool ok = true;
		for (int k = 0; k < n->nin && ok; k++)
			ok = b->gv2x[n->in[k]] != x;
		for (int j = 0; j < b->k->nargs && ok; j++)
			ok = j == i || gx_root(e, b->k->arg[j].val) != r;
		for (int v = 0; v < e->nxv && ok; v++)
			ok = gx_root(e, v) != r || v == b->y || dead_after(b, v, here);
		if (ok)
			return i;
	}
	return -1;
}

ts_status gx_build_group(ts_graph_exec *e, ts_graph *g, const gpass *p, const ggroup *gr,
			 const int *gv2x, xkernel *k)
{
	kb b = {.e = e, .g = g, .p = p, .ctx = e->ctx, .k = k, .gv2x = gv2x, .inplace = -1};
	epi ep = {.b = &b, .gr = gr, .bias = -1, .gemm_c = -1, .alpha = 1.0, .beta = 1.0};
	int y = gv2x[gr->out];
	set_output(&b, y, 0, NULL, NULL);
	ts_schedule *s = NULL;
	if (gr->anchor < 0) {
		key(&b, "elementwise");
		ts_tensor *Y = ts_compute_lambda(e->ctx, g->n[gr->reg[gr->nreg - 1]].name, b.pndim, b.pshape,
						 epilogue_body, &ep);
		s = default_schedule(e->ctx, Y);
		return finish(&b, s, Y);
	}
	const gnode *n = &g->n[gr->anchor];
	ep.anchor = anchor_read;
	switch (n->op) {
	case TS_GOP_CONV:
		if (e->xv[y].block <= 0)
			s = conv_plain(&b, &ep, n);
		else if (gx_is_depthwise(g, n))
			s = depthwise_blocked(&b, &ep, n);
		else if ((s = conv_blocked(&b, &ep, n)) != NULL && (b.inplace = inplace_arg(&b, gr, n)) >= 0)
			key(&b, "inplace%d", b.inplace);
		break;
	case TS_GOP_GEMM:
	case TS_GOP_MATMUL:
		s = matmul(&b, &ep, n);
		break;
	case TS_GOP_MAXPOOL:
	case TS_GOP_AVGPOOL:
		s = pool(&b, &ep, n);
		break;
	case TS_GOP_GLOBALAVGPOOL:
		s = global_pool(&b, &ep, n);
		break;
	case TS_GOP_SOFTMAX:
	case TS_GOP_LAYERNORM:
		s = rows(&b, &ep, n);
		break;
	case TS_GOP_TRANSPOSE:
	case TS_GOP_CONCAT:
		s = layout_ops(&b, &ep, n);
		break;
	default:
		return ts_error(e->ctx, TS_ERR_INTERNAL, "graph_compile: no kernel for %s '%s'", ts_gop_name(n->op),
				n->name);
	}
	return finish(&b, s, scheduled_output(&ep, s));
}

ts_status gx_build_conversion(ts_graph_exec *e, int from, int to, xkernel *k)
{
	kb b = {.e = e, .ctx = e->ctx, .k = k, .inplace = -1};
	const xval *x = &e->xv[from], *y = &e->xv[to];
	set_output(&b, to, 0, NULL, NULL);
	key(&b, "layout%d->%d", x->block, y->block);
	ts_tensor *X = arg_phys(&b, from);
	ts_tensor *Y = !X ? NULL : y->block > 0 ? ts_op_layout_nchw_to_nchwc(e->ctx, X, y->block)
					       : ts_op_layout_nchwc_to_nchw(e->ctx, X);
	ts_schedule *s = default_schedule(e->ctx, Y);
	return finish(&b, s, Y);
}
