/*
 * test_cuda_schedules.c - the operator library's GPU schedules, lowered by
 * tessera and compiled by NVRTC to CUBIN for sm_80 and sm_90 (no GPU needed),
 * their CUDA C compared with a golden file, and the error a plain "cuda"
 * target gives where there is no GPU; the legal neighbours of the
 * refusals in test_mustfail_cuda.c compile and, run one thread at a time by
 * the loop-IR interpreter, match the reference evaluator on shapes the
 * tiles do not divide.  Exits 77 (skip) when libnvrtc is missing.
 * Execution on a GPU is in test_cuda_exec.c.
 */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "build.h"
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
	return ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C});
}

static ts_func *conv(ts_ctx *ctx)
{
	/* a ResNet-50 3x3 layer of res4 at batch 1 */
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 256, 14, 14), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(256, 256, 3, 3), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, 1, 1, 1, 1, 1, 1, 1);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	tu_ok(ctx, ts_schedule_conv2d_cuda(s, Y, NULL));
	return ts_lower(s, "conv2d", 3, (ts_tensor *[]){X, W, Y});
}

static void compiles(ts_ctx *ctx, ts_func *f, const char *target)
{
	tu_nonnull(ctx, f);
	ts_module *m = ts_build(ctx, f, target);
	ck_assert_msg(m != NULL, "%s for %s: %s", f->name, target, ts_last_error(ctx));
	const char *src = ts_module_source(m, "cuda");
	tu_nonnull(ctx, src);
	ck_assert_ptr_nonnull(strstr(src, "__global__"));
	ck_assert_ptr_nonnull(strstr(src, "__syncthreads()"));
	ts_phase_times t = ts_module_times(m);
	ck_assert(t.nvrtc_ms > 0);
	/* compiled without a GPU: it can be read but not run */
	ts_array *none[3] = {NULL, NULL, NULL};
	ck_assert_int_ne(ts_module_run(m, 3, none), TS_OK);
	ts_clear_error(ctx);
	ts_module_free(m);
}

START_TEST(test_gemm_compiles)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = gemm(ctx, 512, 512, 512);
	compiles(ctx, f, "cuda -arch=sm_80");
	compiles(ctx, f, "cuda -arch=sm_90");
	/* shapes the tiles do not divide */
	compiles(ctx, gemm(ctx, 100, 90, 70), "cuda -arch=sm_90");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_conv_compiles)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = conv(ctx);
	tu_nonnull(ctx, f);
	ts_module *m80 = ts_build(ctx, f, "cuda -arch=sm_80");
	ck_assert_msg(m80 != NULL, "%s", ts_last_error(ctx));
	ts_module *m90 = ts_build(ctx, f, "cuda -arch=sm_90");
	ck_assert_msg(m90 != NULL, "%s", ts_last_error(ctx));
	/* shared tiles of the padded input (the padding's test in the fetch)
	 * and of the weights (cp.async copies), double-buffered (32 steps of
	 * 8 channels); 14 x 14 x
	 * 256 outputs spread over 224 blocks of 14 x 16 threads, one output
	 * each (a 4 x 4 register block would leave 3136 threads) */
	const char *src = ts_module_source(m90, "cuda");
	ck_assert_msg(strstr(src, "grid (14, 16, 1), block (14, 16, 1)"), "%.200s", src);
	ck_assert_ptr_nonnull(strstr(src, "float pad_shared_1[288];"));
	ck_assert_ptr_nonnull(strstr(src, "ts_cp_async4(&W_shared_1["));
	ck_assert_ptr_nonnull(strstr(src, "? X["));
	ts_module_free(m80);
	ts_module_free(m90);
	ts_ctx_free(ctx);
}
END_TEST

/* Given tiles: 32 channels by 8 x 8 pixels per block, 4 x 4 per thread
 * (registers), 8 input channels per step; and a grouped convolution, which
 * takes the simple schedule (one output per thread): both compute the
 * reference's results (interpreter). */
