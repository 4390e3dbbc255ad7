/* test_cuda_exec.c - kernels emitted as CUDA C, compiled with NVRTC and run
 * on the GPU, against CPU loops; driver errors (out of memory, bad launch,
 * missing kernel).  Exits 77 (skip) where there is no driver, device or
 * NVRTC. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cg_kernels.h"
#include "nvrtc.h"
#include "cuda_test.h"
#include "build.h"
#include "lower.h"
#include "op_schedules.h"

/* A device, a compiled kernel and its launch configuration. */
typedef struct gpu {
	ts_ctx *ctx;
	ts_cuda *cuda;
	ts_cuda_module *mod;
	ts_cuda_kernel k;
	cg_launch launch;
} gpu;

static gpu gpu_open(ts_func *(*build)(ts_ctx *), const char *arch_prefix)
{
	gpu g = {.ctx = ts_ctx_new()};
	g.cuda = ts_cuda_open(g.ctx);
	ck_assert_msg(g.cuda != NULL, "%s", ts_last_error(g.ctx));
	ts_func *f = build(g.ctx);
	const char *src = cg_emit_cuda(g.ctx, f, &g.launch);
	ck_assert_msg(src != NULL, "%s", ts_last_error(g.ctx));
	char arch[CG_ARCH_MAX];
	int major, minor;
	ts_cuda_compute_capability(g.cuda, &major, &minor);
	snprintf(arch, sizeof(arch), "%s%d%d", arch_prefix, major, minor);
	cg_nvrtc_result r;
	ts_status st = cg_nvrtc_compile(g.ctx, src, f->name, arch, &r);
	ck_assert_msg(st == TS_OK, "%s", ts_last_error(g.ctx));
	g.mod = ts_cuda_module_load(g.ctx, g.cuda, r.image, r.size);
	cg_nvrtc_result_free(&r);
	ck_assert_msg(g.mod != NULL, "%s", ts_last_error(g.ctx));
	st = ts_cuda_module_kernel(g.ctx, g.mod, f->name, &g.k);
	ck_assert_msg(st == TS_OK, "%s", ts_last_error(g.ctx));
	return g;
}

static void gpu_close(gpu *g)
{
	ts_cuda_module_unload(g->mod);
	ts_cuda_close(g->cuda);
	ts_ctx_free(g->ctx);
}

static ts_array *host_rand(int64_t n, uint64_t seed)
{
	ts_array *a = ts_array_new(NULL, ts_float32, 1, &n);
	ts_array_fill_random(a, seed, -1, 1);
	return a;
}

static ts_array *to_device(gpu *g, const ts_array *h)
{
	ts_array *d = ts_cuda_array_new(g->ctx, g->cuda, h->dtype, h->ndim, h->shape);
	ck_assert_msg(d != NULL, "%s", ts_last_error(g->ctx));
	ck_assert_int_eq(ts_cuda_copy_to_device(g->ctx, d, h), TS_OK);
	return d;
}

/* Runs the kernel on device copies of in[0..n-1] and returns the last one
 * copied back. */
static ts_array *run(gpu *g, int n, ts_array *const *in)
{
	ts_array *d[8];
	for (int i = 0; i < n; i++)
		d[i] = to_device(g, in[i]);
	ts_status st = ts_cuda_launch(g->ctx, &g->k, &g->launch, n, d);
	ck_assert_msg(st == TS_OK, "%s", ts_last_error(g->ctx));
	st = ts_cuda_synchronize(g->ctx, g->cuda);
	ck_assert_msg(st == TS_OK, "%s", ts_last_error(g->ctx));
	ts_array *out = ts_array_new(NULL, in[n - 1]->dtype, in[n - 1]->ndim, in[n - 1]->shape);
	ck_assert_int_eq(ts_cuda_copy_to_host(g->ctx, out, d[n - 1]), TS_OK);
	for (int i = 0; i < n; i++)
		ts_cuda_array_free(d[i]);
	return out;
}

