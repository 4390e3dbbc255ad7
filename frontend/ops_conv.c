/*
 * ops_conv.c - 2-D convolutions (NCHW, NHWC, depthwise, blocked NCHW[x]c)
 * and the layout transforms of the blocked form (contracts in ops.h).
 *
 * Every convolution is a padding stage (omitted when there is no padding)
 * and one reduction over input channels and the kernel window.  The input
 * row read by output row y and kernel row ry is y*stride + ry*dilation of
 * the padded input, so no bounds test remains in the reduction.
 */
#include "ops_util.h"

/* Strides, paddings and dilations of the two spatial dimensions, and the
 * output extents they give. */
typedef struct conv_geom {
	int stride[2], pad[2], dil[2];
	int64_t out[2];
} conv_geom;

static conv_geom geom(int sh, int sw, int ph, int pw, int dh, int dw)
{
	return (conv_geom){{sh, sw}, {ph, pw}, {dh, dw}, {0, 0}};
}

/* Checks the windows of in[0..1] by kernel k[0..1]; fills g->out. */
static bool conv_windows(ts_ctx *ctx, const char *op, const int64_t *in, const int64_t *k,
			 conv_geom *g)
{
	return fe_window_extent(ctx, op, "height", in[0], k[0], g->stride[0], g->pad[0], g->dil[0],
				&g->out[0]) &&
	       fe_window_extent(ctx, op, "width", in[1], k[1], g->stride[1], g->pad[1], g->dil[1],
				&g->out[1]);
}

/* Checks C, O against groups and the filter's input channels. */
static bool check_groups(ts_ctx *ctx, const char *op, const ts_tensor *X, const ts_tensor *W,
			 int64_t c, int64_t o, int64_t wc, int groups)
{
	if (groups < 1 || c % groups || o % groups) {
		ts_error(ctx, TS_ERR_INVALID,
			 "%s: groups %d must divide the %lld input and %lld output channels (%s, %s)",
			 op, groups, (long long)c, (long long)o, fe_shape_str(ctx, X),
			 fe_shape_str(ctx, W));
		return false;
	}
	if (wc != c / groups) {
		ts_error(ctx, TS_ERR_INVALID,
			 "%s: %s has %lld input channels per group, %s has %lld / %d groups", op,
			 fe_shape_str(ctx, W), (long long)wc, fe_shape_str(ctx, X), (long long)c,
			 groups);
		return false;
	}
	return true;
}

static bool conv_inputs(ts_ctx *ctx, const char *op, ts_tensor *X, ts_tensor *W, int wdims)
{
	return fe_check_inputs(ctx, op, 2, (ts_tensor *[]){X, W}) &&
	       fe_check_ndim(ctx, op, X, wdims == 6 ? 5 : 4) && fe_check_ndim(ctx, op, W, wdims) &&
	       fe_check_same_dtype(ctx, op, X, W) && fe_check_numeric(ctx, op, X) &&
	       fe_check_constant(ctx, op, X) &&
	       fe_check_constant(ctx, op, W);
}

/* The input channel read by output channel o at reduction channel rc. */
static ts_expr *group_channel(ts_ctx *ctx, ts_expr *o, ts_expr *rc, int64_t o_per_group,
			      int64_t c_per_group, int groups)
{
	if (groups == 1)
		return rc;
	ts_expr *g = ts_floordiv(ctx, o, fe_index(ctx, o_per_group));
	return ts_add(ctx, fe_scale(ctx, g, c_per_group), rc);
}

/* The reduction axes rc, ry, rx of a convolution. */
static bool conv_axes(ts_ctx *ctx, int64_t c, const int64_t *k, ts_iter **r)
{
	r[0] = c ? ts_reduce_axis(ctx, "rc", 0, c) : NULL;
	r[1] = ts_reduce_axis(ctx, "ry", 0, k[0]);
	r[2] = ts_reduce_axis(ctx, "rx", 0, k[1]);
	return (r[0] || !c) && r[1] && r[2];
}

/* ---- NCHW and NHWC ------------------------------------------------------------ */

