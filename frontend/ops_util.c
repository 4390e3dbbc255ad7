/*
 * ops_util.c - shared helpers of the operator library (see ops_util.h) and
 * the padding operator every windowed operator builds on.
 */
#include "ops_util.h"

#include <math.h>
#include <stdio.h>

#include "arith.h"

const char *fe_shape_str(ts_ctx *ctx, const ts_tensor *t)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "%s[", t->name);
	for (int d = 0; d < t->ndim && n > 0 && (size_t)n < sizeof(buf); d++)
		n += t->dim_var[d]
			? snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%s", d ? ", " : "",
				   t->dim_var[d]->u.var.name)
			: snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%lld", d ? ", " : "",
				   (long long)t->shape[d]);
	if (n > 0 && (size_t)n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - (size_t)n, "]");
	const char *s = ts_strdup(ctx, buf);
	return s ? s : "?";
}

void fe_dims(const ts_tensor *t, int64_t *out)
{
	for (int d = 0; d < TS_MAX_DIMS; d++)
		out[d] = ts_tensor_dim(t, d);
}

const char *fe_dim_str(ts_ctx *ctx, const ts_tensor *t, int d)
{
	const char *s = t->dim_var[d] ? t->dim_var[d]->u.var.name
				      : ts_sprintf(ctx, "%lld", (long long)t->shape[d]);
	return s ? s : "?";
}

bool fe_check_constant(ts_ctx *ctx, const char *op, const ts_tensor *t)
{
	for (int d = 0; d < t->ndim; d++)
		if (t->dim_var[d]) {
			ts_error(ctx, TS_ERR_INVALID,
				 "%s: %s has the symbolic extent %s; %s needs constant extents (symbolic "
				 "shapes: matmul, batch_matmul, dense, elementwise operators, bias_add, "
				 "softmax)", op, fe_shape_str(ctx, t), t->dim_var[d]->u.var.name, op);
			return false;
		}
	return true;
}

bool fe_check_inputs(ts_ctx *ctx, const char *op, int n, ts_tensor *const *ts)
{
	if (!ctx)
		return false;
	for (int i = 0; i < n; i++) {
		if (!ts[i]) {
			ts_error(ctx, TS_ERR_INVALID, "%s: input %d is NULL", op, i);
			return false;
		}
		if (ts[i]->ctx && ts[i]->ctx != ctx) {
			ts_error(ctx, TS_ERR_INVALID, "%s: tensor %s belongs to another context", op,
				 ts[i]->name);
			return false;
		}
	}
	return true;
}

bool fe_check_ndim(ts_ctx *ctx, const char *op, const ts_tensor *t, int ndim)
{
	if (t->ndim == ndim)
		return true;
	ts_error(ctx, TS_ERR_INVALID, "%s: %s must have %d dimensions", op, fe_shape_str(ctx, t),
		 ndim);
	return false;
}

bool fe_check_same_dtype(ts_ctx *ctx, const char *op, const ts_tensor *a, const ts_tensor *b)
{
	if (ts_dtype_eq(a->dtype, b->dtype))
		return true;
	char ta[24], tb[24];
	ts_error(ctx, TS_ERR_INVALID, "%s: dtype mismatch: %s is %s, %s is %s", op,
		 fe_shape_str(ctx, a), ts_dtype_str(a->dtype, ta), fe_shape_str(ctx, b),
		 ts_dtype_str(b->dtype, tb));
	return false;
}

bool fe_check_numeric(ts_ctx *ctx, const char *op, const ts_tensor *t)
{
	if (!ts_dtype_is_bool(t->dtype))
		return true;
	ts_error(ctx, TS_ERR_INVALID, "%s: %s has dtype bool; %s needs a numeric dtype", op,
		 fe_shape_str(ctx, t), op);
	return false;
}

bool fe_check_float(ts_ctx *ctx, const char *op, const ts_tensor *t)
{
	if (ts_dtype_is_float(t->dtype))
		return true;
	char b[24];
	ts_error(ctx, TS_ERR_INVALID, "%s: %s has dtype %s; a float dtype is required", op,
		 fe_shape_str(ctx, t), ts_dtype_str(t->dtype, b));
	return false;
}

