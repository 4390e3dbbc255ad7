/*
 * test_cuda_emu.c - tessera's GPU schedules run through the whole CUDA path
 * (ts_build for "cuda", NVRTC, the driver API) on the host CUDA emulator of
 * tests/cuda_emu, on shapes their tiles do not divide, against the
 * reference evaluator: the default GEMM, batched GEMM and convolution
 * schedules with their double buffers, the tensor-core GEMM (float16,
 * bfloat16, TF32, transposed, batched) and the default GPU schedule of the
 * other operators.  Then the emulator's own checks, so that a pass means
 * something: a missing barrier gives wrong results (in either order of the
 * threads), and a divergent barrier and PTX it does not know fail the
 * launch with a message naming them.
 *
 * The stand-ins are the ones CMake built (TS_EMU_CUDA_LIB,
 * TS_EMU_NVRTC_LIB) unless TESSERA_CUDA_LIB / TESSERA_NVRTC_LIB name
 * others.
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "cuda_test.h"
#include "lower.h"
#include "op_schedules.h"
#include "stderr_capture.h"

static void check_gpu(ts_ctx *ctx, ts_schedule *s, const char *name, int nargs,
		      ts_tensor *const *args, double tol)
{
	ts_func *f = ts_lower(s, name, nargs, (ts_tensor **)args);
	tu_nonnull(ctx, f);
	tu_check_func_with(ctx, f, tu_cuda_runner, NULL, tol);
}

/* C = A x B under ts_schedule_matmul_cuda (p NULL: the defaults). */
static void check_matmul(ts_ctx *ctx, int64_t m, int64_t n, int64_t k,
			 const ts_matmul_cuda_params *p)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(m, k), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(k, n), ts_float32);
	ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_schedule_matmul_cuda(s, C, p));
	check_gpu(ctx, s, "gemm", 3, (ts_tensor *[]){A, B, C}, 1e-4);
}

START_TEST(test_gemm_shapes)
{
	ts_ctx *ctx = ts_ctx_new();
	static const int64_t shapes[][3] = {
		{1, 1, 1}, {5, 300, 17}, {63, 65, 31}, {129, 97, 33}, {300, 7, 129}, {64, 64, 64},
	};
	for (size_t i = 0; i < TS_COUNT_OF(shapes); i++)
		check_matmul(ctx, shapes[i][0], shapes[i][1], shapes[i][2], NULL);
	/* given tiles the shape does not divide, with and without the double buffer */
	ts_matmul_cuda_params p = {.block_m = 32, .block_n = 64, .thread_m = 4, .thread_n = 4,
				   .tile_k = 8, .double_buffer = 1};
	check_matmul(ctx, 70, 100, 45, &p);
	p.double_buffer = 0;
	check_matmul(ctx, 70, 100, 45, &p);

	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(3, 33, 45), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(3, 45, 17), ts_float32);
	ts_tensor *C = ts_op_batch_matmul(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_schedule_matmul_cuda(s, C, NULL));
	check_gpu(ctx, s, "bmm", 3, (ts_tensor *[]){A, B, C}, 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_conv_shapes)
{
	ts_ctx *ctx = ts_ctx_new();
	static const struct {
		int64_t n, c, h, w, f, k;
		int stride, pad, dilation, groups;
	} cases[] = {
		{2, 3, 13, 13, 5, 3, 1, 1, 1, 1},  /* batch, odd channels and size */
		{1, 16, 15, 15, 24, 3, 2, 1, 1, 1}, /* stride 2 */
		{1, 32, 7, 7, 20, 1, 1, 0, 1, 1},   /* 1x1 */
		{1, 8, 12, 10, 8, 3, 1, 2, 2, 1},   /* dilated */
		{1, 8, 9, 9, 6, 3, 1, 1, 1, 2},     /* grouped: one thread per output */
		{1, 3, 23, 23, 16, 7, 2, 3, 1, 1},  /* a 7x7 stem */
	};
	for (size_t i = 0; i < TS_COUNT_OF(cases); i++) {
		ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(cases[i].n, cases[i].c, cases[i].h, cases[i].w),
					      ts_float32);
		ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(cases[i].f, cases[i].c / cases[i].groups,
								 cases[i].k, cases[i].k), ts_float32);
		ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, cases[i].stride, cases[i].stride, cases[i].pad,
						 cases[i].pad, cases[i].dilation, cases[i].dilation,
						 cases[i].groups);
		tu_nonnull(ctx, Y);
		ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
		tu_ok(ctx, ts_schedule_conv2d_cuda(s, Y, NULL));
		check_gpu(ctx, s, "conv", 3, (ts_tensor *[]){X, W, Y}, 1e-4);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* The tensor-core GEMM: each warp's mma.sync carried out from the PTX
 * ISA's fragment layouts, so the emitted fragments must follow them. */
