/*
 * test_tensorcore.c - ts_tensorize and the tensor-core GEMM
 * (ts_schedule_matmul_tensorcore) without a GPU: results of the lowered
 * kernels run by the loop-IR interpreter (which runs each tensorized nest
 * as its loops) against the reference evaluator, float16 and bfloat16,
 * either operand transposed; the CUDA C compiled by NVRTC for sm_80 and
 * sm_90 with one mma.sync per 16 x 8 x 16 block and the accumulator in
 * registers; and every refusal, at scheduling and at build.  A tensorized
 * nest on the CPU is a plain loop nest, checked through the LLVM JIT.
 * The NVRTC tests are skipped (the rest still run) without libnvrtc.
 * Execution on a GPU is in test_cuda_exec.c.
 */
#include "testutil.h"

#include <string.h>

#include "build.h"
#include "arith.h"
#include "c_emit.h"
#include "cuda_mma.h"
#include "cuda_test.h"
#include "lower.h"
#include "op_schedules.h"

static bool nvrtc_ok;

/* C = A x B (either transposed) in float32 from 16-bit operands, or from
 * float32 ones rounded to TF32. */
static ts_tensor *tc_matmul(ts_ctx *ctx, int64_t M, int64_t N, int64_t K, ts_dtype t, bool ta,
			    bool tb, ts_tensor **A, ts_tensor **B)
{
	*A = ta ? ts_placeholder(ctx, "A", TS_SHAPE(K, M), t) : ts_placeholder(ctx, "A", TS_SHAPE(M, K), t);
	*B = tb ? ts_placeholder(ctx, "B", TS_SHAPE(N, K), t) : ts_placeholder(ctx, "B", TS_SHAPE(K, N), t);
	if (ts_dtype_eq(t, ts_float32)) /* TF32 */
		return ts_op_matmul_tf32(ctx, *A, *B, ta, tb);
	return ts_op_matmul_acc(ctx, *A, *B, ta, tb, ts_float32);
}

static ts_func *tc_gemm(ts_ctx *ctx, int64_t M, int64_t N, int64_t K, ts_dtype t, bool ta, bool tb,
			const ts_matmul_tc_params *p)
{
	ts_tensor *A, *B, *C = tc_matmul(ctx, M, N, K, t, ta, tb, &A, &B);
	tu_nonnull(ctx, C);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_schedule_matmul_tensorcore(s, C, p));
	ts_func *f = ts_lower(s, "tc_gemm", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	return f;
}

static int count(const char *s, const char *part)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, part)); p += strlen(part))
		n++;
	return n;
}

/* The CUDA C for arch: NULL (with the error in ctx) when it is refused. */
static const char *cuda_source(ts_ctx *ctx, const ts_func *f, const char *target, ts_module **m)
{
	*m = ts_build(ctx, f, target);
	return *m ? ts_module_source(*m, "cuda") : NULL;
}

START_TEST(test_results_interp)
{
	static const struct {
		int64_t m, n, k;
		int type; /* 0 float16, 1 bfloat16, 2 TF32 */
		bool ta, tb;
	} cases[] = {
		{64, 64, 32, 0, false, false},
		{128, 96, 48, 0, false, false}, /* the defaults halved to divide */
		{32, 48, 64, 1, false, false},
		{48, 32, 16, 0, true, false},
		{32, 64, 32, 1, false, true},
		{16, 16, 16, 0, true, true},
		{64, 64, 32, 2, false, false},
		{32, 48, 48, 2, true, true},
	};
	static const char *const tname[3] = {"f16", "bf16", "tf32"};
	const ts_dtype types[3] = {ts_float16, ts_bfloat16, ts_float32};
	for (size_t i = 0; i < TS_COUNT_OF(cases); i++) {
		ts_ctx *ctx = ts_ctx_new();
		char what[96];
		snprintf(what, sizeof(what), "%lldx%lldx%lld %s%s%s", (long long)cases[i].m,
			 (long long)cases[i].n, (long long)cases[i].k, tname[cases[i].type],
			 cases[i].ta ? " A^T" : "", cases[i].tb ? " B^T" : "");
		tu_set_context(what);
		ts_func *f = tc_gemm(ctx, cases[i].m, cases[i].n, cases[i].k, types[cases[i].type],
				     cases[i].ta, cases[i].tb, NULL);
		tu_check_func_interp(ctx, f, 1e-4);
		ts_ctx_free(ctx);
	}
	tu_set_context(NULL);
}
END_TEST

