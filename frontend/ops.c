/*
 * ops.c - linear algebra, elementwise operators, pooling, softmax and layer
 * normalization of the operator library (contracts in ops.h; convolutions
 * live in ops_conv.c).
 *
 * Each operator checks its arguments, makes fresh axis variables and builds
 * one compute per stage; a reduction is always the whole body of its stage,
 * so anything applied after it (bias, division) is a stage of its own.
 */
#include "arith.h"
#include "ops_util.h"
#include "sbuf.h"

#include <math.h>
#include <string.h>

/* ---- matmul ------------------------------------------------------------------ */

/* The extents of a (batched) matrix product: rows, inner, columns. */
typedef struct mm_dims {
	int64_t batch, m, k, n;
} mm_dims;

static bool mm_check(ts_ctx *ctx, const char *op, const ts_tensor *A, const ts_tensor *B,
		     bool ta, bool tb, int lead, mm_dims *d)
{
	if (!fe_check_ndim(ctx, op, A, lead + 2) || !fe_check_ndim(ctx, op, B, lead + 2) ||
	    !fe_check_same_dtype(ctx, op, A, B))
		return false;
	/* size-variable handles compare equal exactly when the variable is the same */
	int64_t da[TS_MAX_DIMS], db[TS_MAX_DIMS];
	fe_dims(A, da), fe_dims(B, db);
	const int64_t *a = da + lead, *b = db + lead;
	int64_t ka = ta ? a[0] : a[1], kb = tb ? b[1] : b[0];
	d->batch = lead ? da[0] : 1;
	d->m = ta ? a[1] : a[0];
	d->k = ka;
	d->n = tb ? b[0] : b[1];
	if (lead && da[0] != db[0]) {
		ts_error(ctx, TS_ERR_INVALID, "%s: batch extents differ: %s x %s", op,
			 fe_shape_str(ctx, A), fe_shape_str(ctx, B));
		return false;
	}
	if (ka != kb) {
		ts_error(ctx, TS_ERR_INVALID, "%s: inner extents differ: %s%s x %s%s (%s vs %s)", op,
			 fe_shape_str(ctx, A), ta ? "^T" : "", fe_shape_str(ctx, B), tb ? "^T" : "",
			 fe_dim_str(ctx, A, ta ? lead : lead + 1), fe_dim_str(ctx, B, tb ? lead + 1 : lead));
		return false;
	}
	return true;
}

/* Reads M[(b,) r, c], or M[(b,) c, r] when transposed. */
static ts_expr *mm_read(ts_ctx *ctx, ts_tensor *M, ts_expr *b, bool trans, ts_expr *r,
			ts_expr *c)
{
	ts_expr *rc[2] = {trans ? c : r, trans ? r : c};
	if (!b)
		return TS_READ(ctx, M, rc[0], rc[1]);
	return TS_READ(ctx, M, b, rc[0], rc[1]);
}

static ts_tensor *matmul(ts_ctx *ctx, const char *op, ts_tensor *A, ts_tensor *B, bool ta,
			 bool tb, int lead, const ts_dtype *out, bool tf32)
{
	mm_dims d;
	if (!fe_check_inputs(ctx, op, 2, (ts_tensor *[]){A, B}) ||
	    !mm_check(ctx, op, A, B, ta, tb, lead, &d) || (!out && !fe_check_numeric(ctx, op, A)))
		return NULL;
	static const char *const names[] = {"b", "i", "j"};
	ts_expr *v[3];
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, d.k);
	if (!k || !fe_vars(ctx, lead + 2, names + 1 - lead, v))
		return NULL;
	ts_expr *b = lead ? v[0] : NULL, *i = v[lead], *j = v[lead + 1];
	ts_expr *x = mm_read(ctx, A, b, ta, i, k->var), *y = mm_read(ctx, B, b, tb, k->var, j);
	if (out) {
		x = ts_cast(ctx, *out, x);
		y = ts_cast(ctx, *out, y);
	}
	if (tf32) {
		x = ts_round_tf32(ctx, x);
		y = ts_round_tf32(ctx, y);
	}
	ts_expr *prod = ts_mul(ctx, x, y);
	int64_t shape[3] = {d.batch, d.m, d.n};
	return ts_compute(ctx, op, lead + 2, shape + 1 - lead, v, TS_SUM(ctx, prod, k));
}