START_TEST(test_conv_tiles_interp)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(2, 12, 11, 10), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(36, 12, 3, 3), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, 1, 1, 1, 1, 1, 1, 1);
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_matmul_cuda_params p = {.block_m = 32, .block_n = 40, .thread_m = 4, .thread_n = 4,
				   .tile_k = 8, .double_buffer = 1};
	tu_ok(ctx, ts_schedule_conv2d_cuda(s, Y, &p));
	ts_func *f = ts_lower(s, "conv", 3, (ts_tensor *[]){X, W, Y});
	tu_nonnull(ctx, f);
	ck_assert_ptr_nonnull(strstr(ir_func_str(ctx, f), "W.shared.1"));
	tu_check_func_interp(ctx, f, 1e-4);
	/* a thread_n past any row: clamped (no overflow in the tile sizes) */
	s = ts_create_schedule(ctx, 1, &Y);
	p = (ts_matmul_cuda_params){.block_m = 4, .block_n = 8, .thread_m = 1, .thread_n = INT64_MAX,
				    .tile_k = 2};
	tu_ok(ctx, ts_schedule_conv2d_cuda(s, Y, &p));
	f = ts_lower(s, "conv", 3, (ts_tensor *[]){X, W, Y});
	tu_nonnull(ctx, f);
	tu_check_func_interp(ctx, f, 1e-4);
	ts_tensor *G = ts_placeholder(ctx, "G", TS_SHAPE(12, 3, 3, 3), ts_float32);
	ts_tensor *Z = ts_op_conv2d_nchw(ctx, X, G, 2, 2, 1, 1, 1, 1, 4);
	for (int k = 0; k < 2; k++) {
		s = ts_create_schedule(ctx, 1, &Z);
		tu_ok(ctx, ts_schedule_conv2d_cuda(s, Z, k ? &p : NULL));
		f = ts_lower(s, "grouped", 3, (ts_tensor *[]){X, G, Z});
		tu_nonnull(ctx, f);
		ck_assert_ptr_null(strstr(ir_func_str(ctx, f), "shared"));
		tu_check_func_interp(ctx, f, 1e-4);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* The generic GPU schedule of the other operators compiles too. */
START_TEST(test_default_schedule_compiles)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(1, 64, 56, 56), ts_float32);
	ts_tensor *outs[2] = {ts_op_max_pool2d(ctx, X, 3, 3, 2, 2, 1, 1),
			      ts_op_avg_pool2d(ctx, X, 3, 3, 2, 2, 1, 1, false)};
	for (int i = 0; i < 2; i++) {
		tu_nonnull(ctx, outs[i]);
		ts_schedule *s = ts_create_schedule(ctx, 1, &outs[i]);
		tu_ok(ctx, ts_schedule_default_cuda(s, 256));
		ts_func *f = ts_lower(s, outs[i]->name, 2, (ts_tensor *[]){X, outs[i]});
		tu_nonnull(ctx, f);
		ts_module *m = ts_build(ctx, f, "cuda -arch=sm_90");
		ck_assert_msg(m != NULL, "%s: %s", outs[i]->name, ts_last_error(ctx));
		ts_module_free(m);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* Compiles f for sm_80 and sm_90, and checks it through the interpreter. */
static void compiles_and_matches(ts_ctx *ctx, ts_func *f)
{
	tu_nonnull(ctx, f);
	const char *arch[2] = {"cuda -arch=sm_80", "cuda -arch=sm_90"};
	for (int i = 0; i < 2; i++) {
		ts_module *m = ts_build(ctx, f, arch[i]);
		ck_assert_msg(m != NULL, "%s for %s: %s", f->name, arch[i], ts_last_error(ctx));
		ts_module_free(m);
	}
	tu_check_func_interp(ctx, f, 1e-4);
}

/* Softmax and layer norm under the default schedule: their row
 * reductions are computed at root with threads of their own, so each
 * builds as one kernel per stage (max, sum, output; mean, variance,
 * output), compiled for sm_80 and sm_90 and checked through the
 * interpreter on rows the 64-thread blocks do not divide. */
START_TEST(test_default_schedule_kernels)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *fs[2];
	row_ops_cuda(ctx, 37, 50, 64, fs);
	for (int i = 0; i < 2; i++) {
		ts_func *f = fs[i];
		compiles_and_matches(ctx, f);
		ts_module *m = ts_build(ctx, f, "cuda -arch=sm_90");
		tu_nonnull(ctx, m);
		const char *src = ts_module_source(m, "cuda");
		tu_nonnull(ctx, src);
		for (int k = 0; k < 3; k++) {
			char want[96];
			snprintf(want, sizeof(want), "kernel %d of 3: %s_k%d */", k + 1, f->name, k);
			ck_assert_msg(strstr(src, want) != NULL, "no '%s' in\n%s", want, src);
		}
		ck_assert(strstr(src, "kernel 4 of") == NULL);
		ts_module_free(m);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* A producer at root with threads of its own, read by other threads of
 * its consumer (C[i] = P[N - 1 - i] + 1): two kernels, the first done
 * before the second reads P.  Matches through the interpreter; 1000 is
 * not a multiple of the 64-thread blocks. */
START_TEST(test_root_producer_kernel)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(1000), ts_float32);
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(1000), TS_VARS(i),
				  ts_mul(ctx, TS_READ(ctx, A, i), ts_float(ctx, 2.0)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(1000), TS_VARS(j),
				  ts_add(ctx, TS_READ(ctx, P, ts_sub(ctx, ts_int(ctx, 999), j)), ts_float(ctx, 1.0)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *st[2] = {ts_stage_of(s, P), ts_stage_of(s, C)};
	for (int k = 0; k < 2; k++) {
		ts_axis *bx, *tx;
		tu_ok(ctx, ts_split(st[k], ts_axis_of(st[k], 0), 64, &bx, &tx));
		tu_ok(ctx, ts_bind(st[k], bx, TS_BLOCK_X));
		tu_ok(ctx, ts_bind(st[k], tx, TS_THREAD_X));
	}
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
	compiles_and_matches(ctx, f);
	ts_module *m = ts_build(ctx, f, "cuda -arch=sm_80");
	tu_nonnull(ctx, m);
	const char *src = ts_module_source(m, "cuda");
	ck_assert(strstr(src, "kernel 1 of 2: f_k0") && strstr(src, "kernel 2 of 2: f_k1"));
	/* P is a parameter of both kernels, after A and C */
	ck_assert_msg(strstr(src, "f_k1(float *__restrict__ A, float *__restrict__ C, float *__restrict__ P)"),
		      "%s", src);
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* A batched product: the batches are the grid's z; shapes the tiles do
 * not divide, compiled and checked through the interpreter.  Too many
 * batches for the grid are refused. */
START_TEST(test_batch_matmul)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(3, 37, 20), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(3, 20, 45), ts_float32);
	ts_tensor *C = ts_op_batch_matmul(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_schedule_matmul_cuda(s, C, NULL));
	ts_func *f = ts_lower(s, "bmm", 3, (ts_tensor *[]){A, B, C});
	compiles_and_matches(ctx, f);
	ts_module *m = ts_build(ctx, f, "cuda -arch=sm_90");
	tu_nonnull(ctx, m);
	const char *src = ts_module_source(m, "cuda");
	ck_assert_msg(strstr(src, "grid (1, 1, 3)") && strstr(src, "blockIdx.z"), "%s", src);
	ts_module_free(m);
	ts_tensor *A2 = ts_placeholder(ctx, "A2", TS_SHAPE(70000, 2, 2), ts_float32);
	ts_tensor *B2 = ts_placeholder(ctx, "B2", TS_SHAPE(70000, 2, 2), ts_float32);
	ts_tensor *C2 = ts_op_batch_matmul(ctx, A2, B2, false, false);
	s = ts_create_schedule(ctx, 1, &C2);
	ck_assert_int_eq(ts_schedule_matmul_cuda(s, C2, NULL), TS_ERR_INVALID);
	tu_assert_error(ctx, "70000 batches, more than the 65535 blocks");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_gemm_tail_matches)
{
	ts_ctx *ctx = ts_ctx_new();
	compiles_and_matches(ctx, gemm(ctx, 100, 90, 70));
	ts_ctx_free(ctx);
}
END_TEST

#define N 1000

/* P[i] = 2 * A[i]; C[i] = P[N - 1 - i] + 1 (test_mustfail_cuda.c). */
static ts_tensor *producer_consumer(ts_ctx *ctx, ts_tensor **A, ts_tensor **P)
{
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	*A = ts_placeholder(ctx, "A", TS_SHAPE(N), ts_float32);
	*P = ts_compute(ctx, "P", TS_SHAPE(N), TS_VARS(i),
			ts_mul(ctx, TS_READ(ctx, *A, i), ts_float(ctx, 2.0)));
	return ts_compute(ctx, "C", TS_SHAPE(N), TS_VARS(j),
			  ts_add(ctx, TS_READ(ctx, *P, ts_sub(ctx, ts_int(ctx, N - 1), j)),
				 ts_float(ctx, 1.0)));
}

static ts_axis *bind_1d(ts_ctx *ctx, ts_stage *st, int64_t threads)
{
	ts_axis *bx, *tx;
	tu_ok(ctx, ts_split(st, ts_axis_of(st, 0), threads, &bx, &tx));
	tu_ok(ctx, ts_bind(st, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(st, tx, TS_THREAD_X));
	return tx;
}

/* A root producer with no bindings of its own is computed whole by every
 * thread, into that thread's copy: slow, but each read finds its value. */
START_TEST(test_unbound_root_producer)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *P, *C = producer_consumer(ctx, &A, &P);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	bind_1d(ctx, ts_stage_of(s, C), 64);
	compiles_and_matches(ctx, ts_lower(s, "f", 2, (ts_tensor *[]){A, C}));
	ts_ctx_free(ctx);
}
END_TEST

/* The fixes the refusal suggests: P at C's thread loop, or inlined. */
START_TEST(test_producer_at_consumer)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *P, *C = producer_consumer(ctx, &A, &P);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_axis *tx = bind_1d(ctx, ts_stage_of(s, C), 64);
	tu_ok(ctx, ts_compute_at(ts_stage_of(s, P), ts_stage_of(s, C), tx));
	compiles_and_matches(ctx, ts_lower(s, "f", 2, (ts_tensor *[]){A, C}));
	s = ts_create_schedule(ctx, 1, &C);
	bind_1d(ctx, ts_stage_of(s, C), 64);
	tu_ok(ctx, ts_compute_inline(ts_stage_of(s, P)));
	compiles_and_matches(ctx, ts_lower(s, "g", 2, (ts_tensor *[]){A, C}));
	ts_ctx_free(ctx);
}
END_TEST