START_TEST(test_given_tiles_interp)
{
	ts_ctx *ctx = ts_ctx_new();
	/* one warp per block, a 32 x 16 warp tile, 16-deep k steps */
	ts_matmul_tc_params p = {.block_m = 32, .block_n = 16, .warp_m = 32, .warp_n = 16, .tile_k = 16};
	tu_check_func_interp(ctx, tc_gemm(ctx, 64, 48, 48, ts_float16, false, false, &p), 1e-4);
	/* 8 warps, 16 x 16 each */
	p = (ts_matmul_tc_params){.block_m = 64, .block_n = 32, .warp_m = 16, .warp_n = 16, .tile_k = 32};
	tu_check_func_interp(ctx, tc_gemm(ctx, 64, 64, 64, ts_bfloat16, false, false, &p), 1e-4);
	/* the large shapes' tiles: 128 x 128 blocks, 64 x 64 warps */
	p = (ts_matmul_tc_params){.block_m = 128, .block_n = 128, .warp_m = 64, .warp_n = 64, .tile_k = 32};
	tu_check_func_interp(ctx, tc_gemm(ctx, 128, 256, 64, ts_float16, false, false, &p), 1e-4);
	/* double-buffered, 3, 4 and 5 k steps: the odd last step after the
	 * pairs, and TF32 */
	for (int64_t k = 48; k <= 80; k += 16) {
		p = (ts_matmul_tc_params){.block_m = 32, .block_n = 16, .warp_m = 32, .warp_n = 16,
					  .tile_k = 16, .double_buffer = 1};
		tu_check_func_interp(ctx, tc_gemm(ctx, 64, 48, k, ts_float16, false, true, &p), 1e-4);
		tu_check_func_interp(ctx, tc_gemm(ctx, 32, 32, k, ts_float32, true, false, &p), 1e-4);
	}
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_cuda_source)
{
	if (!nvrtc_ok)
		return;
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = tc_gemm(ctx, 128, 128, 64, ts_float16, false, false, NULL);
	static const char *const targets[] = {"cuda -arch=sm_80", "cuda -arch=sm_90"};
	for (int i = 0; i < 2; i++) {
		ts_module *m;
		const char *src = cuda_source(ctx, f, targets[i], &m);
		ck_assert_msg(src != NULL, "%s: %s", targets[i], ts_last_error(ctx));
		/* 64 x 64 per block, 32 x 32 per warp: 4 warps; per k step of 32,
		 * 2 x (2 x 2) 16 x 16 x 16 MMAs of two mma.sync each, and the two
		 * k steps are the two halves of the double buffer */
		ck_assert_ptr_nonnull(strstr(src, "block (32, 2, 2)"));
		/* each lane stores its own fragment elements: no store is left
		 * to thread 0 of the warp */
		ck_assert_msg(!strstr(src, "threadIdx.x == 0"), "%.400s", strstr(src, "threadIdx.x == 0"));
		ck_assert_int_eq(count(src, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), 32);
		/* the 32 x 32 accumulator: 32 registers per lane */
		ck_assert_ptr_nonnull(strstr(src, "float matmul_local[32];"));
		ck_assert_ptr_nonnull(strstr(src, "%%laneid"));
		/* A's fragments by ldmatrix, B's (k rows of contiguous columns) by
		 * ldmatrix.trans; the shared tiles filled 16 bytes at a time */
		ck_assert_int_eq(count(src, "ts_ldsm_x4(mma_fa"), 8); /* once per (k, row tile) */
		ck_assert_int_eq(count(src, "ts_ldsm_x4_trans(mma_fb"), 8);
		/* both steps' tiles fetched by cp.async, 16 bytes each, waited
		 * for at the one barrier before they are read */
		ck_assert_int_eq(count(src, "ts_cp_async16(&A_shared"), 2);
		ck_assert_int_eq(count(src, "ts_cp_async16(&B_shared"), 2);
		ck_assert_int_eq(count(src, "*(uint4 *)&"), 0);
		ck_assert_int_eq(count(src, "ts_cp_async_wait();\n  __syncthreads();"), 1);
		ck_assert_int_eq(count(src, "__syncthreads();"), 1);
		ck_assert(ts_module_times(m).nvrtc_ms > 0);
		ts_module_free(m);
	}
	/* a large shape: 128 x 128 blocks of 64 x 64 warps, 128 registers of
	 * accumulator per lane, each fragment feeding 4 MMAs */
	f = tc_gemm(ctx, 2048, 2048, 64, ts_float16, false, false, NULL);
	ts_module *ml;
	const char *big = cuda_source(ctx, f, "cuda -arch=sm_90", &ml);
	ck_assert_msg(big != NULL, "%s", ts_last_error(ctx));
	ck_assert_ptr_nonnull(strstr(big, "grid (16, 16, 1), block (32, 2, 2)"));
	ck_assert_ptr_nonnull(strstr(big, "float matmul_local[128];"));
	ck_assert_int_eq(count(big, "mma.sync.aligned.m16n8k16"), 128);
	ck_assert_int_eq(count(big, "ts_ldsm_x4(mma_fa"), 16);
	ck_assert_int_eq(count(big, "ts_ldsm_x4_trans(mma_fb"), 16);
	ts_module_free(ml);
	/* TF32: float32 tiles, two mma.sync m16n8k8 per 16 columns and k step of 16 */
	f = tc_gemm(ctx, 128, 128, 64, ts_float32, false, false, NULL);
	ts_module *mt;
	const char *tf = cuda_source(ctx, f, "cuda -arch=sm_80", &mt);
	ck_assert_msg(tf != NULL, "%s", ts_last_error(ctx));
	ck_assert_int_eq(count(tf, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), 64);
	ck_assert_int_gt(count(tf, "__float_as_uint(ts_round_tf32(A_shared["), 0);
	ck_assert_int_eq(count(tf, "ts_cp_async16(&"), 4);
	ck_assert_int_eq(count(tf, "*(float4 *)&"), 0);
	ck_assert_ptr_null(strstr(tf, "ldsm_x4(mma_f")); /* ldmatrix moves 16-bit elements */
	ts_module_free(mt);
	/* an odd number of k steps (3): the last after the pair, its tiles
	 * fetched during the pair; a barrier before each step's reads */
	f = tc_gemm(ctx, 128, 128, 96, ts_float16, false, false, NULL);
	ts_module *mo;
	const char *odd = cuda_source(ctx, f, "cuda -arch=sm_80", &mo);
	ck_assert_msg(odd != NULL, "%s", ts_last_error(ctx));
	ck_assert_int_eq(count(odd, "mma.sync.aligned.m16n8k16"), 48);
	ck_assert_int_eq(count(odd, "ts_cp_async16(&"), 6);
	ck_assert_int_eq(count(odd, "__syncthreads();"), 3);
	ck_assert_int_eq(count(odd, "ts_cp_async_wait();"), 3);
	ts_module_free(mo);
	/* bfloat16 and transposed operands */
	f = tc_gemm(ctx, 64, 32, 32, ts_bfloat16, true, true, NULL);
	ts_module *m;
	const char *src = cuda_source(ctx, f, "cuda -arch=sm_90", &m);
	ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
	ck_assert_int_gt(count(src, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), 0);
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* e for lane L: the lane variables replaced by their values. */
static ts_expr *at_lane(ts_ctx *ctx, const cg_mma *mm, ts_expr *e, int L)
{
	ts_expr *vars[5] = {mm->g, mm->t, mm->r, mm->q0, mm->q1};
	ts_expr *vals[5] = {ts_int(ctx, L >> 2), ts_int(ctx, L & 3), ts_int(ctx, L & 7),
			    ts_int(ctx, (L >> 3) & 1), ts_int(ctx, L >> 4)};
	return ir_substitute(ctx, e, 5, vars, vals);
}

static bool same_index(ts_ctx *ctx, ts_expr *a, ts_expr *b)
{
	int64_t d;
	ts_expr *diff = ir_simplify(ctx, ts_sub(ctx, a, b), 0, NULL);
	return diff && ir_is_const_int(diff, &d) && d == 0;
}

/* ldmatrix.x4 as PTX defines it, given each lane's row address: matrix i
 * takes its 8 rows from lanes 8i..8i+7; lane L's register i holds row
 * L / 4, elements 2 (L % 4) and + 1 (.trans: rows 2 (L % 4) and + 1,
 * element L / 4).  Each must be the element the lane's fragment holds
 * (the per-lane loads' indices, which follow PTX's fragment layout). */
static void check_ldsm(ts_ctx *ctx, const cg_mma *mm, const cg_mma_nest *n, bool b, bool want_trans)
{
	bool trans = !want_trans;
	ts_expr *at = cg_mma_ldsm_index(ctx, mm, n, b, &trans);
	ck_assert_msg(at != NULL, "operand %c does not use ldmatrix", b ? 'B' : 'A');
	ck_assert_int_eq(trans, want_trans);
	for (int L = 0; L < 32; L++)
		for (int i = 0; i < 4; i++)
			for (int e = 0; e < 2; e++) {
				int src = trans ? 8 * i + 2 * (L & 3) + e : 8 * i + (L >> 2);
				int off = trans ? L >> 2 : 2 * (L & 3) + e;
				ts_expr *got = ts_add(ctx, at_lane(ctx, mm, at, src), ts_int(ctx, off));
				ts_expr *want = b ? cg_mma_b_index(ctx, mm, n, i >> 1, 2 * (i & 1) + e)
						  : cg_mma_a_index(ctx, mm, n, 2 * i + e);
				got = ir_index_cast(ctx, got, want->dtype);
				ck_assert_msg(same_index(ctx, got, at_lane(ctx, mm, want, L)),
					      "%c lane %d register %d element %d: ldmatrix reads %s, the fragment holds %s",
					      b ? 'B' : 'A', L, i, e,
					      ir_expr_str(ctx, ir_simplify(ctx, got, 0, NULL)),
					      ir_expr_str(ctx, ir_simplify(ctx, at_lane(ctx, mm, want, L), 0, NULL)));
			}
}

/* Operands in shared memory with 8 contiguous elements per row come in by
 * ldmatrix: plain where k is contiguous (A, or B transposed), .trans
 * where it is not. */
START_TEST(test_ldmatrix_layout)
{
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			ts_ctx *ctx = ts_ctx_new();
			ts_func *f = tc_gemm(ctx, 64, 64, 32, ts_float16, ta, tb, NULL);
			cg_mma mm;
			tu_ok(ctx, cg_mma_scan(ctx, f->body, (int64_t[]){32, 2, 2}, &mm));
			int updates = 0;
			for (int i = 0; i < mm.nnest; i++) {
				if (!mm.nest[i].update)
					continue;
				updates++;
				check_ldsm(ctx, &mm, &mm.nest[i], false, ta);
				check_ldsm(ctx, &mm, &mm.nest[i], true, !tb);
			}
			ck_assert_int_eq(updates, 8);
			ts_ctx_free(ctx);
		}
}
END_TEST

