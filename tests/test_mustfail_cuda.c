/*
 * test_mustfail_cuda.c - functions the "cuda" target must refuse rather
 * than compile into a kernel that silently computes something else: a
 * producer with its own thread bindings in shared memory or attached
 * inside its consumer (its consumer would read other threads' or blocks'
 * copies; at root in global memory it is a kernel of its own, as
 * test_cuda_schedules checks), a function with no loop bound
 * to a block or thread (a one-thread kernel), per-thread buffers past
 * CUDA's local memory together, a block deeper than 64 threads in z, and a
 * __syncthreads() that only some threads of a block would reach.  The refusals come before
 * NVRTC runs, so these tests need no GPU and no NVRTC.  The legal
 * neighbours of each rule are in test_cuda_schedules.c.
 */
#include "testutil.h"

#include <string.h>

#include "build.h"
#include "cg_kernels.h"
#include "cuda_check.h"
#include "lower.h"
#include "schedule.h"

#define N 1000

/* P[i] = 2 * A[i]; C[i] = P[N - 1 - i] + 1: C reads elements of P that
 * other threads compute. */
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

/* One block per 64 elements, one thread per element; returns the thread axis. */
static ts_axis *bind_1d(ts_stage *st, int64_t threads)
{
	ts_axis *bx, *tx;
	ck_assert_int_eq(ts_split(st, ts_axis_of(st, 0), threads, &bx, &tx), TS_OK);
	ck_assert_int_eq(ts_bind(st, bx, TS_BLOCK_X), TS_OK);
	ck_assert_int_eq(ts_bind(st, tx, TS_THREAD_X), TS_OK);
	return tx;
}

static void assert_build_refused(ts_ctx *ctx, ts_func *f, const char *part)
{
	tu_nonnull(ctx, f);
	ck_assert_ptr_null(ts_build(ctx, f, "cuda -arch=sm_90"));
	ck_assert_int_eq(ts_last_status(ctx), TS_ERR_INVALID);
	tu_assert_error(ctx, part);
}

/* Shared memory does not help: blocks do not see each other's. */
START_TEST(test_root_producer_bound_to_blocks_in_shared)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *P, *C = producer_consumer(ctx, &A, &P);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	tu_ok(ctx, ts_set_scope(ts_stage_of(s, P), TS_SCOPE_SHARED));
	bind_1d(ts_stage_of(s, P), 64);
	bind_1d(ts_stage_of(s, C), 64);
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
	assert_build_refused(ctx, f, "build f: stage P is computed at root with its own thread bindings");
	ts_ctx_free(ctx);
}
END_TEST

/* Attached outside the consumer's thread loops, in per-thread memory: the
 * same cross-thread read. */
START_TEST(test_attached_producer_with_own_bindings)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *P, *C = producer_consumer(ctx, &A, &P);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_stage *sp = ts_stage_of(s, P), *sc = ts_stage_of(s, C);
	ts_axis *bx, *tx, *po, *pi;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 64, &bx, &tx));
	tu_ok(ctx, ts_bind(sc, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sc, tx, TS_THREAD_X));
	tu_ok(ctx, ts_compute_at(sp, sc, bx));
	tu_ok(ctx, ts_split(sp, ts_axis_of(sp, 0), 64, &po, &pi));
	tu_ok(ctx, ts_bind(sp, pi, TS_THREAD_X));
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
	assert_build_refused(ctx, f, "build f: stage P is computed outside C's thread loops with its own "
				     "thread bindings, in per-thread memory");
	ts_ctx_free(ctx);
}
END_TEST

/* A root producer with no bindings is computed whole by every thread into
 * its own copy (test_cuda_schedules.c checks that it is right); a copy past
 * CUDA's 512 KiB of local memory per thread would fail only at launch. */
