/*
 * ops_gemm.c - matmul with a packed B operand, the layout fast CPU GEMM
 * kernels use (TVM's "array packing" step).
 *
 * Bp[n / nr, k, n % nr] = B[k, n] holds B in panels of nr columns, so the
 * innermost loop of the kernel reads nr consecutive floats for each k.
 * Columns beyond N in the last panel are zero.  C is computed from Bp; the
 * packing is an ordinary stage that the schedule may parallelize.
 */
#include "ops.h"

#include "ops_util.h"
#include "te.h"

ts_tensor *ts_op_matmul_packed(ts_ctx *ctx, ts_tensor *A, ts_tensor *B, int64_t nr)
{
	if (!fe_check_inputs(ctx, "matmul_packed", 2, (ts_tensor *[]){A, B}) ||
	    !fe_check_constant(ctx, "matmul_packed", A) || !fe_check_constant(ctx, "matmul_packed", B) ||
	    !fe_check_numeric(ctx, "matmul_packed", A))
		return NULL;
	if (ts_is_size_var(nr)) {
		ts_error(ctx, TS_ERR_INVALID, "matmul_packed: nr is a size variable (ts_size_var); the panel "
			 "width must be a constant");
		return NULL;
	}
	/* nr is an int32 constant in the index arithmetic */
	if (A->ndim != 2 || B->ndim != 2 || A->shape[1] != B->shape[0] || nr <= 0 ||
	    nr > INT32_MAX) {
		ts_error(ctx, TS_ERR_INVALID,
			 "matmul_packed: needs A[M, K], B[K, N] and a panel width nr in 1..2147483647 (got K %lld vs %lld, nr %lld)",
			 (long long)A->shape[A->ndim - 1], (long long)B->shape[0], (long long)nr);
		return NULL;
	}
	int64_t M = A->shape[0], K = A->shape[1], N = B->shape[1];
	int64_t panels = N / nr + (N % nr != 0);
	ts_expr *x = ts_var(ctx, "x"), *y = ts_var(ctx, "y"), *z = ts_var(ctx, "z");
	ts_expr *col = ts_add(ctx, ts_mul(ctx, x, fe_index(ctx, nr)), z);
	ts_expr *safe = ts_min(ctx, col, fe_index(ctx, N - 1));
	ts_expr *val = ts_select(ctx, ts_lt(ctx, col, fe_index(ctx, N)), TS_READ(ctx, B, y, safe),
				 ts_make_const(ctx, B->dtype, 0));
	ts_tensor *Bp = ts_compute(ctx, "Bp", TS_SHAPE(panels, K, nr), TS_VARS(x, y, z), val);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, K);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_expr *b = TS_READ(ctx, Bp, ts_floordiv(ctx, j, fe_index(ctx, nr)), k ? k->var : NULL,
			     ts_floormod(ctx, j, fe_index(ctx, nr)));
	ts_expr *prod = ts_mul(ctx, TS_READ(ctx, A, i, k ? k->var : NULL), b);
	return ts_compute(ctx, "C", TS_SHAPE(M, N), TS_VARS(i, j), TS_SUM(ctx, prod, k));
}
