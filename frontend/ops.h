/*
 * ops.h - an operator library built on ts_compute (TVM topi style).
 *
 * Every operator returns a compute tensor (NULL with an error on a bad
 * argument) whose graph can be scheduled, lowered and checked against
 * ts_eval like any hand-written compute.  Conventions:
 *   - Outputs have the inputs' dtype; float reductions are accumulated
 *     by the evaluator in float64.
 *   - Tensors get default names ("matmul", "pad", "conv2d_nchw", ...);
 *     callers name them with ts_rename(ctx, ts_op_relu(ctx, X), "Y").
 *     Multi-stage operators name their inner stages after the operator
 *     ("softmax_max", "softmax_exp", ...).
 *   - Errors name the operator and the offending shapes:
 *     "matmul: inner extents differ: A[13, 17] x B[18, 19] (17 vs 18)".
 *   - Padding is a separate stage (ts_op_pad) built from select() with
 *     clamped reads, so both arms of the select stay in bounds: a backend
 *     may evaluate both, as ir.h allows.
 *   - 2-D convolution and pooling take strides, paddings (the same before
 *     and after) and dilations per spatial dimension, each >= 1 (padding
 *     >= 0).  Output extent: (in + 2*pad - dilation*(kernel - 1) - 1) /
 *     stride + 1, rounded down.
 *
 * Blocked layouts:
 *   NCHW[x]c   activations [N, C/x, H, W, x]:  Xc[n, co, h, w, ci] =
 *              X[n, co*x + ci, h, w].
 *   OIHW[x]i[y]o weights [O/y, I/x, KH, KW, x, y]: Wc[oo, io, kh, kw, ii, oi] =
 *              W[oo*y + oi, io*x + ii, kh, kw].  The innermost dimension is
 *              the output-channel block, so a vector over oi reads contiguous
 *              weights while one input element is broadcast.
 *   Block sizes must divide the channel counts.
 */
#ifndef TESSERA_FRONTEND_OPS_H
#define TESSERA_FRONTEND_OPS_H

#include <stdbool.h>

#include "te.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- linear algebra ------------------------------------------------------- */

/* C[M, N] = sum_k A'[M, K] * B'[K, N], where A' is A, or A transposed (A is
 * [K, M]) when transA, and likewise B' (B is [N, K] when transB). */
ts_tensor *ts_op_matmul(ts_ctx *ctx, ts_tensor *A, ts_tensor *B, bool transA, bool transB);
/* ts_op_matmul with each operand cast to out_dtype (TVM's out_dtype), so
 * the product accumulates and is returned in it: float16 or bfloat16
 * operands with a float32 result is the tensor-core GEMM's compute
 * (ts_schedule_matmul_tensorcore).  out_dtype is a scalar float type at
 * least as wide as the operands' (their own, or wider: float16 and
 * bfloat16 do not hold each other's values).  3-D operands A[b, ., .] and
 * B[b, ., .] give the batched product C[b, M, N], as ts_op_batch_matmul. */
ts_tensor *ts_op_matmul_acc(ts_ctx *ctx, ts_tensor *A, ts_tensor *B, bool transA, bool transB,
			    ts_dtype out_dtype);
/* ts_op_matmul of float32 A and B with each operand rounded to TF32 first
 * (ts_round_tf32: 10 mantissa bits), the products exact and summed in
 * float32: what tensor cores compute for a float32 GEMM in TF32 mode
 * (ts_schedule_matmul_tensorcore), a relative error of about 2^-11 per
 * operand that the plain matmul does not have.  3-D operands give the
 * batched product, as ts_op_matmul_acc's. */
ts_tensor *ts_op_matmul_tf32(ts_ctx *ctx, ts_tensor *A, ts_tensor *B, bool transA, bool transB);
/* The same per batch: A[b, ., .], B[b, ., .] -> C[b, M, N]; equal batches. */
ts_tensor *ts_op_batch_matmul(ts_ctx *ctx, ts_tensor *A, ts_tensor *B, bool transA,
			      bool transB);
/* Y[M, N] = sum_k X[M, K] * W[N, K] (+ bias[N] when bias is not NULL; then
 * a second stage "dense_bias" adds it). */