ts_tensor *ts_op_matmul(ts_ctx *ctx, ts_tensor *A, ts_tensor *B, bool transA, bool transB)
{
	return matmul(ctx, "matmul", A, B, transA, transB, 0, NULL, false);
}

ts_tensor *ts_op_batch_matmul(ts_ctx *ctx, ts_tensor *A, ts_tensor *B, bool transA,
			      bool transB)
{
	return matmul(ctx, "batch_matmul", A, B, transA, transB, 1, NULL, false);
}

static ts_tensor *bias_add(ts_ctx *ctx, const char *op, const char *name, ts_tensor *X,
			   ts_tensor *bias, int axis);

/* The leading batch dimensions of a product whose A is 3-D (matmul
 * checks that B matches). */
static int batched(const ts_tensor *A)
{
	return A && A->ndim == 3 ? 1 : 0;
}

ts_tensor *ts_op_matmul_acc(ts_ctx *ctx, ts_tensor *A, ts_tensor *B, bool transA, bool transB,
			    ts_dtype out_dtype)
{
	/* as wide means every operand value converts exactly: float16 and
	 * bfloat16 have 16 bits each but neither holds the other's values */
	if (out_dtype.lanes != 1 || !ts_dtype_is_float(out_dtype) ||
	    (A && B && (A->dtype.bits > out_dtype.bits ||
			(A->dtype.bits == out_dtype.bits && !ts_dtype_eq(A->dtype, out_dtype))))) {
		char o[24], a[24];
		ts_error(ctx, TS_ERR_INVALID, "matmul_acc: out_dtype %s: give a scalar float type at least "
			 "as wide as the operands' (%s)", ts_dtype_str(out_dtype, o),
			 A ? ts_dtype_str(A->dtype, a) : "?");
		return NULL;
	}
	return matmul(ctx, "matmul", A, B, transA, transB, batched(A), &out_dtype, false);
}

ts_tensor *ts_op_matmul_tf32(ts_ctx *ctx, ts_tensor *A, ts_tensor *B, bool transA, bool transB)
{
	if (A && B && (!ts_dtype_eq(A->dtype, ts_float32) || !ts_dtype_eq(B->dtype, ts_float32))) {
		char a[24], b[24];
		ts_error(ctx, TS_ERR_INVALID, "matmul_tf32: operands must be float32, got %s and %s",
			 ts_dtype_str(A->dtype, a), ts_dtype_str(B->dtype, b));
		return NULL;
	}
	return matmul(ctx, "matmul", A, B, transA, transB, batched(A), NULL, true);
}

ts_tensor *ts_op_dense(ts_ctx *ctx, ts_tensor *X, ts_tensor *W, ts_tensor *bias)
{
	ts_tensor *Y = matmul(ctx, "dense", X, W, false, true, 0, NULL, false);
	if (!Y || !bias)
		return Y;
	return bias_add(ctx, "dense", "dense_bias", Y, bias, 1);
}

/* ---- elementwise ----------------------------------------------------------------- */

static ts_expr *relu_fn(ts_ctx *ctx, ts_expr *x, ts_expr *const *v, const void *k)
{
	(void)v, (void)k;
	return x ? ts_max(ctx, x, ts_make_const(ctx, x->dtype, 0)) : NULL;
}

ts_tensor *ts_op_relu(ts_ctx *ctx, ts_tensor *X)
{
	if (!fe_check_inputs(ctx, "relu", 1, &X))
		return NULL;
	return fe_map(ctx, "relu", X, relu_fn, NULL);
}

static ts_expr *add_fn(ts_ctx *ctx, ts_expr *x, ts_expr *const *v, const void *k)
{
	return ts_add(ctx, x, fe_read(ctx, (ts_tensor *)k, v));
}