/* Below sm_80 there is no m16n8k16: the build says so. */
/* Batched products (3-D operands, ts_op_matmul_acc / _tf32): each batch's
 * tiles on the grid's z, the same warps and MMAs; results per batch in
 * the interpreter, either operand transposed; the CUDA C compiled. */
START_TEST(test_batched)
{
	ts_ctx *ctx = ts_ctx_new();
	for (int i = 0; i < 3; i++) {
		bool ta = i == 1, tb = i != 0;
		int64_t b = 3, M = 32, N = 48, K = 48;
		ts_dtype t = i == 0 ? ts_float16 : i == 1 ? ts_bfloat16 : ts_float32;
		ts_tensor *A = ts_placeholder(ctx, "A", 3, ta ? (int64_t[]){b, K, M} : (int64_t[]){b, M, K}, t);
		ts_tensor *B = ts_placeholder(ctx, "B", 3, tb ? (int64_t[]){b, N, K} : (int64_t[]){b, K, N}, t);
		ts_tensor *C = ts_dtype_eq(t, ts_float32) ? ts_op_matmul_tf32(ctx, A, B, ta, tb)
							  : ts_op_matmul_acc(ctx, A, B, ta, tb, ts_float32);
		tu_nonnull(ctx, C);
		ck_assert_int_eq(C->ndim, 3);
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		tu_ok(ctx, ts_schedule_matmul_tensorcore(s, C, NULL));
		ts_func *f = ts_lower(s, "bmm", 3, (ts_tensor *[]){A, B, C});
		tu_nonnull(ctx, f);
		tu_check_func_interp(ctx, f, 1e-4);
		if (!nvrtc_ok)
			continue;
		ts_module *m;
		const char *src = cuda_source(ctx, f, "cuda -arch=sm_80", &m);
		ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
		ck_assert_msg(strstr(src, ", 3), block ("), "%.200s", src); /* grid (x, y, 3) */
		ck_assert_int_gt(count(src, "mma.sync.aligned.m16n8k"), 0);
		ts_module_free(m);
	}
	/* the batches on the grid's z: at most 65535 */
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(65536, 16, 16), ts_float16);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(65536, 16, 16), ts_float16);
	ts_tensor *C = ts_op_matmul_acc(ctx, A, B, false, false, ts_float32);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ck_assert_int_ne(ts_schedule_matmul_tensorcore(s, C, NULL), TS_OK);
	tu_assert_error(ctx, "schedule_matmul_tensorcore: 65536 batches, more than the 65535 blocks of the "
			     "grid's z");
	ts_clear_error(ctx);
	/* a 2-D operand of a 3-D product cannot be built; 4-D is not a matmul */
	ck_assert_ptr_null(ts_op_matmul_acc(ctx, A, ts_placeholder(ctx, "D", TS_SHAPE(16, 16), ts_float16),
					    false, false, ts_float32));
	ts_clear_error(ctx);
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_old_arch_refused)
{
	if (!nvrtc_ok)
		return;
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = tc_gemm(ctx, 32, 32, 32, ts_float16, false, false, NULL);
	ts_module *m = ts_build(ctx, f, "cuda -arch=sm_75");
	ck_assert_ptr_null(m);
	tu_assert_error(ctx, "need sm_80 or newer; the target is sm_75");
	ts_ctx_free(ctx);
}
END_TEST