/* Two shared tiles fetched at the block loop by the whole block (a tail
 * block fetches what it needs): the barrier is outside every thread guard.
 * C's threads span the block, so the thread loop needs no guard either. */
START_TEST(test_shared_tiles_at_block_loop)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(250), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(250), ts_float32);
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(250), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, A, i), TS_READ(ctx, B, i)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_tensor *AS = ts_cache_read(s, A, TS_SCOPE_SHARED, 1, &C);
	ts_tensor *BS = ts_cache_read(s, B, TS_SCOPE_SHARED, 1, &C);
	tu_nonnull(ctx, BS);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *bx, *tx;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 64, &bx, &tx));
	tu_ok(ctx, ts_bind(sc, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sc, tx, TS_THREAD_X));
	ts_tensor *tiles[2] = {AS, BS};
	for (int k = 0; k < 2; k++) {
		ts_stage *st = ts_stage_of(s, tiles[k]);
		tu_ok(ctx, ts_compute_at(st, sc, bx));
		tu_ok(ctx, ts_bind(st, ts_axis_of(st, 0), TS_THREAD_X));
	}
	ts_func *f = ts_lower(s, "f", 3, (ts_tensor *[]){A, B, C});
	compiles_and_matches(ctx, f);
	ts_module *m = ts_build(ctx, f, "cuda -arch=sm_90");
	tu_nonnull(ctx, m);
	const char *src = ts_module_source(m, "cuda");
	/* one barrier: the two fetches write different tiles */
	const char *b = strstr(src, "__syncthreads()");
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_null(strstr(b + 1, "__syncthreads()"));
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* C's threads cover 32 of the block's 64 (the A tile is fetched by 64);
 * the B tile is fetched inside C's thread loop.  That loop is split at the
 * barrier, so every thread of the block reaches it:
 *   if (threadIdx.x < 32) { fetch B }  __syncthreads();  if (...) { C } */