ts_tensor *ts_op_add(ts_ctx *ctx, ts_tensor *A, ts_tensor *B)
{
	if (!fe_check_inputs(ctx, "add", 2, (ts_tensor *[]){A, B}) ||
	    !fe_check_same_dtype(ctx, "add", A, B))
		return NULL;
	bool same = A->ndim == B->ndim;
	for (int d = 0; same && d < A->ndim; d++)
		same = ts_tensor_dim(A, d) == ts_tensor_dim(B, d);
	if (!same) {
		ts_error(ctx, TS_ERR_INVALID, "add: shapes differ: %s vs %s", fe_shape_str(ctx, A),
			 fe_shape_str(ctx, B));
		return NULL;
	}
	return fe_map(ctx, "add", A, add_fn, B);
}

typedef struct bias_arg {
	ts_tensor *bias;
	int axis;
} bias_arg;

static ts_expr *bias_fn(ts_ctx *ctx, ts_expr *x, ts_expr *const *v, const void *k)
{
	const bias_arg *b = k;
	return ts_add(ctx, x, TS_READ(ctx, b->bias, v[b->axis]));
}

static ts_tensor *bias_add(ts_ctx *ctx, const char *op, const char *name, ts_tensor *X,
			   ts_tensor *bias, int axis)
{
	if (!fe_check_inputs(ctx, op, 2, (ts_tensor *[]){X, bias}) ||
	    !fe_check_same_dtype(ctx, op, X, bias))
		return NULL;
	int a = axis < 0 ? axis + X->ndim : axis;
	if (a < 0 || a >= X->ndim) {
		ts_error(ctx, TS_ERR_INVALID, "%s: axis %d is not a dimension of %s", op, axis,
			 fe_shape_str(ctx, X));
		return NULL;
	}
	if (bias->ndim != 1 || ts_tensor_dim(bias, 0) != ts_tensor_dim(X, a)) {
		ts_error(ctx, TS_ERR_INVALID, "%s: bias %s does not match axis %d of %s", op,
			 fe_shape_str(ctx, bias), a, fe_shape_str(ctx, X));
		return NULL;
	}
	return fe_map(ctx, name, X, bias_fn, &(bias_arg){bias, a});
}

ts_tensor *ts_op_bias_add(ts_ctx *ctx, ts_tensor *X, ts_tensor *bias, int axis)
{
	return bias_add(ctx, "bias_add", "bias_add", X, bias, axis);
}

/* erf form: x/2 (1 + erf(x / sqrt 2)); tanh form (approximate, as in BERT's
 * reference code): x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static ts_expr *gelu_fn(ts_ctx *ctx, ts_expr *x, ts_expr *const *v, const void *k)
{
	(void)v;
	if (!x)
		return NULL;
	ts_dtype t = x->dtype;
	ts_expr *arg;
	ir_intrinsic op;
	if (*(const bool *)k) {
		ts_expr *x3 = ts_mul(ctx, ts_mul(ctx, x, x), x);
		ts_expr *in = ts_add(ctx, x, ts_mul(ctx, ts_make_const(ctx, t, 0.044715), x3));
		arg = ts_mul(ctx, ts_make_const(ctx, t, 0.7978845608028654), in);
		op = IR_INTRIN_TANH;
	} else {
		arg = ts_mul(ctx, x, ts_make_const(ctx, t, 0.7071067811865476));
		op = IR_INTRIN_ERF;
	}
	ts_expr *g = ts_add(ctx, ts_make_const(ctx, t, 1), ts_call(ctx, op, 1, &arg));
	return ts_mul(ctx, ts_mul(ctx, ts_make_const(ctx, t, 0.5), x), g);
}

ts_tensor *ts_op_gelu(ts_ctx *ctx, ts_tensor *X, bool approximate)
{
	if (!fe_check_inputs(ctx, "gelu", 1, &X) || !fe_check_float(ctx, "gelu", X))
		return NULL;
	return fe_map(ctx, "gelu", X, gelu_fn, &approximate);
}

static ts_expr *clip_fn(ts_ctx *ctx, ts_expr *x, ts_expr *const *v, const void *k)
{
	const double *lohi = k;
	(void)v;
	if (!x)
		return NULL;
	ts_expr *lo = ts_make_const(ctx, x->dtype, lohi[0]);
	return ts_min(ctx, ts_max(ctx, x, lo), ts_make_const(ctx, x->dtype, lohi[1]));
}

ts_tensor *ts_op_clip(ts_ctx *ctx, ts_tensor *X, double lo, double hi)
{
	if (!fe_check_inputs(ctx, "clip", 1, &X))
		return NULL;
	if (!(lo <= hi)) {
		ts_error(ctx, TS_ERR_INVALID, "clip: %s: bounds [%g, %g] are empty",
			 fe_shape_str(ctx, X), lo, hi);
		return NULL;
	}
	/* an integer dtype clips to the integers inside [lo, hi], which must
	 * hold one of its values (converting the bounds would move them out) */
	double min, top;
	if (ir_int_range(X->dtype, &min, &top)) {
		double l = ceil(lo), h = floor(hi);
		if (l > h || l >= top || h < min) {
			char b[24];
			ts_error(ctx, TS_ERR_INVALID, "clip: %s: no %s value lies in [%g, %g]",
				 fe_shape_str(ctx, X), ts_dtype_str(X->dtype, b), lo, hi);
			return NULL;
		}
		lo = l > min ? l : min;
		hi = h < top ? h : top - 1;
	}
	return fe_map(ctx, "clip", X, clip_fn, (const double[]){lo, hi});
}