ts_tensor *ts_op_conv2d_nchw(ts_ctx *ctx, ts_tensor *X, ts_tensor *W, int stride_h,
			     int stride_w, int pad_h, int pad_w, int dilation_h,
			     int dilation_w, int groups)
{
	const char *op = "conv2d_nchw";
	conv_geom g = geom(stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w);
	if (!conv_inputs(ctx, op, X, W, 4) ||
	    !check_groups(ctx, op, X, W, X->shape[1], W->shape[0], W->shape[1], groups) ||
	    !conv_windows(ctx, op, X->shape + 2, W->shape + 2, &g))
		return NULL;
	static const char *const names[] = {"n", "o", "y", "x"};
	ts_expr *v[4];
	ts_iter *r[3];
	ts_tensor *P = fe_pad_spatial(ctx, X, 2, pad_h, pad_w, 0);
	if (!P || !conv_axes(ctx, W->shape[1], W->shape + 2, r) || !fe_vars(ctx, 4, names, v))
		return NULL;
	ts_expr *ch = group_channel(ctx, v[1], r[0]->var, W->shape[0] / groups, W->shape[1], groups);
	ts_expr *in = TS_READ(ctx, P, v[0], ch, fe_window(ctx, v[2], g.stride[0], r[1]->var, g.dil[0]),
			      fe_window(ctx, v[3], g.stride[1], r[2]->var, g.dil[1]));
	ts_expr *w = TS_READ(ctx, W, v[1], r[0]->var, r[1]->var, r[2]->var);
	return ts_compute(ctx, op, TS_SHAPE(X->shape[0], W->shape[0], g.out[0], g.out[1]), v,
			  TS_SUM(ctx, ts_mul(ctx, in, w), r[0], r[1], r[2]));
}

ts_tensor *ts_op_conv2d_nhwc(ts_ctx *ctx, ts_tensor *X, ts_tensor *W, int stride_h,
			     int stride_w, int pad_h, int pad_w, int dilation_h,
			     int dilation_w, int groups)
{
	const char *op = "conv2d_nhwc";
	conv_geom g = geom(stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w);
	if (!conv_inputs(ctx, op, X, W, 4) ||
	    !check_groups(ctx, op, X, W, X->shape[3], W->shape[3], W->shape[2], groups) ||
	    !conv_windows(ctx, op, X->shape + 1, W->shape, &g))
		return NULL;
	static const char *const names[] = {"n", "y", "x", "o"};
	ts_expr *v[4];
	ts_iter *r[3];
	ts_tensor *P = fe_pad_spatial(ctx, X, 1, pad_h, pad_w, 0);
	if (!P || !conv_axes(ctx, W->shape[2], W->shape, r) || !fe_vars(ctx, 4, names, v))
		return NULL;
	ts_expr *ch = group_channel(ctx, v[3], r[0]->var, W->shape[3] / groups, W->shape[2], groups);
	ts_expr *in = TS_READ(ctx, P, v[0], fe_window(ctx, v[1], g.stride[0], r[1]->var, g.dil[0]),
			      fe_window(ctx, v[2], g.stride[1], r[2]->var, g.dil[1]), ch);
	ts_expr *w = TS_READ(ctx, W, r[1]->var, r[2]->var, r[0]->var, v[3]);
	return ts_compute(ctx, op, TS_SHAPE(X->shape[0], g.out[0], g.out[1], W->shape[3]), v,
			  TS_SUM(ctx, ts_mul(ctx, in, w), r[0], r[1], r[2]));
}

ts_tensor *ts_op_depthwise_conv2d_nchw(ts_ctx *ctx, ts_tensor *X, ts_tensor *W,
				       int stride_h, int stride_w, int pad_h, int pad_w,
				       int dilation_h, int dilation_w)
{
	const char *op = "depthwise_conv2d_nchw";
	conv_geom g = geom(stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w);
	if (!conv_inputs(ctx, op, X, W, 4) || !conv_windows(ctx, op, X->shape + 2, W->shape + 2, &g))
		return NULL;
	if (W->shape[0] != X->shape[1]) {
		ts_error(ctx, TS_ERR_INVALID, "%s: %s needs one filter group per channel of %s", op,
			 fe_shape_str(ctx, W), fe_shape_str(ctx, X));
		return NULL;
	}
	static const char *const names[] = {"n", "c", "y", "x"};
	int64_t mult = W->shape[1];
	ts_expr *v[4];
	ts_iter *r[3];
	ts_tensor *P = fe_pad_spatial(ctx, X, 2, pad_h, pad_w, 0);
	if (!P || !conv_axes(ctx, 0, W->shape + 2, r) || !fe_vars(ctx, 4, names, v))
		return NULL;
	ts_expr *c = mult == 1 ? v[1] : ts_floordiv(ctx, v[1], fe_index(ctx, mult));
	ts_expr *m = mult == 1 ? fe_index(ctx, 0) : ts_floormod(ctx, v[1], fe_index(ctx, mult));
	ts_expr *in = TS_READ(ctx, P, v[0], c, fe_window(ctx, v[2], g.stride[0], r[1]->var, g.dil[0]),
			      fe_window(ctx, v[3], g.stride[1], r[2]->var, g.dil[1]));
	ts_expr *w = TS_READ(ctx, W, c, m, r[1]->var, r[2]->var);
	return ts_compute(ctx, op, TS_SHAPE(X->shape[0], X->shape[1] * mult, g.out[0], g.out[1]), v,
			  TS_SUM(ctx, ts_mul(ctx, in, w), r[1], r[2]));
}

