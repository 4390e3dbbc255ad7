/*
 * test_double_buffer.c - ts_double_buffer and the double_buffer pass:
 * results unchanged (reference evaluator against the interpreter and
 * LLVM) for even and odd numbers of steps, a last partial step, one step
 * and unrolled loops; the CUDA GEMM's one barrier per k step and its
 * cp.async fetches; the printers; every refusal.
 */
#include "testutil.h"

#include <string.h>

#include "build.h"
#include "c_emit.h"
#include "lower.h"
#include "op_schedules.h"
#include "printer.h"
#include "schedule.h"

typedef tu_mm mm;

static int count(const char *s, const char *part)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, part)); p += strlen(part))
		n++;
	return n;
}

static ts_func *lower(mm *e)
{
	return ts_lower(e->s, "mm", 3, (ts_tensor *[]){e->A, e->B, e->C});
}

/* A's row segment for each step of k (split by 4) copied to a local
 * buffer at k.outer, double-buffered; k.outer's kind as given. */
static ts_stage *local_copy(mm *e, ts_for_kind kind)
{
	ts_tensor *AL = ts_cache_read(e->s, e->A, TS_SCOPE_LOCAL, 1, &e->C);
	tu_nonnull(e->ctx, AL);
	ts_stage *sa = ts_stage_of(e->s, AL);
	ts_axis *ko, *ki;
	tu_ok(e->ctx, ts_split(e->sc, ts_reduce_axis_of(e->sc, 0), 4, &ko, &ki));
	if (kind == TS_FOR_UNROLLED)
		tu_ok(e->ctx, ts_unroll(e->sc, ko));
	tu_ok(e->ctx, ts_compute_at(sa, e->sc, ko));
	tu_ok(e->ctx, ts_double_buffer(sa));
	return sa;
}

/* On the CPU: 23 (6 steps, the last partial), 20 (5, odd), 8 (2), 4 (1:
 * left alone) and an unrolled k.outer, through the interpreter and LLVM. */
START_TEST(test_cpu_results)
{
	static const int64_t ks[] = {23, 20, 8, 4};
	for (int u = 0; u < 2; u++)
		for (int i = 0; i < (int)TS_COUNT_OF(ks); i++) {
			mm e = tu_matmul(7, 9, ks[i]);
			local_copy(&e, u ? TS_FOR_UNROLLED : TS_FOR_SERIAL);
			ts_func *f = lower(&e);
			tu_nonnull(e.ctx, f);
			const char *text = ir_func_str(e.ctx, f);
			/* one step has nothing to overlap: one copy */
			ck_assert_msg((strstr(text, "A.local.1") != NULL) == (ks[i] > 4), "%s", text);
			char what[64];
			snprintf(what, sizeof(what), "K = %lld%s", (long long)ks[i], u ? ", unrolled" : "");
			tu_set_context(what);
			tu_check_func(e.ctx, f, 1e-5);
			tu_set_context(NULL);
			ts_ctx_free(e.ctx);
		}
}
END_TEST

/* The pass's output, printed after it: the twin, the pair loop, the
 * first fetch before it; the schedule printer names the primitive. */
START_TEST(test_printing)
{
	mm e = tu_matmul(7, 9, 20);
	local_copy(&e, TS_FOR_SERIAL);
	ck_assert_ptr_nonnull(strstr(ts_schedule_str(e.s), "double_buffer: two copies"));
	ts_func *f = ts_lower_until(e.s, "mm", 3, (ts_tensor *[]){e.A, e.B, e.C}, "flatten");
	tu_nonnull(e.ctx, f);
	const char *flat = ir_func_str(e.ctx, f);
	ck_assert_msg(strstr(flat, "in local, double-buffered {") && !strstr(flat, "A.local.1"), "%s",
		      flat);
	f = ts_lower_until(e.s, "mm", 3, (ts_tensor *[]){e.A, e.B, e.C}, "double_buffer");
	tu_nonnull(e.ctx, f);
	const char *text = ir_func_str(e.ctx, f);
	ck_assert_msg(strstr(text, "allocate A.local.1[float32 * 4] in local, double-buffered {"), "%s",
		      text);
	/* 5 steps: two pairs, then the fifth reading copy 0 */
	ck_assert_msg(strstr(text, "for (k.outer.pair, 0, 2) {"), "%s", text);
	ck_assert_msg(strstr(text, "if (k.outer.pair*2 + 2 < 5) {"), "%s", text);
	ts_ctx_free(e.ctx);
}
END_TEST