START_TEST(test_schedule_refusals)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *B, *C = tc_matmul(ctx, 100, 64, 64, ts_float16, false, false, &A, &B);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, C, NULL), "M = 100 is not a multiple of 16");
	C = tc_matmul(ctx, 64, 64, 64, ts_float16, false, false, &A, &B);
	s = ts_create_schedule(ctx, 1, &C);
	ts_matmul_tc_params p = ts_matmul_tc_default();
	p.block_m = 48;
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, C, &p), "block_m = 48 must be a multiple of 16 that divides M = 64");
	p = ts_matmul_tc_default();
	p.warp_n = 24;
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, C, &p), "warp tiles 32 x 24");
	p = ts_matmul_tc_default();
	p.tile_k = 0;
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, C, &p), "tile_k must be positive");
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, NULL, NULL), "tensor is NULL");
	ck_assert_int_ne(ts_schedule_matmul_tensorcore(NULL, C, NULL), TS_OK);
	/* float32 operands: no tensor-core type */
	ts_tensor *X = ts_placeholder(ctx, "X", TS_SHAPE(32, 32), ts_float32);
	ts_tensor *Y = ts_op_matmul(ctx, X, X, false, false);
	s = ts_create_schedule(ctx, 1, &Y);
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, Y, NULL), "both operands of matmul are X");
	ts_tensor *X2 = ts_placeholder(ctx, "X2", TS_SHAPE(32, 32), ts_float32);
	Y = ts_op_matmul(ctx, X, X2, false, false);
	s = ts_create_schedule(ctx, 1, &Y);
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, Y, NULL), "float32 operands take tensor cores rounded to TF32 first");
	ts_tensor *I8 = ts_placeholder(ctx, "I8", TS_SHAPE(32, 32), ts_int8);
	ts_tensor *I8b = ts_placeholder(ctx, "I8b", TS_SHAPE(32, 32), ts_int8);
	Y = ts_op_matmul_acc(ctx, I8, I8b, false, false, ts_float32);
	tu_nonnull(ctx, Y);
	s = ts_create_schedule(ctx, 1, &Y);
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, Y, NULL), "tensor cores take float16 or bfloat16");
	FAILS_NULL(ctx, ts_op_matmul_tf32(ctx, I8, I8b, false, false), "matmul_tf32: operands must be float32");
	/* not a matmul: a max of products, a 1-D operand; symbolic extents;
	 * scheduled twice */
	ts_tensor *H = ts_placeholder(ctx, "H", TS_SHAPE(32, 32), ts_float16);
	ts_tensor *G = ts_placeholder(ctx, "G", TS_SHAPE(32, 32), ts_float16);
	ts_tensor *v = ts_placeholder(ctx, "v", TS_SHAPE(32), ts_float16);
	ts_iter *r = ts_reduce_axis(ctx, "k", 0, 32);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_expr *prod = ts_mul(ctx, ts_cast(ctx, ts_float32, TS_READ(ctx, H, i, r->var)),
			       ts_cast(ctx, ts_float32, TS_READ(ctx, G, r->var, j)));
	ts_tensor *mx = ts_compute(ctx, "mx", TS_SHAPE(32, 32), TS_VARS(i, j),
				   TS_MAX(ctx, prod, r));
	s = ts_create_schedule(ctx, 1, &mx);
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, mx, NULL), "mx is not a sum of products");
	ts_iter *r2 = ts_reduce_axis(ctx, "k", 0, 32);
	ts_expr *i2 = ts_var(ctx, "i"), *j2 = ts_var(ctx, "j");
	ts_tensor *mv = ts_compute(ctx, "mv", TS_SHAPE(32, 32), TS_VARS(i2, j2),
				   TS_SUM(ctx, ts_mul(ctx, ts_cast(ctx, ts_float32, TS_READ(ctx, H, i2, r2->var)),
						      ts_cast(ctx, ts_float32, TS_READ(ctx, v, r2->var))), r2));
	s = ts_create_schedule(ctx, 1, &mv);
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, mv, NULL), "operand v has 1 dimensions");
	int64_t m = ts_size_var(ctx, "m", 64);
	ts_tensor *SA = ts_placeholder(ctx, "SA", TS_SHAPE(m, 32), ts_float16);
	ts_tensor *SC = ts_op_matmul_acc(ctx, SA, G, false, false, ts_float32);
	if (SC) {
		s = ts_create_schedule(ctx, 1, &SC);
		FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, SC, NULL), "symbolic extent");
	}
	C = tc_matmul(ctx, 64, 64, 64, ts_float16, false, false, &A, &B);
	s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_schedule_matmul_tensorcore(s, C, NULL));
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, C, NULL), "matmul is already scheduled");
	/* overflow-sized parameters on a huge (never allocated) shape */
	int64_t big = (int64_t)1 << 48; /* HA: 2^62 bytes, as large as a tensor gets */
	ts_tensor *HA = ts_placeholder(ctx, "HA", TS_SHAPE(8192, big), ts_float16);
	ts_tensor *HB = ts_placeholder(ctx, "HB", TS_SHAPE(big, 16), ts_float16);
	ts_tensor *HC = ts_op_matmul_acc(ctx, HA, HB, false, false, ts_float32);
	tu_nonnull(ctx, HC);
	s = ts_create_schedule(ctx, 1, &HC);
	p = (ts_matmul_tc_params){.block_m = 8192, .block_n = 16, .warp_m = 256, .warp_n = 16, .tile_k = big};
	FAILS_ST(ctx, ts_schedule_matmul_tensorcore(s, HC, &p),
		 "more than the 101376 bytes of shared memory every tensor-core GPU gives a block");
	/* matmul_acc's out_dtype */
	FAILS_NULL(ctx, ts_op_matmul_acc(ctx, A, B, false, false, ts_int32), "matmul_acc: out_dtype int32");
	FAILS_NULL(ctx, ts_op_matmul_acc(ctx, X, X2, false, false, ts_float16), "at least as wide");
	ts_ctx_free(ctx);
}
END_TEST