/* ---- the blocked layout NCHW[x]c ------------------------------------------------- */

static bool check_block(ts_ctx *ctx, const char *op, const ts_tensor *t, const char *what,
			int64_t channels, int block)
{
	if (block >= 1 && channels % block == 0)
		return true;
	ts_error(ctx, TS_ERR_INVALID, "%s: block %d does not divide the %lld %s channels of %s", op,
		 block, (long long)channels, what, fe_shape_str(ctx, t));
	return false;
}

/* co*block + ci */
static ts_expr *unblock(ts_ctx *ctx, ts_expr *co, ts_expr *ci, int64_t block)
{
	return ts_add(ctx, fe_scale(ctx, co, block), ci);
}

ts_tensor *ts_op_layout_nchw_to_nchwc(ts_ctx *ctx, ts_tensor *X, int c_block)
{
	const char *op = "layout_nchw_to_nchwc";
	if (!fe_check_inputs(ctx, op, 1, &X) || !fe_check_ndim(ctx, op, X, 4) ||
	    !fe_check_constant(ctx, op, X) ||
	    !check_block(ctx, op, X, "input", X->shape[1], c_block))
		return NULL;
	static const char *const names[] = {"n", "co", "h", "w", "ci"};
	ts_expr *v[5];
	if (!fe_vars(ctx, 5, names, v))
		return NULL;
	ts_expr *body = TS_READ(ctx, X, v[0], unblock(ctx, v[1], v[4], c_block), v[2], v[3]);
	return ts_compute(ctx, "nchw_to_nchwc",
			  TS_SHAPE(X->shape[0], X->shape[1] / c_block, X->shape[2], X->shape[3],
				   c_block), v, body);
}

ts_tensor *ts_op_layout_nchwc_to_nchw(ts_ctx *ctx, ts_tensor *Xc)
{
	const char *op = "layout_nchwc_to_nchw";
	if (!fe_check_inputs(ctx, op, 1, &Xc) || !fe_check_ndim(ctx, op, Xc, 5) ||
	    !fe_check_constant(ctx, op, Xc))
		return NULL;
	static const char *const names[] = {"n", "c", "h", "w"};
	ts_expr *v[4];
	if (!fe_vars(ctx, 4, names, v))
		return NULL;
	ts_expr *block = fe_index(ctx, Xc->shape[4]);
	ts_expr *body = TS_READ(ctx, Xc, v[0], ts_floordiv(ctx, v[1], block), v[2], v[3],
				ts_floormod(ctx, v[1], block));
	return ts_compute(ctx, "nchwc_to_nchw",
			  TS_SHAPE(Xc->shape[0], Xc->shape[1] * Xc->shape[4], Xc->shape[2],
				   Xc->shape[3]), v, body);
}

ts_tensor *ts_op_weight_oihw_to_blocked(ts_ctx *ctx, ts_tensor *W, int i_block, int o_block)
{
	const char *op = "weight_oihw_to_blocked";
	if (!fe_check_inputs(ctx, op, 1, &W) || !fe_check_ndim(ctx, op, W, 4) ||
	    !fe_check_constant(ctx, op, W) ||
	    !check_block(ctx, op, W, "input", W->shape[1], i_block) ||
	    !check_block(ctx, op, W, "output", W->shape[0], o_block))
		return NULL;
	static const char *const names[] = {"oo", "io", "kh", "kw", "ii", "oi"};
	ts_expr *v[6];
	if (!fe_vars(ctx, 6, names, v))
		return NULL;
	ts_expr *body = TS_READ(ctx, W, unblock(ctx, v[0], v[5], o_block),
				unblock(ctx, v[1], v[4], i_block), v[2], v[3]);
	return ts_compute(ctx, "weight_blocked",
			  TS_SHAPE(W->shape[0] / o_block, W->shape[1] / i_block, W->shape[2],
				   W->shape[3], i_block, o_block), v, body);
}

static bool check_nchwc(ts_ctx *ctx, const char *op, const ts_tensor *Xc, const ts_tensor *Wc)
{
	if (Wc->shape[1] == Xc->shape[1] && Wc->shape[4] == Xc->shape[4])
		return true;
	ts_error(ctx, TS_ERR_INVALID,
		 "%s: input channel blocks differ: %s has %lld x %lld, %s has %lld x %lld", op,
		 fe_shape_str(ctx, Xc), (long long)Xc->shape[1], (long long)Xc->shape[4],
		 fe_shape_str(ctx, Wc), (long long)Wc->shape[1], (long long)Wc->shape[4]);
	return false;
}

