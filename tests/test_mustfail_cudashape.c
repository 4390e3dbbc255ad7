/*
 * test_mustfail_cudashape.c - CUDA GEMM and conv2d tiles that cannot launch
 * are refused by the schedule, naming the limit: more than 1024 threads per
 * block, or shared tiles over the 48 KB of static shared memory.  Tiles
 * larger than the shape are clamped to it, not refused.
 */
#include "testutil.h"

#include <string.h>

#include "op_schedules.h"

typedef struct gemm_case {
	ts_ctx *ctx;
	ts_schedule *s;
	ts_tensor *C;
} gemm_case;

static gemm_case gemm(int64_t M, int64_t N, int64_t K)
{
	gemm_case g = {ts_ctx_new(), NULL, NULL};
	ts_tensor *A = ts_placeholder(g.ctx, "A", TS_SHAPE(M, K), ts_float32);
	ts_tensor *B = ts_placeholder(g.ctx, "B", TS_SHAPE(K, N), ts_float32);
	g.C = ts_op_matmul(g.ctx, A, B, false, false);
	g.s = ts_create_schedule(g.ctx, 1, &g.C);
	tu_nonnull(g.ctx, g.s);
	return g;
}

START_TEST(test_gemm_too_many_threads)
{
	gemm_case g = gemm(512, 512, 64);
	ts_matmul_cuda_params p = {.block_m = 64, .block_n = 64, .thread_m = 1, .thread_n = 1, .tile_k = 8};
	ck_assert_int_eq(ts_schedule_matmul_cuda(g.s, g.C, &p), TS_ERR_INVALID);
	tu_assert_error(g.ctx, "schedule_matmul_cuda: 4096 threads per block, more than 1024");
	ts_ctx_free(g.ctx);
}
END_TEST

START_TEST(test_gemm_huge_thread_grid)
{
	/* block_n / thread_n alone past any limit: no overflow, an error */
	gemm_case g = gemm(4096, 4096, 64);
	ts_matmul_cuda_params p = {.block_m = 2, .block_n = 4096, .thread_m = 1, .thread_n = 1, .tile_k = 1};
	ck_assert_int_eq(ts_schedule_matmul_cuda(g.s, g.C, &p), TS_ERR_INVALID);
	tu_assert_error(g.ctx, "threads per block, more than 1024");
	ts_ctx_free(g.ctx);
}
END_TEST

START_TEST(test_gemm_shared_over_48k)
{
	gemm_case g = gemm(1024, 1024, 1024);
	ts_matmul_cuda_params p = {.block_m = 256, .block_n = 256, .thread_m = 16, .thread_n = 16,
				   .tile_k = 32};
	ck_assert_int_eq(ts_schedule_matmul_cuda(g.s, g.C, &p), TS_ERR_INVALID);
	tu_assert_error(g.ctx, "schedule_matmul_cuda: shared tiles (block_m + block_n) x tile_k take 65536 bytes");
	tu_assert_error(g.ctx, "48 KB of static shared memory");
	ts_ctx_free(g.ctx);
}
END_TEST

/* Tiles larger than a small shape are clamped to it: not an error. */
START_TEST(test_gemm_tiles_larger_than_shape)
{
	gemm_case g = gemm(3, 5, 2);
	ts_matmul_cuda_params p = {.block_m = 128, .block_n = 128, .thread_m = 8, .thread_n = 8, .tile_k = 64};
	tu_ok(g.ctx, ts_schedule_matmul_cuda(g.s, g.C, &p));
	ts_ctx_free(g.ctx);
}
END_TEST

START_TEST(test_conv_too_many_threads)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 64, 56, 56), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(64, 64, 3, 3), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, 1, 1, 1, 1, 1, 1, 1);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_matmul_cuda_params p = ts_matmul_cuda_default();
	/* 64 channels of one thread each x 32 rows of two 4-column steps */
	p.block_n = 256;
	p.thread_m = 1;
	ck_assert_int_eq(ts_schedule_conv2d_cuda(s, Y, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "schedule_conv2d_cuda: 4096 threads per block, more than 1024");
	ts_clear_error(ctx);
	/* 64 input channels per step: the weight tile alone is 144 KB */
	p = ts_matmul_cuda_default();
	p.tile_k = 64;
	ck_assert_int_eq(ts_schedule_conv2d_cuda(s, Y, &p), TS_ERR_INVALID);
	tu_assert_error(ctx, "x the kernel's taps) x tile_k take 346112 bytes");
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_cudashape");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_gemm_too_many_threads);
	tcase_add_test(tc, test_gemm_huge_thread_grid);
	tcase_add_test(tc, test_gemm_shared_over_48k);
	tcase_add_test(tc, test_gemm_tiles_larger_than_shape);
	tcase_add_test(tc, test_conv_too_many_threads);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
