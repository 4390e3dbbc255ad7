/*
 * ops_util.h - helpers shared by the operator files (ops.c, ops_conv.c):
 * argument checks whose messages name the operator and the shapes, fresh
 * axis variables, and the index arithmetic of sliding windows.
 */
#ifndef TESSERA_FRONTEND_OPS_UTIL_H
#define TESSERA_FRONTEND_OPS_UTIL_H

#include "ops.h"

/* "A[13, 17]": a tensor's name and shape, for messages (arena string). */
const char *fe_shape_str(ts_ctx *ctx, const ts_tensor *t);

/* The extents of t as the frontend takes them (ts_tensor_dim: a size
 * variable's handle, or the constant); out holds TS_MAX_DIMS. */
void fe_dims(const ts_tensor *t, int64_t *out);
/* Extent d of t for a message: its size variable's name or the number. */
const char *fe_dim_str(ts_ctx *ctx, const ts_tensor *t, int d);

/* Refuses a t with a size-variable extent (te.h ts_size_var): operators
 * whose output extents are arithmetic on their inputs' (windows, padding,
 * layouts, packing) need constants.
 *   conv2d_nchw: X[n, 3, 8, 8] has the symbolic extent n; conv2d_nchw needs constant extents */
bool fe_check_constant(ts_ctx *ctx, const char *op, const ts_tensor *t);

/* Each false return has recorded an error starting with "<op>: ". */
bool fe_check_inputs(ts_ctx *ctx, const char *op, int n, ts_tensor *const *ts);
bool fe_check_ndim(ts_ctx *ctx, const char *op, const ts_tensor *t, int ndim);
bool fe_check_same_dtype(ts_ctx *ctx, const char *op, const ts_tensor *a, const ts_tensor *b);
/* Refuses bool: the operators that multiply, add or compare their
 * elements name themselves, not the expression builder's mul or max. */
bool fe_check_numeric(ts_ctx *ctx, const char *op, const ts_tensor *t);
bool fe_check_float(ts_ctx *ctx, const char *op, const ts_tensor *t);
/* Checks stride >= 1, dilation >= 1, pad >= 0 and a window that fits; sets
 * *out to the output extent of spatial dimension `dim` ("height"). */
bool fe_window_extent(ts_ctx *ctx, const char *op, const char *dim, int64_t in, int64_t k,
		      int stride, int pad, int dilation, int64_t *out);

/* n fresh int32 variables named names[0..n) (NULL: ax0, ax1, ...). */
bool fe_vars(ts_ctx *ctx, int n, const char *const *names, ts_expr **out);
/* t[idx[0], ..., idx[t->ndim - 1]]. */
ts_expr *fe_read(ts_ctx *ctx, ts_tensor *t, ts_expr *const *idx);
/* out*stride + r*dilation, without multiplications by 1. */
ts_expr *fe_window(ts_ctx *ctx, ts_expr *out, int64_t stride, ts_expr *r, int64_t dilation);
/* The index constant v: int32 where it fits, else int64 (an int32 index
 * variable combined with it widens), so operators over dimensions of 2^31
 * or more build instead of refusing the constant. */
ts_expr *fe_index(ts_ctx *ctx, int64_t v);
/* x*c without a multiplication by 1. */
ts_expr *fe_scale(ts_ctx *ctx, ts_expr *x, int64_t c);
/* A compute over t's shape whose body is fn(t[vars], k) (elementwise). */
typedef ts_expr *(*fe_map_fn)(ts_ctx *ctx, ts_expr *x, ts_expr *const *vars, const void *k);
ts_tensor *fe_map(ts_ctx *ctx, const char *name, ts_tensor *t, fe_map_fn fn, const void *k);

/* Pads the two spatial dimensions h_dim, h_dim + 1 of X on both sides;
 * returns X itself when there is no padding. */
ts_tensor *fe_pad_spatial(ts_ctx *ctx, ts_tensor *X, int h_dim, int pad_h, int pad_w,
			  double value);
/* term, or -0.0 where window position (ih, iw) of X's spatial dimensions
 * (h_dim, h_dim + 1), padded by (pad_h, pad_w) on each side, falls in the
 * padding: a convolution's sum without the padding's taps. */
ts_expr *fe_skip_padding(ts_ctx *ctx, ts_expr *term, const ts_tensor *X, int h_dim, ts_expr *ih,
			 ts_expr *iw, int pad_h, int pad_w);

#endif