START_TEST(test_unbound_root_producer_too_big)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(200000), ts_float32);
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(200000), TS_VARS(i),
				  ts_mul(ctx, TS_READ(ctx, A, i), ts_float(ctx, 2.0)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(200000), TS_VARS(j),
				  ts_add(ctx, TS_READ(ctx, P, j), ts_float(ctx, 1.0)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	bind_1d(ts_stage_of(s, C), 256);
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
	assert_build_refused(ctx, f,
			     "build f: stage P needs 800000 bytes of local memory in every thread, "
			     "the limit is 524288");
	ts_ctx_free(ctx);
}
END_TEST

/* A local copy of A's row computed at Y's thread loop, its own loop bound
 * to threadIdx.x again: each thread fills one element of its copy.  The
 * refusal says so, rather than asking for the compute_at it already has. */
START_TEST(test_local_cache_rebound_inside_thread_loop)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(64, 8), ts_float32);
	ts_tensor *Y = ts_compute(ctx, "Y", TS_SHAPE(64, 8), TS_VARS(i, j),
				  ts_mul(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 2.0)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &Y);
	ts_tensor *L = ts_cache_read(s, A, TS_SCOPE_LOCAL, 1, &Y);
	tu_nonnull(ctx, L);
	ts_stage *sy = ts_stage_of(s, Y), *sl = ts_stage_of(s, L);
	ts_axis *tx = bind_1d(sy, 16);
	tu_ok(ctx, ts_compute_at(sl, sy, tx));
	tu_ok(ctx, ts_bind(sl, ts_axis_of(sl, 1), TS_THREAD_X));
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, Y});
	assert_build_refused(ctx, f,
			     "build f: stage A.local is computed inside Y's thread loops, in per-thread "
			     "memory, with a thread binding of its own (loop ax1 bound to threadIdx.x)");
	ts_ctx_free(ctx);
}
END_TEST

/* Two root producers that fit CUDA's local memory one by one but not
 * together: every thread holds both copies at once (ptxas compiles the
 * 560000-byte frame; only the launch would fail). */
START_TEST(test_unbound_root_producers_too_big_together)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j"), *k = ts_var(ctx, "k");
	ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(70000), ts_float32);
	ts_tensor *P = ts_compute(ctx, "P", TS_SHAPE(70000), TS_VARS(i),
				  ts_mul(ctx, TS_READ(ctx, A, i), ts_float(ctx, 2.0)));
	ts_tensor *Q = ts_compute(ctx, "Q", TS_SHAPE(70000), TS_VARS(j),
				  ts_mul(ctx, TS_READ(ctx, A, j), ts_float(ctx, 3.0)));
	ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(70000), TS_VARS(k),
				  ts_add(ctx, TS_READ(ctx, P, k), TS_READ(ctx, Q, k)));
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	bind_1d(ts_stage_of(s, C), 256);
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
	assert_build_refused(ctx, f,
			     "build f: its 2 buffers that are not shared need 560000 bytes of local "
			     "memory in every thread together (the largest: stage P), the limit is 524288");
	ts_ctx_free(ctx);
}
END_TEST

/* blockDim.z has a limit of its own, 64, below the 1024 threads of a
 * block: a block (2, 1, 128) compiles, and only its launch would fail. */
START_TEST(test_block_z_over_64)
{
	for (int64_t z = 64; z <= 65; z++) {
		ts_ctx *ctx = ts_ctx_new();
		ts_expr *i = ts_var(ctx, "i"), *j = ts_var(ctx, "j");
		ts_tensor *A = ts_placeholder(ctx, "A", TS_SHAPE(z, 2), ts_float32);
		ts_tensor *C = ts_compute(ctx, "C", TS_SHAPE(z, 2), TS_VARS(i, j),
					  ts_mul(ctx, TS_READ(ctx, A, i, j), ts_float(ctx, 2.0)));
		ts_schedule *s = ts_create_schedule(ctx, 1, &C);
		ts_stage *sc = ts_stage_of(s, C);
		tu_ok(ctx, ts_bind(sc, ts_axis_of(sc, 0), TS_THREAD_Z));
		tu_ok(ctx, ts_bind(sc, ts_axis_of(sc, 1), TS_THREAD_X));
		ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
		tu_nonnull(ctx, f);
		ts_launch l;
		const char *src = cg_emit_cuda(ctx, f, &l);
		if (z == 64) {
			ck_assert_msg(src != NULL, "%s", ts_last_error(ctx));
			ck_assert_int_eq(l.block[2], 64);
		} else {
			ck_assert_ptr_null(src);
			ck_assert_int_eq(ts_last_status(ctx), TS_ERR_UNSUPPORTED);
			tu_assert_error(ctx, "cuda: f: a block 65 threads deep in z (threadIdx.z), the limit is 64");
			ck_assert_ptr_null(ts_build(ctx, f, "cuda -arch=sm_90"));
			tu_assert_error(ctx, "the limit is 64");
		}
		ts_ctx_free(ctx);
	}
}
END_TEST