/* ---- pooling ------------------------------------------------------------------ */

typedef struct pool {
	int64_t out[2];
	int k[2], stride[2], pad[2];
} pool;

static bool pool_check(ts_ctx *ctx, const char *op, ts_tensor *X, pool *p)
{
	if (!fe_check_inputs(ctx, op, 1, &X) || !fe_check_ndim(ctx, op, X, 4) ||
	    !fe_check_numeric(ctx, op, X) || !fe_check_constant(ctx, op, X))
		return false;
	static const char *const dims[2] = {"height", "width"};
	for (int d = 0; d < 2; d++) {
		if (p->k[d] < 1 || p->pad[d] >= p->k[d]) {
			ts_error(ctx, TS_ERR_INVALID,
				 "%s: %s: %s kernel %d must be >= 1 and exceed the padding %d", op,
				 fe_shape_str(ctx, X), dims[d], p->k[d], p->pad[d]);
			return false;
		}
		if (!fe_window_extent(ctx, op, dims[d], X->shape[2 + d], p->k[d], p->stride[d],
				      p->pad[d], 1, &p->out[d]))
			return false;
	}
	return true;
}

/* op over the window of (y, x) in the padded P: P[n, c, y*sh + ry, x*sw + rx]. */
static ts_tensor *pool_reduce(ts_ctx *ctx, const char *name, ts_tensor *P, const pool *p,
			      ts_reduce_op rop)
{
	static const char *const names[] = {"n", "c", "y", "x"};
	ts_expr *v[4];
	ts_iter *ry = ts_reduce_axis(ctx, "ry", 0, p->k[0]), *rx = ts_reduce_axis(ctx, "rx", 0, p->k[1]);
	if (!P || !ry || !rx || !fe_vars(ctx, 4, names, v))
		return NULL;
	ts_expr *src = TS_READ(ctx, P, v[0], v[1], fe_window(ctx, v[2], p->stride[0], ry->var, 1),
			       fe_window(ctx, v[3], p->stride[1], rx->var, 1));
	ts_expr *body = ts_reduce(ctx, rop, src, TS_ITERS(ry, rx), NULL);
	return ts_compute(ctx, name, TS_SHAPE(P->shape[0], P->shape[1], p->out[0], p->out[1]), v,
			  body);
}

/* The lowest value of t: -infinity for floats, the minimum for integers. */
static double lowest(ts_dtype t)
{
	double lo, top;
	return ir_int_range(t, &lo, &top) ? lo : -INFINITY;
}