bool fe_window_extent(ts_ctx *ctx, const char *op, const char *dim, int64_t in, int64_t k,
		      int stride, int pad, int dilation, int64_t *out)
{
	if (stride < 1 || dilation < 1 || pad < 0) {
		ts_error(ctx, TS_ERR_INVALID,
			 "%s: %s stride %d and dilation %d must be >= 1, padding %d >= 0", op, dim,
			 stride, dilation, pad);
		return false;
	}
	/* last = the padded extent minus the window's span, less one: the
	 * last window start.  in + 2*pad itself may pass int64 for an extent
	 * near it, so the span comes off first (in - 1 - span cannot
	 * overflow: in >= 1, 0 <= span) */
	int64_t span, last, n;
	if (__builtin_mul_overflow((int64_t)dilation, k - 1, &span))
		span = INT64_MAX; /* past any input */
	bool past = __builtin_add_overflow(in - 1 - span, 2 * (int64_t)pad, &last);
	if (!past && last < 0) {
		ts_error(ctx, TS_ERR_INVALID,
			 "%s: %s window %lld (kernel %lld, dilation %d) exceeds input %lld + 2*%d padding",
			 op, dim, (long long)(span < INT64_MAX ? span + 1 : span), (long long)k, dilation,
			 (long long)in, pad);
		return false;
	}
	if (past || __builtin_add_overflow(last / stride, 1, &n)) {
		ts_error(ctx, TS_ERR_INVALID, "%s: %s extent %lld + 2*%d padding overflows int64", op,
			 dim, (long long)in, pad);
		return false;
	}
	*out = n;
	return true;
}

bool fe_vars(ts_ctx *ctx, int n, const char *const *names, ts_expr **out)
{
	for (int d = 0; d < n; d++) {
		char buf[16];
		snprintf(buf, sizeof(buf), "ax%d", d);
		if (!(out[d] = ts_var(ctx, names ? names[d] : buf)))
			return false;
	}
	return true;
}

ts_expr *fe_read(ts_ctx *ctx, ts_tensor *t, ts_expr *const *idx)
{
	return ts_read(ctx, t, t->ndim, idx);
}

ts_expr *fe_index(ts_ctx *ctx, int64_t v)
{
	return ts_const(ctx, v >= INT32_MIN && v <= INT32_MAX ? ts_int32 : ts_int64, v);
}

ts_expr *fe_scale(ts_ctx *ctx, ts_expr *x, int64_t c)
{
	return c == 1 ? x : ts_mul(ctx, x, fe_index(ctx, c));
}

ts_expr *fe_window(ts_ctx *ctx, ts_expr *out, int64_t stride, ts_expr *r, int64_t dilation)
{
	return ts_add(ctx, fe_scale(ctx, out, stride), fe_scale(ctx, r, dilation));
}

ts_tensor *fe_map(ts_ctx *ctx, const char *name, ts_tensor *t, fe_map_fn fn, const void *k)
{
	ts_expr *v[TS_MAX_DIMS];
	int64_t dims[TS_MAX_DIMS];
	if (!fe_vars(ctx, t->ndim, NULL, v))
		return NULL;
	fe_dims(t, dims);
	ts_expr *body = fn(ctx, fe_read(ctx, t, v), v, k);
	if (!body) {
		/* the expression builder names its operation (max, mul), not the
		 * operator called nor its tensor: say which, before what failed */
		ts_error_within(ctx, TS_ERR_INVALID, "%s(%s)", name, t->name);
		return NULL;
	}
	return ts_compute(ctx, name, t->ndim, dims, v, body);
}

/* ---- padding ------------------------------------------------------------------ */

/* Each side's test is a likely() hint: the loops that read a padding
 * inlined are partitioned (schedule/passes/loop_partition.c) into borders
 * that keep the test and an interior without it or the clamps.  *cond
 * gains it (NULL: no test yet); false when a part could not be built, so
 * that a test is never dropped for a read without it. */
static bool add_test(ts_ctx *ctx, ts_expr **cond, ts_expr *test)
{
	ts_expr *t = test ? ts_call(ctx, IR_INTRIN_LIKELY, 1, &test) : NULL;
	if (!t)
		return false;
	*cond = *cond ? ts_and(ctx, *cond, t) : t;
	return *cond != NULL;
}

/* *cond gains the tests that index v of a dimension padded by (pb, pa)
 * over n lies inside it: v >= pb, v < pb + n, on the sides with padding.
 * false when a test could not be built. */
static bool pad_tests(ts_ctx *ctx, ts_expr *v, int64_t pb, int64_t pa, int64_t n, ts_expr **cond)
{
	return (!pb || add_test(ctx, cond, ts_ge(ctx, v, fe_index(ctx, pb)))) &&
	       (!pa || add_test(ctx, cond, ts_lt(ctx, v, fe_index(ctx, pb + n))));
}

/* Index into X for output index v of a dimension padded by (pb, pa): v - pb,
 * clamped into [0, n) on the sides that have padding; *cond gains the test
 * that v - pb is inside.  NULL when an expression could not be built. */
static ts_expr *pad_index(ts_ctx *ctx, ts_expr *v, int64_t pb, int64_t pa, int64_t n,
			  ts_expr **cond)
{
	if (!pad_tests(ctx, v, pb, pa, n, cond))
		return NULL;
	ts_expr *ix = pb ? ts_max(ctx, ts_sub(ctx, v, fe_index(ctx, pb)), fe_index(ctx, 0)) : v;
	return pa ? ts_min(ctx, ix, fe_index(ctx, n - 1)) : ix;
}