START_TEST(test_no_binding)
{
	ts_ctx *ctx = ts_ctx_new();
	ts_tensor *A, *P, *C = producer_consumer(ctx, &A, &P);
	ts_schedule *s = ts_create_schedule(ctx, 1, &C);
	ts_func *f = ts_lower(s, "f", 2, (ts_tensor *[]){A, C});
	assert_build_refused(ctx, f,
			     "build f: no loop is bound to blockIdx/threadIdx, so the kernel would run "
			     "on one GPU thread (bind an axis with ts_bind)");
	/* the same function still builds for the CPU */
	ts_clear_error(ctx);
	ts_module *m = ts_build(ctx, f, "llvm");
	tu_nonnull(ctx, m);
	ts_module_free(m);
	ts_ctx_free(ctx);
}
END_TEST

/* C's threads cover 32 of the block's 64 (the A tile is fetched by 64),
 * and the B tile is fetched inside a sequential loop within C's thread
 * loop: its barrier would be inside `if (threadIdx.x < 32)`, which half
 * the block never enters, and the loop around it keeps it from being
 * hoisted out (test_cuda_schedules.c has the case that is hoisted). */
START_TEST(test_barrier_under_thread_guard)
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
	ts_axis *bx, *in, *tx, *r;
	tu_ok(ctx, ts_split(sc, ts_axis_of(sc, 0), 64, &bx, &in));
	tu_ok(ctx, ts_split(sc, in, 2, &tx, &r));
	tu_ok(ctx, ts_bind(sc, bx, TS_BLOCK_X));
	tu_ok(ctx, ts_bind(sc, tx, TS_THREAD_X));
	tu_ok(ctx, ts_compute_at(sa, sc, bx));
	tu_ok(ctx, ts_bind(sa, ts_axis_of(sa, 0), TS_THREAD_X));
	tu_ok(ctx, ts_compute_at(sb, sc, r));
	ts_func *f = ts_lower(s, "f", 3, (ts_tensor *[]){A, B, C});
	assert_build_refused(ctx, f, "build f: a __syncthreads() for B.shared would be inside loop "
				     "'i.inner.outer' bound to threadIdx.x with extent 32 of the block's 64");
	ts_ctx_free(ctx);
}
END_TEST

/* Barriers under conditions, in hand-built kernels: bx is bound to
 * blockIdx.x, t to threadIdx.x over the whole block of 64. */
static ts_func *guarded_barrier(ts_ctx *ctx, ts_stmt *(*wrap)(ts_ctx *, ts_expr *, ts_expr *,
							      ts_buffer *, ts_stmt *))
{
	ts_buffer *G = kg_buf(ctx, "G", ts_float32, 64, 0, TS_SCOPE_GLOBAL);
	ts_buffer *S = kg_buf(ctx, "S", ts_float32, 64, 0, TS_SCOPE_SHARED);
	ts_expr *bx = ts_var(ctx, "bx"), *t = ts_var(ctx, "t");
	ts_stmt *body = ir_seq(ctx, 3, (ts_stmt *[]){
		ir_store(ctx, S, t, ts_load(ctx, G, t)), ir_barrier(ctx),
		ir_store(ctx, G, t, ts_load(ctx, S, ts_sub(ctx, KI(63), t)))});
	body = wrap(ctx, bx, t, G, body);
	body = ir_allocate(ctx, S, kg_bind(ctx, t, 64, TS_THREAD_X, body));
	return kg_func(ctx, "k", 1, (ts_buffer *[]){G}, kg_bind(ctx, bx, 4, TS_BLOCK_X, body));
}