ts_tensor *ts_op_conv2d_nchwc(ts_ctx *ctx, ts_tensor *Xc, ts_tensor *Wc, int stride_h,
			      int stride_w, int pad_h, int pad_w, int dilation_h,
			      int dilation_w)
{
	const char *op = "conv2d_nchwc";
	conv_geom g = geom(stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w);
	if (!conv_inputs(ctx, op, Xc, Wc, 6) || !check_nchwc(ctx, op, Xc, Wc) ||
	    !conv_windows(ctx, op, Xc->shape + 2, Wc->shape + 2, &g))
		return NULL;
	static const char *const names[] = {"n", "oo", "y", "x", "oi"};
	ts_expr *v[5];
	ts_iter *r[3];
	ts_iter *rci = ts_reduce_axis(ctx, "rci", 0, Xc->shape[4]);
	ts_tensor *P = fe_pad_spatial(ctx, Xc, 2, pad_h, pad_w, 0);
	if (!P || !rci || !conv_axes(ctx, Xc->shape[1], Wc->shape + 2, r) ||
	    !fe_vars(ctx, 5, names, v))
		return NULL;
	ts_expr *ih = fe_window(ctx, v[2], g.stride[0], r[1]->var, g.dil[0]),
		*iw = fe_window(ctx, v[3], g.stride[1], r[2]->var, g.dil[1]);
	ts_expr *in = TS_READ(ctx, P, v[0], r[0]->var, ih, iw, rci->var);
	ts_expr *w = TS_READ(ctx, Wc, v[1], r[0]->var, r[1]->var, r[2]->var, rci->var, v[4]);
	/* the padding's taps are left out of the sum (as oneDNN leaves
	 * them): equal to adding its zeros for finite weights, and the
	 * border blocks loop_partition splits off skip them */
	ts_expr *tap = fe_skip_padding(ctx, ts_mul(ctx, in, w), Xc, 2, ih, iw, pad_h, pad_w);
	return ts_compute(ctx, op,
			  TS_SHAPE(Xc->shape[0], Wc->shape[0], g.out[0], g.out[1], Wc->shape[5]), v,
			  TS_SUM(ctx, tap, r[0], r[1], r[2], rci));
}

/* Wc[C/x, KH, KW, x] against Xc[N, C/x, H, W, x]: the same channel blocks. */
static bool check_depthwise_nchwc(ts_ctx *ctx, const char *op, const ts_tensor *Xc,
				  const ts_tensor *Wc)
{
	if (Wc->shape[0] == Xc->shape[1] && Wc->shape[3] == Xc->shape[4])
		return true;
	ts_error(ctx, TS_ERR_INVALID,
		 "%s: channel blocks differ: %s has %lld x %lld, %s has %lld x %lld (one filter per "
		 "channel)", op, fe_shape_str(ctx, Xc), (long long)Xc->shape[1],
		 (long long)Xc->shape[4], fe_shape_str(ctx, Wc), (long long)Wc->shape[0],
		 (long long)Wc->shape[3]);
	return false;
}

ts_tensor *ts_op_depthwise_conv2d_nchwc(ts_ctx *ctx, ts_tensor *Xc, ts_tensor *Wc,
					int stride_h, int stride_w, int pad_h, int pad_w,
					int dilation_h, int dilation_w)
{
	const char *op = "depthwise_conv2d_nchwc";
	conv_geom g = geom(stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w);
	if (!fe_check_inputs(ctx, op, 2, (ts_tensor *[]){Xc, Wc}) || !fe_check_ndim(ctx, op, Xc, 5) ||
	    !fe_check_ndim(ctx, op, Wc, 4) || !fe_check_same_dtype(ctx, op, Xc, Wc) ||
	    !fe_check_numeric(ctx, op, Xc) ||
	    !fe_check_constant(ctx, op, Xc) || !fe_check_constant(ctx, op, Wc) ||
	    !check_depthwise_nchwc(ctx, op, Xc, Wc) ||
	    !conv_windows(ctx, op, Xc->shape + 2, Wc->shape + 1, &g))
		return NULL;
	static const char *const names[] = {"n", "cb", "y", "x", "ci"};
	ts_expr *v[5];
	ts_iter *r[3];
	ts_tensor *P = fe_pad_spatial(ctx, Xc, 2, pad_h, pad_w, 0);
	if (!P || !conv_axes(ctx, 0, Wc->shape + 1, r) || !fe_vars(ctx, 5, names, v))
		return NULL;
	ts_expr *in = TS_READ(ctx, P, v[0], v[1],
			      fe_window(ctx, v[2], g.stride[0], r[1]->var, g.dil[0]),
			      fe_window(ctx, v[3], g.stride[1], r[2]->var, g.dil[1]), v[4]);
	ts_expr *w = TS_READ(ctx, Wc, v[1], r[1]->var, r[2]->var, v[4]);
	return ts_compute(ctx, op,
			  TS_SHAPE(Xc->shape[0], Xc->shape[1], g.out[0], g.out[1], Xc->shape[4]), v,
			  TS_SUM(ctx, ts_mul(ctx, in, w), r[1], r[2]));
}