static bool check_pads(ts_ctx *ctx, const ts_tensor *X, const int64_t *pb, const int64_t *pa)
{
	if (!pb || !pa) {
		ts_error(ctx, TS_ERR_INVALID, "pad: %s: padding arrays are NULL", fe_shape_str(ctx, X));
		return false;
	}
	for (int d = 0; d < X->ndim; d++) {
		if (X->dim_var[d] && (pb[d] || pa[d])) {
			ts_error(ctx, TS_ERR_INVALID,
				 "pad: %s: dimension %d has the symbolic extent %s; a padded dimension "
				 "needs a constant extent", fe_shape_str(ctx, X), d, X->dim_var[d]->u.var.name);
			return false;
		}
		if (pb[d] < 0 || pa[d] < 0) {
			ts_error(ctx, TS_ERR_INVALID, "pad: %s: padding (%lld, %lld) of dimension %d is negative",
				 fe_shape_str(ctx, X), (long long)pb[d], (long long)pa[d], d);
			return false;
		}
		int64_t ext;
		if (__builtin_add_overflow(X->shape[d], pb[d], &ext) ||
		    __builtin_add_overflow(ext, pa[d], &ext)) {
			ts_error(ctx, TS_ERR_INVALID,
				 "pad: %s: padding (%lld, %lld) of dimension %d overflows its extent",
				 fe_shape_str(ctx, X), (long long)pb[d], (long long)pa[d], d);
			return false;
		}
	}
	return true;
}

/* Whether v is one of dtype t's values exactly; a float dtype takes any
 * value it can round to, so not a finite one past its largest (1e10 in
 * float16 would pad with infinity). */
static bool value_fits(ts_dtype t, double v)
{
	double lo, top;
	if (!ir_int_range(t, &lo, &top))
		return !isfinite(v) || isfinite(ir_round_float(t, v));
	return v == trunc(v) && v >= lo && v < top;
}

ts_tensor *ts_op_pad(ts_ctx *ctx, ts_tensor *X, const int64_t *pad_before,
		     const int64_t *pad_after, double value)
{
	if (!fe_check_inputs(ctx, "pad", 1, &X) || !check_pads(ctx, X, pad_before, pad_after))
		return NULL;
	if (!value_fits(X->dtype, value)) {
		char b[24];
		ts_error(ctx, TS_ERR_INVALID, "pad: %s: the value %g is not a %s value", fe_shape_str(ctx, X),
			 value, ts_dtype_str(X->dtype, b));
		return NULL;
	}
	ts_expr *v[TS_MAX_DIMS], *ix[TS_MAX_DIMS], *cond = NULL;
	int64_t shape[TS_MAX_DIMS];
	if (!fe_vars(ctx, X->ndim, NULL, v))
		return NULL;
	for (int d = 0; d < X->ndim; d++) {
		/* an unpadded dimension keeps its extent, symbolic or not */
		shape[d] = pad_before[d] || pad_after[d] ? X->shape[d] + pad_before[d] + pad_after[d]
							 : ts_tensor_dim(X, d);
		ix[d] = pad_index(ctx, v[d], pad_before[d], pad_after[d], X->shape[d], &cond);
		if (!ix[d])
			return NULL;
	}
	ts_expr *body = fe_read(ctx, X, ix);
	if (cond) /* the read is clamped, so both arms are safe to evaluate */
		body = ts_select(ctx, cond, body, ts_make_const(ctx, X->dtype, value));
	return ts_compute(ctx, "pad", X->ndim, shape, v, body);
}

/* term where window position (ih, iw) of X's spatial dimensions h_dim and
 * h_dim + 1 lies inside X, else -0.0, the exact identity of a float sum:
 * a sum over the window then leaves out the taps that fall in the
 * padding.  The test is fe_pad_spatial's, likely() side by side, built
 * the same way, so that the padding's select (once inlined) and this one
 * are one test to loop_partition and to the simplifier.  NULL when an
 * expression could not be built. */
ts_expr *fe_skip_padding(ts_ctx *ctx, ts_expr *term, const ts_tensor *X, int h_dim, ts_expr *ih,
			 ts_expr *iw, int pad_h, int pad_w)
{
	ts_expr *cond = NULL, *ix[2] = {ih, iw};
	int pad[2] = {pad_h, pad_w};
	if (!term || !ih || !iw)
		return NULL;
	for (int d = 0; d < 2; d++)
		if (!pad_tests(ctx, ix[d], pad[d], pad[d], X->shape[h_dim + d], &cond))
			return NULL;
	return cond ? ts_select(ctx, cond, term, ts_make_const(ctx, term->dtype, -0.0)) : term;
}

ts_tensor *fe_pad_spatial(ts_ctx *ctx, ts_tensor *X, int h_dim, int pad_h, int pad_w,
			  double value)
{
	if (!pad_h && !pad_w)
		return X;
	int64_t pads[TS_MAX_DIMS] = {0};
	pads[h_dim] = pad_h;
	pads[h_dim + 1] = pad_w;
	return ts_op_pad(ctx, X, pads, pads, value);
}