static ts_func *vadd(ts_ctx *ctx)
{
	return kg_vadd_cuda(ctx, 1 << 16);
}

static void check_vadd(const char *arch_prefix)
{
	gpu g = gpu_open(vadd, arch_prefix);
	int64_t n = 1 << 16;
	ts_array *A = host_rand(n, 1), *B = host_rand(n, 2), *C = host_rand(n, 3);
	ts_array *want = host_rand(n, 4);
	for (int64_t i = 0; i < n; i++)
		((float *)want->data)[i] = ((float *)A->data)[i] + ((float *)B->data)[i];
	ts_array *got = run(&g, 3, (ts_array *[]){A, B, C});
	tu_assert_close(got, want, 0, 0);
	ts_array_free(A), ts_array_free(B), ts_array_free(C), ts_array_free(want), ts_array_free(got);
	gpu_close(&g);
}

START_TEST(test_vadd_cubin)
{
	check_vadd("sm_");
}
END_TEST

START_TEST(test_vadd_ptx)
{
	check_vadd("compute_");
}
END_TEST

static ts_func *gemm(ts_ctx *ctx)
{
	return kg_gemm(ctx, 128, 96, 160, true);
}

START_TEST(test_gemm)
{
	gpu g = gpu_open(gemm, "sm_");
	const int M = 128, N = 96, K = 160;
	ts_array *A = host_rand(M * K, 5), *B = host_rand(K * N, 6), *C = host_rand(M * N, 7);
	ts_array *want = host_rand(M * N, 8);
	const float *a = A->data, *b = B->data;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double s = 0;
			for (int k = 0; k < K; k++)
				s += (double)a[i * K + k] * b[k * N + j];
			((float *)want->data)[i * N + j] = (float)s;
		}
	ts_array *got = run(&g, 3, (ts_array *[]){A, B, C});
	tu_assert_close(got, want, 1e-4, 1e-4);

	/* timing gives a positive median; no claim about its size */
	ts_array *d[3] = {to_device(&g, A), to_device(&g, B), to_device(&g, C)};
	ts_timing t;
	ts_cuda_time_opts o = {.warmup = 2, .repeats = 5};
	ck_assert_int_eq(ts_cuda_time_kernel(g.ctx, &g.k, &g.launch, 3, d, &o, &t), TS_OK);
	ck_assert(t.min > 0 && t.min <= t.median && t.median <= t.max && t.samples == 5);
	o.flush_l2 = true;
	ck_assert_int_eq(ts_cuda_time_kernel(g.ctx, &g.k, &g.launch, 3, d, &o, &t), TS_OK);
	ck_assert(t.min > 0 && t.min <= t.mean && t.mean <= t.max);
	o.repeats = 0;
	ck_assert_int_eq(ts_cuda_time_kernel(g.ctx, &g.k, &g.launch, 3, d, &o, &t), TS_ERR_INVALID);
	for (int i = 0; i < 3; i++)
		ts_cuda_array_free(d[i]);
	ts_array_free(A), ts_array_free(B), ts_array_free(C), ts_array_free(want), ts_array_free(got);
	gpu_close(&g);
}
END_TEST

START_TEST(test_conv)
{
	gpu g = gpu_open(kg_conv, "sm_");
	ts_array *X = host_rand(3 * 16 * 16, 9), *W = host_rand(8 * 3 * 9, 10);
	ts_array *Y = host_rand(8 * 16 * 16, 11), *want = host_rand(8 * 16 * 16, 12);
	const float *x = X->data, *w = W->data;
	for (int f = 0; f < 8; f++)
		for (int y = 0; y < 16; y++)
			for (int xx = 0; xx < 16; xx++) {
				float s = 0;
				for (int c = 0; c < 3; c++)
					for (int ky = 0; ky < 3; ky++)
						for (int kx = 0; kx < 3; kx++) {
							int iy = y + ky - 1, ix = xx + kx - 1;
							if (iy >= 0 && iy < 16 && ix >= 0 && ix < 16)
								s += x[(c * 16 + iy) * 16 + ix] *
								     w[((f * 3 + c) * 3 + ky) * 3 + kx];
						}
				((float *)want->data)[(f * 16 + y) * 16 + xx] = s > 0 ? s : 0;
			}
	ts_array *got = run(&g, 3, (ts_array *[]){X, W, Y});
	tu_assert_close(got, want, 1e-5, 1e-5);
	ts_array_free(X), ts_array_free(W), ts_array_free(Y), ts_array_free(want), ts_array_free(got);
	gpu_close(&g);
}
END_TEST