START_TEST(test_tensorcore_shapes)
{
	ts_ctx *ctx = ts_ctx_new();
	static const struct {
		int64_t batch, m, n, k;
		int type; /* 0 float16, 1 bfloat16, 2 TF32 */
		bool ta, tb;
	} cases[] = {
		{0, 48, 80, 32, 0, false, false}, {0, 16, 16, 16, 1, false, false},
		{0, 32, 48, 64, 0, true, true},   {2, 32, 48, 64, 0, false, false},
		{0, 64, 32, 48, 2, false, true},  {0, 80, 16, 32, 2, true, false},
	};
	const ts_dtype types[3] = {ts_float16, ts_bfloat16, ts_float32};
	for (size_t i = 0; i < TS_COUNT_OF(cases); i++) {
		ts_dtype t = types[cases[i].type];
		int64_t b = cases[i].batch, m = cases[i].m, n = cases[i].n, k = cases[i].k;
		int64_t ra = cases[i].ta ? k : m, ca = cases[i].ta ? m : k;
		int64_t rb = cases[i].tb ? n : k, cb = cases[i].tb ? k : n;
		ts_tensor *A = b ? ts_placeholder(ctx, "A", TS_SHAPE(b, ra, ca), t)
				 : ts_placeholder(ctx, "A", TS_SHAPE(ra, ca), t);
		ts_tensor *B = b ? ts_placeholder(ctx, "B", TS_SHAPE(b, rb, cb), t)
				 : ts_placeholder(ctx, "B", TS_SHAPE(rb, cb), t);
		ts_tensor *C = cases[i].type == 2 ? ts_op_matmul_tf32(ctx, A, B, cases[i].ta, cases[i].tb)
						  : ts_op_matmul_acc(ctx, A, B, cases[i].ta, cases[i].tb, ts_float32);
		tu_nonnull(ctx, C);
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		tu_ok(ctx, ts_schedule_matmul_tensorcore(s, C, NULL));
		check_gpu(ctx, s, "tc_gemm", 3, (ts_tensor *[]){A, B, C}, 1e-4);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* Y under ts_schedule_default_cuda with `threads` threads per block. */
static void check_default(ts_ctx *ctx, ts_tensor *Y, int threads, int nargs, ts_tensor *const *args)
{
	tu_nonnull(ctx, Y);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_default_cuda(s, threads));
	check_gpu(ctx, s, Y->name, nargs, args, 1e-4);
}

START_TEST(test_default_schedule_ops)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *rows[2];
	row_ops_cuda(ctx, 37, 53, 64, rows); /* softmax and layer norm: several kernels each */
	for (int i = 0; i < 2; i++)
		tu_check_func_with(ctx, rows[i], tu_cuda_runner, NULL, 1e-4);

	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(2, 6, 13, 11), ts_float32);
	ts_tensor *P = ts_op_max_pool2d(ctx, X, 3, 3, 2, 2, 1, 1);
	check_default(ctx, P, 128, 2, (ts_tensor *[]){X, P});
	ts_tensor *Dw = ts_placeholder(ctx, "Dw", TS_SHAPE(6, 1, 3, 3), ts_float32);
	ts_tensor *D = ts_op_depthwise_conv2d_nchw(ctx, X, Dw, 2, 1, 1, 1, 1, 1);
	check_default(ctx, D, 96, 3, (ts_tensor *[]){X, Dw, D});

	/* dense with its bias, then GELU: elementwise stages inlined */
	ts_tensor *In = ts_placeholder(ctx, "In", TS_SHAPE(19, 23), ts_float32);
	ts_tensor *Wt = ts_placeholder(ctx, "Wt", TS_SHAPE(29, 23), ts_float32);
	ts_tensor *bias = ts_placeholder(ctx, "bias", TS_SHAPE(29), ts_float32);
	ts_tensor *G = ts_op_gelu(ctx, ts_op_dense(ctx, In, Wt, bias), true);
	check_default(ctx, G, 64, 4, (ts_tensor *[]){In, Wt, bias, G});
	ts_ctx_free(ctx);
}
END_TEST

