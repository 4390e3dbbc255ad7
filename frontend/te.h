/*
 * te.h - the tensor-expression frontend, TVM-TE style.
 *
 *   ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(M, K), ts_float32);
 *   ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(K, N), ts_float32);
 *   ts_iter *k = ts_reduce_axis(ctx, "k", 0, K);
 *   ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
 *   ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(M, N), TS_VARS(i, j),
 *       TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, A, i, k->var), TS_READ(ctx, B, k->var, j)), k));
 *
 * Shapes are positive constants or size variables.  ts_compute checks the body: every tensor it
 * reads exists with the right number of indices, a reduction appears only at
 * the top of the body, and a reduction axis is used only inside the
 * reduction that owns it (never as an index variable of a compute, nor
 * as a data index outside its sum).  Errors name the tensor and the rule
 * broken.
 */
#ifndef TESSERA_FRONTEND_TE_H
#define TESSERA_FRONTEND_TE_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TS_NARGS_I64(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
/* Expands to the (ndim, shape) argument pair. */
#define TS_SHAPE(...) TS_NARGS_I64(__VA_ARGS__), (const int64_t[]){__VA_ARGS__}
/* Expands to an array of index variables for ts_compute. */
#define TS_VARS(...) (ts_expr *const[]){__VA_ARGS__}

ts_tensor *ts_placeholder(ts_ctx *ctx, const char *name, int ndim, const int64_t *shape,
			  ts_dtype dtype);

/* Symbolic shapes (TVM's te.var("n") in a shape, Halide's unbounded input):
 *
 *   int64_t n = ts_size_var(ctx, "n", 4096);        // 1 <= n <= 4096
 *   ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(n, 64), ts_float32);
 *
 * A size variable stands for an extent fixed at each call: a function
 * lowered once runs on arrays of any extent from 1 to max there, the value
 * read off the arrays (ts_module_run checks that every array agrees).  The
 * returned value is a handle, usable wherever a shape extent or a reduction
 * extent is (TS_SHAPE, ts_reduce_axis); it is a large negative number, so
 * arithmetic on it is meaningless: n + 1 is refused where a shape is
 * taken ("arithmetic on a size variable"), and any call taking a plain
 * extent (a split factor, a pad width) refuses a handle.  Returns 0 on
 * error (empty name, a name another size variable of the context has,
 * max outside 1..2^40, TS_MAX_SIZE_VARS taken).
 *
 * A dimension of size n may only be indexed by an axis that ranges over n
 * itself (ts_lower refuses anything else, because the bound cannot be
 * proved for every n).  Loops over n run to the value given at the call,
 * their tiles guarded at the edge; ts_lower_specialize compiles a twin with
 * constant extents.  CPU targets only: a CUDA build refuses a function with
 * size variables. */
int64_t ts_size_var(ts_ctx *ctx, const char *name, int64_t max);
/* Whether v is a size-variable handle (of some context). */
int ts_is_size_var(int64_t v);
/* The variable a handle stands for, to use n in an expression (a mean
 * divides by it): int32 when max fits, else int64.  For a plain extent,
 * that constant.  NULL (with an error) for a handle of no size variable. */
ts_expr *ts_size_expr(ts_ctx *ctx, int64_t size);
/* Extent d of t as given to the frontend: the handle of a size variable,
 * or the constant.  Operators pass it on to the tensors they build, so a
 * matmul of A[n, k] is C[n, m].  0 for a NULL tensor or d out of range. */
int64_t ts_tensor_dim(const ts_tensor *t, int d);

/* A reduction axis over [min, min + extent). */
ts_iter *ts_reduce_axis(ts_ctx *ctx, const char *name, int64_t min, int64_t extent);

/* A tensor whose element (vars[0], ..., vars[ndim-1]) is body.  The vars
 * become the data-parallel axes of the compute (their ranges are the shape);
 * the dtype is the body's. */
ts_tensor *ts_compute(ts_ctx *ctx, const char *name, int ndim, const int64_t *shape,
		      ts_expr *const *vars, ts_expr *body);

/* ts_compute with the number of vars given, so that a count that does not
 * match ndim is reported instead of read past:
 *   ts_compute_n(ctx, "C", TS_SHAPE(M, N), TS_VARS_N(i, j), body) */
#define TS_VARS_N(...) TS_NARGS(__VA_ARGS__), (ts_expr *const[]){__VA_ARGS__}
ts_tensor *ts_compute_n(ts_ctx *ctx, const char *name, int ndim, const int64_t *shape,
			int nvars, ts_expr *const *vars, ts_expr *body);

/* The same with a body built by a callback from fresh axis variables named
 * i, j, k, l, ... (TVM's lambda form). */
typedef ts_expr *(*ts_compute_fn)(ts_ctx *ctx, ts_expr *const *axes, void *user);
ts_tensor *ts_compute_lambda(ts_ctx *ctx, const char *name, int ndim, const int64_t *shape,
			     ts_compute_fn fn, void *user);

/* Reductions (init NULL in ts_reduce means the identity). */
ts_expr *ts_sum(ts_ctx *ctx, ts_expr *source, int naxes, ts_iter *const *axes);
ts_expr *ts_reduce_max(ts_ctx *ctx, ts_expr *source, int naxes, ts_iter *const *axes);
ts_expr *ts_reduce_min(ts_ctx *ctx, ts_expr *source, int naxes, ts_iter *const *axes);
#define TS_ITERS(...) ((int)(sizeof((ts_iter *[]){__VA_ARGS__}) / sizeof(ts_iter *))), \
	(ts_iter *const[]){__VA_ARGS__}
#define TS_SUM(ctx, src, ...) ts_sum((ctx), (src), TS_ITERS(__VA_ARGS__))
#define TS_MAX(ctx, src, ...) ts_reduce_max((ctx), (src), TS_ITERS(__VA_ARGS__))
#define TS_MIN(ctx, src, ...) ts_reduce_min((ctx), (src), TS_ITERS(__VA_ARGS__))

/* Number of elements of a tensor (product of its shape). */
int64_t ts_tensor_numel(const ts_tensor *t);

/* Gives t a new name (for printing and generated code); returns t, or NULL
 * when t is NULL or the name is empty.  Operators use it to let callers name
 * the tensors they return. */
ts_tensor *ts_rename(ts_ctx *ctx, ts_tensor *t, const char *name);

#ifdef __cplusplus
}
#endif

#endif
