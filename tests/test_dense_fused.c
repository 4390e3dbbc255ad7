/*
 * test_dense_fused.c - ts_schedule_dense_cpu: a matmul with an elementwise
 * epilogue (bias, relu, gelu, residual add) scheduled as one pass, checked
 * against the reference evaluator on shapes the register block divides and
 * on shapes it does not; the matmul never gets a global buffer.
 */
#include "testutil.h"

#include <string.h>

#include "lower.h"
#include "op_schedules.h"
#include "printer.h"

typedef enum epi { EPI_BIAS, EPI_BIAS_RELU, EPI_BIAS_GELU, EPI_BIAS_GELU_TANH, EPI_RESIDUAL } epi;

/* Y = epilogue(A x B) over placeholders A, B, bias and R; *np params. */
static ts_tensor *build(ts_ctx *ctx, epi e, int64_t M, int64_t N, int64_t K, int64_t nr,
			ts_tensor **params, int *np)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(M, K), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(K, N), ts_float32);
	ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(N), ts_float32);
	ts_tensor *C = nr ? ts_op_matmul_packed(ctx, A, B, nr) : ts_op_matmul(ctx, A, B, false, false);
	ts_tensor *Y = ts_op_bias_add(ctx, C, bias, 1);
	*np = 0;
	params[(*np)++] = A, params[(*np)++] = B, params[(*np)++] = bias;
	if (e == EPI_BIAS_RELU)
		Y = ts_op_relu(ctx, Y);
	else if (e == EPI_BIAS_GELU || e == EPI_BIAS_GELU_TANH)
		Y = ts_op_gelu(ctx, Y, e == EPI_BIAS_GELU_TANH);
	else if (e == EPI_RESIDUAL) {
		ts_tensor *R = ts_placeholder(ctx, "R", TS_SHAPE(M, N), ts_float32);
		Y = ts_op_add(ctx, Y, R);
		params[(*np)++] = R;
	}
	tu_nonnull(ctx, Y);
	params[(*np)++] = Y;
	return Y;
}

static void check_dense(epi e, int64_t M, int64_t N, int64_t K, const ts_matmul_cpu_params *p)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *params[5];
	int np;
	int64_t nr = p ? p->nr : ts_matmul_cpu_default().nr;
	ts_tensor *Y = build(ctx, e, M, N, K, nr, params, &np);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_dense_cpu(s, Y, p));
	ts_func *f = ts_lower(s, "dense", np, params);
	tu_nonnull(ctx, f);
	/* one pass over memory: the matmul's tile lives in a local buffer, the
	 * only global one being the packed copy of B */
	const char *text = ir_func_str(ctx, f), *g = strstr(text, " in global");
	ck_assert_msg(strstr(text, " in local") && g && !strstr(g + 1, " in global"),
		      "the matmul is not a local tile");
	tu_check_func(ctx, f, 1e-4);
	ts_ctx_free(ctx);
}

static const ts_matmul_cpu_params small = {.mr = 3, .nr = 8, .kunroll = 2, .parallel = false};
/* B packed per panel inside the parallel panel loop, and ahead */
static const ts_matmul_cpu_params panels = {.mr = 3, .nr = 8, .kunroll = 2, .parallel = true,
					    .pack = TS_PACK_PANEL};
static const ts_matmul_cpu_params ahead = {.mr = 3, .nr = 8, .kunroll = 2, .parallel = false,
					   .pack = TS_PACK_AHEAD};

START_TEST(test_dense_bias)
{
	check_dense(EPI_BIAS, 37, 50, 29, NULL);
	check_dense(EPI_BIAS, 24, 64, 16, NULL);
	check_dense(EPI_BIAS, 10, 13, 7, &small);
}
END_TEST

START_TEST(test_dense_bias_relu)
{
	check_dense(EPI_BIAS_RELU, 37, 50, 29, NULL);
	check_dense(EPI_BIAS_RELU, 12, 64, 16, NULL);
	check_dense(EPI_BIAS_RELU, 10, 13, 7, &small);
	check_dense(EPI_BIAS_RELU, 37, 50, 29, &panels);
	check_dense(EPI_BIAS_RELU, 37, 50, 29, &ahead);
}
END_TEST

START_TEST(test_dense_bias_gelu)
{
	check_dense(EPI_BIAS_GELU, 37, 50, 29, NULL);
	check_dense(EPI_BIAS_GELU, 24, 64, 16, NULL);
	check_dense(EPI_BIAS_GELU_TANH, 37, 50, 29, NULL);
	check_dense(EPI_BIAS_GELU_TANH, 10, 13, 7, &small);
}
END_TEST

START_TEST(test_dense_bias_residual)
{
	check_dense(EPI_RESIDUAL, 37, 50, 29, NULL);
	check_dense(EPI_RESIDUAL, 24, 64, 16, NULL);
	check_dense(EPI_RESIDUAL, 10, 13, 7, &small);
}
END_TEST

/* unpacked B, fewer rows than the register block (one input row) */
START_TEST(test_dense_plain_matmul)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *params[5];
	int np;
	ts_tensor *Y = build(ctx, EPI_BIAS_RELU, 1, 70, 40, 0, params, &np);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_dense_cpu(s, Y, NULL));
	tu_check_func(ctx, ts_lower(s, "dense", np, params), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* no epilogue: the plain matmul schedule */
START_TEST(test_dense_no_epilogue)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(37, 29), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(29, 50), ts_float32);
	ts_tensor *C = ts_op_matmul_packed(ctx, A, B, ts_matmul_cpu_default().nr);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_schedule_dense_cpu(s, C, NULL));
	tu_check_func(ctx, ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C}), 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* ts_op_gelu itself, unscheduled, against known values */
START_TEST(test_gelu_values)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(3), ts_float32);
	ts_tensor *G = ts_op_gelu(ctx, X, false), *T = ts_op_gelu(ctx, X, true);
	tu_nonnull(ctx, G);
	tu_nonnull(ctx, T);
	ts_schedule *s = ts_create_schedule(ctx, 2, (ts_tensor *[]){G, T});
	tu_ok(ctx, ts_schedule_default_cpu(s, 1));
	tu_check_func(ctx, ts_lower(s, "gelu", 3, (ts_tensor *[]){X, G, T}), 1e-5);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dense_fused");
	TCase *tc = tcase_create("dense_fused");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_dense_bias);
	tcase_add_test(tc, test_dense_bias_relu);
	tcase_add_test(tc, test_dense_bias_gelu);
	tcase_add_test(tc, test_dense_bias_residual);
	tcase_add_test(tc, test_dense_plain_matmul);
	tcase_add_test(tc, test_dense_no_epilogue);
	tcase_add_test(tc, test_gelu_values);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
