/*
 * test_cuda_rfactor.c - rfactor schedules for the GPU, compiled by NVRTC
 * to CUBIN for sm_80 and sm_90 (no GPU needed) and run one thread at a
 * time by the loop-IR interpreter against the reference evaluator, on
 * extents the splits do not divide.  Exits 77 (skip) when libnvrtc is
 * missing.
 */
#include "testutil.h"

#include <string.h>

#include "build.h"
#include "cuda_test.h"
#include "lower.h"

/* C[i] = sum_k A[i, k] over 100 x 203. */
static ts_tensor *row_sum(ts_ctx *ctx, ts_tensor **A)
{
	*A = ts_placeholder(ctx, "A", TS_SHAPE(100, 203), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 203);
	ts_expr *i = ts_var(ctx, "i");
	return ts_compute(ctx, "C", TS_SHAPE(100), TS_VARS(i),
			  TS_SUM(ctx, TS_READ(ctx, *A, i, k->var), k));
}

static const char *compiles_and_matches(ts_ctx *ctx, ts_func *f)
{
	tu_nonnull(ctx, f);
	const char *arch[2] = {"cuda -arch=sm_80", "cuda -arch=sm_90"}, *src = NULL;
	for (int i = 0; i < 2; i++) {
		ts_module *m = ts_build(ctx, f, arch[i]);
		ck_assert_msg(m != NULL, "%s for %s: %s", f->name, arch[i], ts_last_error(ctx));
		src = ts_strdup(ctx, ts_module_source(m, "cuda"));
		ts_module_free(m);
	}
	tu_check_func_interp(ctx, f, 1e-4);
	return src;
}

/* The partial sums in shared memory at C's block loop: one thread per
 * (row, k.inner) sums its slice of k, then C's threads add the 16 partial
 * sums of their row. */
START_TEST(test_shared_partial_sums)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_sum(ctx, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki, *bx, *tx;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 16, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, C, ki, 1);
	tu_nonnull(ctx, rf);
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 8, &bx, &tx));
	tu_ok(ctx, ts_bind(sc, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sc, tx, TS_THREAD_Y));
	ts_stage *sr = ts_stage_of(s, rf);
	tu_ok(ctx, ts_set_scope(sr, TS_SCOPE_SHARED));
	tu_ok(ctx, ts_compute_at(sr, sc, bx));
	tu_ok(ctx, ts_bind(sr, ts_axis_of(sr, 0), TS_THREAD_Y));
	tu_ok(ctx, ts_bind(sr, ts_axis_of(sr, 1), TS_THREAD_X));
	const char *src = compiles_and_matches(ctx, ts_lower(s, "rowsum", 2, (ts_tensor *[]){A, C}));
	ck_assert_msg(strstr(src, "__shared__") && strstr(src, "__syncthreads()"), "%s", src);
	/* C's threads are threadIdx.y only: each row's sum is made by
	 * threadIdx.x 0, not re-added by all 16 (the interpreter, one thread at
	 * a time, cannot see that race; a GPU would) */
	ck_assert_msg(strstr(src, "if (threadIdx.x == 0) {\n      C["), "%s", src);
	ts_ctx_free(ctx);
}
END_TEST

/* A row's sum computed by a block whose 64 threads fetch the row into
 * shared memory: the sum itself is bound to no thread, and only thread 0
 * writes it (every thread's C[i] = C[i] + ... raced). */
START_TEST(test_unbound_sum_written_once)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_sum(ctx, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_tensor *AS = ts_cache_read(s, A, TS_SCOPE_SHARED, 1, &C);
	tu_nonnull(ctx, AS);
	ts_stage *sc = ts_stage_of(s, C), *sa = ts_stage_of(s, AS);
	ts_axis *o, *t;
	tu_ok(ctx, ts_bind(sc, ts_axis_of(sc, 0), TS_BLOCK_X));
	tu_ok(ctx, ts_compute_at(sa, sc, ts_axis_of(sc, 0)));
	tu_ok(ctx, ts_split(sa, ts_axis_of(sa, 1), 64, &o, &t));
	tu_ok(ctx, ts_bind(sa, t, TS_THREAD_X));
	const char *src = compiles_and_matches(ctx, ts_lower(s, "rowsum", 2, (ts_tensor *[]){A, C}));
	ck_assert_msg(strstr(src, "if (threadIdx.x == 0) {\n    C[i] = 0.0f;") &&
			      strstr(src, "if (threadIdx.x == 0) {\n      C[i] = C[i] + A_shared[k];"),
		      "%s", src);
	/* the fetch is every thread's: not guarded */
	ck_assert_msg(!strstr(src, "if (threadIdx.x == 0) {\n      A_shared"), "%s", src);
	ts_ctx_free(ctx);
}
END_TEST

/* The partial sums in each thread's registers, at C's thread loop: 16
 * independent accumulators per row, unrolled. */
