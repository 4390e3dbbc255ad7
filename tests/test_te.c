/* test_te.c - placeholders, computes, their checks and the graph printer. */
#include "testutil.h"

#include <string.h>

/* C[i, j] = sum_k A[i, k] * B[k, j] on 13x17x19 (no two extents equal). */
static ts_tensor *matmul(ts_ctx *ctx, ts_tensor **A, ts_tensor **B)
{
	*A = ts_placeholder(ctx, "A", TS_SHAPE(13, 17), ts_float32);
	*B = ts_placeholder(ctx, "B", TS_SHAPE(17, 19), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 17);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	return ts_compute(ctx, "C", TS_SHAPE(13, 19), TS_VARS(i, j),
			  TS_SUM(ctx, ts_mul(ctx, TS_READ(ctx, *A, i, k->var),
					     TS_READ(ctx, *B, k->var, j)), k));
}

START_TEST(test_matmul_graph)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *B, *C = matmul(ctx, &A, &B);
	ck_assert_ptr_nonnull(C);
	ck_assert_int_eq(C->op, TS_OP_COMPUTE);
	ck_assert_int_eq(C->ndim, 2);
	ck_assert_int_eq(C->nreduce, 1);
	ck_assert_int_eq(C->reduce_axis[0]->extent, 17);
	ck_assert_int_eq(C->axis[1]->extent, 19);
	ck_assert_int_eq(C->axis[0]->kind, TS_ITER_DATA);
	ck_assert_int_eq(C->ninputs, 2);
	ck_assert_ptr_eq(C->inputs[0], A);
	ck_assert_ptr_eq(C->inputs[1], B);
	ck_assert_int_eq(ts_tensor_numel(C), 13 * 19);
	tu_assert_golden("te_matmul.txt", ts_graph_str(ctx, 1, &C));
	ts_ctx_free(ctx);
}
END_TEST

static ts_expr *relu_body(ts_ctx *ctx, ts_expr *const *ax, void *user)
{
	ts_tensor *const *in = user; /* C, bias */
	ts_expr *sum = ts_add(ctx, TS_READ(ctx, in[0], ax[0], ax[1]), TS_READ(ctx, in[1], ax[1]));
	return ts_max(ctx, sum, ts_float(ctx, 0));
}

START_TEST(test_relu_bias_graph)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *B, *C = matmul(ctx, &A, &B);
	ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(19), ts_float32);
	ts_tensor *in[2] = {C, bias};
	ts_tensor *D = ts_compute_lambda(ctx, "D", TS_SHAPE(13, 19), relu_body, in);
	ck_assert_ptr_nonnull(D);
	ck_assert_int_eq(D->nreduce, 0);
	ck_assert_int_eq(D->ninputs, 2);
	ck_assert_ptr_eq(D->inputs[0], C);
	ck_assert_ptr_eq(D->inputs[1], bias);
	tu_assert_golden("te_relu_bias.txt", ts_graph_str(ctx, 1, &D));
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_inputs_once_in_order)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(5), ts_int32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(5), ts_int32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *body = ts_add(ctx, ts_mul(ctx, TS_READ(ctx, B, i), TS_READ(ctx, A, i)),
			       TS_READ(ctx, B, ts_sub(ctx, ts_int(ctx, 4), i)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(5), TS_VARS(i), body);
	ck_assert_ptr_nonnull(C);
	ck_assert_int_eq(C->ninputs, 2);
	ck_assert_ptr_eq(C->inputs[0], B);
	ck_assert_ptr_eq(C->inputs[1], A);
	ck_assert_ptr_eq(C->axis[0]->var, i); /* the given var is the axis var */
	ck_assert_ptr_eq(C->body, body);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_bad_dtype_in_body)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(4), ts_int32);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *body = ts_add(ctx, TS_READ(ctx, A, i), TS_READ(ctx, B, i));
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), body));
	tu_assert_error(ctx, "add: dtype mismatch: float32 vs int32");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_bad_index_count)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 3), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), TS_READ(ctx, A, i)));
	tu_assert_error(ctx, "read A: tensor has 2 dimension(s), got 1 index(es)");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_bad_extents)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_ptr_null(ts_placeholder(ctx, "A", TS_SHAPE(4, 0), ts_float32));
	tu_assert_error(ctx, "placeholder A: extent 0 of dimension 1 is not positive");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_placeholder(ctx, "A", TS_SHAPE(-3), ts_float32));
	tu_assert_error(ctx, "placeholder A: extent -3 of dimension 0 is not positive");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_placeholder(ctx, "A", 0, NULL, ts_float32));
	tu_assert_error(ctx, "placeholder A: 0 dimensions (1 to 8 allowed)");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_reduce_axis(ctx, "k", 0, 0));
	tu_assert_error(ctx, "reduce_axis k: extent 0 is not positive");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_reduce_axis(ctx, "r", 2, -1));
	tu_assert_error(ctx, "reduce_axis r: extent -1 is not positive");
	ts_clear_error(ctx);
	ts_expr *i = ts_var(ctx, "i");
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE(0), TS_VARS(i), i));
	tu_assert_error(ctx, "compute C: extent 0 of dimension 0 is not positive");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_reduce_axis_outside)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 6), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 6);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *s = TS_SUM(ctx, TS_READ(ctx, A, i, k->var), k);
	/* k read outside the sum that owns it */
	ts_expr *body = ts_add(ctx, TS_READ(ctx, A, i, k->var), s);
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), body));
	tu_assert_error(ctx, "compute C: reduction axis 'k' used outside its reduction");
	ts_clear_error(ctx);
	/* in the init of its own reduction, which runs outside the loop over k */
	ts_expr *init = TS_READ(ctx, A, i, k->var);
	body = ts_reduce(ctx, TS_REDUCE_SUM, TS_READ(ctx, A, i, k->var), TS_ITERS(k), init);
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), body));
	tu_assert_error(ctx, "compute C: reduction axis 'k' used outside its reduction");
	ts_ctx_free(ctx);
}
END_TEST