/* ---- the emulator's own checks -------------------------------------------------- */

/* A hand-written kernel `name` of src launched on 2 blocks of 64 threads
 * over out[128] (filled with -1 first); the launch's status, out copied
 * back to host, and what the emulator wrote to stderr in *err. */
static ts_status launch_src(const char *src, const char *name, float host[128], char **err)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_cuda *cuda = ts_cuda_open(ctx);
	tu_nonnull(ctx, cuda);
	cg_nvrtc_result r;
	tu_ok(ctx, cg_nvrtc_compile(ctx, src, name, "sm_90", &r));
	ts_cuda_module *m = ts_cuda_module_load(ctx, cuda, r.image, r.size);
	cg_nvrtc_result_free(&r);
	tu_nonnull(ctx, m);
	ts_cuda_kernel k;
	tu_ok(ctx, ts_cuda_module_kernel(ctx, m, name, &k));
	ts_array *h = ts_array_new(ctx, ts_float32, 1, (int64_t[]){128});
	ts_array *d = ts_cuda_array_new(ctx, cuda, ts_float32, 1, (int64_t[]){128});
	for (int i = 0; i < 128; i++)
		((float *)h->data)[i] = -1;
	tu_ok(ctx, ts_cuda_copy_to_device(ctx, d, h));
	ts_launch l = {{2, 1, 1}, {64, 1, 1}, 0, 0};
	tu_capture cap;
	tu_capture_begin(&cap);
	ts_status st = ts_cuda_launch(ctx, &k, &l, 1, &d);
	*err = tu_capture_end(&cap);
	if (st != TS_OK)
		ck_assert_msg(strstr(ts_last_error(ctx), "CUDA_ERROR_LAUNCH_FAILED"), "%s", ts_last_error(ctx));
	tu_ok(ctx, ts_cuda_copy_to_host(ctx, h, d));
	memcpy(host, h->data, 128 * sizeof(float));
	ts_array_free(h);
	ts_cuda_array_free(d);
	ts_cuda_module_unload(m);
	ts_cuda_close(cuda);
	ts_ctx_free(ctx);
	return st;
}

/* Each thread writes its index to shared memory and reads its neighbour's
 * (above or below); BARRIER is __syncthreads() or nothing. */
#define NEIGHBOUR_SRC(BARRIER, OFFSET)                                              \
	"extern \"C\" __global__ void neighbour(float *out)\n{\n"                  \
	"  __shared__ float s[64];\n"                                               \
	"  s[threadIdx.x] = (float)threadIdx.x;\n  " BARRIER "\n"                  \
	"  out[blockIdx.x * 64 + threadIdx.x] = s[(threadIdx.x + " OFFSET ") % 64];\n}\n"

/* Whether out holds each thread's neighbour's index, in both blocks. */
static bool neighbour_right(const float *out, int offset)
{
	for (int i = 0; i < 128; i++)
		if (out[i] != (float)((i % 64 + offset) % 64))
			return false;
	return true;
}