/* The primitive's own checks. */
START_TEST(test_tensorize_refusals)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *B, *C = tc_matmul(ctx, 32, 32, 32, ts_float16, false, false, &A, &B);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *i = ts_axis_of(sc, 0), *k = ts_reduce_axis_of(sc, 0);
	FAILS_ST(ctx, ts_tensorize(sc, i, TS_INTRIN_MMA_16X16X16), "loop 'i' has extent 32");
	ts_axis *io, *ii, *jo, *ji, *ko, *ki;
	tu_ok(ctx, ts_split(sc, i, 16, &io, &ii));
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 1), 16, &jo, &ji));
	tu_ok(ctx, ts_split(sc, k, 16, &ko, &ki));
	FAILS_ST(ctx, ts_tensorize(sc, ii, TS_INTRIN_MMA_16X16X16), "the nest from 'i.inner' has 5 loops");
	tu_ok(ctx, ts_reorder(sc, TS_AXES(io, jo, ko, ii, ji, ki)));
	FAILS_ST(ctx, ts_tensorize(sc, ki, TS_INTRIN_MMA_16X16X16), "has 1 loops");
	FAILS_ST(ctx, ts_tensorize(sc, ii, (ts_intrin)7), "unknown intrinsic");
	ck_assert_int_ne(ts_tensorize(NULL, ii, TS_INTRIN_MMA_16X16X16), TS_OK); /* no context to tell */
	FAILS_ST(ctx, ts_tensorize(sc, NULL, TS_INTRIN_MMA_16X16X16), "tensorize");
	tu_ok(ctx, ts_unroll(sc, ji));
	FAILS_ST(ctx, ts_tensorize(sc, ii, TS_INTRIN_MMA_16X16X16), "loop 'j.inner' inside 'i.inner' is unrolled");
	/* once tensorized, the nest's inner loops stay plain */
	ts_tensor *C2 = tc_matmul(ctx, 32, 32, 32, ts_float16, false, false, &A, &B);
	ts_schedule *s2 = ts_create_schedule(ctx, 1, &C2);
	ts_stage *s2c = ts_stage_of(s2, C2);
	tu_ok(ctx, ts_split(s2c, ts_axis_of(s2c, 0), 16, &io, &ii));
	tu_ok(ctx, ts_split(s2c, ts_axis_of(s2c, 1), 16, &jo, &ji));
	tu_ok(ctx, ts_split(s2c, ts_reduce_axis_of(s2c, 0), 16, &ko, &ki));
	tu_ok(ctx, ts_reorder(s2c, TS_AXES(io, jo, ko, ii, ji, ki)));
	tu_ok(ctx, ts_tensorize(s2c, ii, TS_INTRIN_MMA_16X16X16));
	FAILS_ST(ctx, ts_unroll(s2c, ki), "axis 'k.inner' is inside the nest tensorized at 'i.inner'");
	FAILS_ST(ctx, ts_bind(s2c, ji, TS_THREAD_X), "inside the nest tensorized");
	FAILS_ST(ctx, ts_tensorize(s2c, ji, TS_INTRIN_MMA_16X16X16), "inside the nest tensorized");
	tu_ok(ctx, ts_tensorize(s2c, ii, TS_INTRIN_MMA_16X16X16)); /* again: the same */
	tu_ok(ctx, ts_unroll(s2c, ko)); /* outside the nest */
	ts_ctx_free(ctx);
}
END_TEST