static ts_stmt *if_thread(ts_ctx *ctx, ts_expr *bx, ts_expr *t, ts_buffer *G, ts_stmt *s)
{
	(void)bx, (void)G;
	return ir_if(ctx, ts_lt(ctx, t, KI(32)), s, NULL);
}

static ts_stmt *if_block(ts_ctx *ctx, ts_expr *bx, ts_expr *t, ts_buffer *G, ts_stmt *s)
{
	(void)t, (void)G;
	return ir_if(ctx, ts_lt(ctx, bx, KI(3)), s, NULL);
}

static ts_stmt *if_derived(ts_ctx *ctx, ts_expr *bx, ts_expr *t, ts_buffer *G, ts_stmt *s)
{
	(void)bx, (void)G;
	ts_expr *v = ts_var(ctx, "v");
	return ir_let(ctx, v, ts_mul(ctx, t, KI(2)), ir_if(ctx, ts_lt(ctx, v, KI(10)), s, NULL));
}

static ts_stmt *if_loaded(ts_ctx *ctx, ts_expr *bx, ts_expr *t, ts_buffer *G, ts_stmt *s)
{
	(void)bx, (void)t;
	return ir_if(ctx, ts_gt(ctx, ts_load(ctx, G, KI(0)), ts_float(ctx, 0)), s, NULL);
}

static ts_stmt *loop_from_thread(ts_ctx *ctx, ts_expr *bx, ts_expr *t, ts_buffer *G, ts_stmt *s)
{
	(void)bx, (void)G;
	return ir_for(ctx, ts_var(ctx, "r"), KI(0), ts_add(ctx, t, KI(1)), TS_FOR_SERIAL,
		      TS_THREAD_NONE, s);
}

/* Starts differ, trip counts do not: each thread reaches the barrier twice. */
static ts_stmt *loop_shifted(ts_ctx *ctx, ts_expr *bx, ts_expr *t, ts_buffer *G, ts_stmt *s)
{
	(void)bx, (void)G;
	return ir_for(ctx, ts_var(ctx, "r"), t, KI(2), TS_FOR_SERIAL, TS_THREAD_NONE, s);
}

START_TEST(test_barrier_under_divergent_guard)
{
	ts_ctx *ctx = ts_ctx_new();
	ck_assert_int_eq(cg_cuda_check_barriers(ctx, guarded_barrier(ctx, if_thread)), TS_ERR_INVALID);
	tu_assert_error(ctx, "build k: a __syncthreads() for S would be inside the guard 't < 32', "
			     "which differs between threads");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_cuda_check_barriers(ctx, guarded_barrier(ctx, if_derived)), TS_ERR_INVALID);
	tu_assert_error(ctx, "the guard 'v < 10', which differs between threads");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_cuda_check_barriers(ctx, guarded_barrier(ctx, if_loaded)), TS_ERR_INVALID);
	tu_assert_error(ctx, "the guard 'G[0] > 0.0f', which differs between threads");
	ts_clear_error(ctx);
	ck_assert_int_eq(cg_cuda_check_barriers(ctx, guarded_barrier(ctx, loop_from_thread)),
			 TS_ERR_INVALID);
	tu_assert_error(ctx, "inside loop 'r', whose trip count differs between threads");
	ts_clear_error(ctx);
	/* the same for every thread of a block: allowed */
	tu_ok(ctx, cg_cuda_check_barriers(ctx, guarded_barrier(ctx, if_block)));
	tu_ok(ctx, cg_cuda_check_barriers(ctx, guarded_barrier(ctx, loop_shifted)));
	ts_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mustfail_cuda");
	TCase *tc = tcase_create("refusals");
	tcase_add_test(tc, test_root_producer_bound_to_blocks_in_shared);
	tcase_add_test(tc, test_attached_producer_with_own_bindings);
	tcase_add_test(tc, test_unbound_root_producer_too_big);
	tcase_add_test(tc, test_unbound_root_producers_too_big_together);
	tcase_add_test(tc, test_local_cache_rebound_inside_thread_loop);
	tcase_add_test(tc, test_block_z_over_64);
	tcase_add_test(tc, test_no_binding);
	tcase_add_test(tc, test_barrier_under_thread_guard);
	tcase_add_test(tc, test_barrier_under_divergent_guard);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