static ts_func *cuda_gemm(ts_ctx *ctx, int64_t M, int64_t N, int64_t K, int db)
{
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(M, K), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(K, N), ts_float32);
	ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_nonnull(ctx, s);
	if (db < 0) {
		tu_ok(ctx, ts_schedule_matmul_cuda(s, C, NULL));
	} else {
		ts_matmul_cuda_params p = ts_matmul_cuda_default();
		p.double_buffer = db;
		tu_ok(ctx, ts_schedule_matmul_cuda(s, C, &p));
	}
	ts_func *f = ts_lower(s, "gemm", 3, (ts_tensor *[]){A, B, C});
	tu_nonnull(ctx, f);
	return f;
}

/* The CUDA GEMM's default schedule (double-buffered) in the interpreter:
 * shapes the tiles divide and not, 1 to 10 k steps, skinny shapes. */
START_TEST(test_cuda_gemm_results)
{
	static const int64_t shapes[][3] = {{128, 128, 64}, {100, 100, 20}, {64, 64, 24}, {33, 17, 9},
					    {45, 45, 8},    {1, 300, 77},   {300, 1, 65}, {40, 72, 80}};
	for (int i = 0; i < (int)TS_COUNT_OF(shapes); i++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_func *f = cuda_gemm(ctx, shapes[i][0], shapes[i][1], shapes[i][2], -1);
		char what[64];
		snprintf(what, sizeof(what), "%lldx%lldx%lld", (long long)shapes[i][0],
			 (long long)shapes[i][1], (long long)shapes[i][2]);
		tu_set_context(what);
		tu_check_func_interp(ctx, f, 1e-4);
		tu_set_context(NULL);
		ts_ctx_free(ctx);
	}
}
END_TEST

/* The CUDA C ts_build compiles (barriers inserted, then emitted). */
static const char *cuda_c(ts_ctx *ctx, const ts_func *f)
{
	ts_func synced = *f;
	synced.body = cg_cuda_insert_sync(ctx, f->body);
	tu_nonnull(ctx, synced.body);
	const char *src = cg_emit_cuda(ctx, &synced, NULL);
	tu_nonnull(ctx, src);
	return src;
}

/* 8 k steps: one barrier per step and one before the first (two per step
 * without the double buffer), each preceded by the wait for this
 * thread's cp.async copies; the fetches are cp.async, 16 bytes inside the
 * shape and 4 at its edges; NVRTC compiles it for sm_75 (plain copies),
 * sm_80 and sm_90. */
START_TEST(test_cuda_source)
{
	ts_ctx *ctx = ts_ctx_new();
	const char *db = cuda_c(ctx, cuda_gemm(ctx, 128, 128, 64, 1));
	const char *plain = cuda_c(ctx, cuda_gemm(ctx, 128, 128, 64, 0));
	ck_assert_int_eq(count(plain, "__syncthreads();"), 2);
	ck_assert_ptr_null(strstr(plain, "cp_async"));
	ck_assert_ptr_nonnull(strstr(db, "__shared__ __align__(16) float A_shared_1[768];"));
	ck_assert_int_eq(count(db, "__syncthreads();"), 3); /* before the loop, two per pair */
	ck_assert_int_eq(count(db, "ts_cp_async_wait();\n    __syncthreads();"), 2);
	ck_assert_int_eq(count(db, "ts_cp_async_wait();\n  __syncthreads();"), 1);
	ck_assert_int_eq(count(db, "ts_cp_async16(&A_shared"), 3);
	ck_assert_int_eq(count(db, "ts_cp_async16(&B_shared"), 3);
	ck_assert_ptr_nonnull(strstr(db, "cp.async.cg.shared.global [p], [g], 16;"));
	ck_assert_ptr_nonnull(strstr(db, "cp.async.wait_all;"));
	ck_assert_ptr_nonnull(strstr(db, "for (int k_outer_pair = 0; k_outer_pair < 4; ++k_outer_pair)"));
	/* edges: scalar 4-byte copies under the guards */
	const char *edge = cuda_c(ctx, cuda_gemm(ctx, 1000, 1000, 1000, 1));
	ck_assert_ptr_nonnull(strstr(edge, "ts_cp_async4(&B_shared"));
	ck_assert_ptr_nonnull(strstr(edge, "ts_cp_async16(&A_shared_1"));
	static const char *const targets[] = {"cuda -arch=sm_75", "cuda -arch=sm_80", "cuda -arch=sm_90"};
	ts_func *f = cuda_gemm(ctx, 100, 100, 20, 1);
	for (int i = 0; i < 3; i++) {
		ts_module *m = ts_build(ctx, f, targets[i]);
		if (!m) /* no NVRTC here: the source is checked by the emitter alone */
			ck_assert_msg(ts_last_status(ctx) == TS_ERR_UNSUPPORTED ||
				      ts_last_status(ctx) == TS_ERR_NO_DEVICE, "%s: %s", targets[i],
				      ts_last_error(ctx));
		ts_clear_error(ctx);
		ts_module_free(m);
	}
	ts_ctx_free(ctx);
}
END_TEST