ts_tensor *ts_op_dense(ts_ctx *ctx, ts_tensor *X, ts_tensor *W, ts_tensor *bias);

/* ---- elementwise ------------------------------------------------------------ */

ts_tensor *ts_op_relu(ts_ctx *ctx, ts_tensor *X);                 /* max(x, 0) */
ts_tensor *ts_op_add(ts_ctx *ctx, ts_tensor *A, ts_tensor *B);    /* same shape */
/* X + bias[index along axis]; bias is 1-D with X's extent on that axis;
 * axis may be negative (counted from the end). */
ts_tensor *ts_op_bias_add(ts_ctx *ctx, ts_tensor *X, ts_tensor *bias, int axis);
/* Float only: x * Phi(x) with the erf form of the normal CDF, or, when
 * approximate, the tanh approximation (BERT's). */
ts_tensor *ts_op_gelu(ts_ctx *ctx, ts_tensor *X, bool approximate);
/* min(max(X, lo), hi), lo <= hi; on an integer dtype the integers inside
 * [lo, hi] (at least one of the dtype's values, else refused). */
ts_tensor *ts_op_clip(ts_ctx *ctx, ts_tensor *X, double lo, double hi);

/* Pads every dimension d of X with pad_before[d] and pad_after[d] elements
 * (each >= 0) of `value`, which must be one of X's dtype's values (an
 * integer dtype refuses 0.5 and values out of its range; a float dtype
 * rounds it, and refuses a finite value that would round to infinity,
 * such as 1e10 in float16). */
ts_tensor *ts_op_pad(ts_ctx *ctx, ts_tensor *X, const int64_t *pad_before,
		     const int64_t *pad_after, double value);

/* ---- convolution -------------------------------------------------------------- */

/* X[N, C, H, W] * W[O, C/groups, KH, KW] -> [N, O, OH, OW]; groups divide C
 * and O, output channel o reads the input channels of group o / (O/groups). */
ts_tensor *ts_op_conv2d_nchw(ts_ctx *ctx, ts_tensor *X, ts_tensor *W, int stride_h,
			     int stride_w, int pad_h, int pad_w, int dilation_h,
			     int dilation_w, int groups);
/* X[N, H, W, C] * W[KH, KW, C/groups, O] (HWIO) -> [N, OH, OW, O]. */
ts_tensor *ts_op_conv2d_nhwc(ts_ctx *ctx, ts_tensor *X, ts_tensor *W, int stride_h,
			     int stride_w, int pad_h, int pad_w, int dilation_h,
			     int dilation_w, int groups);
/* X[N, C, H, W] * W[C, M, KH, KW] -> [N, C*M, OH, OW]: output channel c*M + m
 * convolves input channel c with filter W[c, m] (M is the multiplier). */
ts_tensor *ts_op_depthwise_conv2d_nchw(ts_ctx *ctx, ts_tensor *X, ts_tensor *W,
				       int stride_h, int stride_w, int pad_h, int pad_w,
				       int dilation_h, int dilation_w);

/* NCHW <-> NCHW[c_block]c; c_block divides C. */
ts_tensor *ts_op_layout_nchw_to_nchwc(ts_ctx *ctx, ts_tensor *X, int c_block);
ts_tensor *ts_op_layout_nchwc_to_nchw(ts_ctx *ctx, ts_tensor *Xc);
/* OIHW -> OIHW[i_block]i[o_block]o; the blocks divide I and O. */
ts_tensor *ts_op_weight_oihw_to_blocked(ts_ctx *ctx, ts_tensor *W, int i_block, int o_block);
/* Xc[N, C/x, H, W, x] * Wc[O/y, C/x, KH, KW, x, y] -> [N, O/y, OH, OW, y].
 * Reduces over input-channel blocks, kernel rows, kernel columns and the
 * input-channel lane, in that order.  The taps that fall in the padding
 * are left out of the sum (as oneDNN leaves them out), not added as
 * products with zeros: the same result for finite weights, but a weight
 * of inf or NaN there reaches no output (ts_op_conv2d_nchw gives NaN).
 * The term is select(inside, x * w, -0.0), -0.0 being the exact identity
 * of a float sum; where loop_partition splits the border blocks off, the
 * skipped taps cost nothing (ResNet-50's 7x7 layer: 18% of the work). */