/* On the CPU a tensorized nest is the loops it is: the interpreter and
 * the C emitter run float16 (LLVM has no float16 here), the LLVM JIT the
 * same schedule over float32. */
static ts_func *cpu_tensorized(ts_ctx *ctx, ts_dtype t)
{
	ts_tensor *A, *B, *C = tc_matmul(ctx, 48, 32, 32, t, false, true, &A, &B);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *io, *ii, *jo, *ji, *ko, *ki;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 16, &io, &ii));
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 1), 16, &jo, &ji));
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 16, &ko, &ki));
	tu_ok(ctx, ts_reorder(sc, TS_AXES(io, jo, ko, ii, ji, ki)));
	tu_ok(ctx, ts_tensorize(sc, ii, TS_INTRIN_MMA_16X16X16));
	ck_assert_ptr_nonnull(strstr(ts_schedule_str(s), "@tensorized"));
	ts_func *f = ts_lower(s, "tc_cpu", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	ck_assert_ptr_nonnull(strstr(ir_func_str(ctx, f), "tensorized (i.inner, 0, 16)"));
	return f;
}

START_TEST(test_cpu_runs_loops)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_func *f = cpu_tensorized(ctx, ts_float16);
	tu_check_func_interp(ctx, f, 1e-4);
	const char *c = cg_emit_c(ctx, f);
	tu_nonnull(ctx, c);
	ck_assert_ptr_null(strstr(c, "mma"));
	tu_check_func_llvm(ctx, cpu_tensorized(ctx, ts_float32), NULL, 1e-4);
	ts_ctx_free(ctx);
}
END_TEST