START_TEST(test_barrier_hoisted_out_of_thread_guard)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(256), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(256), ts_float32);
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(256), TS_VARS(i),
				  ts_add(ctx, TS_READ(ctx, A, i), TS_READ(ctx, B, i)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_tensor *AS = ts_cache_read(s, A, TS_SCOPE_SHARED, 1, &C);
	ts_tensor *BS = ts_cache_read(s, B, TS_SCOPE_SHARED, 1, &C);
	tu_nonnull(ctx, BS);
	ts_stage *sc = ts_stage_of(s, C), *sa = ts_stage_of(s, AS), *sb = ts_stage_of(s, BS);
	ts_axis *bx, *in, *io, *tx;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 64, &bx, &in));
	tu_ok(ctx, ts_split(sc, in, 32, &io, &tx));
	tu_ok(ctx, ts_bind(sc, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sc, tx, TS_THREAD_X));
	tu_ok(ctx, ts_compute_at(sa, sc, bx));
	tu_ok(ctx, ts_bind(sa, ts_axis_of(sa, 0), TS_THREAD_X));
	tu_ok(ctx, ts_compute_at(sb, sc, tx));
	ts_func *f = ts_lower(s, "f", 3, (ts_tensor *[]){A, B, C});
	compiles_and_matches(ctx, f);
	ts_module *m = ts_build(ctx, f, "cuda -arch=sm_90");
	tu_nonnull(ctx, m);
	const char *src = ts_module_source(m, "cuda");
	const char *fetch = strstr(src, "B_shared[");
	ck_assert_ptr_nonnull(fetch);
	const char *sync = strstr(fetch, "__syncthreads();");
	ck_assert_ptr_nonnull(sync);
	/* the barrier is at the depth of the io loop's body, outside the guard */
	ck_assert_ptr_nonnull(strstr(src, "    }\n    __syncthreads();\n    int i_inner_inner_1 = threadIdx.x;"));
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_gemm_golden)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = gemm(ctx, 128, 128, 64);
	tu_nonnull(ctx, f);
	ts_module *m = ts_build(ctx, f, "cuda -arch=sm_90");
	ck_assert_msg(m != NULL, "%s", ts_last_error(ctx));
	tu_assert_golden("cuda_gemm_schedule.cu", ts_module_source(m, "cuda"));
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* A shared tile of 20480 floats (80 KB), over the static 48 KB: carved
 * from dynamic shared memory, which sm_80 gives a block and sm_75 (64 KB)
 * does not: refused at build, naming both. */
