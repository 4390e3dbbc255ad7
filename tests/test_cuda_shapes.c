/*
 * test_cuda_shapes.c - the default CUDA GEMM and conv2d schedules for any
 * shape: squares the tiles do not divide, skinny and degenerate shapes and
 * the ResNet-50 layers of the bench.  Each is lowered, compiled by NVRTC for
 * sm_80 and sm_90 (no GPU needed) and checked to keep its shared tiles
 * within 48 KB of static shared memory and its accumulators in registers;
 * the small ones also run through the loop-IR interpreter against the
 * reference evaluator.  Exits 77 (skip) when libnvrtc is missing.
 */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "build.h"
#include "c_emit.h"
#include "cuda_test.h"
#include "lower.h"
#include "op_schedules.h"

static ts_func *gemm(ts_ctx *ctx, int64_t M, int64_t N, int64_t K)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(M, K), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(K, N), ts_float32);
	ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_schedule_matmul_cuda(s, C, NULL));
	ts_func *f = ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C});
	ck_assert_msg(f != NULL, "gemm %lldx%lldx%lld: %s", (long long)M, (long long)N, (long long)K,
		      ts_last_error(ctx));
	return f;
}

/* NCHW conv2d at batch 1: C input channels, H x H images, K filters R x R. */
static ts_func *conv(ts_ctx *ctx, int64_t C, int64_t H, int64_t K, int64_t R, int stride, int pad)
{
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, C, H, H), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(K, C, R, R), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, stride, stride, pad, pad, 1, 1, 1);
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_conv2d_cuda(s, Y, NULL));
	ts_func *f = ts_lower(s, "conv2d", 3, (ts_tensor *[]){X, W, Y});
	ck_assert_msg(f != NULL, "conv2d C%lld H%lld K%lld R%lld: %s", (long long)C, (long long)H,
		      (long long)K, (long long)R, ts_last_error(ctx));
	return f;
}

/* Every access to a register block (`..._local[`) has a constant index. */
static bool constant_local_indices(const char *src)
{
	for (const char *p = strstr(src, "_local["); p; p = strstr(p + 1, "_local[")) {
		const char *q = p + strlen("_local[");
		if (*q < '0' || *q > '9')
			return false;
		while (*q >= '0' && *q <= '9')
			q++;
		if (*q != ']')
			return false;
	}
	return true;
}

/* The launch fits a block, the shared tiles fit 48 KB, no accumulator array
 * is indexed by a loop variable (it would live in local memory), and NVRTC
 * compiles it for both architectures. */
static void builds(ts_ctx *ctx, ts_func *f, const char *what)
{
	cg_launch l;
	const char *src = cg_emit_cuda(ctx, f, &l);
	ck_assert_msg(src != NULL, "%s: %s", what, ts_last_error(ctx));
	ck_assert_msg(l.static_shared_bytes <= CG_CUDA_MAX_STATIC_SHARED, "%s: %lld bytes of shared memory",
		      what, (long long)l.static_shared_bytes);
	ck_assert_msg(l.block[0] * l.block[1] * l.block[2] <= 1024, "%s: %lld x %lld threads", what,
		      (long long)l.block[0], (long long)l.block[1]);
	ck_assert_msg(constant_local_indices(src), "%s: a register block indexed dynamically", what);
	static const char *const targets[] = {"cuda -arch=sm_80", "cuda -arch=sm_90"};
	for (int i = 0; i < 2; i++) {
		ts_module *m = ts_build(ctx, f, targets[i]);
		ck_assert_msg(m != NULL, "%s for %s: %s", what, targets[i], ts_last_error(ctx));
		ts_module_free(m);
	}
}

typedef struct shape { int64_t M, N, K; bool run; } shape;

static const shape gemm_shapes[] = {
	{1000, 1000, 1000, false}, {1023, 1023, 1023, false}, {4096, 4096, 4096, false},
	{1, 1, 1, true},	   {1, 4096, 4096, false},    {4096, 1, 4096, false},
	{17, 33, 65, true},	   {64, 64, 64, true},	      {63, 65, 127, true},
	{2048, 31, 512, false},	   {1, 300, 40, true},	      {70, 3, 20, true},
	{68, 72, 24, true}, /* vector loads inside, guarded ones at the edges */
};