START_TEST(test_emu_missing_barrier)
{
	float out[128];
	char *err;
	for (int below = 0; below < 2; below++) {
		int offset = below ? 63 : 1;
		const char *with = below ? NEIGHBOUR_SRC("__syncthreads();", "63")
					 : NEIGHBOUR_SRC("__syncthreads();", "1");
		const char *without = below ? NEIGHBOUR_SRC("", "63") : NEIGHBOUR_SRC("", "1");
		ck_assert_int_eq(launch_src(with, "neighbour", out, &err), TS_OK);
		free(err);
		ck_assert_msg(neighbour_right(out, offset), "offset %d with the barrier", offset);
		/* without it, one of the two blocks runs its threads in the
		 * order that reads the neighbour before it writes */
		ck_assert_int_eq(launch_src(without, "neighbour", out, &err), TS_OK);
		free(err);
		ck_assert_msg(!neighbour_right(out, offset), "offset %d: a missing barrier went unseen",
			      offset);
	}
}
END_TEST

START_TEST(test_emu_divergent_barrier)
{
	static const char src[] =
		"extern \"C\" __global__ void diverge(float *out)\n{\n"
		"  if (threadIdx.x < 16)\n    return;\n"
		"  __syncthreads();\n"
		"  out[threadIdx.x] = 1.0f;\n}\n";
	float out[128];
	char *err;
	ck_assert_int_eq(launch_src(src, "diverge", out, &err), TS_ERR_RUNTIME);
	ck_assert_msg(strstr(err, "waits at the __syncthreads() of line 5, which thread (0, 0, 0) left "
			     "the kernel without reaching"), "%s", err);
	free(err);

	static const char two[] =
		"extern \"C\" __global__ void two(float *out)\n{\n"
		"  if (threadIdx.x < 32)\n    __syncthreads();\n"
		"  else\n    __syncthreads();\n"
		"  out[threadIdx.x] = 1.0f;\n}\n";
	ck_assert_int_eq(launch_src(two, "two", out, &err), TS_ERR_RUNTIME);
	ck_assert_msg(strstr(err, "thread (0, 0, 0) waits at the __syncthreads() of line 4, thread "
			     "(32, 0, 0) at the one of line 6"), "%s", err);
	free(err);
}
END_TEST

START_TEST(test_emu_unknown_ptx)
{
	static const char src[] =
		"extern \"C\" __global__ void trap(float *out)\n{\n"
		"  asm volatile(\"trap;\");\n"
		"  out[threadIdx.x] = 1.0f;\n}\n";
	float out[128];
	char *err;
	ck_assert_int_eq(launch_src(src, "trap", out, &err), TS_ERR_RUNTIME);
	ck_assert_msg(strstr(err, "PTX the emulator does not carry out: trap;"), "%s", err);
	free(err);
	ck_assert_msg(out[0] == -1, "the launch went on after it failed");
}
END_TEST

/* Under AddressSanitizer the kernels are built with it: a write past a
 * device array ends the process as it would in the CPU's code. */
#ifdef __SANITIZE_ADDRESS__
START_TEST(test_emu_out_of_bounds)
{
	static const char src[] =
		"extern \"C\" __global__ void past(float *out)\n{\n"
		"  out[blockIdx.x * 64 + threadIdx.x + 1] = 1.0f;\n}\n";
	float out[128];
	char *err;
	launch_src(src, "past", out, &err);
}
END_TEST
#endif

int main(void)
{
	cuda_emu_select();
	Suite *s = suite_create("cuda_emu");
	TCase *tc = tcase_create("emu");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_emu_missing_barrier);
	tcase_add_test(tc, test_emu_divergent_barrier);
	tcase_add_test(tc, test_emu_unknown_ptx);
#ifdef __SANITIZE_ADDRESS__
	tcase_add_exit_test(tc, test_emu_out_of_bounds, 1);
#endif
	tcase_add_test(tc, test_gemm_shapes);
	tcase_add_test(tc, test_conv_shapes);
	tcase_add_test(tc, test_tensorcore_shapes);
	tcase_add_test(tc, test_default_schedule_ops);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