/* A double buffer whose two copies do not fit 48 KB: the defaults drop
 * it (a skinny shape's widened tiles), given parameters are refused. */
START_TEST(test_cuda_fit)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(4, 64), ts_float32);
	ts_tensor *B = ts_placeholder(ctx, "B", TS_SHAPE(64, 4096), ts_float32);
	ts_tensor *C = ts_op_matmul(ctx, A, B, false, false);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_matmul_cuda_params p = {.block_m = 2, .block_n = 1024, .thread_m = 1, .thread_n = 4,
				   .tile_k = 8, .double_buffer = 1};
	ck_assert_int_ne(ts_schedule_matmul_cuda(s, C, &p), TS_OK);
	tu_assert_error(ctx, "(both copies of a double buffer), more than the 48 KB");
	ts_clear_error(ctx);
	p.double_buffer = 0;
	tu_ok(ctx, ts_schedule_matmul_cuda(s, C, &p));
	ts_ctx_free(ctx);
}
END_TEST

static void refused(mm *e, const char *part)
{
	ck_assert_ptr_null(lower(e));
	tu_assert_error(e->ctx, part);
	ts_ctx_free(e->ctx);
}

START_TEST(test_refusals)
{
	mm e = tu_matmul(8, 8, 16);
	ck_assert_int_ne(ts_double_buffer(NULL), TS_OK);
	ck_assert_int_ne(ts_double_buffer(e.sc), TS_OK);
	tu_assert_error(e.ctx, "double_buffer(C): C is an output: its buffer is the caller's");
	ts_ctx_free(e.ctx);
	/* inline: no buffer; at root: no loop */
	for (int inl = 0; inl < 2; inl++) {
		e = tu_matmul(8, 8, 16);
		ts_tensor *AL = ts_cache_read(e.s, e.A, TS_SCOPE_LOCAL, 1, &e.C);
		ts_stage *sa = ts_stage_of(e.s, AL);
		tu_ok(e.ctx, ts_double_buffer(sa));
		if (inl)
			tu_ok(e.ctx, ts_compute_inline(sa));
		refused(&e, inl ? "lower: double_buffer(A.local): the stage is computed inline: it has no buffer"
				: "lower: double_buffer(A.local): the stage is computed at root, not at a loop");
	}
	/* at a loop bound to a thread, and at a parallel one */
	for (int par = 0; par < 2; par++) {
		e = tu_matmul(8, 8, 16);
		ts_tensor *AL = ts_cache_read(e.s, e.A, TS_SCOPE_LOCAL, 1, &e.C);
		ts_stage *sa = ts_stage_of(e.s, AL);
		ts_axis *i = ts_axis_of(e.sc, 0);
		tu_ok(e.ctx, par ? ts_parallel(e.sc, i) : ts_bind(e.sc, i, TS_THREAD_X));
		tu_ok(e.ctx, ts_compute_at(sa, e.sc, i));
		tu_ok(e.ctx, ts_double_buffer(sa));
		refused(&e, par ? "lower: double_buffer of A.local at the loop i: the loop is parallel"
				: "lower: double_buffer of A.local at the loop i: the loop is bound to threadIdx.x");
	}
	/* computed at k.outer but stored at j: its fetch is inside k.outer,
	 * not a statement of j's loop, where it is allocated */
	e = tu_matmul(8, 8, 16);
	ts_stage *sa = local_copy(&e, TS_FOR_SERIAL);
	tu_ok(e.ctx, ts_store_at(sa, e.sc, ts_axis_of(e.sc, 1)));
	refused(&e, "lower: double_buffer of A.local at the loop j: a statement that stores into it also "
		    "stores elsewhere");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("double_buffer");
	TCase *tc = tcase_create("double_buffer");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_cpu_results);
	tcase_add_test(tc, test_printing);
	tcase_add_test(tc, test_cuda_gemm_results);
	tcase_add_test(tc, test_cuda_source);
	tcase_add_test(tc, test_cuda_fit);
	tcase_add_test(tc, test_refusals);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