START_TEST(test_gemm_shapes)
{
	const shape *g = &gemm_shapes[_i];
	char what[64];
	snprintf(what, sizeof what, "gemm %lldx%lldx%lld", (long long)g->M, (long long)g->N,
		 (long long)g->K);
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = gemm(ctx, g->M, g->N, g->K);
	builds(ctx, f, what);
	if (g->run) {
		tu_set_context(what);
		tu_check_func_interp(ctx, f, 1e-4);
		tu_set_context(NULL);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* Tiles the shape does not divide keep 16-byte loads inside and guard
 * only at the edges, where they fall back to guarded scalar loads; the
 * tiles are double-buffered, so both are asynchronous copies (cp.async). */
START_TEST(test_gemm_edge_vectors)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = gemm(ctx, 1000, 1000, 1000);
	const char *src = cg_emit_cuda(ctx, f, NULL);
	tu_nonnull(ctx, src);
	ck_assert_ptr_nonnull(strstr(src, "ts_cp_async16(&A_shared["));
	ck_assert_ptr_nonnull(strstr(src, "ts_cp_async16(&B_shared_1["));
	ck_assert_ptr_nonnull(strstr(src, "ts_cp_async4(&B_shared["));
	/* the register block's rows stored as float4 inside the shape; at
	 * the edges lane by lane, each from a register named by a constant */
	ck_assert_ptr_nonnull(strstr(src, " = make_float4(matmul_local[0], matmul_local[1], matmul_local[2], "
				     "matmul_local[3]);"));
	ck_assert_ptr_nonnull(strstr(src, "] = matmul_local[3];"));
	ck_assert_ptr_nonnull(strstr(src, "j_outer*64 + ax0_ax1_fused_outer_inner_inner_1*4 + 3 < 1000"));
	ck_assert_ptr_nonnull(strstr(src, "} else {"));
	ts_ctx_free(ctx);
}
END_TEST

typedef struct layer { const char *name; int64_t C, H, K, R; int stride, pad; } layer;

/* bench/cli.c's ResNet-50 v1.5 layers at batch 1 */
static const layer resnet[] = {
	{"conv1", 3, 224, 64, 7, 2, 3},		{"res2_1x1a", 64, 56, 64, 1, 1, 0},
	{"res2_3x3", 64, 56, 64, 3, 1, 1},	{"res2_1x1b", 64, 56, 256, 1, 1, 0},
	{"res3_3x3s2", 128, 56, 128, 3, 2, 1},	{"res3_3x3", 128, 28, 128, 3, 1, 1},
	{"res3_1x1b", 128, 28, 512, 1, 1, 0},	{"res4_3x3s2", 256, 28, 256, 3, 2, 1},
	{"res4_3x3", 256, 14, 256, 3, 1, 1},	{"res4_1x1a", 1024, 14, 256, 1, 1, 0},
	{"res5_3x3s2", 512, 14, 512, 3, 2, 1},	{"res5_3x3", 512, 7, 512, 3, 1, 1},
	{"res5_1x1b", 512, 7, 2048, 1, 1, 0},
};

START_TEST(test_conv_resnet)
{
	const layer *l = &resnet[_i];
	ts_ctx *ctx = ts_ctx_new();
	builds(ctx, conv(ctx, l->C, l->H, l->K, l->R, l->stride, l->pad), l->name);
	ts_ctx_free(ctx);
}
END_TEST

/* Small convolutions whose channels and images the tiles do not divide;
 * the last three take several steps of 8 input channels, so their shared
 * tiles are double-buffered (an odd number of steps in the second). */
static const layer small_convs[] = {
	{"3x3 pad", 3, 9, 5, 3, 1, 1},
	{"1x1", 4, 5, 70, 1, 1, 0},
	{"3x3 s2", 2, 11, 3, 3, 2, 1},
	{"one pixel", 5, 1, 1, 1, 1, 0},
	{"3x3, 20 channels", 20, 10, 40, 3, 1, 1},
	{"3x3 s2, 17 channels", 17, 15, 33, 3, 2, 1},
	{"5x5, 16 channels", 16, 9, 70, 5, 1, 2},
};

START_TEST(test_conv_small)
{
	const layer *l = &small_convs[_i];
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = conv(ctx, l->C, l->H, l->K, l->R, l->stride, l->pad);
	builds(ctx, f, l->name);
	tu_set_context(l->name);
	tu_check_func_interp(ctx, f, 1e-4);
	tu_set_context(NULL);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	if (!have_nvrtc())
		return 77;
	Suite *s = suite_create("cuda_shapes");
	TCase *tc = tcase_create("nvrtc");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_gemm_shapes, 0, (int)TS_COUNT_OF(gemm_shapes));
	tcase_add_test(tc, test_gemm_edge_vectors);
	tcase_add_loop_test(tc, test_conv_resnet, 0, (int)TS_COUNT_OF(resnet));
	tcase_add_loop_test(tc, test_conv_small, 0, (int)TS_COUNT_OF(small_convs));
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