START_TEST(test_dynamic_shared)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(40960), ts_float32);
	ts_expr *i = ts_var(ctx, "i");
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(40960), TS_VARS(i),
				  ts_mul(ctx, TS_READ(ctx, A, i), ts_float(ctx, 2)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_tensor *AS = ts_cache_read(s, A, TS_SCOPE_SHARED, 1, &C);
	tu_nonnull(ctx, AS);
	ts_stage *sc = ts_stage_of(s, C), *sa = ts_stage_of(s, AS);
	ts_axis *bo, *bi, *io, *tx, *o, *t;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 20480, &bo, &bi));
	tu_ok(ctx, ts_split(sc, bi, 256, &io, &tx));
	tu_ok(ctx, ts_bind(sc, bo, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sc, tx, TS_THREAD_X));
	tu_ok(ctx, ts_compute_at(sa, sc, bo));
	tu_ok(ctx, ts_split(sa, ts_axis_of(sa, 0), 256, &o, &t));
	tu_ok(ctx, ts_bind(sa, t, TS_THREAD_X));
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
	tu_nonnull(ctx, f);
	tu_check_func_interp(ctx, f, 1e-6);
	ck_assert_ptr_null(ts_build(ctx, f, "cuda -arch=sm_75"));
	tu_assert_error(ctx, "build f: 81920 bytes of shared memory per block; sm_75 gives a block at "
			     "most 65536");
	ts_clear_error(ctx);
	ts_module *m = ts_build(ctx, f, "cuda -arch=sm_80");
	tu_nonnull(ctx, m);
	const char *src = ts_module_source(m, "cuda");
	ck_assert_ptr_nonnull(strstr(src, "81920 bytes of shared memory (dynamic)"));
	ck_assert_ptr_nonnull(strstr(src, "float *const A_shared = (float *)&ts_shared[0];"));
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* What the schedule counts is what the kernel takes: the tiles of whole
 * thread steps (the given block_m 9 in steps of thread_m 5: weights for
 * 10 channels) and the emitter's 16-byte rounding, so given tiles it
 * accepts and its defaults stay within the static 48 KB. */