/* A hand-written schedule built wrong in each way the build refuses. */
static ts_func *partial_with(ts_ctx *ctx, int variant, int64_t K, ts_scope acc)
{
	ts_tensor *A, *B, *C = tc_matmul(ctx, 32, 32, K, ts_float16, false, false, &A, &B);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_tensor *CL = ts_cache_write(s, C, acc);
	ts_stage *sc = ts_stage_of(s, C), *sl = ts_stage_of(s, CL);
	ts_axis *by, *bx, *yi, *xi, *lyo, *lyi, *lxo, *lxi, *ko, *ki;
	tu_ok(ctx, ts_tile(sc, ts_axis_of(sc, 0), ts_axis_of(sc, 1), 16, 16, &by, &bx, &yi, &xi));
	tu_ok(ctx, ts_bind(sc, by, TS_BLOCK_Y));
	if (variant == 2) { /* lanes bound around the warp's nest */
		ts_axis *xo, *xx;
		tu_ok(ctx, ts_split(sc, bx, 1, &xo, &xx));
		tu_ok(ctx, ts_bind(sc, xo, TS_BLOCK_X));
		tu_ok(ctx, ts_bind(sc, xx, TS_THREAD_X));
		bx = xx;
	} else {
		tu_ok(ctx, ts_bind(sc, bx, TS_BLOCK_X));
	}
	if (variant != 1)
		tu_ok(ctx, ts_tensorize(sc, yi, TS_INTRIN_MMA_16X16X16));
	tu_ok(ctx, ts_compute_at(sl, sc, bx));
	tu_ok(ctx, ts_split(sl, ts_axis_of(sl, 0), 16, &lyo, &lyi));
	tu_ok(ctx, ts_split(sl, ts_axis_of(sl, 1), 16, &lxo, &lxi));
	tu_ok(ctx, ts_split(sl, ts_reduce_axis_of(sl, 0), 16, &ko, &ki));
	tu_ok(ctx, ts_reorder(sl, TS_AXES(ko, lyo, lxo, lyi, lxi, ki)));
	tu_ok(ctx, ts_tensorize(sl, lyi, TS_INTRIN_MMA_16X16X16));
	if (variant != 0) { /* a warp: A's tile fetched by 32 lanes */
		ts_tensor *AS = ts_cache_read(s, A, TS_SCOPE_SHARED, 1, &CL);
		ts_stage *sa = ts_stage_of(s, AS);
		ts_axis *f, *o, *t;
		tu_ok(ctx, ts_compute_at(sa, sl, ko));
		tu_ok(ctx, ts_fuse(sa, ts_axis_of(sa, 0), ts_axis_of(sa, 1), &f));
		tu_ok(ctx, ts_split(sa, f, 32, &o, &t));
		tu_ok(ctx, ts_bind(sa, t, TS_THREAD_X));
	}
	ts_func *f = ts_lower(s, "tc_partial", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	return f;
}

static ts_func *partial(ts_ctx *ctx, int variant)
{
	return partial_with(ctx, variant, 32, TS_SCOPE_LOCAL);
}

START_TEST(test_build_refusals)
{
	if (!nvrtc_ok)
		return;
	ts_ctx *ctx = ts_ctx_new();
	/* one warp of 32 lanes is needed: a block of one thread is refused */
	FAILS_NULL(ctx, ts_build(ctx, partial(ctx, 0), "cuda -arch=sm_90"),
		   "the block has 1 threads, not a whole number of warps");
	/* the accumulator stored by a plain loop */
	FAILS_NULL(ctx, ts_build(ctx, partial(ctx, 1), "cuda -arch=sm_90"),
		   "reads the accumulator matmul.local outside a tensorized nest");
	/* under a threadIdx.x loop */
	FAILS_NULL(ctx, ts_build(ctx, partial(ctx, 2), "cuda -arch=sm_90"), "bound to threadIdx.x");
	/* K = 24: the k split's tail guards the update (the interpreter runs
	 * it; only the interpreter, as the build refuses it) */
	ts_func *f = partial_with(ctx, 3, 24, TS_SCOPE_LOCAL);
	tu_check_func_with(ctx, f, tu_interp_runner, NULL, 1e-4);
	FAILS_NULL(ctx, ts_build(ctx, f, "cuda -arch=sm_90"), "a guard there means the tiles do not divide");
	/* accumulators that are not local */
	FAILS_NULL(ctx, ts_build(ctx, partial_with(ctx, 3, 32, TS_SCOPE_GLOBAL), "cuda -arch=sm_90"),
		   "the MMA's accumulator is a local float32 buffer");
	FAILS_NULL(ctx, ts_build(ctx, partial_with(ctx, 3, 32, TS_SCOPE_SHARED), "cuda -arch=sm_90"),
		   "a barrier was placed inside its nest");
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	nvrtc_ok = have_nvrtc();
	Suite *s = suite_create("tensorcore");
	TCase *tc = tcase_create("tensorcore");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_results_interp);
	tcase_add_test(tc, test_given_tiles_interp);
	tcase_add_test(tc, test_cuda_source);
	tcase_add_test(tc, test_batched);
	tcase_add_test(tc, test_old_arch_refused);
	tcase_add_test(tc, test_ldmatrix_layout);
	tcase_add_test(tc, test_schedule_refusals);
	tcase_add_test(tc, test_tensorize_refusals);
	tcase_add_test(tc, test_cpu_runs_loops);
	tcase_add_test(tc, test_build_refusals);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