ts_tensor *ts_op_max_pool2d(ts_ctx *ctx, ts_tensor *X, int kernel_h, int kernel_w,
			    int stride_h, int stride_w, int pad_h, int pad_w)
{
	pool p = {.k = {kernel_h, kernel_w}, .stride = {stride_h, stride_w}, .pad = {pad_h, pad_w}};
	if (!pool_check(ctx, "max_pool2d", X, &p))
		return NULL;
	ts_tensor *P = fe_pad_spatial(ctx, X, 2, pad_h, pad_w, lowest(X->dtype));
	return pool_reduce(ctx, "max_pool2d", P, &p, TS_REDUCE_MAX);
}

/* Elements of X in the window starting at out*stride - pad along one axis:
 * min(start + k, n) - max(start, 0). */
static ts_expr *window_count(ts_ctx *ctx, ts_expr *out, int stride, int pad, int k, int64_t n)
{
	ts_expr *start = ts_sub(ctx, fe_scale(ctx, out, stride), fe_index(ctx, pad));
	return ts_sub(ctx, ts_min(ctx, ts_add(ctx, start, fe_index(ctx, k)), fe_index(ctx, n)),
		      ts_max(ctx, start, fe_index(ctx, 0)));
}

static ts_tensor *avg_divide(ts_ctx *ctx, ts_tensor *S, const ts_tensor *X, const pool *p,
			     bool include_pad)
{
	static const char *const names[] = {"n", "c", "y", "x"};
	ts_expr *v[4], *count;
	if (!S || !fe_vars(ctx, 4, names, v))
		return NULL;
	if (include_pad)
		count = ts_make_const(ctx, S->dtype, (double)p->k[0] * p->k[1]);
	else
		count = ts_cast(ctx, S->dtype,
				ts_mul(ctx, window_count(ctx, v[2], p->stride[0], p->pad[0], p->k[0], X->shape[2]),
				       window_count(ctx, v[3], p->stride[1], p->pad[1], p->k[1], X->shape[3])));
	return ts_compute(ctx, "avg_pool2d", S->ndim, S->shape, v,
			  ts_div(ctx, fe_read(ctx, S, v), count));
}

ts_tensor *ts_op_avg_pool2d(ts_ctx *ctx, ts_tensor *X, int kernel_h, int kernel_w,
			    int stride_h, int stride_w, int pad_h, int pad_w,
			    bool count_include_pad)
{
	pool p = {.k = {kernel_h, kernel_w}, .stride = {stride_h, stride_w}, .pad = {pad_h, pad_w}};
	if (!pool_check(ctx, "avg_pool2d", X, &p) || !fe_check_float(ctx, "avg_pool2d", X))
		return NULL;
	ts_tensor *P = fe_pad_spatial(ctx, X, 2, pad_h, pad_w, 0);
	ts_tensor *S = pool_reduce(ctx, "avg_pool2d_sum", P, &p, TS_REDUCE_SUM);
	return avg_divide(ctx, S, X, &p, count_include_pad);
}

/* ---- softmax ---------------------------------------------------------------------- */

/* A reduction of fn(E[...]) (E itself for a NULL fn) over E's last axis
 * into the leading shape ([1] for 1-D). */
static ts_tensor *reduce_last(ts_ctx *ctx, const char *name, ts_tensor *E, ts_reduce_op op,
			      fe_map_fn fn, const void *arg)
{
	int nd = E->ndim, no = nd > 1 ? nd - 1 : 1;
	ts_expr *v[TS_MAX_DIMS], *idx[TS_MAX_DIMS];
	int64_t dims[TS_MAX_DIMS];
	fe_dims(E, dims);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, dims[nd - 1]);
	if (!k || !fe_vars(ctx, no, NULL, v))
		return NULL;
	for (int d = 0; d < nd - 1; d++)
		idx[d] = v[d];
	idx[nd - 1] = k->var;
	const int64_t one = 1;
	ts_expr *src = fe_read(ctx, E, idx);
	if (fn)
		src = fn(ctx, src, idx, arg);
	return ts_compute(ctx, name, no, nd > 1 ? dims : &one, v,
			  ts_reduce(ctx, op, src, TS_ITERS(k), NULL));
}