START_TEST(test_conv_shared_estimate)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(2, 1256, 61, 21), ts_float32);
	ts_tensor *W = ts_placeholder(ctx, "W", TS_SHAPE(1583, 1256, 5, 11), ts_float32);
	ts_tensor *Y = ts_op_conv2d_nchw(ctx, X, W, 2, 3, 3, 2, 1, 1, 1);
	ts_matmul_cuda_params given = {.block_m = 9, .block_n = 31, .thread_m = 5, .thread_n = 6,
				       .tile_k = 12, .double_buffer = 1};
	for (int k = 0; k < 2; k++) {
		ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
		ts_status st = ts_schedule_conv2d_cuda(s, Y, k ? &given : NULL);
		if (st != TS_OK) { /* given tiles over 48 KB: refused, not under-counted */
			ck_assert_int_eq(k, 1);
			tu_assert_error(ctx, "more than the 48 KB of static shared memory");
			ts_clear_error(ctx);
			continue;
		}
		ts_func *f = ts_lower(s, "conv", 3, (ts_tensor *[]){X, W, Y});
		tu_nonnull(ctx, f);
		cg_launch l;
		tu_nonnull(ctx, cg_emit_cuda(ctx, f, &l));
		ck_assert_int_eq(l.shared_bytes, 0);
		ck_assert_int_le(l.static_shared_bytes, CG_CUDA_MAX_STATIC_SHARED);
	}
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_errors)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = gemm(ctx, 64, 64, 64);
	ts_module *m = ts_build(ctx, f, "cuda -arch=sm_1x");
	ck_assert_ptr_null(m);
	tu_assert_error(ctx, "sm_1x");
	ts_clear_error(ctx);
	ck_assert_ptr_null(ts_build(ctx, f, "opencl"));
	tu_assert_error(ctx, "build gemm: unknown target 'opencl'");
	ts_clear_error(ctx);
	/* "cuda" alone needs a device to pick sm_XY */
	m = ts_build(ctx, f, "cuda");
	if (!m) {
		ck_assert_int_eq(ts_last_status(ctx), TS_ERR_NO_DEVICE);
		tu_assert_error(ctx, "give one, e.g. 'cuda -arch=sm_90'");
	}
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	if (!have_nvrtc())
		return 77;
	Suite *s = suite_create("cuda_schedules");
	TCase *tc = tcase_create("nvrtc");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_gemm_compiles);
	tcase_add_test(tc, test_conv_compiles);
	tcase_add_test(tc, test_conv_tiles_interp);
	tcase_add_test(tc, test_gemm_golden);
	tcase_add_test(tc, test_dynamic_shared);
	tcase_add_test(tc, test_conv_shared_estimate);
	tcase_add_test(tc, test_default_schedule_compiles);
	tcase_add_test(tc, test_default_schedule_kernels);
	tcase_add_test(tc, test_root_producer_kernel);
	tcase_add_test(tc, test_batch_matmul);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_gemm_tail_matches);
	tcase_add_test(tc, test_unbound_root_producer);
	tcase_add_test(tc, test_producer_at_consumer);
	tcase_add_test(tc, test_shared_tiles_at_block_loop);
	tcase_add_test(tc, test_barrier_hoisted_out_of_thread_guard);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