/* A reduction axis's variable stands for a point of its reduction: taken
 * as a compute's index variable (a data axis, read outside any sum) it is
 * refused by name, as a body reading it without its sum is. */
START_TEST(test_reduce_axis_as_index)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 6), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 6), *r = ts_reduce_axis(ctx, "r", 0, 4);
	ts_expr *i = ts_var(ctx, "i");
	ck_assert_ptr_null(ts_compute(ctx, "T", TS_SHAPE(4, 6), TS_VARS(i, k->var),
				      TS_READ(ctx, A, i, k->var)));
	tu_assert_error(ctx, "compute T: index 1 is the variable of reduction axis 'k'; "
			     "index variables come from ts_var");
	ts_clear_error(ctx);
	/* a data index beside a sum over another axis */
	ck_assert_ptr_null(ts_compute(ctx, "U", TS_SHAPE(6), TS_VARS(k->var),
				      TS_SUM(ctx, TS_READ(ctx, A, r->var, k->var), r)));
	tu_assert_error(ctx, "compute U: index 0 is the variable of reduction axis 'k'");
	ts_clear_error(ctx);
	/* read by a body that has no reduction over it */
	ck_assert_ptr_null(ts_compute(ctx, "V", TS_SHAPE(4), TS_VARS(i), TS_READ(ctx, A, i, k->var)));
	tu_assert_error(ctx, "compute V: reduction axis 'k' used outside its reduction");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_compute(ctx, "W", TS_SHAPE(4), TS_VARS(i),
				      TS_SUM(ctx, TS_READ(ctx, A, r->var, k->var), r)));
	tu_assert_error(ctx, "compute W: reduction axis 'k' used outside its reduction");
	ts_clear_error(ctx);
	/* its own variables are fine, and the axis still serves its sum */
	ts_expr *j = ts_var(ctx, "j");
	ts_tensor *T = ts_compute(ctx, "T", TS_SHAPE(4, 6), TS_VARS(i, j), TS_READ(ctx, A, i, j));
	ck_assert_ptr_nonnull(T);
	ts_tensor *S = ts_compute(ctx, "S", TS_SHAPE(4), TS_VARS(i), TS_SUM(ctx, TS_READ(ctx, T, i, k->var), k));
	ck_assert_ptr_nonnull(S);
	ck_assert_int_eq(S->nreduce, 1);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_reduce_not_top)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 6), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 6);
	ts_expr *i = ts_var(ctx, "i");
	ts_expr *body = ts_mul(ctx, TS_SUM(ctx, TS_READ(ctx, A, i, k->var), k), ts_float(ctx, 2));
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), body));
	tu_assert_error(ctx, "compute C: a reduction must be the top of the body");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_unknown_tensor)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i");
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), TS_READ(ctx, NULL, i)));
	tu_assert_error(ctx, "read: unknown tensor");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_unknown_variable)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *q = ts_var(ctx, "q");
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), TS_READ(ctx, A, q)));
	tu_assert_error(ctx, "compute C: unknown variable 'q'");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_bad_compute_vars)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 5), ts_float32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_expr *body = TS_READ(ctx, A, i, j);
	ck_assert_ptr_null(ts_compute_n(ctx, "C", TS_SHAPE(4, 5), TS_VARS_N(i), body));
	tu_assert_error(ctx, "compute C: 1 index variable(s) for 2 dimension(s)");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_compute_n(ctx, "C", TS_SHAPE(4, 5), TS_VARS_N(i, j, i), body));
	tu_assert_error(ctx, "compute C: 3 index variable(s) for 2 dimension(s)");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE(4, 5), TS_VARS(i, i), body));
	tu_assert_error(ctx, "compute C: variable 'i' names two dimensions");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE(4, 5),
				      TS_VARS(i, ts_add(ctx, j, ts_int(ctx, 1))), body));
	tu_assert_error(ctx, "compute C: index 1 is not an integer variable");
	ts_clear_error(ctx);
	ck_assert_ptr_nonnull(ts_compute_n(ctx, "C", TS_SHAPE(4, 5), TS_VARS_N(i, j), body));
	/* a variable too narrow for its axis: the evaluator wrapped i + 1
	 * at 127 where compiled loops did not */
	ts_expr *i8 = ts_var_typed(ctx, "i8", ts_int8), *u8 = ts_var_typed(ctx, "u8", ts_uint8);
	ts_expr *one = ts_cast(ctx, ts_float32, ts_add(ctx, i8, ts_const(ctx, ts_int8, 1)));
	FAILS_NULL(ctx, ts_compute(ctx, "N", TS_SHAPE(300), TS_VARS(i8), one),
		   "compute N: index 0 ('i8') is int8, which cannot hold the axis's indices up to 299 "
		   "(use ts_var, int32, or int64)");
	FAILS_NULL(ctx, ts_compute(ctx, "N", TS_SHAPE(129), TS_VARS(i8), one), "indices up to 128");
	ck_assert_ptr_nonnull(ts_compute(ctx, "N", TS_SHAPE(128), TS_VARS(i8), one));
	ck_assert_ptr_nonnull(ts_compute(ctx, "U", TS_SHAPE(256), TS_VARS(u8), ts_cast(ctx, ts_float32, u8)));
	FAILS_NULL(ctx, ts_compute(ctx, "U", TS_SHAPE(257), TS_VARS(u8), ts_cast(ctx, ts_float32, u8)),
		   "index 0 ('u8') is uint8, which cannot hold the axis's indices up to 256");
	/* a size variable's bound counts */
	ts_expr *i16 = ts_var_typed(ctx, "i16", ts_int16);
	FAILS_NULL(ctx, ts_compute(ctx, "S", TS_SHAPE(ts_size_var(ctx, "n", 40000)), TS_VARS(i16),
				   ts_cast(ctx, ts_float32, i16)),
		   "index 0 ('i16') is int16, which cannot hold the axis's indices up to 39999");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_null_body_and_names)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i");
	ck_assert_ptr_null(ts_compute(ctx, "C", TS_SHAPE(4), TS_VARS(i), NULL));
	tu_assert_error(ctx, "compute C: body is NULL");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_placeholder(ctx, "", TS_SHAPE(4), ts_float32));
	tu_assert_error(ctx, "placeholder: empty name");
	ts_clear_error(ctx);
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4), ts_float32);
	ck_assert_ptr_eq(ts_rename(ctx, A, "input"), A);
	ck_assert_str_eq(A->name, "input");
	ck_assert_ptr_null(ts_rename(ctx, A, ""));
	tu_assert_error(ctx, "rename: empty name");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_alloc_failure_compute)
{
	/* an allocation failing anywhere inside ts_compute yields NULL and NOMEM */
	for (long n = 1; n < 12; n++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(13, 17), ts_float32);
		ts_iter *k = ts_reduce_axis(ctx, "k", 0, 17);
		ts_expr *i = ts_var(ctx, "i");
		ts_expr *body = TS_SUM(ctx, TS_READ(ctx, A, i, k->var), k);
		ts_ctx_fail_alloc_after(ctx, n);
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(13), TS_VARS(i), body);
		if (!C)
			ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NOMEM);
		else
			ck_assert_int_eq(C->ninputs, 1);
		ts_ctx_free(ctx);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("te");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_matmul_graph);
	tcase_add_test(tc, test_relu_bias_graph);
	tcase_add_test(tc, test_inputs_once_in_order);
	tcase_add_test(tc, test_bad_dtype_in_body);
	tcase_add_test(tc, test_bad_index_count);
	tcase_add_test(tc, test_bad_extents);
	tcase_add_test(tc, test_reduce_axis_outside);
	tcase_add_test(tc, test_reduce_axis_as_index);
	tcase_add_test(tc, test_reduce_not_top);
	tcase_add_test(tc, test_unknown_tensor);
	tcase_add_test(tc, test_unknown_variable);
	tcase_add_test(tc, test_bad_compute_vars);
	tcase_add_test(tc, test_null_body_and_names);
	tcase_add_test(tc, test_alloc_failure_compute);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