/* R[leading indices of v], the per-row value of a reduce_last result. */
static ts_expr *row_value(ts_ctx *ctx, ts_tensor *R, int nd, ts_expr *const *v)
{
	return nd > 1 ? fe_read(ctx, R, v) : TS_READ(ctx, R, fe_index(ctx, 0));
}

/* A per-row tensor (from reduce_last) of an nd-dimensional input. */
typedef struct row_arg {
	ts_tensor *R;
	int nd;
} row_arg;

static ts_expr *exp_fn(ts_ctx *ctx, ts_expr *x, ts_expr *const *v, const void *k)
{
	const row_arg *m = k;
	return ts_exp(ctx, ts_sub(ctx, x, row_value(ctx, m->R, m->nd, v)));
}

/* x * (1 / row value): the reciprocal is the same for the whole row. */
static ts_expr *div_fn(ts_ctx *ctx, ts_expr *x, ts_expr *const *v, const void *k)
{
	const row_arg *s = k;
	if (!x) /* the read failed; its error is in ctx */
		return NULL;
	return ts_mul(ctx, x, ts_div(ctx, ts_make_const(ctx, x->dtype, 1.0), row_value(ctx, s->R, s->nd, v)));
}

ts_tensor *ts_op_softmax(ts_ctx *ctx, ts_tensor *X)
{
	if (!fe_check_inputs(ctx, "softmax", 1, &X) || !fe_check_float(ctx, "softmax", X))
		return NULL;
	ts_tensor *M = reduce_last(ctx, "softmax_max", X, TS_REDUCE_MAX, NULL, NULL);
	ts_tensor *E = M ? fe_map(ctx, "softmax_exp", X, exp_fn, &(row_arg){M, X->ndim}) : NULL;
	ts_tensor *S = E ? reduce_last(ctx, "softmax_sum", E, TS_REDUCE_SUM, NULL, NULL) : NULL;
	return S ? fe_map(ctx, "softmax", E, div_fn, &(row_arg){S, X->ndim}) : NULL;
}

/* ---- layer normalization ------------------------------------------------------------ */

/* The per-row operands of layer_norm's stages (rows of extent n).  M is
 * the mean of each row less its first element, x0: a float sum of
 * x * (1/n) over values far from zero (300 +- 1) loses their spread to
 * rounding (1e-4 of the result, where the shifted sum keeps 1e-7), and
 * the variance and the output take x - x0 - M, which is as exact. */
typedef struct norm_arg {
	ts_tensor *X, *M, *V, *gamma, *beta; /* input, shifted mean, variance; beta may be NULL */
	ts_expr *inv_n, *eps;
	int nd;
} norm_arg;

/* x - X[row, 0]: the element shifted by its row's first (x itself with no
 * X: a row of symbolic length, where reads must range over the whole
 * dimension). */
static ts_expr *shifted(ts_ctx *ctx, const norm_arg *a, ts_expr *x, ts_expr *const *v)
{
	if (!a->X)
		return x;
	ts_expr *idx[TS_MAX_DIMS];
	for (int d = 0; d < a->nd - 1; d++)
		idx[d] = v[d];
	idx[a->nd - 1] = fe_index(ctx, 0);
	return ts_sub(ctx, x, fe_read(ctx, a->X, idx));
}

static ts_expr *mean_fn(ts_ctx *ctx, ts_expr *x, ts_expr *const *v, const void *k)
{
	const norm_arg *a = k;
	return ts_mul(ctx, shifted(ctx, a, x, v), a->inv_n);
}

/* x - x0 - M: the element less its row's mean. */
static ts_expr *centered(ts_ctx *ctx, const norm_arg *a, ts_expr *x, ts_expr *const *v)
{
	return ts_sub(ctx, shifted(ctx, a, x, v), row_value(ctx, a->M, a->nd, v));
}