START_TEST(test_local_partial_sums)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_sum(ctx, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C);
	ts_axis *ko, *ki, *bx, *tx;
	tu_ok(ctx, ts_split(sc, ts_reduce_axis_of(sc, 0), 16, &ko, &ki));
	ts_tensor *rf = ts_rfactor(s, C, ki, 1);
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 32, &bx, &tx));
	tu_ok(ctx, ts_bind(sc, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sc, tx, TS_THREAD_X));
	ts_stage *sr = ts_stage_of(s, rf);
	tu_ok(ctx, ts_set_scope(sr, TS_SCOPE_LOCAL));
	tu_ok(ctx, ts_compute_at(sr, sc, tx));
	tu_ok(ctx, ts_reorder(sr, TS_AXES(ts_reduce_axis_of(sr, 0), ts_axis_of(sr, 1))));
	tu_ok(ctx, ts_unroll(sr, ts_axis_of(sr, 1)));
	compiles_and_matches(ctx, ts_lower(s, "rowsum", 2, (ts_tensor *[]){A, C}));
	ts_ctx_free(ctx);
}
END_TEST

/* Rows summed into shared memory (cache_write) by a stage bound to no
 * thread, computed at C's block loop, then copied out by C's threads: all
 * 8 threads would run the sums, each re-adding the others' updates and
 * re-zeroing rows another had begun.  Thread 0 alone writes the shared
 * rows, and the barrier before C reads them (cuda_sync.c) publishes them. */
START_TEST(test_unbound_shared_sum_written_once)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *C = row_sum(ctx, &A);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_tensor *CS = ts_cache_write(s, C, TS_SCOPE_SHARED);
	tu_nonnull(ctx, CS);
	ts_stage *sc = ts_stage_of(s, C), *ss = ts_stage_of(s, CS);
	ts_axis *bx, *tx;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 8, &bx, &tx));
	tu_ok(ctx, ts_bind(sc, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sc, tx, TS_THREAD_X));
	tu_ok(ctx, ts_compute_at(ss, sc, bx));
	const char *src = compiles_and_matches(ctx, ts_lower(s, "rowsum", 2, (ts_tensor *[]){A, C}));
	const char *init = strstr(src, "if (threadIdx.x == 0) {\n        C_shared[i] = 0.0f;"),
		   *sum = strstr(src, "if (threadIdx.x == 0) {\n          C_shared[i] = C_shared[i] + A[");
	ck_assert_msg(init && sum, "%s", src);
	/* published to C's threads before they read it */
	const char *sync = strstr(sum, "__syncthreads()"), *out = strstr(src, "C[i_outer");
	ck_assert_msg(sync && out && sync < out, "%s", src);
	ts_ctx_free(ctx);
}
END_TEST

/* Row sums P in shared memory computed at C's thread loop, C[j] = P[j] +
 * P[j + 1]: P's region is the one all the block's threads read (17 rows
 * for 16 threads), the same in every thread, so only thread 0 sums it;
 * the others re-added its updates.  C's own store, indexed by the thread,
 * stays every thread's. */
START_TEST(test_shared_sum_at_thread_loop_written_once)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(65, 33), ts_float32);
	ts_iter *k = ts_reduce_axis(ctx, "k", 0, 33);
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(65), TS_VARS(i),
				  TS_SUM(ctx, TS_READ(ctx, A, i, k->var), k));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(64), TS_VARS(j),
				  ts_add(ctx, TS_READ(ctx, P, j), TS_READ(ctx, P, ts_add(ctx, j, ts_int(ctx, 1)))));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sc = ts_stage_of(s, C), *sp = ts_stage_of(s, P);
	ts_axis *bx, *tx;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 16, &bx, &tx));
	tu_ok(ctx, ts_bind(sc, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sc, tx, TS_THREAD_X));
	tu_ok(ctx, ts_set_scope(sp, TS_SCOPE_SHARED));
	tu_ok(ctx, ts_compute_at(sp, sc, tx));
	const char *src = compiles_and_matches(ctx, ts_lower(s, "stencil", 2, (ts_tensor *[]){A, C}));
	ck_assert_msg(strstr(src, "if (threadIdx.x == 0) {\n      P[i] = 0.0f;") &&
			      strstr(src, "if (threadIdx.x == 0) {\n        P[i] = P[i] + A["),
		      "%s", src);
	ck_assert_msg(strstr(src, "\n  C[j_outer*16 + j_inner] = P[j_inner] + P[j_inner + 1];"), "%s", src);
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	if (!have_nvrtc())
		return 77;
	Suite *s = suite_create("cuda_rfactor");
	TCase *tc = tcase_create("nvrtc");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_shared_partial_sums);
	tcase_add_test(tc, test_local_partial_sums);
	tcase_add_test(tc, test_unbound_sum_written_once);
	tcase_add_test(tc, test_unbound_shared_sum_written_once);
	tcase_add_test(tc, test_shared_sum_at_thread_loop_written_once);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