ts_tensor *ts_op_conv2d_nchwc(ts_ctx *ctx, ts_tensor *Xc, ts_tensor *Wc, int stride_h,
			      int stride_w, int pad_h, int pad_w, int dilation_h,
			      int dilation_w);
/* Depthwise (multiplier 1) on the blocked layout: Xc[N, C/x, H, W, x] *
 * Wc[C/x, KH, KW, x] -> [N, C/x, OH, OW, x], channel cb*x + ci convolved
 * with its own filter Wc[cb, :, :, ci].  Reduces over kernel rows, then
 * kernel columns; the x channels of a pixel are one vector. */
ts_tensor *ts_op_depthwise_conv2d_nchwc(ts_ctx *ctx, ts_tensor *Xc, ts_tensor *Wc,
					int stride_h, int stride_w, int pad_h, int pad_w,
					int dilation_h, int dilation_w);

/* ---- pooling, softmax and normalization ---------------------------------------- */

/* NCHW pooling over kernel_h x kernel_w windows; padding < kernel, so every
 * window holds an element of X.  Max pooling pads with -infinity (the
 * dtype's minimum for integers). */
ts_tensor *ts_op_max_pool2d(ts_ctx *ctx, ts_tensor *X, int kernel_h, int kernel_w,
			    int stride_h, int stride_w, int pad_h, int pad_w);
/* Float only: the window sum ("avg_pool2d_sum") divided by kernel_h*kernel_w,
 * or, without count_include_pad, by the number of elements inside X. */
ts_tensor *ts_op_avg_pool2d(ts_ctx *ctx, ts_tensor *X, int kernel_h, int kernel_w,
			    int stride_h, int stride_w, int pad_h, int pad_w,
			    bool count_include_pad);
/* Softmax over the last axis of a float tensor, in four stages:
 * m = max x, e = exp(x - m), s = sum e, y = e * (1 / s): one division
 * per row, which code hoists out of the row's loop, instead of one per
 * element (a vector division costs several multiplies; the result
 * differs from e / s by at most an ulp or two). */
ts_tensor *ts_op_softmax(ts_ctx *ctx, ts_tensor *X);
/* Layer normalization over the last axis (extent n) of a float X of any
 * rank, in three stages: the mean ("layer_norm_mean", sum (x - x0)/n, x0
 * the row's first element, so that rows far from zero keep their spread
 * in a float sum; unshifted for a symbolic n), the
 * variance about it ("layer_norm_var", sum (x - mean)^2/n: two passes, so
 * no cancellation as in the mean of squares minus the squared mean), and
 * y = (x - mean) * (1 / sqrt(var + epsilon)) * gamma + beta (one
 * division per row, as softmax).  gamma and beta are
 * 1-D of extent n, of X's dtype; beta may be NULL (no shift); epsilon is
 * positive and finite in X's dtype (refused where it rounds to 0 or to
 * infinity there). */
ts_tensor *ts_op_layer_norm(ts_ctx *ctx, ts_tensor *X, ts_tensor *gamma, ts_tensor *beta,
			    double epsilon);

/* ---- inner stages ------------------------------------------------------------- */

/* The compute tensor named `name` among those `out` depends on (out
 * included), so that a multi-stage operator's inner stages can be scheduled:
 *   ts_tensor *Y = ts_op_softmax(ctx, X);
 *   ts_stage *sum = ts_stage_of(s, ts_op_stage(Y, "softmax_sum"));
 * The nearest to out wins when several share the name.  NULL with an error
 * in out's context listing the stages that exist when none matches (or
 * naming the call when name is NULL); NULL out gives NULL with no context
 * to record a message in. */
ts_tensor *ts_op_stage(const ts_tensor *out, const char *name);

/* ---- packed GEMM (ops_gemm.c) --------------------------------------------------- */

/* C[M, N] = A[M, K] x B[K, N] computed from Bp[ceil(N / nr), K, nr], a
 * packed copy of B in panels of nr columns (zero beyond N); C->inputs holds
 * A and Bp, and Bp->inputs holds B. */
ts_tensor *ts_op_matmul_packed(ts_ctx *ctx, ts_tensor *A, ts_tensor *B, int64_t nr);

#ifdef __cplusplus
}
#endif

#endif