static ts_expr *var_fn(ts_ctx *ctx, ts_expr *x, ts_expr *const *v, const void *k)
{
	const norm_arg *a = k;
	ts_expr *d = centered(ctx, a, x, v);
	return ts_mul(ctx, ts_mul(ctx, d, d), a->inv_n);
}

static ts_expr *norm_fn(ts_ctx *ctx, ts_expr *x, ts_expr *const *v, const void *k)
{
	const norm_arg *a = k;
	if (!x) /* the read failed; its error is in ctx */
		return NULL;
	ts_expr *d = centered(ctx, a, x, v);
	ts_expr *sd = ts_sqrt(ctx, ts_add(ctx, row_value(ctx, a->V, a->nd, v), a->eps));
	/* times the row's reciprocal, computed once per row (as softmax's) */
	ts_expr *inv = ts_div(ctx, ts_make_const(ctx, x->dtype, 1.0), sd);
	ts_expr *y = ts_mul(ctx, ts_mul(ctx, d, inv), TS_READ(ctx, a->gamma, v[a->nd - 1]));
	return a->beta ? ts_add(ctx, y, TS_READ(ctx, a->beta, v[a->nd - 1])) : y;
}

/* 1/n for X's last extent n: a constant, or 1 / n at run time for a size
 * variable. */
static ts_expr *inverse_last(ts_ctx *ctx, const ts_tensor *X)
{
	int d = X->ndim - 1;
	if (!X->dim_var[d])
		return ts_make_const(ctx, X->dtype, 1.0 / (double)X->shape[d]);
	return ts_div(ctx, ts_make_const(ctx, X->dtype, 1),
		      ts_cast(ctx, X->dtype, ts_size_expr(ctx, ts_tensor_dim(X, d))));
}

/* gamma or beta: 1-D, X's dtype, the extent of X's last axis. */
static bool norm_param(ts_ctx *ctx, const char *what, const ts_tensor *p, const ts_tensor *X)
{
	if (!fe_check_same_dtype(ctx, "layer_norm", X, p))
		return false;
	if (p->ndim == 1 && ts_tensor_dim(p, 0) == ts_tensor_dim(X, X->ndim - 1))
		return true;
	ts_error(ctx, TS_ERR_INVALID, "layer_norm: %s %s does not match the last axis of %s", what,
		 fe_shape_str(ctx, p), fe_shape_str(ctx, X));
	return false;
}

static bool norm_check(ts_ctx *ctx, ts_tensor *X, ts_tensor *gamma, ts_tensor *beta,
		       double epsilon)
{
	const char *op = "layer_norm";
	if (!fe_check_inputs(ctx, op, 2, (ts_tensor *[]){X, gamma}) ||
	    (beta && !fe_check_inputs(ctx, op, 1, &beta)) || !fe_check_float(ctx, op, X))
		return false;
	if (X->ndim < 1) {
		ts_error(ctx, TS_ERR_INVALID, "layer_norm: %s has no axis to normalize",
			 fe_shape_str(ctx, X));
		return false;
	}
	if (!norm_param(ctx, "gamma", gamma, X) || (beta && !norm_param(ctx, "beta", beta, X)))
		return false;
	/* 0 would divide a constant row (variance 0) by 0; NaN fails the test */
	if (!(epsilon > 0) || isinf(epsilon)) {
		ts_error(ctx, TS_ERR_INVALID, "layer_norm: %s: epsilon must be positive and finite, got %g",
			 fe_shape_str(ctx, X), epsilon);
		return false;
	}
	/* the kernel adds it in X's dtype: one that rounds to 0 there is 0,
	 * and one past its largest value is infinite (every output beta) */
	double r = ir_round_float(X->dtype, epsilon);
	if (!(r > 0) || isinf(r)) {
		char b[24];
		ts_error(ctx, TS_ERR_INVALID, "layer_norm: %s: epsilon %g rounds to %s in %s",
			 fe_shape_str(ctx, X), epsilon, isinf(r) ? "infinity" : "0",
			 ts_dtype_str(X->dtype, b));
		return false;
	}
	return true;
}