START_TEST(test_scheduled_gemm_and_conv)
{
	ts_ctx *ctx = ts_ctx_new();
	int64_t sizes[][3] = {{256, 256, 256}, {100, 90, 70}};
	for (int i = 0; i < 2; i++) {
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(sizes[i][0], sizes[i][2]), ts_float32);
		ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(sizes[i][2], sizes[i][1]), ts_float32);
		ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		tu_ok(ctx, ts_schedule_matmul_cuda(s, C, NULL));
		tu_check_func_with(ctx, ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C}), tu_cuda_runner,
				   NULL, 1e-4);
	}
	/* batched: the batches on the grid's z */
	ts_tensor *BA = ts_placeholder(ctx, "BA", TS_SHAPE(12, 128, 64), ts_float32);
	ts_tensor *BB = ts_placeholder(ctx, "BB", TS_SHAPE(12, 64, 100), ts_float32);
	ts_tensor *BC = ts_op_batch_matmul(ctx, BA, BB, false, false);
	ts_schedule *sb = ts_create_schedule(ctx, 1, &BC);
	tu_ok(ctx, ts_schedule_matmul_cuda(sb, BC, NULL));
	tu_check_func_with(ctx, ts_lower(sb, "bmm", 3, (ts_tensor *[]){BA, BB, BC}), tu_cuda_runner, NULL,
			   1e-4);
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 64, 28, 28), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(64, 64, 3, 3), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, 1, 1, 1, 1, 1, 1, 1);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_conv2d_cuda(s, Y, NULL));
	tu_check_func_with(ctx, ts_lower(s, "conv2d", 3, (ts_tensor *[]){X, W, Y}), tu_cuda_runner, NULL,
			   1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* The tensor-core GEMM (sm_80 and newer) matches the reference evaluator:
 * float16, bfloat16 and TF32, transposed operands, fitted tiles. */
START_TEST(test_tensorcore_gemm)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_cuda *cuda = ts_cuda_open(ctx);
	tu_nonnull(ctx, cuda);
	bool old = atoi(ts_cuda_arch(cuda) + 3) < 80; /* "sm_XY" */
	ts_cuda_close(cuda);
	if (old) { /* mma.sync m16n8k16 is sm_80's */
		ts_ctx_free(ctx);
		return;
	}
	static const struct {
		int64_t m, n, k;
		int type; /* 0 float16, 1 bfloat16, 2 TF32 */
		bool ta, tb;
	} cases[] = {
		{256, 256, 256, 0, false, false},
		{512, 384, 160, 1, false, false},
		{96, 80, 48, 0, true, false},
		{64, 128, 96, 1, false, true},
		{256, 128, 64, 2, false, false},
		{64, 96, 48, 2, true, true},
	};
	const ts_dtype types[3] = {ts_float16, ts_bfloat16, ts_float32};
	for (size_t i = 0; i < TS_COUNT_OF(cases); i++) {
		ts_dtype t = types[cases[i].type];
		int64_t m = cases[i].m, n = cases[i].n, k = cases[i].k;
		ts_tensor *A = cases[i].ta ? ts_placeholder(ctx, "A", TS_SHAPE(k, m), t)
					   : ts_placeholder(ctx, "A", TS_SHAPE(m, k), t);
		ts_tensor *B = cases[i].tb ? ts_placeholder(ctx, "B", TS_SHAPE(n, k), t)
					   : ts_placeholder(ctx, "B", TS_SHAPE(k, n), t);
		ts_tensor *C = cases[i].type == 2 ? ts_op_matmul_tf32(ctx, A, B, cases[i].ta, cases[i].tb)
						  : ts_op_matmul_acc(ctx, A, B, cases[i].ta, cases[i].tb, ts_float32);
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		tu_ok(ctx, ts_schedule_matmul_tensorcore(s, C, NULL));
		tu_check_func_with(ctx, ts_lower(s, "tc_gemm", 3, (ts_tensor *[]){A, B, C}), tu_cuda_runner,
				   NULL, 1e-4);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* Functions built as several kernels (softmax and layer norm under the
 * default GPU schedule: each row reduction a kernel of its own) match the
 * reference evaluator on the GPU. */
START_TEST(test_default_schedule_kernels)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f[2];
	row_ops_cuda(ctx, 300, 77, 128, f);
	for (int i = 0; i < 2; i++)
		tu_check_func_with(ctx, f[i], tu_cuda_runner, NULL, 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_driver_errors)
{
	gpu g = gpu_open(vadd, "sm_");
	ts_ctx *ctx = g.ctx;
	/* far beyond any device's memory */
	ck_assert_ptr_null(ts_cuda_array_new(ctx, g.cuda, ts_float32, 1, (int64_t[]){1ll << 44}));
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NOMEM);
	tu_assert_error(ctx, "cuda: cuMemAlloc(70368744177664 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY");
	ts_clear_error(ctx);

	ts_cuda_kernel none;
	ck_assert_int_ne(ts_cuda_module_kernel(ctx, g.mod, "nope", &none), TS_OK);
	tu_assert_error(ctx, "cuda: cuModuleGetFunction(nope) failed: CUDA_ERROR_NOT_FOUND");
	ts_clear_error(ctx);

	int64_t n = 1 << 16;
	ts_array *h = host_rand(n, 13);
	ts_array *d[3] = {to_device(&g, h), to_device(&g, h), to_device(&g, h)};
	cg_launch big = g.launch;
	big.block[0] = 2048; /* more threads than a block may have */
	ck_assert_int_eq(ts_cuda_launch(ctx, &g.k, &big, 3, d), TS_ERR_RUNTIME);
	tu_assert_error(ctx, "cuda: cuLaunchKernel(vadd, grid (128, 1, 1), block (2048, 1, 1), 0 shared bytes) failed: CUDA_ERROR_");
	ts_clear_error(ctx);

	ts_array *mixed[3] = {d[0], h, d[2]};
	ck_assert_int_eq(ts_cuda_launch(ctx, &g.k, &g.launch, 3, mixed), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: launching vadd: argument 1 is not an array on this device");
	ts_clear_error(ctx);

	ts_array *small = ts_array_new(NULL, ts_float32, 1, (int64_t[]){7});
	ck_assert_int_eq(ts_cuda_copy_to_host(ctx, small, d[0]), TS_ERR_INVALID);
	tu_assert_error(ctx, "cuda: copy to host: arrays differ in dtype or shape");
	ts_clear_error(ctx);

	ck_assert_ptr_null(ts_cuda_module_load(ctx, g.cuda, "not ptx", 8));
	tu_assert_error(ctx, "cuda: cuModuleLoadData(8-byte PTX) failed: CUDA_ERROR_");
	for (int i = 0; i < 3; i++)
		ts_cuda_array_free(d[i]);
	ts_array_free(h), ts_array_free(small);
	gpu_close(&g);
}
END_TEST

int main(void)
{
	if (!have_device())
		return 77;
	Suite *s = suite_create("cuda_exec");
	TCase *tc = tcase_create("gpu");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_vadd_cubin);
	tcase_add_test(tc, test_vadd_ptx);
	tcase_add_test(tc, test_gemm);
	tcase_add_test(tc, test_conv);
	tcase_add_test(tc, test_driver_errors);
	tcase_add_test(tc, test_scheduled_gemm_and_conv);
	tcase_add_test(tc, test_default_schedule_kernels);
	tcase_add_test(tc, test_tensorcore_gemm);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