ts_tensor *ts_op_layer_norm(ts_ctx *ctx, ts_tensor *X, ts_tensor *gamma, ts_tensor *beta,
			    double epsilon)
{
	if (!norm_check(ctx, X, gamma, beta, epsilon))
		return NULL;
	norm_arg a = {.X = X->dim_var[X->ndim - 1] ? NULL : X, .gamma = gamma, .beta = beta,
		      .inv_n = inverse_last(ctx, X), .eps = ts_make_const(ctx, X->dtype, epsilon),
		      .nd = X->ndim};
	if (!a.inv_n || !a.eps)
		return NULL;
	a.M = reduce_last(ctx, "layer_norm_mean", X, TS_REDUCE_SUM, mean_fn, &a);
	a.V = a.M ? reduce_last(ctx, "layer_norm_var", X, TS_REDUCE_SUM, var_fn, &a) : NULL;
	return a.V ? fe_map(ctx, "layer_norm", X, norm_fn, &a) : NULL;
}

/* ---- inner stages ------------------------------------------------------------------ */

/* Every tensor out depends on (out included), each once, producers after
 * their consumers; NULL on allocation failure. */
static ts_tensor **graph_tensors(ts_ctx *ctx, ts_tensor *out, int *n)
{
	int cap = 16, len = 0;
	ts_tensor **seen = ts_alloc_array(ctx, (size_t)cap, sizeof *seen);
	if (!seen)
		return NULL;
	seen[len++] = out;
	for (int i = 0; i < len; i++) {
		for (int j = 0; j < seen[i]->ninputs; j++) {
			ts_tensor *t = seen[i]->inputs[j];
			bool dup = false;
			for (int k = 0; k < len && !dup; k++)
				dup = seen[k] == t;
			if (dup)
				continue;
			if (len == cap) { /* arena memory is not freed: copy into a larger block */
				ts_tensor **grown = ts_alloc_array(ctx, (size_t)cap * 2, sizeof *seen);
				if (!grown)
					return NULL;
				memcpy(grown, seen, (size_t)len * sizeof *seen);
				seen = grown;
				cap *= 2;
			}
			seen[len++] = t;
		}
	}
	*n = len;
	return seen;
}

/* "softmax, softmax_sum, ..." for the error message, cut at about 512
 * characters: a graph of thousands of stages would otherwise make a list
 * longer than the error can hold, copied once per stage. */
static const char *stage_names(ts_ctx *ctx, ts_tensor *const *t, int n)
{
	ts_sbuf sb = {0};
	for (int i = 0; i < n; i++) {
		if (t[i]->op != TS_OP_COMPUTE)
			continue;
		if (sb.len > 512) {
			ts_sb_puts(&sb, ", ...");
			break;
		}
		ts_sb_printf(&sb, "%s%s", sb.len ? ", " : "", t[i]->name);
	}
	const char *list = ts_strdup(ctx, sb.len ? ts_sb_str(&sb) : "");
	ts_sb_free(&sb);
	return list ? list : "";
}

ts_tensor *ts_op_stage(const ts_tensor *out, const char *name)
{
	if (!out || !out->ctx) {
		ts_error(NULL, TS_ERR_INVALID, "op_stage: output tensor is NULL");
		return NULL;
	}
	ts_ctx *ctx = out->ctx;
	if (!name) {
		ts_error(ctx, TS_ERR_INVALID, "op_stage(%s): stage name is NULL", out->name);
		return NULL;
	}
	int n = 0;
	ts_tensor **all = graph_tensors(ctx, (ts_tensor *)out, &n);
	if (!all)
		return NULL;
	for (int i = 0; i < n; i++)
		if (all[i]->op == TS_OP_COMPUTE && !strcmp(all[i]->name, name))
			return all[i];
	ts_error(ctx, TS_ERR_INVALID, "op_stage(%s): no compute stage named '%s' among those %s depends on (%s)",
		 out->name, name, out->name, stage_names(ctx, all, n));
	return NULL;
}
